"""A phase is planned and run in one Ray task beside the driver (pipeline/engine/beside.py), which never lists its
units; a step declared ``in_task`` runs there too, seeing the job as the driver would (the working directory, the
plan, the memo); the phase's summary comes back to the driver, an error raised as its own type; its MAP units are
resumed like any others."""

from __future__ import annotations

import logging
import os
import time

import pytest

from core.storage import OutputError
from pipeline.config import parse_config
from pipeline.context import RunContext
from pipeline.distribute import Progress
from pipeline.engine import beside
from pipeline.engine.run import run_phase
from pipeline.phase import FINAL, MAP, PARTS, ROLE_EXPORT, SHUFFLE, Phase, Step
from pipeline.result import UnitResult
from pipeline.units import UnitWork
from tests.dedup_standalone import FinishedParts, finished_parts
from tests.pipeline.engine.test_engine import _parts

pytestmark = pytest.mark.ray


def _count(job, todo):
    """MAP, in a task: each part marked, its process named; the memo says which parts it saw."""
    job.memo.setdefault("counted", []).extend(u.name for u in todo)
    for unit in todo:
        with UnitWork.for_phase(job.storage, job.phase.name, unit) as work:
            yield work.commit(UnitResult(unit.name, totals={"parts": 1, f"pid-{os.getpid()}": 1}))


def _look(job):
    """SHUFFLE, in a task: what it sees of the run; a setting asks it to fail as a full disk would."""
    if job.config.dedup.batch_docs == 13:
        raise OutputError("the output is full")
    logging.getLogger("pipeline.tests").warning("a warning from the task")  # the driver logs it as its own
    job.memo["looked"] = os.getpid()
    plans = [p.step.name for p in job.ctx.step_plans(job.phase)]  # the driver's plan, given to the task
    seen = {"cwd": os.getcwd(), "pid": os.getpid(), "plans": plans, "parts": [p.name for p in job.parts]}
    return {**seen, "counted": sorted(job.memo.get("counted", []))}


def _done(job, unit):
    """FINAL, in the phase's task: what the steps before it left in the memo and the summary."""
    counted_by = sorted(k for k in job.totals["count"].totals if k.startswith("pid-"))
    seen = {"looked": job.memo["looked"], "final": os.getpid(), "counted_by": counted_by}
    return UnitResult(unit.name, totals={**seen, **job.summary})


class BesidePhase(Phase):
    name = "beside"
    unit_kind = "corpus"
    role = ROLE_EXPORT

    def steps(self, config):
        return [
            Step("count", "parts", MAP, _count, reads=(PARTS,), resume=True, in_task=True),
            Step(
                "look",
                "the run as a task sees it",
                SHUFFLE,
                _look,
                depends=("count",),
                sections=("dedup.batch_docs",),
                in_task=True,
            ),
            Step("done", "the corpus", FINAL, _done, depends=("look",), unit="_all", counted=True),
        ]


def _bars(job):
    """SHUFFLE, in a task: a bar of 3 parts, drawn where the driver says."""
    progress = Progress("beside: bars", 3, "part", job.ctx.progress, counts=("kept",))
    for kept in (2, 0, 1):
        progress.update({"kept": kept})
    progress.close()
    return {"bar": type(progress.bar).__name__}


class BarsPhase(BesidePhase):
    def steps(self, config):
        return [
            Step("bars", "a bar drawn where the driver says", SHUFFLE, _bars, in_task=True),
            Step("done", "the corpus", FINAL, _summed, depends=("bars",), unit="_all", counted=True),
        ]


def _summed(job, unit):
    return UnitResult(unit.name, totals=dict(job.summary))


def _run(storage, batch_docs: int = 1, phase: Phase | None = None, progress: bool = False) -> dict:
    cfg = parse_config({"inputs": ["x"], "output": storage.root_uri, "dedup": {"batch_docs": batch_docs}})
    phases = [FinishedParts("extracted"), phase or BesidePhase()]
    ctx = RunContext(cfg, storage, [], phases, progress=progress)
    ctx.use_parts("extracted", finished_parts(storage, "extracted"))
    return run_phase(ctx, ctx.phases[-1])


