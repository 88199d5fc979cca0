"""Every input the fuzzing campaign found (fuzz/regressions/<target>/), replayed
through the same check the fuzzer ran (fuzz/checks.py), without atheris.

Each file is named for the bug it found; the fix is in the commit that added it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"
sys.path.insert(0, str(FUZZ))
import checks  # noqa: E402

FINDINGS = sorted(p for p in (FUZZ / "regressions").glob("*/*") if p.is_file())


@pytest.mark.parametrize("path", FINDINGS, ids=[f"{p.parent.name}/{p.name}" for p in FINDINGS])
def test_fuzz_finding_is_fixed(path):
    t0 = time.monotonic()
    checks.CHECKS[path.parent.name](path.read_bytes())
    assert time.monotonic() - t0 < 30  # libFuzzer's limit in the campaign: a hang was a finding too


def test_every_target_has_a_check():
    assert set(checks.CHECKS) == set(checks.TARGETS)
    assert {p.parent.name for p in FINDINGS} <= set(checks.TARGETS)


@pytest.mark.parametrize("target", ["url", "card"])
def test_the_target_still_runs_on_todays_outputs(target):
    """A campaign starts with each target's warm-up: the card target renders fuzz/data/card_stats.json, which must
    be a card of today's shape (rebuild it with fuzz/make_corpus.py when the card's sections change)."""
    checks.warm_up(target)
