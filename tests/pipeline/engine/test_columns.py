"""The engine's per-unit lists as columns (pipeline/engine/columns.py): what they give back is what the lists of
units, parts and markers gave, and a phase's plan over many input files holds a few dozen bytes a unit beside
its names, not an object per unit (issue 39: the driver flat in the number of parts)."""

from __future__ import annotations

import gc
import json
import os
import pickle
import tracemalloc

import pytest

from core.storage import Storage
from pipeline.config import parse_config
from pipeline.engine import markers as marker_store
from pipeline.engine.columns import Fingerprints, Marker, MarkerMap, NameSet, PartList, Paths, UnitList, split
from pipeline.phase import Part, Unit, fingerprint
from pipeline.result import UnitResult
from pipeline.runner import plan_context
from tests.conftest import Page, html


def test_fingerprints_are_packed_and_an_earlier_versions_are_kept_as_they_are():
    engine = [fingerprint(i) for i in range(5)]
    fps = Fingerprints([*engine, "fp-a", "", "ABCDEF0123456789"])  # not the engine's: kept aside, unchanged
    assert list(fps) == [*engine, "fp-a", "", "ABCDEF0123456789"]
    assert fps[-1] == "ABCDEF0123456789" and fps[0] == engine[0] and len(fps) == 8
    assert list(fps.take([6, 1, 5])) == ["", engine[1], "fp-a"]
    assert list(Fingerprints(engine).take([4, 0])) == [engine[4], engine[0]]
    with pytest.raises(IndexError):
        fps[8]


def test_a_unit_list_gives_the_units_a_list_gave():
    names = [f"part-{i}" for i in range(6)]
    fps = [fingerprint(n) for n in names]
    shared = {"source": "extracted"}
    units = UnitList.of(names, fps, shared, "signatures")
    assert list(units) == [Unit(n, f, shared, "signatures") for n, f in zip(names, fps, strict=True)]
    assert units[-1] == Unit(names[5], fps[5], shared, "signatures") and len(units) == 6

    per_unit = UnitList.of(names, fps, lambda i: {"source": f"in-{i}.warc.gz"})
    done, todo = split(per_unit, [i % 2 == 0 for i in range(6)])
    assert [u.name for u in done] == names[0::2] and [u.name for u in todo] == names[1::2]
    assert [u.params["source"] for u in todo] == ["in-1.warc.gz", "in-3.warc.gz", "in-5.warc.gz"]  # their own
    assert [u.name for u in per_unit[1:3]] == names[1:3] and not per_unit[:0]
    plain = [Unit("a", "x"), Unit("b", "y")]
    assert split(plain, [False, True]) == ([Unit("b", "y")], [Unit("a", "x")])


def test_a_part_list_sorts_by_name_and_equals_the_parts():
    parts = PartList(["b", "a", "c"], [fingerprint("b"), "fp-a", fingerprint("c")])
    assert list(parts.by_name()) == [Part("a", "fp-a"), Part("b", fingerprint("b")), Part("c", fingerprint("c"))]
    assert parts.by_name().by_name() is parts.by_name() or list(parts.by_name().by_name()) == list(parts.by_name())
    assert parts == [Part("b", fingerprint("b")), Part("a", "fp-a"), Part("c", fingerprint("c"))]
    assert PartList.of(list(parts)) == parts and PartList.of(parts) is parts
    a, b = PartList(["x"], ["1"]), PartList([sys_copy("x")], ["2"])
    assert a.names[0] is b.names[0]  # interned: one string per name whatever lists it


def sys_copy(s: str) -> str:
    return "".join(list(s))  # a new string of the same value


def test_a_marker_map_gives_the_markers_it_was_given():
    fp = fingerprint("u")
    markers = MarkerMap()
    markers.add("u", Marker(fp, complete=True, documents_part=True))
    markers.add("v", Marker(fingerprint("v"), complete=False, empty=True))
    markers.add("old", Marker("fp-old", documents_part=True))  # an earlier version's fingerprint
    assert markers["u"] == Marker(fp, True, True, False) and markers["v"] == Marker(
        fingerprint("v"), False, False, True
    )
    assert markers["old"] == Marker("fp-old", True, True, False) and markers.get("w") is None
    assert sorted(markers) == ["old", "u", "v"] and len(markers) == 3 and "old" in markers
    assert markers.is_current("u", fp) and not markers.is_current("u", fingerprint("x"))
    assert not markers.is_current("v", fingerprint("v"))  # incomplete: a file it published is gone
    assert markers.is_current("old", "fp-old") and not markers.is_current("w", fp)
    assert markers.published_part("u") and not markers.published_part("v") and markers.published_part("old")
    markers.add("old", Marker(fp))  # rewritten with an engine fingerprint
    assert markers["old"] == Marker(fp) and len(markers) == 3


def test_a_name_set_answers_as_a_set_of_the_names_in_a_fraction_of_its_memory():
    names = [f"part-{i:06d}.parquet" for i in range(0, 20_000, 2)] + ["é/ü.parquet", "a b", "z", "part-000001"]
    listing = NameSet(reversed(names))  # in any order, as a folder lists
    asked = [*names, "part-000001.parquet", "part-019999.parquet", "", "zz", "a", "é", "part-000000.parquet\0"]
    assert [n in listing for n in asked] == [n in set(names) for n in asked] and len(listing) == len(names)
    assert "x" not in NameSet([]) and len(NameSet([])) == 0
    # ~20 B a name of 20 characters; a set of them: ~110 B a name
    assert _traced_size(lambda: NameSet(names)) < 30 * len(names)


