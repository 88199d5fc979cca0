"""Fixed costs and memory of a run: what a process loads, what a local Ray starts, where the shards of a
small input are written (issue 25)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from stages.writers import LocalSink, WebDatasetConfig, WebDatasetWriter
from stages.writers.webdataset import _TarWriter
from tests.conftest import REPO


def test_tar_writer_is_webdatasets_byte_for_byte():
    webdataset = __import__("webdataset")  # test-only: the writer must not need it
    samples = [
        {"__key__": f"00001_{i:09d}", "json": b'{"id":"d%d"}' % i, "tokens.npy": bytes(range(i % 256)) * 7}
        for i in range(40)
    ]
    ours, theirs = io.BytesIO(), io.BytesIO()
    a, b = _TarWriter(ours), webdataset.TarWriter(theirs, user="", group="", mode=0o444, encoder=False, mtime=0)
    for s in samples:
        a.write(s)
        b.write(s)
    a.close()
    b.close()
    assert ours.getvalue() == theirs.getvalue()


def test_writing_shards_imports_neither_webdataset_nor_torch(tmp_path):
    """webdataset imports torch: ~480 MB and seconds in every process that writes a shard."""
    code = (
        "import sys, numpy as np, pyarrow as pa\n"
        "from stages.writers import LocalSink, WebDatasetConfig, WebDatasetWriter\n"
        f"w = WebDatasetWriter({str(tmp_path / 's')!r}, WebDatasetConfig(), "
        f"LocalSink({str(tmp_path / 'o')!r}), key_prefix='g')\n"
        "w.write(pa.table({'id': ['a'], 'tokens': pa.array([np.arange(5, dtype=np.uint16)])}))\n"
        "w.finish()\n"
        "print(sorted({'webdataset', 'torch'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert (tmp_path / "o" / "shard-000000.tar").stat().st_size > 0


def test_webdataset_writer_reads_back_with_tarfile(tmp_path):
    w = WebDatasetWriter(str(tmp_path / "s"), WebDatasetConfig(), LocalSink(str(tmp_path / "o")), key_prefix="g")
    w.write(
        pa.table(
            {"id": ["a", "b"], "tokens": pa.array([np.arange(3, dtype=np.uint16), np.arange(2, dtype=np.uint16)])}
        )
    )
    w.finish()
    import tarfile

    with tarfile.open(tmp_path / "o" / "shard-000000.tar") as t:
        names = t.getnames()
        assert names == ["g_000000000.json", "g_000000000.tokens.npy", "g_000000001.json", "g_000000001.tokens.npy"]
        assert all(m.mtime == 0 and m.mode == 0o444 and m.uname == "" for m in t.getmembers())
        assert np.load(io.BytesIO(t.extractfile("g_000000001.tokens.npy").read())).tolist() == [0, 1]


#: The command lines of this process's descendants (Ray's daemons and workers), for the scripts below.
CHILDREN = """
import os, subprocess

def children():
    ps = subprocess.run(["ps", "-eo", "ppid=,pid=,args="], capture_output=True, text=True).stdout.splitlines()
    kids, todo = [], [os.getpid()]
    while todo:
        p = todo.pop()
        for line in ps:
            ppid, cpid, args = line.split(None, 2)
            if int(ppid) == p:
                kids.append(args)
                todo.append(int(cpid))
    return kids
"""

SLIM_START = (
    CHILDREN
    + """
import json, os, subprocess, sys
import ray
import ray._private.utils as ray_utils
from ray._private.node import Node
from pipeline.distribute import LOCAL_SKIPS, Progress, init_ray

import ray._private.services as ray_services

