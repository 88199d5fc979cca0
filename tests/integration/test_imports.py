"""The layers import only downward: core/ imports neither pipeline/ nor stages/, stages/ never imports
pipeline/, and no module of pipeline/ imports the phases it is imported by (the run's phases are an
explicit tuple handed to the runner, not a registry filled by import side effects)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("core", "stages", "pipeline", "classifiers", "jobs")


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (annotations only: never imported at run time)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(path: Path) -> set[str]:
    """Every module a file imports at run time, at any depth (top level or in functions)."""
    out = set()
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
    return {m for m in out if m.split(".")[0] in PACKAGES}


def _graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")]
    modules = {_module(p): p for p in files}
    return {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}


def test_core_imports_neither_pipeline_nor_stages_and_stages_never_import_pipeline():
    bad = [
        (m, i)
        for m, deps in _graph().items()
        for i in deps
        if (m.startswith("core") and i.split(".")[0] in ("pipeline", "stages", "classifiers"))
        or (m.split(".")[0] in ("stages", "classifiers") and i.startswith("pipeline"))
    ]
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_through_the_phases():
    """The phase layer (pipeline.phase, the runner, the context, the plan) never imports the phases, so no
    cycle runs through them (the registry did: phase.py imported pipeline.phases, which import phase.py)."""
    cycles = [c for c in _cycles(_graph()) if any(m.startswith("pipeline.phases") or m == "pipeline.phase" for m in c)]
    assert cycles == []
    layer = (
        "pipeline.phase",
        "pipeline.plan",
        "pipeline.context",
        "pipeline.result",
        "pipeline.units",
        "pipeline.distribute",
    )
    graph = _graph()
    assert [(m, i) for m in layer for i in graph[m] if i.startswith("pipeline.phases")] == []


def test_importing_the_phase_layer_registers_nothing():
    """A fresh interpreter: importing pipeline.phase imports no phase module."""
    code = (
        "import sys, pipeline.phase, pipeline.plan, pipeline.runner; "
        "print(sorted(m for m in sys.modules if m.startswith('pipeline.phases.')))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    # the runner imports the default tuple (pipeline.phases); the phase layer itself does not
    code = (
        "import sys, pipeline.phase, pipeline.plan, pipeline.context; "
        "print(any(m.startswith('pipeline.phases') for m in sys.modules))"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )
    assert found  # the runner's default phases are there, imported explicitly
