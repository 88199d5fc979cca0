"""core/memory.py: the driver's arenas bounded, as glibc itself reports its heaps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: In a fresh process (arenas are per process): 16 threads allocate, then glibc's malloc_info counts the heaps.
COUNT_ARENAS = r"""
import ctypes, sys, tempfile, threading
from core.memory import limit_arenas
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.fopen.restype = ctypes.c_void_p
if sys.argv[1] != "default":
    assert limit_arenas(int(sys.argv[1]))
start = threading.Barrier(16)
def work():
    start.wait()
    for _ in range(200):
        libc.free(libc.malloc(4096))
threads = [threading.Thread(target=work) for _ in range(16)]
[t.start() for t in threads]
[t.join() for t in threads]
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    f = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(f))
    libc.fclose(ctypes.c_void_p(f))
    print(open(out.name).read().count("<heap nr="))
"""


def _arenas(limit: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", COUNT_ARENAS, limit], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_the_driver_allocates_from_the_arenas_it_is_given_not_one_per_thread():
    assert _arenas("default") > 4  # glibc gives each new thread an arena of its own (up to 8 per core)
    assert _arenas("2") <= 2
    assert _arenas("1") == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/statm")
def test_the_resident_memory_a_step_logs_is_this_processs():
    from core.memory import resident_mb

    before = resident_mb()
    held = bytearray(64 << 20)  # 64 MB, touched
    held[::4096] = b"x" * len(held[::4096])
    assert before is not None and resident_mb() - before >= 60
