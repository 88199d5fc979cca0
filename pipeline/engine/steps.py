"""A phase of steps, run as declared (pipeline.phase.Step): dedup's corpus-wide steps, the shards, the card.

When a phase has work (one of its counted units is not done), the engine

1. deletes what will be rewritten: the outputs and markers of every step that reruns wholesale (not
   ``resume``), the outputs of a resumable step's units to do (all of its outputs when every unit is to
   do), and what steps the config no longer runs left behind;
2. runs the enabled steps in order: a resumable step only its units without a current marker (step 1 of
   dedup, part by part; the shard groups), the others all of theirs; each step sees the parts, the results
   of the MAP steps before it and the summary the SHUFFLE steps returned (a :class:`Job`);
3. marks a FINAL step's unit itself (a MAP step's workers mark theirs, after publishing their outputs),
   and records a step's empty units together (pipeline.engine.markers);
4. once every counted unit is done, deletes the outputs and markers of the steps the config does not keep.

A unit's failure stops the steps that depend on its step.  Every failure is reported once, on a counted
unit: a failed counted unit is its own report; a failure of another step (a part whose signatures could not
be computed) fails the counted units after it, with a message that names the units.  Non-counted failures
are also in the phase summary's ``failed_steps``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from core.memory import resident_mb, trim
from pipeline.engine import beside, markers
from pipeline.engine.columns import PartList
from pipeline.engine.units import StepPlan, reads_parts
from pipeline.phase import MAP, SHUFFLE, Phase, Step
from pipeline.result import UnitResult
from pipeline.units import UnitWork

if TYPE_CHECKING:
    from core.storage import Storage
    from pipeline.context import RunContext

log = logging.getLogger(__name__)

#: Failures named in a counted unit's message, at most.
NAMED_FAILURES = 5


@dataclass
class Job:
    """What a step's ``run`` sees: the run, its phase, the current step, the parts it reads and what the
    steps before it left."""

    ctx: RunContext
    phase: Phase
    #: the parts of the phase it reads (sorted by name), and that phase's name
    parts: PartList
    source: str | None
    plan: StepPlan | None = None
    #: per MAP step: the sum of its units' results (done before or now; pipeline.result.UnitResult.merge)
    totals: dict[str, UnitResult] = field(default_factory=dict)
    #: the phase summary so far: what the SHUFFLE steps returned and the MAP steps summarized, in order
    summary: dict = field(default_factory=dict)
    #: seconds each step took in this run
    seconds: dict[str, float] = field(default_factory=dict)
    #: what a step hands a later one in this run (in memory: the steps after a resumed one always rerun)
    memo: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self):
        return self.ctx.config

    @property
    def storage(self) -> Storage:
        return self.ctx.storage

    @property
    def step(self) -> Step:
        return self.plan.step

    @property
    def fingerprint(self) -> str:
        """The current step's fingerprint."""
        return self.plan.fingerprint

    def workers(self) -> int:
        return self.ctx.workers()

    def unit_results(self, step: str) -> list[UnitResult]:
        """Each unit's result of a MAP step that ran, read from its marker: for a step of few units (the shard
        groups), whose results a later step needs one by one; the driver keeps only their sum (:attr:`totals`)."""
        plan = next(p for p in self.ctx.step_plans(self.phase) if p.step.name == step)
        wanted = {u.name: u.fingerprint for u in plan.units}
        folder = None if plan.step.top else step
        return list(markers.results(self.storage, self.phase.name, folder, wanted))

    def shipped(self) -> Job:
        """This job as a task gets it (``Step.in_task``): all but the driver's context and the parts, which the
        context the task is given holds (pipeline/engine/beside.py: sent once for the phase, not with each step)."""
        return replace(self, ctx=None, parts=PartList())

    def received(self, ctx: RunContext) -> Job:
        """The job in the task it was shipped to (:meth:`shipped`), on the run as that task sees it."""
        self.ctx = ctx
        if self.source is not None:  # (the phases are copies here: found by name)
            self.parts = ctx.parts(next(p for p in ctx.phases if p.name == self.source)).by_name()
        return self


