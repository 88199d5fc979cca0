"""Output problems are one-line errors: an output root that is a file or read-only (refused before any
work, by validate and --dry-run too), and a disk that fills up during the run (the run stops at once,
run.json says why, nothing is retried as if the network had failed, and the rerun after freeing space
gives what a clean run gives)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from core.faults import output_fault, storage_fault
from core.storage import OutputError, Storage
from pipeline.config import parse_config
from pipeline.preflight import check_output
from pipeline.record import RunRecord
from stages.writers.sink import StorageSink, is_transient
from tests.conftest import REPO

SAMPLE_WARCS = sorted(str(p.relative_to(REPO)) for p in (REPO / "samples").glob("*.warc.gz"))[:2]


def _config(out):
    return parse_config({"inputs": [str(REPO / SAMPLE_WARCS[0])], "output": str(out)})


def _curate(*args):
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO)


# -- before the run -----------------------------------------------------------------------------


def test_an_output_root_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "taken").write_text("x")
    assert check_output(_config(tmp_path / "taken")) == [
        f"config error: output.root: {tmp_path / 'taken'} is a file, not a folder (give the path of a folder)"
    ]
    assert check_output(_config(tmp_path / "taken" / "run1")) == [
        f"config error: output.root: {tmp_path / 'taken' / 'run1'} is inside {tmp_path / 'taken'}, which is a file, "
        "not a folder (give the path of a folder)"
    ]


@pytest.fixture
def read_only_dir(tmp_path):
    """A folder this process cannot write: a read-only tmpfs as root (root ignores file modes), else mode 0555."""
    path = tmp_path / "ro"
    path.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(path)], capture_output=True
        ).returncode:
            pytest.skip("cannot mount a read-only tmpfs here")
        yield path, "Read-only file system", "it is on a read-only filesystem: choose another output.root"
        subprocess.run(["umount", str(path)], check=True)
    else:
        path.chmod(0o555)
        yield path, "Permission denied", "choose another output.root or give this user write access to it"
        path.chmod(0o755)


def test_a_read_only_output_root_is_refused_by_validate_dry_run_and_run(read_only_dir, tmp_path):
    path, cause, fix = read_only_dir
    out = path / "run1"
    assert check_output(_config(out)) == [f"config error: output.root: cannot write in {out} ({cause}): {fix}"]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"inputs": [str(REPO / SAMPLE_WARCS[0])], "output": str(out)}))
    for args in (["validate"], ["run", "--dry-run"], ["run"]):
        r = _curate(*args, str(cfg))
        assert r.returncode == 2 and r.stderr.strip().splitlines() == [
            f"config error: output.root: cannot write in {out} ({cause}): {fix}"
        ], (args, r.stderr[-1500:])


@pytest.mark.s3
def test_an_s3_output_root_is_probed(s3_server):
    cfg = parse_config(
        {"inputs": ["x.warc.gz"], "output": "s3://no-such-bucket-here/run", "storage": {"endpoint_url": s3_server}}
    )
    problems = check_output(cfg)
    assert len(problems) == 1 and problems[0].startswith(
        "config error: output.root: cannot write to s3://no-such-bucket-here/run/ ("
    )
    assert problems[0].endswith("check the bucket, the credentials and storage.endpoint_url")


# -- what a storage fault is ------------------------------------------------------------------


def test_storage_faults_are_recognised_through_wrappers_and_text():
    assert (
        storage_fault(OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device"))
        == errno.ENOSPC
    )
    try:
        try:
            raise OSError(errno.EROFS, "Read-only file system")
        except OSError as e:
            raise RuntimeError("task failed") from e
    except RuntimeError as wrapped:
        assert storage_fault(wrapped) == errno.EROFS
    assert (
        storage_fault(RuntimeError("ray.exceptions.RayTaskError(OSError): ... [Errno 122] Disk quota exceeded"))
        == errno.EDQUOT
    )
    assert storage_fault(ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")) is None
    assert storage_fault(OSError("AWS Error SLOW_DOWN during PutObject")) is None


def test_a_refused_input_is_not_an_output_fault():
    denied_in = PermissionError(errno.EACCES, "Permission denied", "/data/in/a.warc.gz")
    denied_out = OSError(
        errno.EACCES, "Failed to open local file '/data/out/documents/x'. Detail: [errno 13] Permission denied"
    )
    assert output_fault(denied_in, "/data/out") is None and output_fault(denied_out, "/data/out") == errno.EACCES
    assert (
        output_fault(OSError(errno.ENOSPC, "No space left on device"), "/data/out") == errno.ENOSPC
    )  # wherever it is


def test_a_full_disk_is_not_retried_like_a_network_fault(tmp_path):
    class FullDisk(Storage):
        def atomic_output(self, *parts):
            raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    slept = []
    sink = StorageSink(FullDisk(str(tmp_path / "out")), "shards", attempts=6, sleep=slept.append)
    staged = tmp_path / "shard.bin"
    staged.write_bytes(b"x" * 100)
    with pytest.raises(OSError, match=r"failed after 1 attempt\(s\)"):
        sink.put(str(staged), "shard.00000.bin")
    assert slept == [] and sink.retries == 0
    assert is_transient(OSError("AWS Error NETWORK_CONNECTION during PutObject"))  # the network still is


def test_run_json_records_the_error_even_when_its_temporary_copy_does_not_fit(tmp_path):
    class FullDisk(Storage):
        def write_json(self, obj, *parts):
            raise OSError(errno.ENOSPC, "No space left on device")

    storage = Storage(str(tmp_path))
    record = RunRecord(storage, _config(tmp_path), ["a.warc.gz"], ["extracted"])
    record.start()
    record.storage = FullDisk(str(tmp_path))
    record.finish(error="output error: no space left on device writing to x")
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["status"] == "error" and saved["error"].startswith("output error: no space left on device")


def test_the_output_error_says_what_to_do():
    assert str(OutputError.of(errno.ENOSPC, "/data/out")) == (
        "output error: no space left on device writing to /data/out: free space (or set another output.root), "
        "then rerun the same command (finished units are kept)"
    )


# -- a disk that fills up during a real run ---------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs (needs root): the sample run fills it in its first phases."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True
        ).returncode
    ):
        pytest.skip("needs root to mount a small tmpfs (the fault-injection tests above cover the logic)")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def _outputs(root: Path) -> dict[str, str]:
    """What a run publishes (documents, rejected rows, shards), by content."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for d in ("documents", "rejected", "shards")
        for p in sorted((root / d).rglob("*"))
        if p.is_file()
    }


