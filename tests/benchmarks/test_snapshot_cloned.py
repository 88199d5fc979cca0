"""benchmarks/snapshot.py --cloned-files: phase 1 cloned from a finished run must be what the engine takes as done.

The base run is fabricated (two WARCs, their parts and markers as phase 1 leaves them, a ``run.json``); the clone
is checked by the engine itself (``RunContext.marker``: the unit's fingerprint and every file it published), so a
wrong fingerprint, unit name or published path makes a ``curate run`` redo phase 1, and these tests fail.
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import snapshot
from core.layout import DOCUMENTS, DONE, REJECTED, part_file
from pipeline.engine.units import published_input
from pipeline.inputs import unit_name
from tests.conftest import Page, html

FILES = 5  # three clones of base input 0, two of base input 1


def _base(tmp_path, warc_factory, current: bool = True):
    """A finished run of two inputs: input 0 kept two documents and rejected one, input 1 kept one; its markers
    current for today's jobs/sample.yaml (the engine's fingerprints), or not."""
    base, inputs = tmp_path / "out-2", []
    for i in range(2):
        page = Page(f"https://example.com/{i}", html(f"Page {i}", "Some words in a paragraph.").encode())
        inputs.append(warc_factory(snapshot.input_name(i), [page]))
    (base / DONE / "extracted").mkdir(parents=True)
    ctx = snapshot.engine_context([str(p) for p in inputs], base)
    fingerprints = {u.name: u.fingerprint for u in ctx.units_of(ctx.phases[0])}
    for i, path in enumerate(inputs):
        name, public = unit_name(str(path)), path.name
        docs = pa.table(
            {
                "id": [f"urn:uuid:{i}-{k}" for k in range(2 - i)],
                "url": [f"https://example.com/{i}/{k}" for k in range(2 - i)],
                "source": [public] * (2 - i),
                "text": [f"text {k} of input {i}" for k in range(2 - i)],
            }
        )
        published = [f"{DOCUMENTS}/extracted/{part_file(name)}"]
        if i == 0:
            published.append(f"{REJECTED}/extracted/{part_file(name)}")
        for rel in published:
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            table = docs if rel.startswith(DOCUMENTS) else docs.slice(0, 1).append_column("reason", pa.array(["x"]))
            pq.write_table(table, base / rel)
        marker = {
            "unit": name,
            "fingerprint": fingerprints[name] if current else "of other settings",
            "in": 3 - i,
            "kept": 2 - i,
            "outputs": {"documents_part": True, "kind": "warc", "published": published, "source": public},
            "totals": {"responses": 3 - i},
        }
        (base / DONE / "extracted" / f"{name}.json").write_text(json.dumps(marker))
    record = {"inputs": [str(p) for p in inputs], "working_dir": str(snapshot.ROOT), "finished": "2026-01-01T00:00:00"}
    (base / "run.json").write_text(json.dumps(record))
    return base, inputs


@pytest.fixture
def cloned(tmp_path, warc_factory):
    base, inputs = _base(tmp_path, warc_factory)
    folder, dest = tmp_path / "warc-cloned" / "files", tmp_path / "out-cloned"
    info = snapshot.clone_run(base, folder, dest, FILES, None)
    return base, inputs, folder, dest, info


def test_every_cloned_unit_is_current_for_the_engine(cloned):
    base, inputs, folder, dest, info = cloned
    ctx = snapshot.engine_context([str(folder / "*.warc.gz")], dest)
    phase = ctx.phases[0]
    units = ctx.units_of(phase)
    assert phase.name == "extracted" and len(units) == FILES
    assert [u.name for u in units if ctx.marker(phase, u) is None] == []
    assert snapshot.check_current([str(folder / "*.warc.gz")], dest, FILES)["done"] == FILES
    assert info["responses"] == 3 + 2 + 3 + 2 + 3
    for t in range(FILES):  # hard links to base input t % 2: no bytes copied
        assert os.path.samefile(folder / snapshot.input_name(t), inputs[t % 2])


def test_a_clone_is_its_base_part_with_its_own_ids_urls_and_source(cloned):
    base, inputs, folder, dest, info = cloned
    ctx = snapshot.engine_context([str(folder / "*.warc.gz")], dest)
    by_file = {published_input(u.params["source"]): u for u in ctx.units_of(ctx.phases[0])}
    unit = by_file[snapshot.input_name(4)]  # base input 0, clone 2
    docs = pq.read_table(dest / DOCUMENTS / "extracted" / part_file(unit.name)).to_pydict()
    assert docs["id"] == ["urn:uuid:0-0-c2", "urn:uuid:0-1-c2"]
    assert docs["url"] == ["https://example.com/0/0?c=2", "https://example.com/0/1?c=2"]
    assert docs["source"] == ["f000004.warc.gz"] * 2
    assert docs["text"] == ["text 0 of input 0", "text 1 of input 0"]  # no truth (not heavy): exact copies
    rejected = pq.read_table(dest / REJECTED / "extracted" / part_file(unit.name)).to_pydict()
    assert rejected["id"] == ["urn:uuid:0-0-c2"] and rejected["source"] == ["f000004.warc.gz"]
    first = by_file[snapshot.input_name(0)]  # clone 0 keeps its ids
    assert pq.read_table(dest / DOCUMENTS / "extracted" / part_file(first.name)).column("id").to_pylist() == [
        "urn:uuid:0-0",
        "urn:uuid:0-1",
    ]
    marker = json.loads((dest / DONE / "extracted" / f"{unit.name}.json").read_text())
    assert marker["outputs"]["source"] == "f000004.warc.gz" and marker["fingerprint"] == unit.fingerprint
    # input 1 rejected nothing: its clones publish no rejected part either
    odd = by_file[snapshot.input_name(3)]
    assert not (dest / REJECTED / "extracted" / part_file(odd.name)).exists()
    assert json.loads((dest / DONE / "extracted" / f"{odd.name}.json").read_text())["outputs"]["published"] == [
        f"{DOCUMENTS}/extracted/{part_file(odd.name)}"
    ]


def test_a_stale_or_missing_clone_stops_the_benchmark(cloned):
    base, inputs, folder, dest, info = cloned
    ctx = snapshot.engine_context([str(folder / "*.warc.gz")], dest)
    units = ctx.units_of(ctx.phases[0])
    (dest / DOCUMENTS / "extracted" / part_file(units[1].name)).unlink()  # a published file gone
    stale = dest / DONE / "extracted" / f"{units[2].name}.json"
    stale.write_text(json.dumps({**json.loads(stale.read_text()), "fingerprint": "another"}))
    with pytest.raises(SystemExit, match=f"{FILES} units, {FILES - 2} done, 2 to do"):
        snapshot.check_current([str(folder / "*.warc.gz")], dest, FILES)


def test_only_phase1_keeps_the_clone_and_removes_what_later_phases_left(cloned):
    base, inputs, folder, dest, info = cloned
    for rel in ("documents/deduped/part-x.parquet", "_done/deduped/x.json", "card/stats.json", "run.json"):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text("{}")
    snapshot.only_phase1(dest)
    assert sorted(p.name for p in dest.iterdir()) == sorted([DOCUMENTS, REJECTED, DONE])
    assert all([p.name for p in (dest / sub).iterdir()] == ["extracted"] for sub in (DOCUMENTS, REJECTED, DONE))
    assert snapshot.check_current([str(folder / "*.warc.gz")], dest, FILES)["done"] == FILES


def test_heavy_clones_give_unique_pages_their_own_text_and_keep_the_truth(tmp_path, warc_factory):
    base, inputs = _base(tmp_path, warc_factory)
    truth = tmp_path / "truth.parquet"  # input 0's first document is in a planted cluster, the rest are unique
    pq.write_table(
        pa.table(
            {"id": ["urn:uuid:0-0", "urn:uuid:0-1", "urn:uuid:1-0"], "cluster": pa.array([7, None, None], pa.int64())}
        ),
        truth,
    )
    folder, dest = tmp_path / "warc-cloned" / "files", tmp_path / "out-cloned"
    snapshot.clone_run(base, folder, dest, 3, truth)
    ctx = snapshot.engine_context([str(folder / "*.warc.gz")], dest)
    unit = {published_input(u.params["source"]): u for u in ctx.units_of(ctx.phases[0])}[snapshot.input_name(2)]
    texts = pq.read_table(dest / DOCUMENTS / "extracted" / part_file(unit.name)).column("text").to_pylist()
    assert texts[0] == "text 0 of input 0"  # a cluster's copy stays a copy
    assert texts[1] != "text 1 of input 0" and texts[1].startswith("textqb ")  # a unique page its own (clone 1)
    kept = pq.read_table(dest / "truth.parquet").to_pydict()
    assert dict(zip(kept["id"], kept["cluster"], strict=True)) == {
        "urn:uuid:0-0": 7,
        "urn:uuid:0-1": None,
        "urn:uuid:1-0": None,
        "urn:uuid:0-0-c1": 7,
        "urn:uuid:0-1-c1": None,
    }


def test_prepare_cloned_checks_the_base_then_keeps_the_clone_for_the_next_point(tmp_path, warc_factory):
    base, inputs = _base(tmp_path / "stale", warc_factory, current=False)
    with pytest.raises(SystemExit, match="base phase 1 is not current .* 2 units, 0 done"):
        snapshot.prepare_cloned(base, tmp_path / "stale", FILES)
    base, inputs = _base(tmp_path, warc_factory)
    folder, out, info = snapshot.prepare_cloned(base, tmp_path, FILES)
    assert (folder, out) == (tmp_path / f"warc-cloned-{FILES}" / "files", tmp_path / f"out-cloned-{FILES}")
    assert info["files"] == FILES and info["base_files"] == 2
    marker = next((out / DONE / "extracted").iterdir())
    (out / DONE / "deduped").mkdir()  # what a measured run left
    marker.write_text(marker.read_text().replace('"in"', '"in_kept"'))  # kept, not cloned again
    assert snapshot.prepare_cloned(base, tmp_path, FILES)[2] == info
    assert not (out / DONE / "deduped").exists() and "in_kept" in marker.read_text()
