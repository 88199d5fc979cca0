"""Small helpers shared by the benchmark scripts.

A benchmark runs each system in its own child process, pinned to one CPU with
single-threaded math libraries, so per-core rates and memory peaks are that
system's alone.  The child times itself with :class:`Measure`; the parent
watches the child's whole process tree with :class:`TreeMemory` (some systems
fork helpers, e.g. DataTrove's extraction sandbox) and prints a markdown table.
"""

from __future__ import annotations

import compileall
import datetime as dt
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# One thread per library: a child measures one core, as one Ray actor with num_cpus=1 gets.
SINGLE_THREAD_ENV = {
    k: "1"
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "RAYON_NUM_THREADS")
}


# The project's packages (what ``pip install`` byte-compiles), under the repository's root.
PACKAGES = ("core", "pipeline", "stages", "classifiers")
REPO = Path(__file__).resolve().parent.parent


def byte_compile(repo: Path = REPO) -> None:
    """Byte-compile the project as ``pip install`` compiles an installed package, before it is timed.

    The baselines are installed packages, compiled when pip installed them.  Our editable checkout is
    compiled on first import, unless PYTHONDONTWRITEBYTECODE is set (some shells and CI images set it):
    then every process of a run (driver, Ray workers, helpers) compiles ~90 modules from source again,
    ~0.4 s each on one core.  Python still reads .pyc files with that variable set.
    """
    for package in PACKAGES:
        if (repo / package).is_dir():
            compileall.compile_dir(repo / package, quiet=1)