def run_steps(ctx: RunContext, phase: Phase, failures: dict) -> Iterator[UnitResult]:
    """Run the phase's steps (it has work); yields the results of its counted units as they come, and puts
    the failures of its other steps' units in ``failures`` (step -> unit -> error)."""
    plans = ctx.step_plans(phase)
    source = ctx.source(phase) if any(reads_parts(p.step) for p in plans) else None
    parts = ctx.parts(source).by_name() if source is not None else PartList()
    _clear(ctx, phase, plans)
    job = Job(ctx, phase, parts, source.name if source is not None else None)
    failed: dict[str, dict[str, str]] = {}  # step -> unit -> error (empty: not run, a step it depends on failed)
    unreported: dict[str, dict[str, str]] = {}  # failures of steps whose units are not the phase's
    fatal: str | None = None
    for plan in plans:
        step = plan.step
        if any(d in failed for d in step.depends):
            failed[step.name] = {}
            if step.counted and unreported:  # the phase's units carry the failure of the steps before them
                message = _message(unreported)
                for unit in plan.units:
                    yield UnitResult.failure(unit.name, message, fatal=fatal)
                unreported.clear()
            continue
        job.plan = plan
        t0 = time.perf_counter()
        if step.kind == MAP:
            errors, step_fatal = {}, None
            with contextlib.closing(_map(ctx, phase, job, plan)) as results:
                for r in results:
                    if r.failed is not None:
                        errors[r.unit] = r.failed
                        step_fatal = step_fatal or r.fatal
                    if step.counted:
                        yield r
            if errors:
                failed[step.name] = errors
                if not step.counted:
                    unreported[step.name] = failures[step.name] = errors
                    fatal = fatal or step_fatal
        elif step.kind == SHUFFLE:
            if parts or source is None:  # a corpus without parts has nothing to shuffle
                job.summary.update(_shuffle(job) or {})
        else:
            (unit,) = plan.units
            result = step.run(job, unit)
            if result.failed is None:
                result = UnitWork.for_phase(ctx.storage, phase.name, unit).commit(result)
            else:
                failed[step.name] = {unit.name: result.failed}
                if not step.counted:
                    unreported[step.name] = failures[step.name] = failed[step.name]
            if step.counted:
                yield result
        job.seconds[step.name] = round(time.perf_counter() - t0, 2)
        trim()  # what the step freed (a shuffle's pieces, a list of parts) goes back before the next one starts
        log.info(
            "phase %s: step %s done in %.1f s (the phase's process: %s MB resident)",
            phase.name,
            step.name,
            job.seconds[step.name],
            resident_mb(),
        )
    if not failed:
        _discard_intermediates(ctx, phase, plans)


def _map(ctx: RunContext, phase: Phase, job: Job, plan: StepPlan) -> Iterator[UnitResult]:
    """A MAP step's units to do, through its ``run``; then its results, as the later steps see them."""
    step = plan.step
    units = plan.units
    done, todo = units.split(ctx.current(phase, units) if step.resume else [False] * len(units))
    total = UnitResult("")
    for r in ctx.results(phase, done):  # what later steps see of the units done before: their sum
        total = total.merge(r)
    empty = []
    if todo:
        results = _streamed(job, todo) if step.in_task else step.run(job, todo)
        try:
            for r in results:
                if r.failed is None:
                    total = total.merge(r)
                    if r.empty:
                        empty.append(r)
                yield r
        finally:
            getattr(results, "close", lambda: None)()
    markers.record_empty(ctx.storage, phase.name, step.name, step.top, plan.fingerprint, empty)
    job.totals[step.name] = total
    if step.summarize is not None:
        job.summary.update(step.summarize(total))