before = {n: getattr(Node, n) for n in LOCAL_SKIPS}
deps_check = ray_utils.get_dashboard_dependency_error
python_command = ray_services._build_python_executable_command_memory_profileable
get_node = ray_services.get_node
progress = Progress("extracted", 2, "file", enabled=False)  # as a phase does: before its first unit starts Ray
init_ray(1, metrics=sys.argv[1] == "metrics")
assert {n: getattr(Node, n) for n in LOCAL_SKIPS} == before  # Ray's own start-up is left as it was
assert ray_utils.get_dashboard_dependency_error is deps_check
assert ray_services._build_python_executable_command_memory_profileable is python_command
assert ray_services.get_node is get_node
import time
time.sleep(3)  # Ray would have prestarted a worker by now
idle = children()
def said(line):  # a worker's print, which the run's console must show
    print(line, file=sys.stderr, flush=True)
    return os.getpid()

pid = ray.get(ray.remote(said).remote("a line from the worker"))
progress.update({"kept": 3})
gauges = "ray.util.metrics" in sys.modules  # before Ray Data, which imports it for its own
rows = ray.data.range(8).map_batches(lambda b: b, batch_size=None).materialize().count()
print(json.dumps({"task_pid": pid, "rows": rows, "children": children(), "idle": idle, "gauges": gauges}))
from pipeline.distribute import shutdown_local_ray
shutdown_local_ray()  # the Ray init_ray started: ended at once
assert not ray.is_initialized()
"""
)


def _slim_start(mode: str) -> dict:
    out = _python(SLIM_START, mode)
    assert out.returncode == 0, out.stderr[-2000:]
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "stderr": out.stderr}


def _agent(children: list[str]) -> str:
    return next(c for c in children if "dashboard/agent.py" in c)


@pytest.mark.ray
def test_local_ray_starts_without_monitor_api_server_and_prestarted_worker():
    got = _slim_start("default")
    assert got["rows"] == 8 and got["task_pid"] > 0  # tasks and Ray Data work
    children = "\n".join(got["children"])
    assert "gcs_server" in children and "raylet" in children
    assert "autoscaler/_private/monitor.py" not in children  # the autoscaler's monitor
    assert "dashboard/dashboard.py" not in children  # the dashboard's API server
    assert "log_monitor.py" not in children  # Ray's log monitor: the driver shows the workers' lines itself
    assert f"(said pid={got['task_pid']}) a line from the worker" in got["stderr"]
    assert ":task_name:" not in got["stderr"] and ":job_id:" not in got["stderr"]  # Ray's markers are not lines
    assert not [c for c in got["idle"] if c.startswith("ray::IDLE")]  # no worker started ahead of the first task
    # ray.metrics off (the default): a stand-in in place of Ray's dashboard agent, and no gauge is even imported
    assert "pipeline/ray_agent_stand_in.py" in _agent(got["children"])
    assert got["gauges"] is False


@pytest.mark.ray
def test_ray_metrics_on_starts_the_metrics_agent_and_sets_the_gauges():
    got = _slim_start("metrics")
    assert got["rows"] == 8
    agent = _agent(got["children"])
    assert "--minimal" not in agent.split() and "ray_agent_stand_in" not in agent
    assert got["gauges"] is True


UNSTARTED_MAP = (
    CHILDREN
    + """
import json, os, subprocess, sys
import ray
from pipeline.config import parse_config
from pipeline.distribute import map_units
from pipeline.phase import Unit

class Pid:
    def __init__(self, config):
        pass

    def process(self, unit):
        import pyarrow as pa

        return {"pid": os.getpid(), "pool": os.environ.get("CURATE_WORKER_POOL"),
                "arrow": pa.default_memory_pool().backend_name}

