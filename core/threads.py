"""Work over many items by a few threads, with memory bounded by a window, not by the number of items.

``ThreadPoolExecutor.map`` submits every item at once: a future and its result each until the caller reads them.
Over a snapshot's ~90,000 inputs or markers that is ~165 MB of futures in the driver for a check that holds one
file's first bytes at a time (issue 39).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Items in flight at most (submitted, or done and not yet read).
WINDOW = 256


def map_bounded(fn: Callable[[T], R], items: Iterable[T], threads: int = 16, window: int = WINDOW) -> Iterator[R]:
    """``fn`` of every item, in order, by ``threads`` threads, a window of ``window`` items at a time."""
    it = iter(items)
    with ThreadPoolExecutor(threads) as pool:
        while batch := list(islice(it, window)):
            yield from pool.map(fn, batch)
