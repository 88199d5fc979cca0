"""What a process's allocator keeps: fewer glibc arenas in the driver, and freed pages given back.

Arrow allocates with glibc's malloc in our processes (core/arrow_allocator.py), and glibc gives each thread
that allocates under contention an arena of its own, up to 8 per core, each keeping the pages freed in it.
The driver reads tens of thousands of small files (inputs sniffed, markers, footers) by a window of threads
(core/threads.py): over a snapshot's 90,000 inputs its planning alone reached 427 MB, 325 MB with two arenas,
at the same speed (its threads wait on I/O, not on malloc).  Even in two arenas, what the threads free between
what they keep is kept: sniffing 90,000 inputs by 16 threads left +57 MB, +4 MB with :func:`trim` every
4,096 files (core/threads.py), a second or so more over the 90,000.  Issue 39.
"""

from __future__ import annotations

import sys

#: glibc's mallopt parameter for the number of arenas (malloc.h: ``M_ARENA_MAX``).
M_ARENA_MAX = -8
#: Arenas the driver allocates from.
DRIVER_ARENAS = 2


def _glibc():
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (musl): its malloc has no arenas to bound or trim
        return None


def limit_arenas(arenas: int = DRIVER_ARENAS) -> bool:
    """Allocate from at most ``arenas`` arenas in this process from now on; True when glibc took it."""
    libc = _glibc()
    return bool(libc is not None and hasattr(libc, "mallopt") and libc.mallopt(M_ARENA_MAX, arenas) == 1)


def return_free_memory() -> None:
    """Give the memory a unit freed back to the system: Arrow's allocator and glibc's keep freed pages for
    reuse, so a worker process would stay at its largest unit's peak for the rest of the run (and a later
    phase's set-up would come on top of it).  Milliseconds, once per unit."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    trim()


def trim() -> None:
    """Give glibc's free pages back to the system, in every arena (not only at a heap's top)."""
    libc = _glibc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def resident_mb() -> int | None:
    """This process's resident memory in MB (None where /proc is not there): what a long run logs per step."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") >> 20
