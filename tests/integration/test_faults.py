"""Faults a cluster run meets, each checked against an uninterrupted run of the same corpus.

- the driver killed (SIGKILL) in every phase, the same command rerun each time;
- a Ray worker process killed in the middle of a unit: the unit is retried, its rows written once;
- S3 refusing a phase's requests (every phase in turn), then the server stopped mid-phase:
  failed units listed, a non-zero end, a rerun completes;
- 1, 2 and 4 workers: identical bytes in every phase's outputs;
- per-phase progress as Ray metrics (the dashboard's source).

"Identical" means: every file under documents/, rejected/ and shards/ byte for byte, and the
card's stats.json without its ``run`` section (times and the command).  The corpus is real
pages: the first responses of three sample WARC files, plus copies across files for dedup.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from core.storage import S3Options, Storage
from pipeline.config import load_config
from pipeline.runner import run
from tests import s3_proxy
from tests.conftest import REPO, SAMPLES

pytestmark = [pytest.mark.ray, pytest.mark.faults]

PHASES = ["extracted", "deduped", "final", "shards", "card"]
#: Where each phase writes (path prefixes under the output root): refusing them fails that phase.
WRITES = {
    "extracted": r"/(documents|rejected)/extracted/",
    "deduped": r"/(dedup|documents/deduped|rejected/deduped)/",
    "final": r"/(documents|rejected)/final/",
    "shards": r"/shards/",
    "card": r"/card/",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Three small WARCs of real sample pages (24 records each), the last one carrying copies of
    pages of the first two under new record ids and URLs."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    root = tmp_path_factory.mktemp("fault-warcs")
    files = sorted(SAMPLES.glob("*.warc.gz"))[:3]
    copies = []
    for n, src in enumerate(files):
        with open(src, "rb") as f, open(root / f"f{n}.warc.gz", "wb") as out:
            w = WARCWriter(out, gzip=True)
            taken = 0
            for rec in ArchiveIterator(f):
                if rec.rec_type != "response":
                    continue
                raw = rec.content_stream().read()
                w.write_record(
                    w.create_warc_record(
                        rec.rec_headers.get_header("WARC-Target-URI"),
                        "response",
                        payload=io.BytesIO(raw),
                        http_headers=rec.http_headers,
                        warc_headers_dict={"WARC-Record-ID": rec.rec_headers.get_header("WARC-Record-ID")},
                    )
                )
                if taken % 6 == 0 and n < 2:
                    copies.append((rec.rec_headers.get_header("WARC-Target-URI"), raw, rec.http_headers))
                taken += 1
                if taken == 24:
                    break
            if n == 2:
                for i, (url, raw, http) in enumerate(copies):
                    w.write_record(
                        w.create_warc_record(
                            f"{url}?copy={i}",
                            "response",
                            payload=io.BytesIO(raw),
                            http_headers=http,
                            warc_headers_dict={"WARC-Record-ID": f"<urn:uuid:00000000-0000-4000-8000-{i:012d}>"},
                        )
                    )
    return root


def _config(corpus: Path, out: str, **over):
    cfg = load_config(REPO / "jobs" / "sample.yaml", inputs=[str(corpus / "*.warc.gz")], output=out)
    data = cfg.model_dump(mode="json")
    data["shards"]["shuffle"]["groups"] = 3
    data["shards"]["mds"]["size_limit"] = 1 << 16  # several shards per group
    for key, value in over.items():
        data[key] = {**data[key], **value}
    return type(cfg).model_validate(data)


def _config_file(corpus: Path, out: Path, path: Path, **over) -> Path:
    path.write_text(json.dumps(_config(corpus, str(out), **over).model_dump(mode="json")))
    return path


def outputs(fs: pafs.FileSystem, root: str) -> dict[str, str]:
    """What a run produced, comparable across runs: file digests and the card's numbers."""
    out = {}
    for top in ("documents", "rejected", "shards"):
        for info in fs.get_file_info(pafs.FileSelector(f"{root}/{top}", recursive=True, allow_not_found=True)):
            if info.type == pafs.FileType.File:
                with fs.open_input_stream(info.path) as f:
                    out[info.path[len(root) + 1 :]] = hashlib.sha256(f.read()).hexdigest()
    with fs.open_input_stream(f"{root}/card/stats.json") as f:
        stats = json.loads(f.read())
    stats.pop("run")
    out["card/stats.json"] = hashlib.sha256(json.dumps(stats, sort_keys=True).encode()).hexdigest()
    return out


def local(out: Path) -> dict[str, str]:
    return outputs(pafs.LocalFileSystem(), str(out))


@pytest.fixture(scope="module")
def reference(ray_local, corpus, tmp_path_factory) -> dict[str, str]:
    """The uninterrupted run (2 workers, this session's Ray)."""
    out = tmp_path_factory.mktemp("reference")
    record = run(_config(corpus, str(out)), progress=False)
    assert record["status"] == "ok" and record["phases_run"] == PHASES
    assert record["phases"]["deduped"]["rejected"] >= 4  # the copies
    assert record["phases"]["shards"]["documents"] > 20
    digests = local(out)
    assert sum(k.endswith(".mds.zstd") or k.endswith(".mds") for k in digests) >= 3
    return digests


