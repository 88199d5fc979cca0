"""Dedup at a snapshot's shape (issue 39): many small parts must not make the driver grow with parts x parts.

The slow test runs the deduped phase in a child process (its driver) on ``PARTS`` phase-1 parts of a few
documents each and reads the child's peak RSS (``ru_maxrss``: exact, not sampled).  Before issue 39's fixes a
dataset of one block per part went into Ray Data's sort shuffle, which makes (input blocks)^2 objects, and every
task carried the list of all part names: the driver reached 12 GB at 8,000 parts.  ``max_host_docs`` at its
lower bound makes step 2a count hosts (a snapshot's path above 50,000 documents) and ``partition_rows`` makes
steps 2a and 2 shuffle, so that a CI-sized corpus takes the paths a snapshot takes.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import subprocess
import sys
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import synth_corpus
from core.storage import Storage
from pipeline.card import collect
from pipeline.config import parse_config
from pipeline.dedup import context as dedup_context
from pipeline.dedup.context import DedupContext, batch_size, part_groups
from pipeline.phase import Unit

ROOT = Path(__file__).resolve().parents[2]
#: Parts: the code before issue 39 took the driver to 1,210 MB here (boilerplate 69 s, edges 24 s; 300 parts: 778 MB,
#: too near the bound to fail surely); after it, 250 MB and the whole phase in ~13 s (the test ~17 s on 2 cores).
PARTS = 400
DOCS_PER_PART = 6
DRIVER_MAX_MB = 700
DEDUP = {"partition_rows": 40_000, "minhash": {"boilerplate": {"max_host_docs": 100}}}


def _context(tmp_path, units: int) -> DedupContext:
    config = parse_config({"inputs": ["unused"], "output": str(tmp_path)})
    names = tuple(f"part-{i:06d}-abcdef12" for i in range(units))
    return DedupContext(config, Storage(str(tmp_path)), names, 2, False)


def test_a_task_gets_a_key_to_the_part_names_not_the_names(tmp_path):
    small, big = _context(tmp_path / "a", 10), _context(tmp_path / "b", 20_000)
    sizes = [len(pickle.dumps(c.parts)) for c in (small, big)]
    assert sizes[1] - sizes[0] < 16, sizes  # the same few hundred bytes for 10 or 20,000 parts
    parts = pickle.loads(pickle.dumps(big.parts))
    dedup_context._NAMES.clear()  # as in a worker process: the names come from the file the driver wrote
    assert parts.units == big.units and parts.file(19_999) == "part-part-019999-abcdef12.parquet"


def test_a_step_run_in_a_task_gets_the_dedup_context_with_a_key_to_the_part_names(tmp_path):
    """The job's memo goes to a step's task and back (Step.in_task): the dedup context carries a key to the part
    names, and the driver gets its own list back, not 90,000 new strings after every step."""
    small, big = _context(tmp_path / "a", 10), _context(tmp_path / "b", 20_000)
    big.counts["docs"] = 7
    sizes = [len(pickle.dumps(c)) for c in (small, big)]
    assert sizes[1] - sizes[0] < 64, sizes
    here = pickle.loads(pickle.dumps(big))
    assert here.units is big.units and here.counts == {"docs": 7} and here.parts == big.parts
    dedup_context._NAMES.clear()  # as in a worker process: the names come from the file the driver wrote
    there = pickle.loads(pickle.dumps(big))
    assert there.units == big.units and there.units is not big.units and there.number("part-019999-abcdef12") == 19_999


def test_part_groups_is_a_scan_per_part_done_by_one_sort():
    rng = np.random.default_rng(0)
    doc = (rng.integers(0, 50, 2_000).astype(np.int64) << 32) | rng.integers(0, 1000, 2_000)
    groups = part_groups(doc)
    assert [p for p, _ in groups] == sorted(set((doc >> 32).tolist()))
    for p, rows in groups:
        assert rows.tolist() == np.flatnonzero((doc >> 32) == p).tolist()
    assert part_groups(np.zeros(0, np.int64)) == []  # no documents: no part (a step with nothing to write)


def test_parts_are_batched_only_when_they_outnumber_the_workers():
    assert batch_size(100, 2) == 6 and batch_size(8_000, 2) == 64 and batch_size(90_000, 3_200) == 3
    assert batch_size(10, 2) == 1 and batch_size(90_000, 20_000) == 1


def test_a_batch_task_carries_its_parts_as_lists_not_a_unit_each(tmp_path):
    """A per-part step's tasks hold the parts' names and fingerprints, not a serialized unit per part (~70 MB at
    90,000 parts in the driver), and each task's lists are made when it starts; a worker makes the same units
    again, numbered."""
    ctx = _context(tmp_path, 6_400)
    units = [Unit(name, f"{i:016x}", {}, "signatures") for i, name in enumerate(ctx.units)]
    # a part's number is its place among the sorted names: no map of every name in the driver
    assert [ctx.number(n) for n in ctx.units[::997]] == list(range(0, len(units), 997))
    tracemalloc.start()
    params = [dedup_context._batch_params(units[i : i + 64], ctx.number) for i in range(0, len(units), 64)]
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # a list slot per field and a part number (an int made by the lookup, 28 B); a unit as JSON was ~200 bytes
    assert held / len(units) < 80, held / len(units)
    again = [u for p in params for u in dedup_context._batch_units(p)]
    assert again == [Unit(u.name, u.fingerprint, {"part_no": i}, "signatures") for i, u in enumerate(units)]
    chunks = [units[i : i + 64] for i in range(0, len(units), 64)]
    tasks = dedup_context._Batches("signatures", chunks, ctx.number)  # what map_units reads, a task at a time
    assert len(tasks) == 100 and [t.params for t in tasks] == params and tasks.parts("signatures-7") is chunks[7]


def write_parts(root: Path, parts: int, docs_per_part: int) -> pa.Table:
    """Phase-1 parts of the synthetic corpus (benchmarks/synth_corpus.py, 10% in planted clusters); its truth."""
    table, cluster = synth_corpus.generate(parts * docs_per_part, 0.1, seed=3)
    synth_corpus.write_parts(Storage(str(root)), table, parts)
    return pa.table({"id": table.column("id"), "cluster": pa.array(cluster, mask=cluster < 0)})


def dedup_child(root: str) -> dict:
    """In the child process: the deduped phase on ``root``, its summary and this process's peak RSS."""
    from pipeline.distribute import init_ray
    from tests.dedup_standalone import run_dedup

    config = parse_config({"inputs": ["unused"], "output": root, "dedup": DEDUP, "ray": {"num_cpus": 2}})
    init_ray(2)
    summary = run_dedup(config, Storage(root), 2, progress=False)
    # its shuffles are planned in tasks beside it (Step.in_task): Ray Data is never imported here
    return {"summary": summary, "driver_peak_mb": peak_rss_mb(), "ray_data_in_driver": "ray.data" in sys.modules}


