"""`ray job submit` against a real multi-process Ray cluster on 127.0.0.1.

Starts a head node and a worker node (`ray start`, token authentication),
submits the sample job with the repository as working dir, and checks its
output.  Slow (~40 s): it is the real deployment path.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, Page, html

pytestmark = pytest.mark.ray


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    bindir = Path(sys.executable).parent
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),  # the auth token lives in ~/.ray/auth_token
        "RAY_AUTH_MODE": "token",
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    env.pop("RAY_ADDRESS", None)
    ray = shutil.which("ray", path=env["PATH"])
    gcs, dash = _free_port(), _free_port()
    temp = Path("/tmp") / f"ray-test-{os.getpid()}"  # short: unix socket paths have a length limit

    def sh(*args):
        return subprocess.run([ray, *args], env=env, capture_output=True, text=True, timeout=180)

    def start(*args):
        # --block keeps each node's processes under one process group that we
        # stop ourselves: `ray stop` would kill every Ray on the machine.
        return subprocess.Popen([ray, "start", "--block", *args], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    assert sh("get-auth-token", "--generate").returncode == 0
    nodes = [start("--head", "--node-ip-address=127.0.0.1", f"--port={gcs}", "--dashboard-host=127.0.0.1",
                   f"--dashboard-port={dash}", "--num-cpus=1", "--disable-usage-stats", f"--temp-dir={temp}")]
    try:
        _wait_for_nodes(sh, gcs, 1)
        nodes.append(start(f"--address=127.0.0.1:{gcs}", "--node-ip-address=127.0.0.1", "--num-cpus=1"))
        _wait_for_nodes(sh, gcs, 2)
        yield env, f"http://127.0.0.1:{dash}", ray
    finally:
        for node in reversed(nodes):
            os.killpg(node.pid, signal.SIGTERM)
            try:
                node.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(node.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


def _wait_for_nodes(sh, gcs: int, n: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = sh("status", f"--address=127.0.0.1:{gcs}")
        if status.returncode == 0 and status.stdout.count(" node_") >= n:
            return
        time.sleep(1)
    raise TimeoutError(f"Ray cluster did not reach {n} nodes: {status.stdout[-500:]} {status.stderr[-500:]}")


def test_job_submit_runs_the_pipeline_on_a_cluster(cluster, warc_factory, tmp_path):
    env, dashboard, ray = cluster
    for n in range(2):
        warc_factory(f"crawl-{n}.warc.gz", [
            Page(f"http://site{n}.example/{i}", html(f"Article {i}", "A long enough English paragraph about trains and stations. " * 6).encode())
            for i in range(3)
        ])
    out = tmp_path / "job-out"
    job = subprocess.run(
        [ray, "job", "submit", "--address", dashboard, "--working-dir", str(REPO), "--",
         "python", "-m", "jobs.run", "jobs/sample.yaml", "-i", str(tmp_path / "crawl-*.warc.gz"), "-o", str(out), "--no-progress"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "succeeded" in job.stdout + job.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["phases"]["extracted"]["files"] == 2
    assert record["phases"]["extracted"]["kept"] == 6
    assert len(list((out / "documents" / "extracted").glob("part-*.parquet"))) == 2
