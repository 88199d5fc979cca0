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
    return {"config": config, "extra": {"name": name}, "open_worker": Recorder, "keep_worker": keep, "key": f"key-{name}"}


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
