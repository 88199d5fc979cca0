"""The example recipe package (examples/my_recipe: a CSV source, a link-density filter, a tagger that is not
fastText) and a JSON lines export, run as a user runs them: ``curate run examples/my_recipe.yaml`` in a process
of its own with examples/ on PYTHONPATH (nothing of the package imports them).  Through plan, run, the card,
and reruns on the same root with a changed setting: only the units that depend on it are redone, with a new
result.  The README's Python recipe runs as it is printed."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.ray

EXAMPLES = REPO / "examples"
RECIPE = yaml.safe_load((EXAMPLES / "my_recipe.yaml").read_text())


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}  # as a user's shell: the run sets it
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO), str(EXAMPLES)]), "RAY_ADDRESS": ""}


def _run(tmp_path: Path, out: Path, **changes) -> dict:
    """``curate run`` of the example recipe (with ``changes``) on ``out``, from the repository; its run.json."""
    config = {**RECIPE, **changes, "output": str(out), "ray": {"num_cpus": 2}}
    path = tmp_path / f"recipe-{len(list(tmp_path.glob('recipe-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "run", str(path), "--no-progress"],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # Ray started as a run starts it, before its first import (each phase's task is sent from the driver)
    assert "Token authentication is" not in done.stderr, done.stderr[-3000:]
    return json.loads((out / "run.json").read_text())


def _ids(out: Path, kind: str, phase: str, **where) -> set[str]:
    table = pq.read_table(out / kind / phase)
    rows = table.to_pylist()
    return {r["id"] for r in rows if all(r.get(k) == v for k, v in where.items())}


def _redone(record: dict, phase: str) -> int:
    p = record["phases"][phase]
    return p["units"] - p["units_skipped"]


def test_the_recipe_runs_as_a_user_runs_it(tmp_path):
    out = tmp_path / "out"
    first = _run(tmp_path, out)
    assert first["status"] == "ok"
    assert first["phases_run"] == ["extracted", "deduped", "final", "export_docs", "card"]

    # the CSV source: its rows are documents, one without text rejected at read time
    assert first["phases"]["extracted"]["files_by_kind"] == {"csv": 1, "warc": 1}
    assert _ids(out, "rejected", "extracted", stage="read", reason="no_text") == {"csv-4"}
    # the link-density filter: the page of links, with its stage and reason
    assert "csv-3" in _ids(out, "rejected", "extracted", stage="link_density", reason="link_density")
    # the tagger's declared score, in every document; its filter after dedup (reason edu)
    scores = {r["id"]: r["edu_score"] for r in pq.read_table(out / "documents" / "extracted").to_pylist()}
    assert scores["csv-1"] > 0.9 and scores["csv-2"] < 0.05
    edu_removed = _ids(out, "rejected", "final", stage="edu_filter", reason="edu")
    assert {"csv-2", "csv-6"} <= edu_removed and not {"csv-1", "csv-5"} & edu_removed
    final = _ids(out, "documents", "final")
    assert {"csv-1", "csv-5"} <= final and all(scores[i] >= 0.2 for i in final)

    # the JSON lines export: gzip, one {id, text, metadata} a line, exactly the final documents
    files = sorted((out / "exports" / "docs").glob("*.jsonl.gz"))
    assert len(files) == 2
    rows = [json.loads(line) for f in files for line in gzip.decompress(f.read_bytes()).decode().split("\n") if line]
    assert {r["id"] for r in rows} == final and all(list(r) == ["id", "text", "metadata"] for r in rows)
    texts = {r["id"]: r["text"] for r in pq.read_table(out / "documents" / "final").to_pylist()}
    assert all(r["text"] == texts[r["id"]] and r["metadata"]["edu_score"] >= 0.2 for r in rows)
    assert first["phases"]["export_docs"]["exported"] == len(final)

    # the card: the funnel's rows by the stages' labels, the tagger's score section, the export apart
    card = (out / "README.md").read_text()
    stats = json.loads((out / "card" / "stats.json").read_text())
    funnel = {r["step"]: r for r in stats["funnel"]}
    assert funnel["extracted:link_density"]["label"] == "at most a few links per 100 words"
    assert funnel["extracted:link_density"]["by_reason"]["link_density"] >= 1
    assert funnel["final:edu_filter"]["by_reason"] == {"edu": len(edu_removed)}
    assert stats["funnel_adds_up"] and not any(r["phase"].startswith("export_") for r in stats["funnel"])
    edu = next(e for e in stats["classifiers"]["entries"] if e["column"] == "edu_score")
    assert edu["model"] == "my_recipe.taggers:EduWords" and edu["threshold"] == 0.2
    assert edu["removed"] == len(edu_removed)
    assert "`edu_score`: a score the stage `my_recipe.taggers:EduWords` declares" in card
    assert stats["exports"] == [
        {
            "name": "docs",
            "phase": "final",
            "path": "exports/docs/",
            "format": "JSON lines of the documents final kept",
            "files": 2,
            "documents": len(final),
            "pii_redacted": True,
        }
    ]
    assert "## Exports" in card and not any("exports" in p for p in stats["publish"]["allow_patterns"])

    # a changed setting of the tagger's filter: only the final phase, its export and the card are redone
    looser = [*RECIPE["stages"][:1], {**RECIPE["stages"][1], "filter": {"threshold": 0.05}}]
    second = _run(tmp_path, out, stages=looser)
    assert (_redone(second, "extracted"), _redone(second, "deduped")) == (0, 0)
    assert _redone(second, "final") == 2 and _redone(second, "export_docs") == 2
    assert _ids(out, "documents", "final") > final  # a new result: more documents pass the lower threshold

    # a changed setting of the filter in phase 1: phase 1 is redone, and the page of links passes
    allowing = [{**RECIPE["stages"][0], "with": {"max_per_100_words": 50}}, *looser[1:]]
    third = _run(tmp_path, out, stages=allowing)
    assert _redone(third, "extracted") == 2
    assert "csv-3" not in _ids(out, "rejected", "extracted", stage="link_density")

    # nothing changed: nothing redone; an export of phase 1 added: only it runs, and the card says it is unpublished
    early = [
        *RECIPE["exports"],
        {"name": "early", "use": "parquet", "phase": "extracted", "columns": ["id", "edu_score"]},
        {"name": "text", "use": "my_recipe.exports:PlainText", "phase": "final"},
    ]  # a format of the user's own
    fourth = _run(tmp_path, out, stages=allowing, exports=early)
    assert [_redone(fourth, p) for p in ("extracted", "deduped", "final", "export_docs")] == [0, 0, 0, 0]
    assert _redone(fourth, "export_early") == 2 and _redone(fourth, "export_text") == 2
    assert pq.read_table(out / "exports" / "early").column_names == ["id", "edu_score"]
    for part in (out / "documents" / "final").glob("part-*.parquet"):  # each part's texts, in order
        texts = pq.read_table(part).column("text").to_pylist()
        name = part.name.removeprefix("part-").removesuffix(".parquet")
        assert (out / "exports" / "text" / f"{name}.txt").read_text() == "".join(f"{t}\n\n" for t in texts)
    stats = json.loads((out / "card" / "stats.json").read_text())
    assert [(e["name"], e["pii_redacted"]) for e in stats["exports"]] == [
        ("early", False),
        ("docs", True),
        ("text", True),
    ]
    assert "`exports/early/` hold text before PII redaction: unpublished data" in (out / "README.md").read_text()
    assert not any("exports" in p for p in stats["publish"]["allow_patterns"])

    # the tagger's best half of each language (top_fraction, decided over every part): only final and after redone
    ranked = [allowing[0], {**RECIPE["stages"][1], "filter": {"top_fraction": 0.5}}]
    fifth = _run(tmp_path, out, stages=ranked, exports=early)
    assert (_redone(fifth, "extracted"), _redone(fifth, "deduped"), _redone(fifth, "final")) == (0, 0, 2)
    deduped = pq.read_table(out / "documents" / "deduped").to_pylist()
    kept = pq.read_table(out / "documents" / "final").to_pylist()
    for lang in {r["language"] for r in deduped}:
        n = sum(r["language"] == lang for r in deduped)
        assert sum(r["language"] == lang for r in kept) == math.ceil(0.5 * n), lang
    details = [json.loads(d) for d in pq.read_table(out / "rejected" / "final").column("details").to_pylist()]
    assert details and all("top_fraction" in d for d in details)


def _readme_recipe() -> str:
    text = (REPO / "README.md").read_text()
    found = re.search(r"```python\n(# recipe: the Python API\n.*?)```", text, re.S)
    assert found, "README.md: the Python recipe (```python, first line '# recipe: the Python API')"
    return found.group(1)


def test_the_readme_python_recipe_runs_as_printed(tmp_path):
    code = _readme_recipe()
    assert len(code.strip().splitlines()) <= 20
    work = tmp_path / "work"  # the recipe's relative paths, read from the working directory
    work.mkdir()
    (work / "samples").symlink_to(REPO / "samples")
    (work / "examples").symlink_to(EXAMPLES)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=work, env=_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    record = json.loads((work / "out" / "api" / "run.json").read_text())
    assert record["status"] == "ok"
    assert [s["use"] for s in record["config"]["stages"]] == [
        "my_recipe.filters:LinkDensity",
        "my_recipe.taggers:EduWords",
    ]
    assert list((work / "out" / "api" / "exports" / "docs").glob("*.jsonl.gz"))
    assert f"{record['phases']['final']['kept']} documents" in done.stdout
