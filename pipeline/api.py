"""The Python API: a recipe composed in code, run exactly as its YAML would be.

::

    from pipeline.api import export, run, stage
    from my_recipe.filters import LinkDensity

    record = run("jobs/sample.yaml", stages=[stage(LinkDensity, max_per_100_words=5)],
                 exports=[export("docs", use="jsonl")])

``run`` takes a config (a YAML path, a dict of the same fields, or a ``RunConfig``) and the run's own
components: each class becomes the config entry it stands for (``use: module:Class``, ``with:`` its settings),
so a component given in code gets every check and guarantee of one given in YAML (the plan-time contract
checks, the fingerprint, the card), and the run records a config that ``curate run`` can rerun.  A class must
be importable by its module's name on every Ray worker (a module on the path, not ``__main__``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.config import ConfigError, RunConfig, load_config, parse_config
from pipeline.paths import resolve_paths
from pipeline.plugins import use_of
from pipeline.runner import run as run_plan


def _use(component: type | str) -> str:
    if isinstance(component, str):
        return component
    if not isinstance(component, type):
        raise ConfigError(
            f"config error: {component!r}: give the class (or 'module:Class'), not an instance: its "
            "settings go in the entry (stage(Class, key=value)), so that they are fingerprinted"
        )
    if component.__module__ == "__main__":
        raise ConfigError(
            f"config error: {component.__qualname__} is defined in __main__: Ray's workers cannot "
            "import it; define it in a module on the path"
        )
    return use_of(component)


def stage(component: type | str, phase: str = "extracted", filter: dict | None = None, **settings: Any) -> dict:
    """A ``stages:`` entry: the stage class, the phase it runs in, its keyword arguments and, for a tagger, the
    filter on its score."""
    entry: dict[str, Any] = {"use": _use(component), "phase": phase, "with": settings}
    return entry | ({"filter": filter} if filter is not None else {})


def reader(component: type | str, **settings: Any) -> dict:
    """A ``readers:`` entry: a reader class for the input files its ``suffixes`` name, and its keyword arguments."""
    return {"use": _use(component), "with": settings}


def export(
    name: str, use: type | str = "jsonl", phase: str = "final", columns: Sequence[str] | None = None, **settings: Any
) -> dict:
    """An ``exports:`` entry: ``exports/<name>/``, its format (jsonl, parquet or a format class), the phase whose
    kept documents it copies, the columns it writes."""
    entry: dict[str, Any] = {"name": name, "use": _use(use), "phase": phase, "with": settings}
    return entry | ({"columns": list(columns)} if columns is not None else {})


def _as_dict(config: str | os.PathLike | dict | RunConfig) -> dict:
    if isinstance(config, RunConfig):
        return config.model_dump(mode="json")
    if isinstance(config, dict):
        return dict(config)
    if isinstance(config, (str, os.PathLike)):
        return load_config(Path(config)).model_dump(mode="json")
    raise ConfigError(f"config error: a config is a YAML path, a dict or a RunConfig (got {type(config).__name__})")


def entry(item: type | str | dict, make) -> dict:
    """A component given as a class, a ``module:Class`` string or an entry already: its entry."""
    return item if isinstance(item, dict) else make(item)


def _export_of_class(component: type | str) -> dict:
    """An export given as its format alone: named after it (``jsonl``, or the class's name in lowercase)."""
    name = component if isinstance(component, str) else component.__name__
    return export(name.split(":")[-1].lower(), component)


def build(
    config: str | os.PathLike | dict | RunConfig, stages: Sequence = (), readers: Sequence = (), exports: Sequence = ()
) -> RunConfig:
    """The run's config: ``config`` with the components added after its own entries, validated as YAML is."""
    data = _as_dict(config)
    data["stages"] = [*(data.get("stages") or []), *(entry(s, stage) for s in stages)]
    data["readers"] = [*(data.get("readers") or []), *(entry(r, reader) for r in readers)]
    data["exports"] = [*(data.get("exports") or []), *(entry(e, _export_of_class) for e in exports)]
    out = parse_config(data)
    resolve_paths(out)  # relative paths from the working directory, as load_config does
    return out


def run(
    config: str | os.PathLike | dict | RunConfig,
    *,
    stages: Sequence = (),
    readers: Sequence = (),
    exports: Sequence = (),
    phases: list[str] | None = None,
    address: str | None = None,
    progress: bool = False,
) -> dict:
    """Run a recipe: ``config`` plus its own stages, readers and exports (classes or entries made by
    :func:`stage`, :func:`reader`, :func:`export`); returns the run record (``run.json``)."""
    return run_plan(build(config, stages, readers, exports), address=address, progress=progress, phases=phases)


__all__ = ["build", "export", "reader", "run", "stage"]