def _shuffle(job: Job) -> dict | None:
    """A SHUFFLE step's part of the summary, from its run here or in a task beside the driver (``in_task``)."""
    if not job.step.in_task:
        return job.step.run(job)
    out, job.memo = beside.call(_shuffle_task, job.ctx, job.shipped(), running=job.phase, name=_task_name(job))
    return out


def _task_name(job: Job) -> str:
    """A step's task as its log lines name it: ``(deduped.edges pid=N) ...``."""
    return f"{job.phase.name}.{job.step.name}"


def _shuffle_task(ctx: RunContext, job: Job) -> tuple[dict | None, dict]:
    job.received(ctx)
    return job.step.run(job), job.memo


@dataclass(frozen=True)
class _Memo:
    """What a MAP step run in a task left in ``job.memo``: the last item its task yields."""

    memo: dict


def _streamed(job: Job, todo) -> Iterator[UnitResult]:
    """A MAP step's results from its run in a task beside the driver (``in_task``), as its units finish."""
    items = beside.stream(_map_task, job.ctx, job.shipped(), todo, running=job.phase, name=_task_name(job))
    with contextlib.closing(items):
        for item in items:
            if isinstance(item, _Memo):
                job.memo = item.memo
            else:
                yield item


def _map_task(ctx: RunContext, job: Job, todo) -> Iterator[UnitResult | _Memo]:
    job.received(ctx)
    yield from job.step.run(job, todo)
    yield _Memo(job.memo)


def _message(failures: dict[str, dict[str, str]]) -> str:
    step, errors = next(iter(failures.items()))
    named = "; ".join(f"{k}: {v}" for k, v in list(errors.items())[:NAMED_FAILURES])
    return f"{len(errors)} units of step {step} failed: {named}"


def _remove(storage: Storage, path: tuple[str, ...]) -> None:
    """Delete a file or a folder under the output root, if it is there."""
    info = storage.fs.get_file_info(storage.path(*path))
    if info.type == pafs.FileType.Directory:
        storage.fs.delete_dir(info.path)
    elif info.type == pafs.FileType.File:
        storage.fs.delete_file(info.path)


def _outputs(step: Step, config) -> list[tuple[str, ...]]:
    return list(step.outputs(config)) if step.outputs is not None else []


def _clear(ctx: RunContext, phase: Phase, plans: list[StepPlan]) -> None:
    """Delete what this run of the phase rewrites, before any step runs: a reader never sees an output of an
    earlier run beside the new ones (a manifest naming shards being rewritten, edges of removed parts)."""
    config, storage = ctx.config, ctx.storage
    active = {p.step.name for p in plans}
    for step in phase.steps(config):
        if step.name not in active:  # the config no longer runs it: what it wrote is stale, and so are its markers
            for path in _outputs(step, config):
                _remove(storage, path)
            if not step.top:
                storage.delete_dir(*markers.folder(phase.name, step.name))
    for plan in plans:
        step = plan.step
        if not step.resume:
            for path in _outputs(step, config):
                _remove(storage, path)
            markers.delete(storage, phase.name, None if step.top else step.name, list(plan.names))
            continue
        todo = [n for n, c in zip(plan.names, ctx.current(phase, plan.units), strict=True) if not c]
        if todo and len(todo) == len(plan.names):
            for path in _outputs(step, config):
                _remove(storage, path)
        elif step.unit_outputs is not None:
            for name in todo:
                for path in step.unit_outputs(config, name):
                    _remove(storage, path)


def _discard_intermediates(ctx: RunContext, phase: Phase, plans: list[StepPlan]) -> None:
    """Every step ran: delete the outputs and markers of the steps whose outputs the config does not keep."""
    for plan in plans:
        if not plan.step.keep(ctx.config):
            for path in _outputs(plan.step, ctx.config):
                _remove(ctx.storage, path)
            if not plan.step.top:
                ctx.storage.delete_dir(*markers.folder(phase.name, plan.step.name))
