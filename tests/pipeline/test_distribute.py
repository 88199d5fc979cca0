"""pipeline.distribute's unit task, called as Ray calls it in a worker process: a worker that holds
models is built once per process and kept for its phase, released when another phase's task lands."""

from __future__ import annotations

import pytest

from pipeline import distribute
from pipeline.config import load_config
from pipeline.phase import Unit
from tests.conftest import REPO

BUILT: list[str] = []
CLOSED: list[str] = []


class Recorder:
    """A worker that records when it is built, used and closed."""

    def __init__(self, config, name: str):
        self.name = name
        BUILT.append(name)

    def process(self, unit: Unit) -> dict:
        if unit.name == "boom":
            raise ValueError("this unit fails")
        return {"unit": unit.name, "worker": self.name}

    def close(self) -> None:
        CLOSED.append(self.name)


@pytest.fixture(autouse=True)
def fresh_process():
    BUILT.clear()
    CLOSED.clear()
    distribute._KEPT.clear()
    yield
    distribute._KEPT.clear()


def job(name: str, keep: bool) -> dict:
    config = load_config(REPO / "jobs" / "sample.yaml").model_dump(mode="json")
    return {
        "config": config,
        "extra": {"name": name},
        "open_worker": Recorder,
        "keep_worker": keep,
        "key": f"key-{name}",
    }


def run(j: dict, unit: str) -> dict:
    """What the task answers: a step's dict, or a failure as the dict a step's failure is."""
    return distribute._decode(distribute._unit_task(j, Unit(unit, "f", {}).to_json()), typed=False)


def test_a_kept_worker_is_built_once_for_its_phase_and_released_by_the_next():
    first, second = job("extracted", True), job("final", True)
    assert [run(first, u)["worker"] for u in ("a", "b", "c")] == ["extracted"] * 3
    assert BUILT == ["extracted"] and CLOSED == []
    assert run(second, "a")["worker"] == "final"
    assert BUILT == ["extracted", "final"] and CLOSED == ["extracted"]


def test_a_phase_that_keeps_nothing_releases_the_kept_worker_and_builds_per_unit():
    run(job("extracted", True), "a")
    plain = job("signatures", False)
    run(plain, "a")
    run(plain, "b")
    assert CLOSED == ["extracted"] and not distribute._KEPT
    assert BUILT == ["extracted", "signatures", "signatures"]


def test_a_failing_unit_is_reported_and_the_kept_worker_stays():
    keep = job("extracted", True)
    failed = run(keep, "boom")
    assert failed["unit"] == "boom" and failed["failed"] == "ValueError: this unit fails"
    assert run(keep, "next")["worker"] == "extracted" and BUILT == ["extracted"]


@pytest.mark.ray
def test_a_local_run_starts_ray_without_the_token_authentication_warning(tmp_path):
    """Before, every local run printed Ray's "Token authentication is enabled for this Ray cluster" warning (a new
    local Ray turns it on when RAY_AUTH_MODE is unset).  The embedded Ray still has token authentication, and a
    mode the user set is theirs."""
    import os
    import subprocess
    import sys

    script = (
        "import os\n"
        "from pipeline.distribute import init_ray, shutdown_local_ray\n"
        "init_ray(1)  # as the CLI starts it: Ray is first imported there\n"
        "import ray\n"
        "assert ray.get(ray.remote(lambda: 1 + 1).remote()) == 2\n"
        "print('mode', os.environ.get('RAY_AUTH_MODE'))\n"
        "shutdown_local_ray()\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    env["HOME"] = str(tmp_path)  # no token yet: Ray makes one, as it does for any new local cluster
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Token authentication is" not in r.stderr, r.stderr[-3000:]
    assert "mode token" in r.stdout and (tmp_path / ".ray" / "auth_token").is_file()
    env["RAY_AUTH_MODE"] = "disabled"
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0 and "mode disabled" in r.stdout, r.stderr[-3000:]


def _yields_then_raises():
    yield 1
    raise ValueError("the output is full")


@pytest.mark.ray
def test_a_streamed_task_that_raised_is_left_to_end_not_cancelled(ray_local, monkeypatch):
    """A task's error is raised here as its own, and the task, which has ended, is not cancelled: a cancel reached
    it as it tidied up (a KeyboardInterrupt, its traceback on the console after the run's one-line error)."""
    cancelled = []
    monkeypatch.setattr(ray_local, "cancel", lambda ref, **kw: cancelled.append(ref))
    got = []
    with pytest.raises(ValueError, match="the output is full"):
        for item in distribute.stream_on_a_worker(_yields_then_raises, cpus=0):
            got.append(item)
    assert got == [1] and cancelled == []
    stopped = distribute.stream_on_a_worker(_yields_then_raises, cpus=0)
    assert next(stopped) == 1
    stopped.close()  # the caller stopped early: the task is cancelled
    assert len(cancelled) == 1
