"""Paragraph dedup killed mid-way (SIGKILL of the driver and its Ray) and rerun: the bytes of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.paragraph_dedup import quoted_corpus, write_parts
from core.storage import Storage
from tests.conftest import REPO
from tests.dedup_standalone import run_dedup
from tests.pipeline.dedup.test_dedup_paragraphs_steps import config, digests

pytestmark = [pytest.mark.ray, pytest.mark.faults]

DRIVER = """
import json, sys
import ray
from pipeline.config import RunConfig
from pipeline.distribute import init_ray
from tests.dedup_standalone import run_dedup
from core.storage import Storage
cfg = RunConfig.model_validate(json.loads(sys.argv[1]))
ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
init_ray()
run_dedup(cfg, Storage(cfg.output.root), workers=2, progress=False)
"""


def _kill_when(cmd: list[str], ready, timeout: float = 600) -> int:
    """Run ``cmd``; SIGKILL it and every process it started as soon as ``ready()``; returns its exit code."""
    import psutil

    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if ready():
            family = psutil.Process(proc.pid).children(recursive=True)
            os.kill(proc.pid, signal.SIGKILL)
            _, alive = psutil.wait_procs(family, timeout=3)
            for p in alive:  # Ray's agents may linger: killed as a lost node would be
                try:
                    p.kill()
                except psutil.Error:
                    pass
            break
        time.sleep(0.005)
    return proc.wait(timeout=60)


def _any(folder: Path, pattern: str = "*"):
    return lambda: folder.is_dir() and any(folder.glob(pattern))


@pytest.mark.parametrize("where", ["paragraphs/hashes", "_done/deduped"])
def test_killed_in_the_paragraph_step_or_the_rewrite_then_rerun_gives_the_same_bytes(ray_local, tmp_path, where):
    docs = quoted_corpus(pages=8)
    reference = tmp_path / "reference"
    write_parts(Storage(str(reference)), docs)
    run_dedup(config(reference), Storage(str(reference)), workers=2, progress=False)

    out = tmp_path / "killed"
    write_parts(Storage(str(out)), docs)
    folder = out / "dedup" / where if where.startswith("paragraphs") else out / where
    # in the rewrite: a part's marker (_done/deduped/signatures/ holds step 1's)
    ready = _any(folder) if where.startswith("paragraphs") else _any(folder, "*.json")
    rc = _kill_when([sys.executable, "-c", DRIVER, json.dumps(config(out).model_dump(mode="json"))], ready)
    assert rc == -signal.SIGKILL
    assert not (out / "_done" / "deduped" / "_corpus.json").exists()  # killed before the phase ended
    summary = run_dedup(config(out), Storage(str(out)), workers=2, progress=False)
    assert "skipped" not in summary and summary["paragraphs"]["removed"] > 0
    assert digests(out) == digests(reference)