def _contexts_put(ray, monkeypatch) -> list:
    """The run contexts put in Ray's object store from now on (what tasks are given), as they are put."""
    put, contexts = ray.put, []

    def counted(value, **kw):
        contexts.extend([value] if isinstance(value, RunContext) else [])
        return put(value, **kw)

    monkeypatch.setattr(ray, "put", counted)
    return contexts


def test_a_phase_runs_in_a_task_beside_the_driver_and_hands_back_what_it_found(
    ray_local, tmp_path, monkeypatch, caplog
):
    storage = _parts(tmp_path, {"a": 3, "b": 5})
    contexts = _contexts_put(ray_local, monkeypatch)

    def planned_in_the_driver(*args, **kwargs):
        raise AssertionError("the driver planned the phase: its units, steps or markers")

    for what in ("units_of", "step_plans", "markers"):  # the driver's class only: the task imports its own
        monkeypatch.setattr(RunContext, what, planned_in_the_driver)
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        summary = _run(storage)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [("pipeline.tests", "a warning from the task")]
    assert len(contexts) == 1  # the run as the task sees it: put once for the phase, its steps run there
    assert summary["units"] == 1 and not summary["failed_units"]
    (done,) = list(markers_of(storage, "_all"))
    totals = done["totals"]
    assert totals["final"] == totals["pid"] == totals["looked"] != os.getpid()  # one task, the memo passed on
    assert (
        totals["cwd"] == os.getcwd() and totals["plans"] == ["count", "look", "done"] and totals["parts"] == ["a", "b"]
    )
    assert totals["counted"] == ["a", "b"]  # the MAP task's memo reached the SHUFFLE task
    assert totals["counted_by"] and f"pid-{os.getpid()}" not in totals["counted_by"]
    # its MAP units are marked as the engine's: resumed on a rerun (the shuffle and final steps rerun)
    again = _run(storage, batch_docs=2)
    assert again["units_skipped"] == 0 and markers_of(storage, "_all")[0]["totals"]["counted"] == []


def test_the_run_as_a_phases_task_sees_it_is_put_once_for_the_run(ray_local, tmp_path, monkeypatch):
    storage = _parts(tmp_path, {"a": 3})
    contexts = _contexts_put(ray_local, monkeypatch)
    cfg = parse_config({"inputs": ["x"], "output": storage.root_uri, "dedup": {"batch_docs": 1}})
    ctx = RunContext(cfg, storage, [], [FinishedParts("extracted"), BesidePhase()], progress=False)
    ctx.use_parts("extracted", finished_parts(storage, "extracted"))
    first, again = run_phase(ctx, ctx.phases[-1]), run_phase(ctx, ctx.phases[-1])
    assert first["units_skipped"] == 0 and again["units_skipped"] == 1 and len(contexts) == 1


def test_an_error_in_a_step_run_in_a_task_is_raised_in_the_driver_as_its_own(ray_local, tmp_path):
    storage = _parts(tmp_path, {"a": 3})
    with pytest.raises(OutputError, match="the output is full"):
        _run(storage, batch_docs=13)


@pytest.mark.parametrize("terminal", [True, False])
def test_a_task_draws_its_bars_on_the_drivers_terminal_and_logs_lines_without_one(
    ray_local, tmp_path, monkeypatch, terminal
):
    from ray.experimental import tqdm_ray

    states = []
    monkeypatch.setattr(tqdm_ray.instance(), "process_state_update", states.append)  # the driver draws them
    monkeypatch.setattr(beside, "_terminal", lambda: terminal)
    storage = _parts(tmp_path, {"a": 3})
    summary = _run(storage, phase=BarsPhase(), progress=True)
    assert not summary["failed_units"]
    bar = markers_of(storage, "_all")[0]["totals"]["bar"]
    if not terminal:  # a cluster job's console: the task logs a line at an interval, as it did
        assert bar == "NoneType" and not states
        return
    assert bar == "_DriversBar"
    deadline = time.monotonic() + 20  # the task's output reaches the driver a moment later
    while not (states and states[-1]["closed"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    last = states[-1]
    assert last["closed"] and (last["x"], last["total"], last["unit"]) == (3, 3, "part")
    assert last["desc"] == "beside: bars kept=3"


def markers_of(storage, unit: str) -> list[dict]:
    return [storage.read_json("_done", "beside", f"{unit}.json")]
