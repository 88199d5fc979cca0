"""Work over many items by a few threads, with memory bounded by a window, not by the number of items.

``ThreadPoolExecutor.map`` submits every item at once: a future and its result each until the caller reads them.
Over a snapshot's ~90,000 inputs or markers that is ~165 MB of futures in the driver for a check that holds one
file's first bytes at a time (issue 39).  The threads' freed memory is given back every ``TRIM_EVERY`` items
(core/memory.py): glibc keeps what is freed between what is kept, and it added up to ~57 MB over 90,000 inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import TypeVar

from core.memory import trim

T = TypeVar("T")
R = TypeVar("R")

#: Items in flight at most (submitted, or done and not yet read).
WINDOW = 256
#: Items between two trims of the allocator (a trim costs a few ms).
TRIM_EVERY = 4096


def map_bounded(fn: Callable[[T], R], items: Iterable[T], threads: int = 16, window: int = WINDOW) -> Iterator[R]:
    """``fn`` of every item, in order, by ``threads`` threads, a window of ``window`` items at a time."""
    it, done = iter(items), 0
    with ThreadPoolExecutor(threads) as pool:
        while batch := list(islice(it, window)):
            yield from pool.map(fn, batch)
            done += len(batch)
            if done // TRIM_EVERY != (done - len(batch)) // TRIM_EVERY:
                trim()
