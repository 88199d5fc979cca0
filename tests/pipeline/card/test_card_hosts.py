"""pipeline/card/hosts.py: the top hosts and the numbers of hosts, added up by host in blocks, are those of one
count over every document (issue 39: per-host data is added up outside the driver)."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa

from pipeline.card import hosts


def _tasks(rng: random.Random, tasks: int) -> tuple[list[dict], Counter, Counter]:
    """Tasks' aggregates (two phases' documents and rejected rows), and the counts of one pass over them all."""
    names = [f"h{i}.example" for i in range(60)] + ["tie-a.example", "tie-b.example"]
    out, kept, removed = [], Counter(), Counter()
    for _ in range(tasks):
        files = {}
        for key in ("extracted/documents", "extracted/rejected", "final/documents", "final/rejected"):
            counts = Counter({h: rng.randint(1, 9) for h in rng.sample(names, 12)})
            files[key] = {"rows": sum(counts.values()), "hosts": dict(counts)}
            if key == "final/documents":
                kept.update(counts)
            elif key.endswith("/rejected"):
                removed.update(counts)
        out.append(files)
    return out, kept, removed


def _top(c: Counter, n: int) -> list[list]:
    return [[h, k] for h, k in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def test_the_tops_of_blocks_of_sums_are_the_top_of_the_whole():
    rng = random.Random(7)
    tasks, kept, removed = _tasks(rng, 9)
    rows = pa.concat_tables([hosts.split_off(files, "final") for files in tasks])
    assert all("hosts" not in agg for files in tasks for agg in files.values())  # nothing per host left behind
    summed = hosts._sums(rows)
    # blocks as an aggregation by host makes them: each host's sum in one block
    blocks = [summed.filter(pa.array([hash(h) % 4 == b for h in summed.column("host").to_pylist()])) for b in range(4)]
    found = hosts.merged(pa.concat_tables([hosts.tops(b, 5) for b in blocks]), 5)
    assert found == {
        "kept_distinct": len(kept),
        "kept": _top(kept, 5),
        "removed_distinct": len(removed),
        "removed": _top(removed, 5),
    }
    assert hosts.merged(hosts.tops(summed, 5), 5) == found  # one block: the same


def test_ties_go_by_name_whichever_block_holds_them():
    summed = pa.table(
        [["kept"] * 4, ["b.example", "a.example", "d.example", "c.example"], [3, 3, 3, 1]], schema=hosts.SCHEMA
    )
    blocks = [summed.slice(0, 1), summed.slice(1, 1), summed.slice(2, 2)]
    found = hosts.merged(pa.concat_tables([hosts.tops(b, 2) for b in blocks]), 2)
    assert found["kept"] == [["a.example", 3], ["b.example", 3]] and found["kept_distinct"] == 4
    assert found["removed"] == [] and found["removed_distinct"] == 0