def peak_rss_mb() -> float:
    """This process's own peak RSS: Linux's VmHWM belongs to the process's memory map, which exec makes new, while
    ru_maxrss also keeps the parent's size at the fork (a pytest process of 1.7 GB late in a full run)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.slow
@pytest.mark.ray
def test_the_driver_stays_small_over_many_small_parts(tmp_path):
    truth = write_parts(tmp_path, PARTS, DOCS_PER_PART)
    result = tmp_path / "result.json"
    code = (
        f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); "
        "from tests.pipeline.test_snapshot_scale import dedup_child; "
        f"open({str(result)!r}, 'w').write(json.dumps(dedup_child({str(tmp_path)!r}), default=str))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(result.read_text())
    s = out["summary"]
    assert s["parts"] == PARTS and s["in"] == PARTS * DOCS_PER_PART == s["kept"] + s["rejected"]
    assert s["bucket_partitions"] > 1  # step 2 shuffled, as a snapshot's does
    assert not out["ray_data_in_driver"]  # ... in a task: its executor and pieces are not the driver's
    assert out["driver_peak_mb"] < DRIVER_MAX_MB, out["driver_peak_mb"]
    # the same removals as the planted clusters call for: every removed document a copy, nearly every copy removed
    removed = {
        i
        for f in (tmp_path / "rejected" / "deduped").glob("*.parquet")
        for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()
    }
    cluster = dict(zip(truth.column("id").to_pylist(), truth.column("cluster").to_pylist(), strict=True))
    copies = sum(n - 1 for n in np.unique([c for c in cluster.values() if c is not None], return_counts=True)[1])
    assert removed and all(cluster[i] is not None for i in removed)
    assert len(removed) >= 0.95 * copies


class _Aggregate(dict):
    """A part's result that a weak reference can watch."""


def test_the_card_adds_each_part_as_it_comes_and_keeps_none():
    """combine() holds no part's aggregate once it is added (it used to sort all of them first: at 90,000 parts,
    with their example texts, gigabytes), and gives what adding them in part-name order gives."""
    names = [f"p{i:05d}" for i in range(300)]
    order = names[1::2] + names[::2]  # far out of order: the earlier half waits for its turn
    refs = []

    def result(name):
        return _Aggregate(
            unit=name,
            files={
                "final/rejected": {
                    "rows": 1,
                    "examples": [{"stage": "s", "reason": "r", "part": name, "text": "x" * 2000}],
                }
            },
        )

    def in_order():
        for i, name in enumerate(names):
            if i >= 2:  # the one before last is added and let go, unless it waits for an earlier one
                assert refs[i - 2]() is None, f"{names[i - 2]} still held"
            r = result(name)
            refs.append(weakref.ref(r))
            yield r

    units = [Unit(n, "") for n in names]
    out, _ = collect.combine(in_order(), units)
    assert out["final/rejected"]["rows"] == 300
    assert [e["part"] for e in out["final/rejected"]["examples"]] == names[:3]
    shuffled, _ = collect.combine((result(n) for n in order), units)
    assert shuffled == out


def test_every_phases_counts_of_an_input_file_share_its_name(tmp_path):
    """The card's aggregates count each phase's documents per input file (``sources``): 90,000 names in each of a
    snapshot's six aggregates, each a new string as its part's result was decoded.  Added up, a file's name is one
    string for every aggregate (and the card's table of input files)."""

    def fresh(s: str) -> str:
        return "".join(list(s))  # a new string object of the same value, as decoding a result gives

    files = [f"CC-MAIN-{i:05d}.warc.gz" for i in range(50)]
    results = [
        {
            "unit": f"p{i:05d}",
            "files": {
                k: {"rows": 1, "sources": {fresh(f): 1}}
                for k in ("extracted/documents", "deduped/documents", "final/documents")
            },
        }
        for i, f in enumerate(files)
    ]
    out, _ = collect.combine(iter(results), [Unit(r["unit"], "") for r in results])
    keys = [list(out[k]["sources"]) for k in ("extracted/documents", "deduped/documents", "final/documents")]
    assert keys[0] == files and all(a is b is c for a, b, c in zip(*keys, strict=True))
    assert out["final/documents"]["rows"] == 50 and out["final/documents"]["sources"][files[7]] == 1
