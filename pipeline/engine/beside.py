"""Work the driver hands to one Ray task beside it: each phase of a run (pipeline.engine.run), and within it a step
declared ``in_task`` (pipeline.phase.Step) and the card, run where the phase runs.

The process that plans a Ray Data dataset owns it: its executor, its blocks' bookkeeping and the pieces a sort
shuffle cuts, in the owner's memory (Ray Data's import alone is ~70 MB, and a shuffle over a snapshot's 90,000
parts took the driver from 188 to 352 MB: issue 39).  A step run here is planned and owned by a task on the
driver's node that takes no CPU (the datasets' own tasks take them); the driver waits, holding the plan only.
The task sees the run as the driver does: its working directory (inputs named relative to it), its log level
(the step's lines on the console, prefixed with the task's pid), the run's shuffle, and the plan of the phase
it runs (:meth:`pipeline.context.RunContext.detached`).  Its warnings are logged by the driver as its own, and
its progress bars are drawn on the driver's terminal (``distribute.Progress.driver_terminal``), where the run is
watched; without one, a log line at an interval, as on a cluster.  Work handed over from inside such a task
runs in it: the task is already beside the driver.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.memory import return_free_memory
from pipeline.distribute import Progress, on_a_worker, stream_on_a_worker, use_shuffle
from pipeline.worker_logs import logging_as_the_driver

if TYPE_CHECKING:
    from pipeline.context import RunContext
    from pipeline.phase import Phase


#: this process runs a task beside the driver now (:func:`_as_the_run`): what it hands over runs here
_inside = False


def call(fn: Callable, ctx: RunContext, *args, running: Phase | None = None, name: str | None = None):
    """``fn(ctx, *args)`` in one task beside the driver, ``ctx`` as that task sees the run; returns what it returns
    (an exception it raises is raised here, as its own type).  ``name``: the task's, its log lines' prefix."""
    if _inside:
        return fn(ctx, *args)
    shipped = _shipped(ctx, running)
    result, warned = on_a_worker(_as_the_driver, fn, *shipped, args, cpus=0, beside=True, name=name or fn.__name__)
    _log(warned)
    return result


def stream(fn: Callable, ctx: RunContext, *args, running: Phase | None = None, name: str | None = None) -> Iterator:
    """What the generator ``fn(ctx, *args)`` yields, run in one task beside the driver, as it yields it."""
    if _inside:
        yield from fn(ctx, *args)
        return
    shipped = _shipped(ctx, running)
    task = name or fn.__name__
    for item in stream_on_a_worker(_yields_as_the_driver, fn, *shipped, args, cpus=0, beside=True, name=task):
        if isinstance(item, _Records):
            _log(item.records)
        else:
            yield item


class _Warned(logging.Handler):
    """A task's warnings and errors, kept to be logged by the driver as its own records: the run's log (a cluster
    job's), and whoever listens to the driver's loggers, see them as they saw the driver's."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))

    def taken(self) -> list[tuple[str, int, str]]:
        records, self.records = self.records, []
        return records


def _log(records: list[tuple[str, int, str]]) -> None:
    for name, level, message in records:
        logging.getLogger(name).log(level, "%s", message)


def _shipped(ctx: RunContext, running: Phase | None) -> tuple:
    driver = _Driver(os.getcwd(), logging.getLogger("pipeline").getEffectiveLevel(), _terminal())
    return ctx.shipped(running), driver


def _terminal() -> bool:
    return sys.stderr.isatty()


@dataclass(frozen=True)
class _Driver:
    """What a task beside the driver takes of it: its working directory (inputs named relative to it), its log
    level, and whether its console is a terminal (the task's progress bars are drawn there)."""

    cwd: str
    level: int
    terminal: bool


@contextlib.contextmanager
def _as_the_run(ctx: RunContext, driver: _Driver) -> Iterator[_Warned]:
    global _inside
    use_shuffle(ctx.config.ray.shuffle)  # as the driver set it up: its datasets shuffle as the run's do
    warned, logger = _Warned(), logging.getLogger("pipeline")
    Progress.driver_terminal, _inside = driver.terminal, True
    try:
        with contextlib.chdir(driver.cwd), logging_as_the_driver(driver.level, below=logging.WARNING):
            logger.addHandler(warned)
            try:
                yield warned
            finally:
                logger.removeHandler(warned)
    except BaseException:
        for name, level_no, message in warned.taken():  # the step failed: its warnings on the task's output
            print(f"{logging.getLevelName(level_no)} {name}: {message}", file=sys.stderr)
        raise
    finally:
        Progress.driver_terminal, _inside = False, False  # the worker process is reused
        gc.collect()  # a dataset's executor holds its objects through reference cycles (pipeline/distribute.py)
        return_free_memory()  # the worker process is reused: it does not keep the step's peak for later tasks


@dataclass(frozen=True)
class _Records:
    """Warnings a streamed task logged, among the items it yields."""

    records: list


def _as_the_driver(fn: Callable, ctx: RunContext, driver: _Driver, args: tuple):
    with _as_the_run(ctx, driver) as warned:
        result = fn(ctx, *args)
        return result, warned.taken()


def _yields_as_the_driver(fn: Callable, ctx: RunContext, driver: _Driver, args: tuple):
    with _as_the_run(ctx, driver) as warned:
        for item in fn(ctx, *args):
            if warned.records:
                yield _Records(warned.taken())
            yield item
        if warned.records:
            yield _Records(warned.taken())
