"""Per-record errors of our own code are counted and reported as a share, not hidden among rejections."""

from __future__ import annotations

import logging
from collections import Counter

from pipeline.phases.extracted import ExtractedPhase
from pipeline.result import UnitResult, summarize


def _file(responses: int, reasons: dict) -> UnitResult:
    kept = responses - sum(reasons.values())
    return UnitResult(
        "u",
        docs_in=responses,
        kept=kept,
        rejected=responses - kept,
        by_reason=Counter(reasons),
        totals={"rows": responses, "responses": responses, "records_by_type": {"response": responses}},
    )


def test_error_share_is_in_the_summary_and_logged_above_one_percent(caplog):
    phase = ExtractedPhase()
    with caplog.at_level(logging.WARNING):
        quiet = phase.finish(summarize([_file(1000, {"no_text": 50, "extract_error": 5})]))
    assert quiet["errors"] == {"extract_error": {"count": 5, "share": 0.005}}
    assert not caplog.records
    with caplog.at_level(logging.WARNING):
        loud = phase.finish(summarize([_file(600, {"extract_error": 180}), _file(400, {"no_text": 10})]))
    assert loud["errors"] == {"extract_error": {"count": 180, "share": 0.18}}
    assert "per-record errors above 1%" in caplog.text


def test_no_errors_no_entry():
    assert ExtractedPhase().finish(summarize([_file(10, {"no_text": 2})]))["errors"] == {}