config = parse_config({"inputs": ["samples/*.warc.gz"], "output": sys.argv[1], "ray": {"num_cpus": 1}})
assert not ray.is_initialized()
out = list(map_units(config, [Unit("a", "f")], Pid, workers=1))
out += list(map_units(config, [Unit("b", "f")], Pid, workers=1, pool="extracted"))
out += list(map_units(config, [Unit("c", "f")], Pid, workers=1))
print(json.dumps({"out": out, "cpus": ray.cluster_resources().get("CPU"), "children": children()}))
ray.shutdown()
"""
)


@pytest.mark.ray
def test_units_mapped_before_any_phase_started_ray_start_it_as_the_run_says(tmp_path):
    """`curate run --phases shards` (a small input) or `--phases card` reach Ray first through map_units or the
    card's redaction task: Ray's own default start would bring the dashboard and the autoscaler's monitor up
    and take every CPU, whatever ``ray.num_cpus`` / ``ray.address`` say.  And a ``pool`` (a phase's
    ``own_workers``) gets worker processes of its own."""
    out = _python(UNSTARTED_MAP, str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["out"][0]["pid"] > 0 and got["cpus"] == 1.0
    # a pool's units run in a process of their own, which the later units do not reuse
    default, pooled, again = got["out"]
    assert pooled["pid"] not in (default["pid"], again["pid"])
    assert (default["pool"], pooled["pool"], again["pool"]) == (None, "extracted", None)
    # Ray's local workers inherit the driver's allocator choice (core/arrow_allocator.py)
    assert {o["arrow"] for o in got["out"]} == {"system"}
    children = "\n".join(got["children"])
    assert "autoscaler/_private/monitor.py" not in children and "dashboard/dashboard.py" not in children


@pytest.mark.ray
def test_a_small_input_is_sharded_on_a_worker_not_in_the_driver(ray_local, tmp_path, monkeypatch):
    """shards.local_max_docs: no Ray Data, but the documents are tokenized and grouped in a task on a worker
    (the driver stays small whatever the input)."""
    import random

    from pipeline.config import parse_config
    from pipeline.phases import shards
    from pipeline.runner import run
    from tests.conftest import Page, html, write_warc

    rng, words = (
        random.Random(5),
        "harbor castle meadow violin rocket winter forest candle island bridge garden planet".split(),
    )
    pages = [
        Page(
            f"https://s.example/{i}",
            html(
                f"Page {i}", *(" ".join(rng.choice(words) for _ in range(12)).capitalize() + "." for _ in range(10))
            ).encode(),
        )
        for i in range(12)
    ]
    write_warc(tmp_path / "in.warc.gz", pages)

    def config(out):
        return parse_config(
            {
                "inputs": [str(tmp_path / "in.warc.gz")],
                "output": str(out),
                "langid": {"min_score": 0.0},
                "filters": {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")},
                "shards": {"shuffle": {"groups": 3}},
                "card": {"enabled": False},
            }
        )

    def in_the_driver(*a, **k):
        raise AssertionError("a group was written in the driver")

    monkeypatch.setattr(shards, "_write_one_group", in_the_driver)  # the driver's copy only: workers import their own
    record = run(config(tmp_path / "ok"), progress=False)
    assert record["status"] == "ok" and record["phases"]["shards"]["documents"] == 12


def test_a_failed_small_input_task_fails_every_group(monkeypatch):
    from pipeline.phase import Unit
    from pipeline.phases import shards

    def died(config, units, open_worker, **kw):
        assert open_worker is shards.SmallShards and len(units) == 1
        yield {"unit": "small-input", "failed": "OSError: gone", "fatal": 28}

    monkeypatch.setattr(shards, "map_units", died)
    todo = {g: Unit(shards.group_name(g), f"fp{g}") for g in (0, 2)}
    ctx = type("Ctx", (), {"config": None, "workers": lambda self: 1})()
    out = list(shards._write_groups_here(ctx, ["a.parquet"], todo))
    assert [(r.unit, r.failed, r.fatal) for r in out] == [
        ("group-00000", "OSError: gone", 28),
        ("group-00002", "OSError: gone", 28),
    ]


def test_agent_stand_in_writes_ports_that_ray_reads_back(tmp_path):
    """The stand-in's port files are what Ray's own reader (the raylet's, and the driver's) takes for "not in use"."""
    from ray._raylet import (
        DASHBOARD_AGENT_LISTEN_PORT_NAME,
        METRICS_AGENT_PORT_NAME,
        METRICS_EXPORT_PORT_NAME,
        wait_for_persisted_port,
    )

    from pipeline.ray_agent_stand_in import write_ports

    node = "ab" * 28
    names = [METRICS_AGENT_PORT_NAME, METRICS_EXPORT_PORT_NAME, DASHBOARD_AGENT_LISTEN_PORT_NAME]
    write_ports(str(tmp_path), node, names)
    assert [wait_for_persisted_port(str(tmp_path), node, n, timeout_ms=0) for n in names] == [-1, -1, -1]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}_{node}" for n in names)  # no temporary left


def test_agent_stand_in_ends_with_the_process_that_started_it(tmp_path):
    """Like Ray's agent, the stand-in ends when its raylet does, and not before."""
    import time

    from pipeline import ray_agent_stand_in

    args = [
        sys.executable,
        "-S",
        ray_agent_stand_in.__file__,
        "--stand-in-ports=metrics_agent_port",
        "agent.py",
        f"--session-dir={tmp_path}",
        "--node-id=" + "cd" * 28,
    ]
    code = f"import subprocess, sys, time\np = subprocess.Popen({args!r})\nprint(p.pid, flush=True)\ntime.sleep(2)\n"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    time.sleep(1)
    os.kill(pid, 0)  # still waiting while its parent lives
    assert (tmp_path / ("metrics_agent_port_" + "cd" * 28)).read_text() == "-1"
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the stand-in outlived its parent")


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python process at the repository's root, its own embedded Ray (no cluster address)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_ADDRESS": ""},
    )


