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
    rich = (
        "<html><body><article>"
        + "".join(
            f"<p>Paragraph {i} has text with enough words to count. {'More words follow here. ' * 6}</p>"
            for i in range(8)
        )
        + "</article></body></html>"
    )
    stage = ExtractStage(ExtractConfig(extractor="cascade"))
    stats = ChainStats()
    run_chain([stage], pa.table({"id": ["1", "2"], "html": pa.array([page, rich], pa.large_string())}), stats)
    assert stats.counters["extract.fast"] == 1
    assert stats.counters["extract.slow"] + stats.counters["extract.slow_empty"] == 1
    assert stage.drain_counters() == Counter()  # drained


class Fragile:
    """A stage with a real bug on some rows (an int() of text), as an upgrade might bring."""

    name = "fragile"

    def __call__(self, batch):
        values = [int(t) for t in batch.column("text").to_pylist()]
        return reject_where(batch, [v > 100 for v in values], "too_big")


def test_a_stage_that_raises_costs_only_the_rows_it_raises_on(caplog):
    batch = pa.table({"id": ["a", "b", "c", "d"], "url": ["u"] * 4, "text": ["5", "oops", "500", "7"]})
    stats = ChainStats()
    with caplog.at_level("ERROR", logger="stages.base"):
        kept, rejected = run_chain([Fragile(), Counting()], batch, stats)
    assert kept.column("id").to_pylist() == ["a", "d"]
    rows = {r["id"]: r for t in rejected for r in t.to_pylist()}
    assert rows["b"]["reason"] == "stage_error" and rows["b"]["stage"] == "fragile"
    assert "ValueError" in rows["b"]["details"] and "oops" in rows["b"]["details"]
    assert rows["c"]["reason"] == "too_big"
    assert stats.rejected == {"stage_error": 1, "too_big": 1}
    assert stats.counters["fragile.error.ValueError"] == 1 and stats.counters["fragile.batch_error.ValueError"] == 1
    assert stats.counters["counting.rows"] == 2
    # the first traceback of a kind is logged (it says where the bug is), once per process
    assert any("Traceback" in r.getMessage() and "ValueError" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level("ERROR", logger="stages.base"):
        run_chain([Fragile()], batch, ChainStats())
    assert not [r for r in caplog.records if "Traceback" in r.getMessage()]


def test_a_stage_that_adds_columns_keeps_them_for_the_rows_that_pass():
    class AddLength:
        name = "length"

        def __call__(self, b):
            lengths = [len(t) if t != "boom" else 1 // 0 for t in b.column("text").to_pylist()]
            return b.append_column("length", pa.array(lengths, pa.int64()))

    batch = pa.table({"id": ["a", "b", "c"], "text": ["xx", "boom", "yyyy"]})
    kept, rejected = run_chain([AddLength()], batch, ChainStats())
    assert kept.select(["id", "length"]).to_pylist() == [{"id": "a", "length": 2}, {"id": "c", "length": 4}]
    (rej,) = rejected
    assert (
        rej.column("reason").to_pylist() == ["stage_error"] and "ZeroDivisionError" in rej.column("details")[0].as_py()
    )


def test_note_error_logs_the_first_traceback_of_each_kind_once(caplog):
    from stages.base import note_error

    with caplog.at_level("DEBUG", logger="stages.base"):
        for exc in (KeyError("k1"), KeyError("k2"), TypeError("t")):
            try:
                raise exc
            except Exception as e:
                assert note_error("test_note_error", e) == type(e).__name__
    tracebacks = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [("KeyError" in r.getMessage(), "TypeError" in r.getMessage()) for r in tracebacks] == [
        (True, False),
        (False, True),
    ]
    assert all("Traceback" in r.getMessage() for r in tracebacks)