def machine_info() -> dict:
    """What a reader needs to compare numbers across machines."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "date": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu": model,
        "mem_gib": round(mem_gib, 1),
        "python": platform.python_version(),
        "load_avg": tuple(round(x, 2) for x in os.getloadavg()),
    }


def _rusage_cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class Measure:
    """Wall and CPU seconds of a ``with`` block (this process + children it waited for)."""

    def __enter__(self) -> Measure:
        self._cpu0 = _rusage_cpu(resource.RUSAGE_SELF) + _rusage_cpu(resource.RUSAGE_CHILDREN)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall_s = time.perf_counter() - self._t0
        self.cpu_s = _rusage_cpu(resource.RUSAGE_SELF) + _rusage_cpu(resource.RUSAGE_CHILDREN) - self._cpu0

    def result(self) -> dict:
        # ru_maxrss is in KiB on Linux; it is the peak over the process's life.
        self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        child_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        return {
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "peak_rss_mb": self_kib / 1024,
            "peak_child_rss_mb": child_kib / 1024,
        }


def pin_to_cpu(cpu: int | None) -> None:
    """Pin this process (and what it forks later) to one CPU."""
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def pick_cpu() -> int | None:
    """The CPU children are pinned to: the last one this process may use."""
    return max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def _descendants(root: int) -> list[int]:
    # /proc/<pid>/task/<tid>/children is not on every kernel: build the tree from ppids.
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # comm may contain spaces or ')'
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _pss_kib(pid: int) -> int:
    return _rss_pss_kib(pid)[1]


def _rss_pss_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in KiB, (0, 0) once it is gone."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


class TreeMemory:
    """Peak PSS of a process and all its descendants, sampled from another process.

    PSS splits shared pages between the processes sharing them, so a forked
    helper is not counted twice.  Sampling can miss a short spike; the child's
    own ``ru_maxrss`` is exact for the process itself.
    """

    def __init__(self, pid: int, interval_s: float = 0.2):
        self.pid, self.interval_s = pid, interval_s
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = sum(_pss_kib(p) for p in _descendants(self.pid))
            self.peak_mb = max(self.peak_mb, total / 1024)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_child(argv: list[str], cpu: int | None, log_path: Path, timeout_s: float, cwd: Path | None = None) -> dict:
    """Run ``python argv...`` pinned to ``cpu``; it must write a JSON dict to the path in $BENCH_RESULT.

    Returns that dict plus ``tree_pss_mb``; on failure ``{"failed": ...}`` with the end of its log.
    """
    result_path = log_path.with_suffix(".json")
    byte_compile()
    env = {
        **os.environ,
        **SINGLE_THREAD_ENV,
        "BENCH_RESULT": str(result_path),
        "BENCH_CPU": "" if cpu is None else str(cpu),
    }
    with open(log_path, "wb") as log:
        # Its own session, so a timeout can stop its helpers too (DataTrove forks some).
        proc = subprocess.Popen([sys.executable, *argv], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)  # fmt: skip
        with TreeMemory(proc.pid) as mem:
            rc = wait_or_kill(proc, timeout_s)
    if rc == 0 and result_path.is_file():
        return {**json.loads(result_path.read_text()), "tree_pss_mb": mem.peak_mb}
    tail = " / ".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])
    return {"failed": f"exit {rc}: {tail[-300:]}".replace("|", "/")}


def wait_or_kill(proc: subprocess.Popen, timeout_s: float) -> int | str:
    """The exit code, or after ``timeout_s`` kill the process group (started with a new session)."""
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"timeout after {timeout_s:.0f}s"


def child_setup() -> None:
    """First thing in a child: pin to the CPU the parent chose."""
    cpu = os.environ.get("BENCH_CPU")
    pin_to_cpu(int(cpu) if cpu else None)


def child_report(result: dict) -> None:
    Path(os.environ["BENCH_RESULT"]).write_text(json.dumps(result))


def markdown_table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """``align``: one character per column, ``l`` or ``r`` (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---" if a == "l" else "---:" for a in align]
    lines = [headers, sep, *[[("" if c is None else str(c)) for c in r] for r in rows]]
    return "\n".join("| " + " | ".join(map(str, line)) + " |" for line in lines)


def _cpu_s(pid: int) -> tuple[str, float] | None:
    """(start time, user + system CPU seconds) of a live process, from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return fields[19], (int(fields[11]) + int(fields[12])) / tick  # starttime, utime + stime


#: Process roles in a run's tree, told by command line (Ray's daemons and workers rename themselves).
RAY_DAEMONS = (
    "gcs_server",
    "raylet",
    "dashboard/",
    "autoscaler/_private/monitor.py",
    "log_monitor",
    "DashboardAgent",
    "RuntimeEnvAgent",
    "runtime_env/agent",
)
ROLES = ("driver", "Ray daemons", "Ray workers", "helpers")


def role_of(pid: int, root: int) -> str:
    """``driver`` (the process started), ``Ray daemons``, ``Ray workers`` or ``helpers`` (any other child:
    our extraction helper, DataTrove's extraction sandbox)."""
    if pid == root:
        return "driver"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return "helpers"
    if any(m in cmd for m in RAY_DAEMONS):
        return "Ray daemons"
    if cmd.startswith("ray::") or "default_worker.py" in cmd:
        return "Ray workers"
    return "helpers"


class TreeUsage(TreeMemory):
    """:class:`TreeMemory` plus the CPU seconds of the whole tree and the load average meanwhile, and where the
    memory is: PSS by role (:func:`role_of`) when the tree peaked, and each role's largest process.

    A tree's CPU time cannot come from ``RUSAGE_CHILDREN`` alone when some
    descendants are reaped by a daemon rather than by their parent (Ray's
    workers): every process's own CPU time is sampled and its last value kept,
    so only the last interval of a process that exits is missed.
    """

    def __init__(self, pid: int, interval_s: float = 0.5):
        super().__init__(pid, interval_s)
        self._cpu: dict[tuple[int, str], float] = {}
        self._loads: list[float] = []
        self.at_peak_mb: dict[str, float] = {}  # role -> PSS MB summed over its processes, when the tree peaked
        self.largest_mb: dict[str, float] = {}  # role -> the largest PSS one process of that role reached
        self.largest_rss_mb: dict[str, float] = {}  # role -> the largest RSS one process of that role reached

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = _descendants(self.pid)
            by_role: dict[str, float] = {}
            for p in pids:
                (rss, pss), role = _rss_pss_kib(p), role_of(p, self.pid)
                mb = pss / 1024
                by_role[role] = by_role.get(role, 0.0) + mb
                self.largest_mb[role] = max(self.largest_mb.get(role, 0.0), mb)
                self.largest_rss_mb[role] = max(self.largest_rss_mb.get(role, 0.0), rss / 1024)
                if (u := _cpu_s(p)) is not None:
                    self._cpu[(p, u[0])] = u[1]
            if sum(by_role.values()) > self.peak_mb:
                self.peak_mb, self.at_peak_mb = sum(by_role.values()), by_role
            self._loads.append(os.getloadavg()[0])
            self._stop.wait(self.interval_s)

    def roles(self) -> dict:
        """For a result: ``{"at_peak": {role: PSS MB}, "largest": {role: PSS MB}, "largest_rss": {role: RSS MB}}``
        (the roles that had a process)."""

        def pick(d: dict) -> dict:
            return {r: round(d[r], 1) for r in ROLES if r in d}

        return {
            "at_peak": pick(self.at_peak_mb),
            "largest": pick(self.largest_mb),
            "largest_rss": pick(self.largest_rss_mb),
        }

    @property
    def cpu_s(self) -> float:
        return sum(self._cpu.values())

    @property
    def mean_load(self) -> float | None:
        return sum(self._loads) / len(self._loads) if self._loads else None