END_PROCESS = """
import atexit, json, os, sys
import ray
import psutil  # Ray's own copy (ray/thirdparty_files), on the path once ray is imported
from pipeline.distribute import end_process, init_ray

init_ray(1)
def said(line):
    print(line, file=sys.stderr, flush=True)
    return os.getpid()

worker = ray.get(ray.remote(said).remote("the worker's last line"))
pids = [p.pid for p in psutil.Process().children(recursive=True)]
atexit.register(lambda: open(sys.argv[1], "w").write(json.dumps({"pids": pids, "worker": worker})))
print("the report", end="")  # unflushed: end_process flushes it
end_process(3)
"""


@pytest.mark.ray
def test_end_process_stops_the_ray_it_started_and_runs_the_other_exit_handlers(tmp_path):
    """The `curate` command's fast end: Ray's processes stopped and gone when it exits, output flushed, status kept."""
    import importlib

    import ray  # noqa: F401  (puts its psutil on the path)

    psutil = importlib.import_module("psutil")  # after ray: alone, this test has no psutil otherwise
    record = tmp_path / "atexit.json"
    out = _python(END_PROCESS, str(record))
    assert out.returncode == 3, out.stderr[-2000:]
    assert out.stdout.endswith("the report")
    assert "the worker's last line" in out.stderr
    seen = json.loads(record.read_text())  # written by an exit handler of the process's own
    assert seen["worker"] in seen["pids"] and len(seen["pids"]) >= 3  # GCS, raylet, its agents, the worker
    alive = []
    for pid in seen["pids"]:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    assert alive == []


HELD_IN_A_CYCLE = """
import atexit, gc, time
from pipeline.distribute import end_process, init_ray, ray_data

gc.disable()  # no automatic collection before the end, as happened after a shards phase
atexit.register(time.sleep, 2)  # an exit handler that takes its time: the core worker ends the process first
init_ray(1)
ds = ray_data().range(2000).repartition(8).materialize()
held = [ds]
held.append(held)  # the executed dataset's objects, reachable only through a garbage cycle
del ds, held
end_process(0)
"""


