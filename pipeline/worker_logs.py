"""The workers' log lines on the console of a local run, without Ray's log monitor.

Ray's log monitor is a process of its own that imports all of Ray (~0.45 CPU-s of a one-core run,
measured with py-spy on benchmarks/e2e.py's corpus, nearly all of it imports) to tail the log files of
the workers and publish their lines to the driver.  An embedded local Ray has its workers on the driver's
own machine, so a thread of the driver reads the same files instead (pipeline.distribute skips the
monitor's start for a local Ray): every line a worker prints, as ``(task pid=N) line``, as Ray prints
them, and the raylet's and GCS's error output; a task's progress bar (Ray's ``tqdm_ray`` sends its state as a
line) is drawn, as Ray's monitor draws it.  A Ray the run joins keeps its own log monitor.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

#: How a run logs (pipeline.cli), and a task that logs as the driver would (:func:`logging_as_the_driver`).
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_DATEFMT = "%H:%M:%S"

#: What the log monitor reads: the workers' output, and where the raylet and the GCS say they failed.
PATTERNS = ("worker-*.out", "worker-*.err", "raylet*.err", "gcs_server*.err")
#: Lines a Ray worker writes for the log monitor (which task the lines after them are from).
_TASK_NAME, _ACTOR_NAME, _JOB_ID = ":task_name:", ":actor_name:", ":job_id:"
_PID = re.compile(r"-(\d+)\.(?:out|err)$")
#: Seconds between two reads: a worker's line shows within half a second, as with Ray's monitor.
INTERVAL_S = 0.5


class _Tail:
    """One log file: how far it was read, the line begun and not yet ended, and the task it is from."""

    def __init__(self, path: str):
        self.path = path
        m = _PID.search(path)
        self.pid = m.group(1) if m else None
        self.offset = 0
        self.partial = b""
        self.task = ""

    def new_lines(self) -> list[str]:
        """The lines completed since the last call (a file truncated or replaced is read from its start)."""
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size < self.offset:
                    self.offset, self.partial = 0, b""
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        return [line.decode("utf-8", "replace").rstrip("\r") for line in lines]

    def shown(self, line: str) -> str | None:
        """The line as the console shows it, or None for the markers Ray writes for its monitor."""
        for marker in (_TASK_NAME, _ACTOR_NAME):
            if line.startswith(marker):
                self.task = line[len(marker) :]
                return None
        if line.startswith(_JOB_ID):
            return None
        if self.pid is None:  # the raylet's and the GCS's own files
            return f"({os.path.basename(self.path)}) {line}"
        return f"({self.task or 'worker'} pid={self.pid}) {line}"


class WorkerLogs:
    """Tail a local Ray's log folder on a thread of the driver until :meth:`stop`."""

    def __init__(self, logs_dir: str, out: TextIO | None = None, interval_s: float = INTERVAL_S):
        self.logs_dir = logs_dir
        self.out = out
        self.interval_s = interval_s
        self._tails: dict[str, _Tail] = {}
        self._stop = threading.Event()
        self._polling = threading.Lock()  # the thread's poll and the driver's (distribute.show_worker_lines)
        self._thread = threading.Thread(target=self._loop, name="worker-logs", daemon=True)
        self._bars = _Bars.of()

    def start(self) -> WorkerLogs:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop, after a last read: what the workers printed last is shown too."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.poll()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def poll(self) -> None:
        """Show every line completed since the last poll."""
        with self._polling:
            self._poll()

    def _poll(self) -> None:
        out = self.out or sys.stderr
        for pattern in PATTERNS:
            for path in glob.glob(os.path.join(self.logs_dir, pattern)):
                if path not in self._tails:
                    self._tails[path] = _Tail(path)
        lines = [(tail, line) for tail in self._tails.values() for line in tail.new_lines()]
        bars = self._bars
        if bars is not None:  # a task's progress bars (distribute.Progress beside the driver), drawn here as Ray would
            lines = [(tail, line) for tail, line in lines if not bars.took(line)]
        shown = [s for tail, line in lines if (s := tail.shown(line)) is not None]
        if shown:
            with bars.hidden() if bars is not None else contextlib.nullcontext():
                try:
                    out.write("".join(f"{s}\n" for s in shown))
                    out.flush()
                except (OSError, ValueError):  # the console is gone (a closed pipe): the lines stay in the files
                    pass


class _Bars:
    """The bars tasks send on their output (Ray's ``tqdm_ray``: a line of JSON with its token), drawn on the
    driver's console as Ray's log monitor draws them; the other lines printed above them."""

    def __init__(self, module):
        self._module = module

    @classmethod
    def of(cls) -> _Bars | None:
        try:
            from ray.experimental import tqdm_ray
        except ImportError:  # an experimental module: without it, its lines are shown as they are
            return None
        return cls(tqdm_ray)

    def took(self, line: str) -> bool:
        """Whether ``line`` is a bar's state (then drawn)."""
        if self._module.RAY_TQDM_MAGIC not in line:
            return False
        try:
            self._module.instance().process_state_update(json.loads(line))
        except ValueError:  # cut short: the next state draws it
            pass
        return True

    @contextlib.contextmanager
    def hidden(self) -> Iterator[None]:
        manager = self._module.instance()
        manager.hide_bars()
        try:
            yield
        finally:
            manager.unhide_bars()


@contextlib.contextmanager
def logging_as_the_driver(level: int, name: str = "pipeline", below: int | None = None) -> Iterator[None]:
    """In a Ray task, ``name``'s lines at ``level`` (the driver's) on the worker's output, which the console shows:
    a worker logs warnings only, and a long task that runs what the driver used to (the card) would say nothing.
    ``below``: only the lines under that level (the others the caller hands to the driver to log)."""
    logger = logging.getLogger(name)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATEFMT))
    if below is not None:
        handler.addFilter(lambda record: record.levelno < below)
    before = logger.level, logger.propagate
    logger.setLevel(level)
    logger.addHandler(handler)
    logger.propagate = False  # once, not again through a handler the worker's root may have
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before[0])
        logger.propagate = before[1]
