"""`ray job submit` and `curate run --address` against a real multi-process Ray cluster on 127.0.0.1.

Starts a head node and a worker node (`ray start`, token authentication, in a folder of their own as on
machines of their own), submits the sample job with the repository as working dir, or runs a config of
relative paths from another working directory, and checks the output.  Slow (~40 s each): it is the real
deployment path.
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

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import REPO, SAMPLES

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
    nodes_cwd = tmp_path / "nodes"  # where `ray start` runs: its workers' working directory
    nodes_cwd.mkdir()

    def sh(*args):
        return subprocess.run([ray, *args], env=env, capture_output=True, text=True, timeout=180)

    def start(*args):
        # --block keeps each node's processes under one process group that we
        # stop ourselves: `ray stop` would kill every Ray on the machine.  Every
        # agent port is chosen here: the defaults (52365...) may be held by
        # another Ray on this machine (the tests' embedded one, for instance).
        ports = [
            f"--dashboard-agent-listen-port={_free_port()}",
            f"--dashboard-agent-grpc-port={_free_port()}",
            f"--metrics-export-port={_free_port()}",
            f"--runtime-env-agent-port={_free_port()}",
        ]
        return subprocess.Popen(
            [ray, "start", "--block", *args, *ports],
            env=env,
            start_new_session=True,
            cwd=nodes_cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    assert sh("get-auth-token", "--generate").returncode == 0
    nodes = [
        start(
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={gcs}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash}",
            "--num-cpus=1",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        )
    ]
    try:
        _wait_for_nodes(sh, gcs, 1)
        # its own temp dir, as on a real cluster: sharing the head's, the worker's agent re-extracts the
        # job's working_dir under the running driver (which then loses its cwd and relative paths)
        nodes.append(
            start(f"--address=127.0.0.1:{gcs}", "--node-ip-address=127.0.0.1", "--num-cpus=1", f"--temp-dir={temp}-w")
        )
        _wait_for_nodes(sh, gcs, 2)
        yield env, f"http://127.0.0.1:{dash}", ray, f"127.0.0.1:{gcs}"
    finally:
        for node in reversed(nodes):
            os.killpg(node.pid, signal.SIGTERM)
            try:
                node.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(node.pid, signal.SIGKILL)
        for d in (temp, Path(f"{temp}-w")):
            shutil.rmtree(d, ignore_errors=True)


def _wait_for_nodes(sh, gcs: int, n: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = sh("status", f"--address=127.0.0.1:{gcs}")
        if status.returncode == 0 and status.stdout.count(" node_") >= n:
            return
        time.sleep(1)
    raise TimeoutError(f"Ray cluster did not reach {n} nodes: {status.stdout[-500:]} {status.stderr[-500:]}")


def test_job_submit_runs_the_pipeline_on_a_cluster(cluster, tmp_path):
    env, dashboard, ray, _ = cluster
    inputs = sorted(SAMPLES.glob("*.warc.gz"))[:2]
    out = tmp_path / "job-out"
    args = [a for p in inputs for a in ("-i", str(p))]
    submit = [
        ray,
        "job",
        "submit",
        "--address",
        dashboard,
        "--working-dir",
        str(REPO),
        "--",
        "python",
        "-m",
        "jobs.run",
        "jobs/sample.yaml",
        *args,
        "-o",
        str(out),
        "--no-progress",
    ]
    for _ in range(30):  # the head's job agent comes up a little after the node
        job = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=900)
        if "No available agent" not in job.stderr:
            break
        time.sleep(2)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "succeeded" in job.stdout + job.stderr
    record = json.loads((out / "run.json").read_text())
    phase1, phase2 = record["phases"]["extracted"], record["phases"]["deduped"]
    assert phase1["files"] == 2 and not phase1["failed_units"]
    assert phase1["responses"] == phase1["kept"] + phase1["rejected"] and phase1["kept"] > 100
    assert phase2["in"] == phase1["kept"] and phase2["kept"] + phase2["rejected"] == phase2["in"]
    assert len(list((out / "documents" / "deduped").glob("part-*.parquet"))) == 2
    assert record["status"] == "ok" and record["phases_run"] == ["extracted", "deduped", "final", "shards", "card"]
    assert record["phases"]["shards"]["documents"] == record["phases"]["final"]["kept"] > 100
    assert (out / "README.md").exists()


def test_relative_paths_reach_the_workers_of_a_cluster(cluster, tmp_path):
    """A config of relative paths (inputs, the quality model, the tokenizer, the output) in a folder of its own, run
    with --address from another working directory: before, preflight passed on the driver and every unit failed on
    the workers ("no fastText model file at 'samples/quality/model.ftz'"), whose working directory is another."""
    env, _, _, address = cluster
    work = tmp_path / "work"  # the working directory: what the relative paths are read from
    work.mkdir()
    (work / "samples").symlink_to(SAMPLES)
    config = tmp_path / "configs" / "job.yaml"  # elsewhere: paths are not read from the config's folder
    config.parent.mkdir()
    job = yaml.safe_load((REPO / "jobs" / "sample.yaml").read_text())
    inputs = [f"samples/{p.name}" for p in sorted(SAMPLES.glob("*.warc.gz"))[:2]]
    config.write_text(yaml.safe_dump({**job, "inputs": inputs, "output": "out/run", "card": {"enabled": False}}))
    assert job["classifiers"][0]["model"] == "samples/quality/model.ftz"  # relative, as the README's sample job
    command = [sys.executable, "-m", "pipeline.cli", "run", str(config), "--address", address, "--no-progress"]
    run = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    record = json.loads((work / "out" / "run" / "run.json").read_text())
    phase1 = record["phases"]["extracted"]
    assert phase1["files"] == 2 and not phase1["failed_units"] and phase1["kept"] > 100
    assert record["status"] == "ok"
    assert record["phases"]["shards"]["documents"] == record["phases"]["final"]["kept"] > 100
    assert record["config"]["classifiers"][0]["model"] == str(work / "samples" / "quality" / "model.ftz")
    assert record["inputs"] == inputs  # inputs keep their names (the source column, the units' names)
    assert not (tmp_path / "nodes" / "out").exists()


def test_a_users_own_module_reaches_the_cluster_by_runtime_env(cluster, tmp_path):
    """The example recipe's classes (examples/my_recipe: a CSV source, a filter, a tagger) are on no node's path:
    `ray job submit --runtime-env-json '{"py_modules": [...]}'` ships the package with the job, to its driver (the
    config's checks import it) and to the workers of both nodes (they build its stages and its reader)."""
    env, dashboard, ray, _ = cluster
    assert "examples" not in env.get("PYTHONPATH", "")
    out = tmp_path / "recipe-out"
    runtime_env = json.dumps({"py_modules": [str(REPO / "examples" / "my_recipe")]})
    submit = [
        ray,
        "job",
        "submit",
        "--address",
        dashboard,
        "--working-dir",
        str(REPO),
        "--runtime-env-json",
        runtime_env,
        "--",
        "python",
        "-m",
        "jobs.run",
        "examples/my_recipe.yaml",
        "-o",
        str(out),
        "--no-progress",
    ]
    for _ in range(30):  # the head's job agent comes up a little after the node
        job = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=900)
        if "No available agent" not in job.stderr:
            break
        time.sleep(2)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "ok" and record["phases"]["extracted"]["files_by_kind"] == {"csv": 1, "warc": 1}
    rejected = pq.read_table(out / "rejected" / "extracted").to_pylist()
    assert {(r["id"], r["stage"]) for r in rejected if r["id"].startswith("csv-")} == {
        ("csv-4", "read"),
        ("csv-3", "link_density"),
    }
    assert "edu_score" in pq.read_table(out / "documents" / "final").column_names
    assert list((out / "exports" / "docs").glob("*.jsonl.gz"))