@pytest.mark.ray
def test_a_run_that_succeeded_exits_0_though_its_driver_still_held_objects():
    """A Ray Data phase's objects left in garbage cycles: with Ray's processes stopped, the driver's core worker tried
    to recover them and ended the process with status 1 (``curate run --phases shards`` on the Ray path did)."""
    out = _python(HELD_IN_A_CYCLE)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "lost objects" not in out.stderr


def test_shutdown_local_ray_leaves_a_ray_it_did_not_start():
    """A run inside a process whose Ray someone else started (a test's, a notebook's) must not end it."""
    code = (
        "import ray\n"
        "from pipeline.distribute import init_ray, shutdown_local_ray\n"
        "ray.init(num_cpus=1, include_dashboard=False, logging_level='ERROR')\n"
        "init_ray(1)\n"
        "shutdown_local_ray()\n"
        "print(ray.is_initialized())\n"
        "ray.shutdown()\n"
    )
    out = _python(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"


CANCELLED_MAP = """
import os, sys, time
from pipeline.config import parse_config
from pipeline.distribute import map_units, shutdown_local_ray
from pipeline.phase import Unit

class Slow:
    def __init__(self, config):
        pass

    def process(self, unit):
        if unit.name == "fast":
            return {"unit": "fast"}
        open(os.path.join(unit.params["dir"], "started"), "w").close()
        try:
            while True:  # busy in Python: a cancel interrupts it between bytecodes
                sum(range(1000))
        finally:  # a unit's clean-up (its temporary files) that takes a while
            time.sleep(1.0)
            open(os.path.join(unit.params["dir"], "cleaned"), "w").close()

d = sys.argv[1]
config = parse_config({"inputs": ["samples/*.warc.gz"], "output": os.path.join(d, "out"), "ray": {"num_cpus": 2}})
units = map_units(config, [Unit("slow", "f", {"dir": d}), Unit("fast", "f", {"dir": d})], Slow, workers=2)
assert next(units)["unit"] == "fast"
while not os.path.exists(os.path.join(d, "started")):
    time.sleep(0.1)
units.close()  # the caller stops early, as a run stopped by a full disk does
print(os.path.exists(os.path.join(d, "cleaned")))
shutdown_local_ray()
"""


@pytest.mark.ray
def test_a_phase_stopped_early_waits_for_its_cancelled_units_to_clean_up(tmp_path):
    """A run stopped by a full disk cancels its running units and ends Ray: each cancelled unit must have
    removed its temporary files first, however long that takes, or they are left behind."""
    out = _python(CANCELLED_MAP, str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"


def test_a_unit_stopped_by_a_cancel_cleans_up_whatever_cancels_follow():
    """Ray repeats ray.cancel while the task runs: only the first interrupt may stop the unit, not its clean-up."""
    import _thread
    import signal
    import time

    from pipeline.distribute import first_interrupt_only

    before, cleaned = signal.getsignal(signal.SIGINT), []
    with pytest.raises(KeyboardInterrupt):
        with first_interrupt_only():
            try:
                _thread.interrupt_main()  # the cancel
                time.sleep(5)
            finally:
                _thread.interrupt_main()  # the cancel, repeated during the clean-up
                time.sleep(0.05)
                cleaned.append(True)
    assert cleaned == [True]
    assert signal.getsignal(signal.SIGINT) is before


ALLOCATOR = "import pipeline, pyarrow as pa; print(pa.default_memory_pool().backend_name)"


@pytest.mark.parametrize("chosen, expected", [(None, "system"), ("mimalloc", "mimalloc"), ("jemalloc", "jemalloc")])
def test_arrow_allocates_with_the_system_malloc_unless_the_user_chose(chosen, expected):
    """mimalloc (pyarrow's default) keeps what a unit freed; importing the pipeline picks glibc's malloc before
    pyarrow is loaded, and leaves a choice made in ARROW_DEFAULT_MEMORY_POOL alone."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    out = subprocess.run(
        [sys.executable, "-c", ALLOCATOR], cwd=REPO, capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == expected
