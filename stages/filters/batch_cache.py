"""Derived data that the filters of one batch share: its words, its lines.

The Gopher quality and repetition filters read the same texts: splitting them
into words once instead of twice saves a quarter of the filters' time.  But
between two filters the chain removes the rejected rows (``run_chain``), so
the second filter gets a new table holding a subset of the texts.  The cache
keeps the last texts with what was derived from them; a lookup finds the rows
of the new texts among the cached ones with a hash join on the strings
themselves (``pc.index_in``), so a hit needs equal texts, never just equal
ids, and then takes those rows of the derived data.

Only what depends on the text alone is cached, never anything that depends on
a filter's config.  One cache per thread, holding the last two batches that
were built; rows taken from a cached batch are not remembered themselves, so
the batch they come from stays cached.  A filter run per language
(``by_language.py``) builds the whole batch's words once (:func:`prime`), and
each language's group takes its rows from them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class Derived(Protocol):
    def take(self, rows: np.ndarray) -> Derived: ...


D = TypeVar("D", bound=Derived)
_KEEP = 2  # batches remembered
_local = threading.local()


def _entries() -> list[tuple[pa.Array, dict[str, Derived]]]:
    if not hasattr(_local, "entries"):
        _local.entries = []
    return _local.entries


def shared(texts: pa.Array, kind: str, build: Callable[[pa.Array], D]) -> D:
    """``build(texts)``, or the rows of texts' documents in what was built for an earlier batch."""
    found = cached(texts, kind)
    if found is not None:
        value, rows = found
        return value if rows is None else value.take(rows)
    value = build(texts)
    _remember(texts, kind, value)
    return value


def cached(texts: pa.Array, kind: str) -> tuple[Derived, np.ndarray | None] | None:
    """What was built of ``kind`` for a batch holding every one of ``texts``, and where each text is in it
    (None: the same texts), without taking those rows; None if no cached batch holds them all."""
    for cached_texts, derived in _entries():
        if kind not in derived:
            continue
        rows = _rows_of(texts, cached_texts)
        if rows is not None:
            return derived[kind], None if rows is _SAME else rows
    return None


def prime(texts: pa.Array, kind: str, build: Callable[[pa.Array], Derived]) -> None:
    """Make ``kind`` of ``texts`` (and so of any subset of them) a hit: built unless some batch has all of them."""
    for cached_texts, derived in _entries():
        if kind in derived and _rows_of(texts, cached_texts) is not None:
            return
    _remember(texts, kind, build(texts))


def clear() -> None:
    """Forget every cached batch (this thread's)."""
    _entries().clear()


_SAME = np.zeros(0, dtype=np.int64)


def _rows_of(texts: pa.Array, cached: pa.Array) -> np.ndarray | None:
    """Where each text is in ``cached`` (_SAME if identical), or None if one is not there."""
    if _same(texts, cached):
        return _SAME
    if len(texts) > len(cached):
        return None
    rows = pc.index_in(texts, value_set=cached)
    if rows.null_count:
        return None
    return rows.to_numpy(zero_copy_only=False)


def _same(a: pa.Array, b: pa.Array) -> bool:
    return a is b or (len(a) == len(b) and a.equals(b))


def _remember(texts: pa.Array, kind: str, value: Derived) -> None:
    entries = _entries()
    for cached_texts, derived in entries:
        if _same(texts, cached_texts):
            derived[kind] = value
            return
    entries.insert(0, (texts, {kind: value}))
    del entries[_KEEP:]
