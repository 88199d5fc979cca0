"""Work the driver hands to one Ray task beside it: a step declared ``in_task`` (pipeline.phase.Step), the card.

The process that plans a Ray Data dataset owns it: its executor, its blocks' bookkeeping and the pieces a sort
shuffle cuts, in the owner's memory (Ray Data's import alone is ~70 MB, and a shuffle over a snapshot's 90,000
parts took the driver from 188 to 352 MB: issue 39).  A step run here is planned and owned by a task on the
driver's node that takes no CPU (the datasets' own tasks take them); the driver waits, holding the plan only.
The task sees the run as the driver does: its working directory (inputs named relative to it), its log level
(the step's lines on the console, prefixed with the task's pid), the run's shuffle, and the plan of the phase
it runs (:meth:`pipeline.context.RunContext.detached`).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from core.memory import return_free_memory
from pipeline.distribute import on_a_worker, stream_on_a_worker, use_shuffle
from pipeline.worker_logs import logging_as_the_driver

if TYPE_CHECKING:
    from pipeline.context import RunContext
    from pipeline.phase import Phase


def call(fn: Callable, ctx: RunContext, *args, running: Phase | None = None, name: str | None = None):
    """``fn(ctx, *args)`` in one task beside the driver, ``ctx`` as that task sees the run; returns what it returns
    (an exception it raises is raised here, as its own type).  ``name``: the task's, its log lines' prefix."""
    shipped = _shipped(ctx, running)
    return on_a_worker(_as_the_driver, fn, *shipped, args, cpus=0, beside=True, name=name or fn.__name__)


def stream(fn: Callable, ctx: RunContext, *args, running: Phase | None = None, name: str | None = None) -> Iterator:
    """What the generator ``fn(ctx, *args)`` yields, run in one task beside the driver, as it yields it."""
    shipped = _shipped(ctx, running)
    return stream_on_a_worker(_yields_as_the_driver, fn, *shipped, args, cpus=0, beside=True, name=name or fn.__name__)


def _shipped(ctx: RunContext, running: Phase | None) -> tuple:
    return ctx.shipped(running), os.getcwd(), logging.getLogger("pipeline").getEffectiveLevel()


@contextlib.contextmanager
def _as_the_run(ctx: RunContext, cwd: str, level: int) -> Iterator[None]:
    use_shuffle(ctx.config.ray.shuffle)  # as the driver set it up: its datasets shuffle as the run's do
    try:
        with contextlib.chdir(cwd), logging_as_the_driver(level):
            yield
    finally:
        gc.collect()  # a dataset's executor holds its objects through reference cycles (pipeline/distribute.py)
        return_free_memory()  # the worker process is reused: it does not keep the step's peak for later tasks


def _as_the_driver(fn: Callable, ctx: RunContext, cwd: str, level: int, args: tuple):
    with _as_the_run(ctx, cwd, level):
        return fn(ctx, *args)


def _yields_as_the_driver(fn: Callable, ctx: RunContext, cwd: str, level: int, args: tuple):
    with _as_the_run(ctx, cwd, level):
        yield from fn(ctx, *args)
