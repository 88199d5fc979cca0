"""pipeline.phase.fingerprint with a long list given as Rows: the list's fingerprint, hashed a row at a time (a
phase's 90,000 units and parts are fingerprinted without their list nor its JSON: issue 39)."""

from __future__ import annotations

import random
import string
import tracemalloc
from pathlib import PurePosixPath

import pytest

from pipeline.phase import Rows, fingerprint


def _rows(rng: random.Random, n: int) -> list[tuple]:
    text = string.printable + 'é\0\u2028"\\'
    return [
        ("".join(rng.choices(text, k=rng.randint(0, 12))), f"{rng.getrandbits(64):016x}", rng.random() < 0.5)
        for _ in range(n)
    ]


@pytest.mark.parametrize("n", [0, 1, 2, 4095, 4096, 4097, 9000])
def test_rows_give_the_fingerprint_of_their_list(n):
    rng = random.Random(n)
    rows = _rows(rng, n)
    other = {"a": [1, 2.5, None, "x\0y"], "z": {"q": True}, "p": PurePosixPath("a/b")}  # default=str still applies
    assert fingerprint(Rows(iter(rows))) == fingerprint(rows)
    assert fingerprint({"parts": Rows(rows), **other}, "s") == fingerprint({"parts": rows, **other}, "s")
    assert fingerprint(other, Rows(rows), Rows(iter(rows))) == fingerprint(other, rows, rows)
    assert fingerprint(Rows(rows)) != fingerprint(Rows(rows[:-1])) or n == 0


def test_a_value_that_looks_like_the_placeholder_is_hashed_as_itself():
    rows = [("a", "b", True)]
    for odd in ('"0:0"', "\0rows\0", "x:0"):
        assert fingerprint({"v": odd, "r": Rows(rows)}) == fingerprint({"v": odd, "r": rows})


def test_rows_are_never_held_whole():
    """100,000 rows of a name, a fingerprint and a flag: as a list and its JSON, ~20 MB; hashed as Rows, a batch."""
    fps = [f"{i * 2654435761 % 2**64:016x}" for i in range(0, 100_000, 1000)]
    rows = ((f"CC-MAIN-00000-{i:08d}", fps[i % 100], True) for i in range(100_000))
    tracemalloc.start()
    try:
        fingerprint({"depends": ["x"], "parts": Rows(rows)})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3_000_000, peak
