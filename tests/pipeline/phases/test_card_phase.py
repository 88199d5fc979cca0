"""The card phase's step: the card is computed in a Ray task; whatever becomes of that task, the step returns the
card's unit's result (a failed unit, retried on rerun), never an exception that ends the run."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from pipeline.engine import beside
from pipeline.phase import Unit
from pipeline.phases import card as card_phase
from pipeline.result import UnitResult


def _job():
    return SimpleNamespace(ctx="the run's context")


def test_a_card_task_that_died_is_a_failed_unit_and_one_line(monkeypatch, caplog):
    def died(*args, **kwargs):
        raise RuntimeError("the worker running the task has exited")

    monkeypatch.setattr(beside, "call", died)
    with caplog.at_level(logging.ERROR, logger="pipeline.phases.card"):
        result = card_phase._card(_job(), Unit("run", "fp"))
    assert result.unit == "run" and result.failed == "RuntimeError: the worker running the task has exited"
    assert [r.getMessage() for r in caplog.records] == ["card: RuntimeError: the worker running the task has exited"]


def test_the_tasks_result_and_its_line_come_back_as_they_were(monkeypatch, caplog):
    seen = {}

    def task(fn, ctx, unit, **options):
        seen.update(fn=fn, ctx=ctx, options=options)
        return UnitResult.failure(unit.name, "a part file could not be read"), "a part file could not be read"

    monkeypatch.setattr(beside, "call", task)
    with caplog.at_level(logging.ERROR, logger="pipeline.phases.card"):
        result = card_phase._card(_job(), Unit("run", "fp"))
    assert result.failed == "a part file could not be read" and seen["fn"] is card_phase._card_task
    assert seen["ctx"] == "the run's context" and seen["options"] == {"name": "card"}
    assert [r.getMessage() for r in caplog.records] == ["card: a part file could not be read"]