# -- the driver killed in every phase ------------------------------------------------------------


def _env(tmp: Path) -> dict:
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    env.pop("RAY_ADDRESS", None)
    return env


def _curate(config: Path, tmp: Path, kill_when=None, timeout: float = 600) -> tuple[int, str]:
    """``curate run CONFIG -v`` in its own process (its own embedded Ray); SIGKILL the driver as soon as
    ``kill_when(log_so_far)`` is true.  Returns the exit code and the log."""
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(config), "-v", "--no-progress"]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=_env(tmp),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    log: list[str] = []
    reader = threading.Thread(target=lambda: log.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if kill_when is not None and kill_when("".join(log)):
            family = _descendants(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
            _wait_gone(family)
            break
        time.sleep(0.005)
    else:
        if proc.poll() is None:
            proc.kill()
    rc = proc.wait()
    reader.join()
    return rc, "".join(log)


def _first(folder: Path):
    """Kill once a unit of the phase is done (a file in ``folder``): the phase is then half done."""
    return lambda log: folder.is_dir() and any(folder.iterdir())


def _started(phase: str, delay: float):
    seen: list[float] = []

    def when(log: str) -> bool:
        if not seen and f"phase {phase}: started" in log:
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= delay

    return when


def _descendants(pid: int) -> list:
    import psutil

    return psutil.Process(pid).children(recursive=True)


def _wait_gone(procs: list, grace: float = 3) -> None:
    """The embedded Ray of a killed driver shuts itself down (its processes die with their parent);
    what is left after ``grace`` seconds (Ray's agents linger) is killed, as a lost node would be, so
    that nothing of the killed run is running when the next one starts."""
    import psutil

    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=30)


def test_driver_killed_in_each_phase_then_rerun_gives_the_same_outputs(corpus, reference, tmp_path):
    out = tmp_path / "out"
    config = _config_file(corpus, out, tmp_path / "run.json")
    kill = {
        "extracted": _first(out / "_done" / "extracted"),
        "deduped": _first(out / "dedup" / "signatures"),
        "final": _first(out / "_done" / "final"),
        "shards": _first(out / "_done" / "shards"),
        "card": _started("card", 0.5),
    }
    for phase in PHASES:
        rc, log = _curate(config, tmp_path, kill_when=kill[phase])
        assert rc == -signal.SIGKILL, log[-3000:]
        record = json.loads((out / "run.json").read_text())
        assert record["status"] == "running" and phase not in record["phases"], (
            phase,
            record.get("phases", {}).keys(),
        )
        if phase != PHASES[0]:  # the phase killed before this one was resumed and finished by this run
            assert PHASES[PHASES.index(phase) - 1] in record["phases"]
    rc, log = _curate(config, tmp_path)
    assert rc == 0, log[-3000:]
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "ok" and record["phases_run"] == PHASES
    assert local(out) == reference


# -- determinism over worker counts, and the progress metrics ------------------------------------

RUN_WITH_METRICS = """
import json, sys, threading, time, urllib.request
import ray
from pipeline.config import RunConfig
from pipeline.distribute import init_ray
from pipeline.runner import run
config = RunConfig.model_validate(json.load(open(sys.argv[1])))
port = int(sys.argv[3])
ray.init(num_cpus=int(sys.argv[2]), include_dashboard=False, _metrics_export_port=port, logging_level="ERROR")
init_ray()
seen, stop = {}, threading.Event()

def scrape():  # as Prometheus would, through the run: a phase's gauges are exported while it reports
    while True:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        except OSError:
            text = ""
        for line in text.splitlines():
            if line.startswith("ray_curate_phase_"):
                seen[line.rsplit(" ", 1)[0]] = line
        if stop.wait(0.25):
            return

scraper = threading.Thread(target=scrape)
scraper.start()
record = run(config, progress=False)
time.sleep(2)  # the last values: exported every report interval (0.5 s in the test)
stop.set()
scraper.join()
print(json.dumps({"status": record["status"], "metrics": list(seen.values())}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def four_workers(corpus, tmp_path_factory):
    """A run with 4 workers (a 4-CPU embedded Ray in its own process) exporting its metrics."""
    tmp = tmp_path_factory.mktemp("four")
    out = tmp / "out"
    config = _config_file(corpus, out, tmp / "run.json", ray={"workers": 4})
    env = {**_env(tmp), "RAY_metrics_report_interval_ms": "500"}
    done = subprocess.run(
        [sys.executable, "-c", RUN_WITH_METRICS, str(config), "4", str(_free_port())],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok"
    return out, result["metrics"]


def test_one_two_and_four_workers_write_identical_outputs(ray_local, corpus, reference, four_workers, tmp_path):
    one = tmp_path / "one"
    assert run(_config(corpus, str(one), ray={"workers": 1}), progress=False)["status"] == "ok"
    assert local(one) == reference  # the reference ran with 2 workers
    assert local(four_workers[0]) == reference


def test_progress_of_every_phase_is_exported_as_ray_metrics(four_workers):
    _, metrics = four_workers
    values = {}
    for line in metrics:
        if line.startswith("ray_curate_phase_units_") and "{" in line:
            name, rest = line.split("{", 1)
            phase = rest.split('phase="', 1)[1].split('"', 1)[0]
            values[(name, phase)] = float(line.rsplit(" ", 1)[1])
    for phase in ("extracted", "final", "shards"):  # the phases with units over workers (deduped: per step)
        total = values[("ray_curate_phase_units_total", phase)]
        assert total >= 1 and values[("ray_curate_phase_units_done", phase)] == total
    assert any(phase.startswith("deduped: ") for _, phase in values)
    assert any(line.startswith("ray_curate_phase_docs{") and 'count="kept"' in line for line in metrics)


# -- a Ray worker killed mid-unit ----------------------------------------------------------------


def test_a_worker_killed_mid_unit_is_retried_and_writes_its_rows_once(ray_local, corpus, reference, tmp_path):
    """SIGKILL the Ray worker process of a running unit of the extracted phase: Ray retries the task
    on a new worker, the unit's outputs are published once, and the run's outputs are the reference."""
    import psutil

    out = tmp_path / "out"
    killed: list[int] = []
    titles: list[str] = []
    stop = threading.Event()

    def killer():  # this session's Ray only: its processes descend from this one
        me = psutil.Process()
        while not stop.is_set() and not killed:
            for p in me.children(recursive=True):
                try:
                    title = " ".join(p.cmdline())
                except psutil.Error:
                    continue
                if title.startswith("ray::_unit_task"):  # a Ray worker while it runs a unit (pipeline.distribute)
                    titles.append(title)
                    p.kill()
                    killed.append(p.pid)
                    break
            time.sleep(0.002)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        record = run(_config(corpus, str(out)), progress=False, phases=["extracted"])
    finally:
        stop.set()
        thread.join()
    assert killed, "no unit was running to kill"
    assert record["status"] == "ok" and not record["phases"]["extracted"]["failed_units"]
    rest = run(_config(corpus, str(out)), progress=False)
    assert rest["status"] == "ok" and rest["phases"]["extracted"]["units_skipped"] == 3
    assert local(out) == reference


# -- S3 faults -----------------------------------------------------------------------------------


def _bucket(endpoint: str, name: str) -> pafs.S3FileSystem:
    fs = pafs.S3FileSystem(
        endpoint_override=endpoint.split("//")[1],
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir(name)
    return fs


def _stop_when_marked(fs: pafs.FileSystem, folder: str, proxy, timeout: float = 300) -> None:
    """Stop the proxy (the server, to the run) as soon as a marker appears in ``folder`` (read past the proxy)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
            proxy.down = True
            return
        time.sleep(0.01)


@pytest.mark.s3
def test_s3_refusing_each_phase_in_turn_then_stopped_ends_non_zero_and_reruns_complete(
    ray_local, s3_server, corpus, reference
):
    fs = _bucket(s3_server, "faults")
    proxy, server = s3_proxy.start(s3_server)
    config = _config(corpus, "s3://faults/run", storage={"endpoint_url": proxy.url, "max_attempts": 4})
    try:
        # throttling on some requests (retried with backoff), then the server stops once the first
        # input file is done: the other files fail, and so does writing run.json: the run stops
        proxy.fail("*", r"/faults/run/", times=3)  # fewer than max_attempts: each request gets through
        stopper = threading.Thread(
            target=_stop_when_marked, args=(fs, "faults/run/_done/extracted", proxy), daemon=True
        )
        stopper.start()
        with pytest.raises(OSError):
            run(config, progress=False)
        stopper.join()
        assert proxy.failed > 3
        assert 1 <= len(fs.get_file_info(pafs.FileSelector("faults/run/_done/extracted"))) < 3

        for phase in PHASES[1:]:  # S3 refuses everything this phase writes or reads of its own
            proxy.heal()
            proxy.fail("*", f"/faults/run{WRITES[phase]}")
            try:
                broken = run(config, progress=False)
            except (
                OSError
            ) as e:  # a phase that reads its own folder to plan (dedup, shards, card): the run stops with the error
                assert phase in ("deduped", "shards", "card"), (phase, e)
            else:
                assert broken["status"] == "failed_units" and broken["phases"][phase]["failed_units"], (phase, broken)
                failures = broken["phases"][phase]["failed_units"]
                assert all(isinstance(v, str) and v for v in failures.values())
            record = Storage("s3://faults/run", S3Options(endpoint_url=s3_server)).read_json("run.json")
            assert record["status"] != "ok"
        proxy.heal()
        done = run(config, progress=False)
        assert done["status"] == "ok", done
    finally:
        server.shutdown()
    assert outputs(fs, "faults/run") == reference