@pytest.mark.ray
def test_a_disk_that_fills_up_stops_the_run_with_one_line_and_the_rerun_matches_a_clean_run(small_disk, tmp_path):
    args = ["run", "jobs/sample.yaml", *(a for w in SAMPLE_WARCS for a in ("--input", w)), "--no-progress"]
    out = small_disk / f"run-{uuid.uuid4().hex[:6]}"
    full = _curate(*args, "--output", str(out))
    assert full.returncode == 1, full.stderr[-3000:]
    error = (
        f"output error: no space left on device writing to {out}: free space (or set another output.root), "
        "then rerun the same command (finished units are kept)"
    )
    assert full.stderr.splitlines().count(error) == 1  # (workers' log lines, forwarded by Ray, may come after it)
    assert "Traceback" not in full.stderr and "retrying" not in full.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "error" and record["error"].startswith("output error: no space left on device")
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]  # no temporary file left behind

    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)  # space freed
    again = _curate(*args, "--output", str(out))
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((out / "run.json").read_text())["status"] == "ok"

    clean = tmp_path / "clean"
    assert _curate(*args, "--output", str(clean)).returncode == 0
    got, want = _outputs(out), _outputs(clean)
    assert got == want and any(n.startswith("shards/mds/") for n in got)
    shutil.rmtree(clean)


def test_a_writer_collected_after_a_full_disk_logs_no_second_traceback():
    """A writer's __del__ failing on the full disk its unit already reported is one debug line, not a traceback;
    any other error raised in a __del__ is still printed."""
    script = (
        "import errno, gc\n"
        "from core.faults import quiet_collected_writer_faults\n"
        "class ParquetWriter:\n"
        "    def __del__(self): raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "class Other:\n"
        "    def __del__(self): raise ValueError('a real bug')\n"
        "quiet_collected_writer_faults(); quiet_collected_writer_faults()\n"
        "ParquetWriter(); Other(); gc.collect()\n"
    )
    err = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True).stderr
    assert "No space left" not in err and "ParquetWriter" not in err
    assert err.count("Exception ignored") == 1 and "ValueError: a real bug" in err