def _traced_size(build) -> int:
    """Python bytes what ``build()`` makes holds, while it is held (it must not be empty)."""
    gc.collect()
    tracemalloc.start()
    try:
        held = build()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held
    return size


def test_paths_give_back_the_paths_in_a_fraction_of_a_lists_memory(tmp_path):
    odd = ["a.warc.gz", "/", "s3://b/k/", "s3://bucket/crawl/é ü.jsonl", "/tmp/x\udcff.warc", "", "//x"]
    listed = [
        f"s3://commoncrawl/crawl-data/CC-MAIN-2024-10/segments/{i % 97}/warc/CC-{i:05d}.warc.gz" for i in range(20_000)
    ]
    paths = Paths([*odd, *listed])
    assert list(paths) == [*odd, *listed] and len(paths) == len(odd) + len(listed)
    assert paths[4] == "/tmp/x\udcff.warc" and paths[-1] == listed[-1] and list(paths[1:3]) == odd[1:3]
    assert paths == [*odd, *listed] and paths != [*odd, *listed[:-1]] and Paths() == [] and not Paths()
    for outside in (len(paths), -len(paths) - 1):
        with pytest.raises(IndexError):
            paths[outside]
    assert pickle.loads(pickle.dumps(paths)) == paths
    assert len(pickle.dumps(Paths(listed))) < 30 * len(listed)  # its 16-character name and 8 B; a list: ~85 B a path
    assert _traced_size(lambda: Paths(listed)) < 30 * len(listed)  # the strings: ~135 B a path
    Storage(str(tmp_path)).write_json({"inputs": Paths(odd[:4])}, "run.json")  # run.json records them as a list
    assert json.loads((tmp_path / "run.json").read_text()) == {"inputs": odd[:4]}


def test_a_folders_markers_are_read_as_listed_with_its_empty_units_records_last(tmp_path, monkeypatch):
    storage = Storage(str(tmp_path))
    own = {f"u{i:03d}": fingerprint("own", i) for i in range(300)}
    for name, fp in own.items():
        storage.write_json(
            {"unit": name, "fingerprint": fp, "outputs": {"documents_part": True}}, "_done", "p", f"{name}.json"
        )
    empty = [UnitResult(n, totals={"groups": 1}, empty=True) for n in ("u001", "u002", "e1")]
    marker_store.record_empty(storage, "p", "groups", True, "step-fp", empty)
    # a unit with its own marker of the record's fingerprint keeps its own; one of another is the record's
    storage.write_json(
        {"unit": "u002", "fingerprint": marker_store.unit_fingerprint("step-fp", "u002")}, "_done", "p", "u002.json"
    )

    def whole_listing(*a, **k):
        raise AssertionError("a sorted list of the folder's names")

    monkeypatch.setattr(Storage, "list", whole_listing)
    found = marker_store.read(storage, "p")
    assert len(found) == 301 and found["u000"] == Marker(own["u000"], documents_part=True)
    assert found["u001"] == Marker(marker_store.unit_fingerprint("step-fp", "u001"), empty=True)
    assert found["u002"] == Marker(marker_store.unit_fingerprint("step-fp", "u002"))  # its own, not the record's
    assert found["e1"].empty


def _planned(tmp_path, n: int, warc) -> tuple[int, int]:
    """Python bytes the plan of phase 1 holds over ``n`` input files, every one done (its units, markers and parts,
    cached in the run context as a run keeps them), and the number of its parts."""
    folder = tmp_path / f"in-{n}"
    folder.mkdir()
    for i in range(n):
        os.link(warc, folder / f"CC-MAIN-{i:05d}.warc.gz")
    out = tmp_path / f"out-{n}"
    cfg = parse_config({"inputs": [str(folder / "*.warc.gz")], "output": str(out)})
    storage = Storage(str(out))
    ctx = plan_context(cfg, progress=False)
    phase = ctx.phases[0]
    for u in ctx.units_of(phase):  # each unit done: its marker and its part
        storage.write_json(
            {"unit": u.name, "fingerprint": u.fingerprint, "outputs": {"documents_part": True}},
            *("_done", phase.name, f"{u.name}.json"),
        )
        (out / "documents" / phase.name).mkdir(parents=True, exist_ok=True)
        (out / "documents" / phase.name / f"part-{u.name}.parquet").touch()
    ctx = plan_context(cfg, progress=False)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        ctx.focus(ctx.phases[1])  # the next phase runs: it keeps the plan of the one it reads
        units = ctx.units_of(phase)
        assert all(ctx.current(phase, units))
        parts = ctx.parts(phase)
        ctx.markers(phase)  # read again (parts dropped them): what a phase's run holds at once
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    return held, len(parts)


def test_the_plan_of_a_phase_holds_a_few_dozen_bytes_a_unit_beside_its_name(tmp_path, warc_factory):
    """Phase 1's units, their markers and the parts they made, planned over 200 and 1,200 input files: per unit
    the plan holds its name (one string, shared by the three) and ~100 B more; as objects (a unit with a params
    dict, a marker, a part: each with a fingerprint string) it was ~700 B a unit."""
    warc = warc_factory("one.warc.gz", [Page("https://a.example/1", html("A", "some text").encode())])
    small, n_small = _planned(tmp_path, 200, warc)
    large, n_large = _planned(tmp_path, 1200, warc)
    assert (n_small, n_large) == (200, 1200)
    per_unit = (large - small) / 1000
    name = len("CC-MAIN-00000-12345678") + 49  # a name's string
    assert per_unit < name + 160, per_unit
