"""Peak memory of a process tree, sampled in a background thread.

Embedded Ray starts its GCS, raylet and workers as descendants of the driver,
so the driver's process tree is the whole run.  Every ``interval`` seconds
each process's RSS is read (psutil); the result is the largest RSS any one
process reached (and which process it was) and the largest sum over the tree.
RSS counts the shared-memory object store pages a process has touched, so it
over- rather than under-states a worker's own memory.
"""

from __future__ import annotations

import os
import threading
import time

try:
    import psutil
except ImportError:  # Ray ships a copy
    import sys

    import ray

    sys.path.append(os.path.join(os.path.dirname(ray.__file__), "thirdparty_files"))
    import psutil


def _name(p: psutil.Process) -> str:
    try:
        cmd = p.cmdline()
    except psutil.Error:
        return "?"
    text = " ".join(cmd)
    for marker in ("raylet", "gcs_server", "ray::IDLE", "ray::", "dashboard", "log_monitor"):
        if marker in text:
            i = text.find(marker)
            return text[i : i + 40].split(" ")[0]
    return os.path.basename(cmd[0]) if cmd else p.name()


class PeakMemory:
    def __init__(self, interval: float = 0.2, pid: int | None = None):
        self.root = psutil.Process(pid or os.getpid())
        self.interval = interval
        self.peak_rss = 0
        self.peak_name = ""
        self.peak_total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        total = 0
        for p in [self.root, *self.root.children(recursive=True)]:
            try:
                rss = p.memory_info().rss
            except psutil.Error:
                continue
            total += rss
            if rss > self.peak_rss:
                self.peak_rss, self.peak_name = rss, _name(p)
        self.peak_total = max(self.peak_total, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


class TreeCpu:
    """CPU seconds (user + system) of a process tree during a run, sampled in a background thread.

    Each process's CPU time is read every ``interval`` seconds and the largest
    value per pid is kept, minus what it had used when the run started; a
    process that exits loses at most its last interval.
    """

    def __init__(self, interval: float = 0.5):
        self.psutil = psutil
        self.root = psutil.Process(os.getpid())
        self.interval = interval
        self.start: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self) -> dict[int, float]:
        out = {}
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except self.psutil.Error:  # the root has exited
            return out
        for p in procs:
            try:
                t = p.cpu_times()
                out[(p.pid, p.create_time())] = t.user + t.system
            except self.psutil.Error:
                continue
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            for k, v in self._read().items():
                self.last[k] = max(self.last.get(k, 0.0), v)
            time.sleep(self.interval)

    def __enter__(self) -> TreeCpu:
        self.start = self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        for k, v in self._read().items():
            self.last[k] = max(self.last.get(k, 0.0), v)

    @property
    def seconds(self) -> float:
        return sum(v - self.start.get(k, 0.0) for k, v in self.last.items())
