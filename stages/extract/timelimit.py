"""A per-document time limit, so one pathological page cannot stall a worker.

Ray Data runs a UDF outside the main thread, where ``SIGALRM`` is not
available, so a single watchdog thread per process raises
:class:`TimeLimitExceeded` in the worker thread when its deadline passes
(``PyThreadState_SetAsyncExc``).  Like a signal handler, this interrupts
Python code between bytecodes: a long call inside a C extension is interrupted
when it returns.  Arming and disarming cost a lock, not a thread per document,
and the watchdog is woken only when a new deadline falls before the one it
sleeps until: woken for every page, it took the GIL and the core twice a page
(phase 1 of benchmarks/e2e.py: 23,000 context switches, now 2,100).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import threading
import time

#: Longest limit accepted (extract.timeout_s is bounded by the same), and the longest single wait of the
#: watchdog: ``Condition.wait`` raises OverflowError past ``threading.TIMEOUT_MAX``, which would end the
#: watchdog thread and with it every time limit of the process, silently.
MAX_SECONDS = 3600.0


class TimeLimitExceeded(Exception):
    pass


class _Watchdog:
    def __init__(self):
        self._cv = threading.Condition()
        self._armed: dict[int, float] = {}  # thread id -> deadline
        self._fired: set[int] = set()
        self._thread: threading.Thread | None = None
        self._wakes_at = math.inf  # when the watchdog's current wait ends (inf: when notified)

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="extract-time-limit", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        with self._cv:
            while True:
                now = time.monotonic()
                for tid in [t for t, deadline in self._armed.items() if deadline <= now]:
                    del self._armed[tid]
                    self._fired.add(tid)
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(tid), ctypes.py_object(TimeLimitExceeded)
                    )
                # Disarmed deadlines stay planned: waking at one that has passed only plans the next.
                self._wakes_at = min(self._armed.values(), default=math.inf)
                if self._wakes_at == math.inf:
                    self._cv.wait()
                else:
                    self._cv.wait(min(self._wakes_at - now, MAX_SECONDS))

    def arm(self, seconds: float) -> int:
        tid = threading.get_ident()
        deadline = time.monotonic() + seconds
        with self._cv:
            self._start()
            self._armed[tid] = deadline
            if deadline < self._wakes_at:  # it would sleep past this deadline: wake it to plan again
                self._cv.notify()
        return tid

    def disarm(self, tid: int) -> None:
        with self._cv:
            self._armed.pop(tid, None)
            if tid in self._fired:
                self._fired.discard(tid)
                # Fired but maybe not yet delivered: cancel a pending exception.
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)


_watchdog = _Watchdog()


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise TimeLimitExceeded in this thread if the block runs longer than ``seconds``."""
    if not seconds:
        yield
        return
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
        raise ValueError(f"time limit: {seconds!r} seconds is not a number of seconds in (0, {MAX_SECONDS:g}]")
    tid = _watchdog.arm(seconds)
    try:
        yield
    finally:
        _watchdog.disarm(tid)
