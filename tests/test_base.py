"""The stage contract's chain: rejected rows leave, stage counters are collected."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from stages.base import REJECTED_SCHEMA, ChainStats, reject_where, run_chain
from stages.extract import ExtractConfig, ExtractStage


class DropShort:
    name = "short"

    def __call__(self, batch):
        lengths = [len(t) for t in batch.column("text").to_pylist()]
        return reject_where(batch, [n < 5 for n in lengths], "too_short", [f"{n} chars" for n in lengths])


class Counting:
    name = "counting"

    def __init__(self):
        self.pending = Counter()

    def __call__(self, batch):
        self.pending["rows"] += len(batch)
        return batch

    def drain_counters(self):
        out, self.pending = self.pending, Counter()
        return out


def test_rejected_rows_leave_with_stage_reason_and_details():
    batch = pa.table({"id": ["a", "b", "c"], "url": ["u1", "u2", "u3"], "text": ["hello world", "hi", "fine text"]})
    stats = ChainStats()
    kept, rejected = run_chain([DropShort(), Counting()], batch, stats)
    assert kept.column("id").to_pylist() == ["a", "c"] and "reason" not in kept.column_names
    (rej,) = rejected
    assert rej.schema == REJECTED_SCHEMA
    assert rej.select(["id", "stage", "reason", "details"]).to_pylist() == [
        {"id": "b", "stage": "short", "reason": "too_short", "details": "2 chars"}
    ]
    assert stats.rejected == {"too_short": 1} and stats.docs_in == {"short": 3, "counting": 2}
    assert stats.counters == {"counting.rows": 2}


def test_cascade_reports_its_slow_path_share():
    page = "<html><body><div><p>Short.</p></div></body></html>"
    rich = "<html><body><article>" + "".join(f"<p>Paragraph {i} has text with enough words to count. {'More words follow here. ' * 6}</p>" for i in range(8)) + "</article></body></html>"
    stage = ExtractStage(ExtractConfig(extractor="cascade"))
    stats = ChainStats()
    run_chain([stage], pa.table({"id": ["1", "2"], "html": pa.array([page, rich], pa.large_string())}), stats)
    assert stats.counters["extract.fast"] == 1
    assert stats.counters["extract.slow"] + stats.counters["extract.slow_empty"] == 1
    assert stage.drain_counters() == Counter()  # drained
