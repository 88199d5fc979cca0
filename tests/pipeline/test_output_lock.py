"""One run at a time per output root: a second run refuses, naming the holder and how to break a stale
lock; a lock left by a dead run is broken; real processes racing locally and runs racing on S3 (the moto
server) end with exactly one holder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest
import yaml

from core.storage import S3Options, Storage
from pipeline.lock import HOLDER, LOCK_DIR, Holder, LockInUse, OutputLock, OutputLocked, unlock
from tests.conftest import REPO


def _holder_file(root) -> str:
    return os.path.join(root, LOCK_DIR, HOLDER)


def _plant(root, holder: Holder, age_s: float = 0.0) -> None:
    """A lock file as another run left it, ``age_s`` seconds since its last heartbeat."""
    os.makedirs(os.path.join(root, LOCK_DIR), exist_ok=True)
    with open(_holder_file(root), "wb") as f:
        f.write(holder.to_json())
    t = time.time() - age_s
    os.utime(_holder_file(root), (t, t))


def _ended_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_second_run_refuses_naming_the_holder_and_the_way_out(tmp_path):
    storage = Storage(str(tmp_path / "out"))
    first = Holder.me("crawl-a", ["curate", "run", "a.yaml"])
    with OutputLock(storage, first):
        with pytest.raises(OutputLocked) as e:
            OutputLock(storage, Holder.me("crawl-b")).acquire()
        message = str(e.value)
        assert message.startswith(
            f"output error: {storage.root_uri} is in use by run 'crawl-a' on host {first.host} "
            f"(pid {os.getpid()}, started {first.started}, last heartbeat "
        )
        assert message.endswith(
            f"wait for it to end; if that run is dead, break its lock with: curate unlock {storage.root_uri}"
        )
    assert not os.path.exists(_holder_file(tmp_path / "out"))  # given back
    with OutputLock(storage, Holder.me("crawl-b")):
        assert json.loads(open(_holder_file(tmp_path / "out")).read())["run"] == "crawl-b"


@pytest.mark.parametrize(
    "holder, age_s, broken",
    [
        (Holder("x", "killed", "__HOST__", "__ENDED__", "2026-01-01T00:00:00+00:00"), 0, True),  # a killed driver here
        (
            Holder("y", "earlier", "__HOST__", "__ME__", "2026-01-01T00:00:00+00:00"),
            0,
            True,
        ),  # an earlier run of this process
        (Holder("z", "elsewhere", "other-host", 1, "2026-01-01T00:00:00+00:00"), 10, False),  # alive on another host
        (Holder("w", "silent", "other-host", 1, "2026-01-01T00:00:00+00:00"), 3600, True),  # no heartbeat for an hour
    ],
)
def test_stale_locks_are_broken_and_live_ones_are_not(tmp_path, holder, age_s, broken):
    import socket
    from dataclasses import replace

    holder = replace(
        holder,
        host=socket.gethostname() if holder.host == "__HOST__" else holder.host,
        pid={"__ENDED__": _ended_pid(), "__ME__": os.getpid()}.get(holder.pid, holder.pid),
    )
    root = tmp_path / "out"
    _plant(root, holder, age_s)
    lock = OutputLock(Storage(str(root)), Holder.me("new"))
    if broken:
        with lock:
            assert json.loads(open(_holder_file(root)).read())["run"] == "new"
    else:
        with pytest.raises(OutputLocked, match="in use by run 'elsewhere' on host other-host"):
            lock.acquire()


def test_the_heartbeat_keeps_a_long_run_live(tmp_path):
    root = tmp_path / "out"
    with OutputLock(Storage(str(root)), Holder.me("long"), heartbeat_s=0.05):
        t = time.time() - 1000
        os.utime(_holder_file(root), (t, t))
        time.sleep(0.3)
        assert time.time() - os.stat(_holder_file(root)).st_mtime < 5


RACER = textwrap.dedent("""
    import os, sys, time
    from pipeline.lock import Holder, OutputLock, OutputLocked
    from core.storage import S3Options, Storage
    root, sync, endpoint, racers = sys.argv[1], sys.argv[2], sys.argv[3] or None, int(sys.argv[4])
    lock = OutputLock(Storage(root, S3Options(endpoint_url=endpoint)), Holder.me("racer"), settle_s=1.5)
    open(os.path.join(sync, f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(os.path.join(sync, "go")):  # every racer imported: they start together
        time.sleep(0.01)
    try:
        lock.acquire()
    except OutputLocked:
        open(os.path.join(sync, f"refused-{os.getpid()}"), "w").close()
        print("REFUSED")
    else:
        print("WON")
        deadline = time.time() + 60  # held until every other racer has tried (a loaded machine: late starters)
        while sum(f.startswith("refused-") for f in os.listdir(sync)) < racers - 1 and time.time() < deadline:
            time.sleep(0.05)
        lock.release()
""")


def _race(root: str, racers: int, endpoint: str = "") -> list[str]:
    sync = tempfile.mkdtemp()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, root, sync, endpoint, str(racers)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(racers)
    ]
    deadline = time.time() + 120
    while sum(f.startswith("ready-") for f in os.listdir(sync)) < racers and time.time() < deadline:
        time.sleep(0.05)
    open(os.path.join(sync, "go"), "w").close()
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-1500:] for _, err in outs]
    return sorted(out.strip() for out, _ in outs)


def test_real_processes_racing_for_a_local_output_one_wins(tmp_path):
    for round_ in range(3):
        root = str(tmp_path / f"out{round_}")
        assert _race(root, 4) == ["REFUSED", "REFUSED", "REFUSED", "WON"]
        assert not os.path.exists(_holder_file(root))


def _s3_root(s3_server, bucket: str) -> str:
    import pyarrow.fs as pafs

    pafs.S3FileSystem(
        endpoint_override=s3_server.split("//")[1],
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    ).create_dir(bucket)
    return f"s3://{bucket}/run"


@pytest.mark.s3
def test_processes_racing_for_an_s3_output_one_wins(s3_server):
    root = _s3_root(s3_server, "lock-race")
    for _ in range(2):
        assert _race(root, 3, s3_server) == ["REFUSED", "REFUSED", "WON"]
        assert unlock(Storage(root, S3Options(endpoint_url=s3_server))) == []  # the winner gave it back, losers too


@pytest.mark.s3
def test_s3_leases_refuse_while_live_and_are_broken_when_stale(s3_server):
    storage = Storage(_s3_root(s3_server, "lock-lease"), S3Options(endpoint_url=s3_server))
    first = OutputLock(storage, Holder.me("first"), settle_s=1.1)
    first.acquire()
    try:
        with pytest.raises(OutputLocked, match=r"in use by run 'first' on host .*curate unlock s3://lock-lease/run$"):
            OutputLock(storage, Holder.me("second"), settle_s=1.1).acquire()
    finally:
        first.release()
    assert unlock(storage) == []

    # a lease whose run died elsewhere: its heartbeat stops, and after stale_s it no longer counts
    ghost = OutputLock(storage, Holder("ghost", "ghost", "other-host", 1, "2026-01-01T00:00:00+00:00"), settle_s=1.1)
    ghost.acquire()
    ghost._stop.set()  # dead: no more heartbeats, never released
    with pytest.raises(OutputLocked, match="in use by run 'ghost' on host other-host"):
        OutputLock(storage, Holder.me("too-soon"), settle_s=1.1).acquire()
    time.sleep(2.5)
    with OutputLock(storage, Holder.me("later"), settle_s=1.1, stale_s=2.0):
        names = [h.run for h in _leases(storage)]
        assert names == ["later"]  # the ghost's lease and heartbeat were removed
    assert unlock(storage) == []


def _leases(storage: Storage) -> list[Holder]:
    from pipeline.lock import _listing, _read

    return [_read(storage, n) for n in _listing(storage) if n.endswith(".lease")]


def test_run_refuses_a_held_output_and_unlock_breaks_a_dead_runs_lock(tmp_path):
    out = tmp_path / "out"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"inputs": [str(REPO / "samples" / "*.warc.gz")], "output": str(out)}))
    live = Holder("live", "nightly", "other-host", 4242, "2026-01-01T00:00:00+00:00")
    _plant(out, live, age_s=1)
    (out / "run.json").write_text('{"status": "running"}')

    def curate(*args):
        return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO)

    r = curate("run", str(cfg))
    assert r.returncode == 2
    assert re.fullmatch(
        re.escape(
            f"output error: {out} is in use by run 'nightly' on host "
            "other-host (pid 4242, started 2026-01-01T00:00:00+00:00, "
            "last heartbeat "
        )
        + r"\d+"
        + re.escape(f" s ago): wait for it to end; if that run is dead, break its lock with: curate unlock {out}"),
        r.stderr.strip().splitlines()[-1],
    )
    assert (out / "run.json").read_text() == '{"status": "running"}'  # the holder's record is untouched

    r = curate("unlock", str(out))  # its heartbeat is 1 s old: it may be running on the other host
    assert r.returncode == 2 and r.stdout == ""
    assert re.fullmatch(
        re.escape(f"output error: {out} is locked by {live.describe()[:-1]}, last heartbeat ")
        + r"\d+"
        + re.escape(" s ago), which may still be running (its last heartbeat is ")
        + r"\d+"
        + re.escape(
            " s old, and a lock is stale only after 300 s): nothing was removed; if that run is "
            f"dead, remove its lock anyway with: curate unlock --force {out}"
        ),
        r.stderr.strip(),
    )
    assert (out / LOCK_DIR / HOLDER).exists()
    r = curate("unlock", "--force", str(out))
    assert r.returncode == 0 and r.stdout.strip() == f"removed the lock of {live.describe()}"
    assert curate("unlock", str(out)).stdout.strip() == f"{out} holds no lock"


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_unlock_refuses_a_live_holder_on_this_host_until_its_process_ends(tmp_path):
    import socket

    root = tmp_path / "out"
    storage = Storage(str(root))
    proc = _sleeper()
    try:
        holder = Holder("h", "nightly", socket.gethostname(), proc.pid, "2026-01-01T00:00:00+00:00")
        _plant(root, holder, age_s=3600)  # no heartbeat for an hour, but its process runs: it is live
        with pytest.raises(
            LockInUse,
            match=rf"its process {proc.pid} is alive on this host\): nothing was removed; .*"
            rf"curate unlock --force {re.escape(storage.root_uri)}$",
        ):
            unlock(storage)
        assert os.path.exists(_holder_file(root))
    finally:
        proc.kill()
        proc.wait()
    assert unlock(storage) == [holder]  # its process has ended
    assert not os.path.exists(_holder_file(root))


def test_unlock_refuses_the_lock_of_a_run_of_this_very_process(tmp_path):
    storage = Storage(str(tmp_path / "out"))
    with OutputLock(storage, Holder.me("running")):
        with pytest.raises(LockInUse, match=rf"its process {os.getpid()} is alive"):
            unlock(storage)
        assert unlock(storage, force=True)[0].run == "running"


@pytest.mark.parametrize("age_s, refused", [(10, True), (299, True), (301, False), (3600, False)])
def test_unlock_of_another_hosts_holder_goes_by_its_heartbeat(tmp_path, age_s, refused):
    root = tmp_path / "out"
    holder = Holder(
        "o", "elsewhere", "other-host", os.getpid(), "2026-01-01T00:00:00+00:00"
    )  # a pid here means nothing
    _plant(root, holder, age_s)
    if refused:
        with pytest.raises(LockInUse, match=r"its last heartbeat is \d+ s old, and a lock is stale only after 300 s"):
            unlock(Storage(str(root)))
        assert os.path.exists(_holder_file(root))
        assert unlock(Storage(str(root)), force=True) == [holder]
    else:
        assert unlock(Storage(str(root))) == [holder]
    assert not os.path.exists(_holder_file(root))


@pytest.mark.s3
def test_unlock_on_s3_refuses_a_live_lease_and_breaks_a_dead_one(s3_server):
    storage = Storage(_s3_root(s3_server, "lock-unlock"), S3Options(endpoint_url=s3_server))
    live = OutputLock(
        storage, Holder("live", "live", "other-host", 1, "2026-01-01T00:00:00+00:00"), settle_s=1.1, heartbeat_s=0.5
    )
    live.acquire()
    try:
        with pytest.raises(
            LockInUse, match=r"locked by run 'live' on host other-host .*its last heartbeat is \d+ s old"
        ):
            unlock(storage)
        assert [h.run for h in _leases(storage)] == ["live"]
    finally:
        live._stop.set()  # it dies: no more heartbeats, never released
        live._thread.join()
    time.sleep(3.5)  # the server's times are whole seconds: clear of the timeout by more than one
    assert [h.run for h in unlock(storage, stale_s=2.0)] == ["live"]  # its heartbeat is older than the timeout
    assert _leases(storage) == [] and unlock(storage) == []


def test_in_process_runs_one_after_the_other_each_take_the_lock(tmp_path):
    """A run gives its lock back even when it fails, so the next run of the same process goes on."""
    storage = Storage(str(tmp_path / "out"))
    for i in range(3):
        try:
            with OutputLock(storage, Holder.me(f"run{i}")):
                raise RuntimeError("the run failed")
        except RuntimeError:
            pass
    threads_before = threading.active_count()
    with OutputLock(storage, Holder.me("last")):
        pass
    assert threading.active_count() <= threads_before  # no heartbeat thread left behind
