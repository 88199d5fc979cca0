"""The engine's per-unit lists as columns: names and packed fingerprints, not an object per unit.

A phase over a snapshot's 90,000 parts held its units, their markers and the parts it reads as Python
objects: a dataclass, a 16-character fingerprint string and often a params dict per unit, ~150-400 B each,
and a phase holds several such lists at once (issue 39: the driver grew with parts).  Here a list keeps each
name once (interned: one string per name for every phase that lists it) and the fingerprints packed in an
array of 64-bit integers (8 B each); a :class:`Unit`, :class:`Part` or :class:`Marker` is made when one is
read, and dropped by whoever read it.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice, pairwise

import numpy as np

from pipeline.phase import Part, Unit

#: Hex digits of an engine fingerprint (pipeline.phase.fingerprint): 64 bits.
FINGERPRINT_DIGITS = 16
_HEX = frozenset("0123456789abcdef")


def pack(fp: str) -> int | None:
    """An engine fingerprint as an int (None: not one, e.g. an earlier version's marker's)."""
    if len(fp) == FINGERPRINT_DIGITS and _HEX.issuperset(fp):
        return int(fp, 16)
    return None


def unpack(value: int) -> str:
    return f"{value:0{FINGERPRINT_DIGITS}x}"


class Fingerprints(Sequence[str]):
    """Fingerprints packed 8 B each; any that is not an engine fingerprint is kept as it is, aside."""

    __slots__ = ("_packed", "_odd")

    def __init__(self, fps: Iterable[str] = ()):
        self._packed = array("Q")
        self._odd: dict[int, str] = {}
        for fp in fps:
            self.append(fp)

    def append(self, fp: str) -> None:
        value = pack(fp)
        if value is None:
            self._odd[len(self._packed)] = fp
            value = 0
        self._packed.append(value)

    def __len__(self) -> int:
        return len(self._packed)

    def __getitem__(self, i: int) -> str:
        if i < 0:
            i += len(self)
        odd = self._odd.get(i) if self._odd else None
        return odd if odd is not None else unpack(self._packed[i])

    def __iter__(self) -> Iterator[str]:
        if self._odd:
            yield from (self[i] for i in range(len(self)))
        else:
            yield from map(unpack, self._packed)

    def take(self, indices: Iterable[int]) -> Fingerprints:
        if self._odd:
            return Fingerprints(self[i] for i in indices)
        out = Fingerprints()
        out._packed = array("Q", (self._packed[i] for i in indices))
        return out


def same_items(column: Sequence, other) -> bool:
    """Whether ``other`` is a sequence of the same items in the same order: a column equals the list it stands for."""
    return (
        isinstance(other, Sequence)
        and len(column) == len(other)
        and all(a == b for a, b in zip(column, other, strict=True))
    )


class Paths(Sequence[str]):
    """Input paths (or URIs) as columns: each folder once, and the file names in one UTF-8 block with their ends.
    A snapshot's 90,000 paths as a list of strings are ~11 MB in the driver and ~6.5 MB in every context a task
    is sent (issue 39); here they are ~2.5 MB, and a path is made when one is read."""

    __slots__ = ("_folders", "_folder", "_names", "_ends")

    def __init__(self, paths: Iterable[str] = ()):
        folders: dict[str, int] = {}
        self._folder, self._ends, names = array("I"), array("I"), bytearray()  # (4 GB of names: 40M files)
        for path in paths:
            head, sep, tail = path.rpartition("/")
            self._folder.append(folders.setdefault(head + sep, len(folders)))
            names += tail.encode("utf-8", "surrogatepass")
            self._ends.append(len(names))
        self._folders, self._names = list(folders), bytes(names)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Paths(self[j] for j in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("Paths index out of range")
        start = self._ends[i - 1] if i else 0
        return self._folders[self._folder[i]] + self._names[start : self._ends[i]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other) -> bool:
        return same_items(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Paths({len(self)} paths)"


class NameSet:
    """A folder's listing, for ``name in listing``: the names as one sorted array of UTF-8 bytes, searched by
    bisection.  A set of a snapshot's 90,000 part names is ~11 MB of strings and table, made and dropped for
    each phase's markers; this is ~2 MB in one block, built 4,096 names at a time."""

    __slots__ = ("_sorted",)
    _CHUNK = 4096

    def __init__(self, names: Iterable[str]):
        it, chunks = iter(names), []
        while chunk := [n.encode() for n in islice(it, self._CHUNK)]:
            chunks.append(np.array(chunk, dtype=bytes))
        self._sorted = np.sort(np.concatenate(chunks)) if chunks else np.array([], dtype="S1")

    def __contains__(self, name: str) -> bool:
        key = name.encode()
        i = int(np.searchsorted(self._sorted, key))
        # a numpy bytes value drops trailing NULs: a name ending in one is never listed as the same
        return i < len(self._sorted) and self._sorted[i] == key and not key.endswith(b"\0")

    def __len__(self) -> int:
        return len(self._sorted)


def names_of(names: Iterable[str]) -> list[str]:
    """Names as a column holds them: interned, so that every phase listing a part shares its one string."""
    return [sys.intern(n) for n in names]


class PartList(Sequence[Part]):
    """A phase's finished parts (pipeline.engine.units.parts), as two columns."""

    __slots__ = ("names", "fingerprints")

    def __init__(self, names: Iterable[str] = (), fingerprints: Iterable[str] = ()):
        self.names = names_of(names)
        self.fingerprints = fingerprints if isinstance(fingerprints, Fingerprints) else Fingerprints(fingerprints)
        if len(self.names) != len(self.fingerprints):
            raise ValueError("PartList: as many fingerprints as names")

    @classmethod
    def of(cls, parts: Iterable[Part]) -> PartList:
        if isinstance(parts, PartList):
            return parts
        listed = list(parts)
        return cls((p.name for p in listed), (p.fingerprint for p in listed))

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.take(range(*i.indices(len(self))))
        return Part(self.names[i], self.fingerprints[i])

    def take(self, indices: Iterable[int]) -> PartList:
        indices = list(indices)
        return PartList((self.names[i] for i in indices), self.fingerprints.take(indices))

    def by_name(self) -> PartList:
        """The parts sorted by name (itself when they are)."""
        names = self.names
        if all(a <= b for a, b in pairwise(names)):
            return self
        return self.take(sorted(range(len(names)), key=names.__getitem__))

    def __eq__(self, other) -> bool:
        return same_items(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PartList({len(self)} parts)"


@dataclass(frozen=True, slots=True)
class UnitList(Sequence[Unit]):
    """A phase's (or a step's) units as columns: a name and a fingerprint each, their params made when a unit is
    read (``params(i)``; a shared dict when every unit has the same), one ``step`` for all."""

    names: list[str]
    fingerprints: Fingerprints
    params: Callable[[int], dict] | dict | None = None
    step: str | None = None

    @classmethod
    def of(cls, names: Iterable[str], fingerprints: Iterable[str], params=None, step: str | None = None) -> UnitList:
        names = names_of(names)
        fps = fingerprints if isinstance(fingerprints, Fingerprints) else Fingerprints(fingerprints)
        if len(names) != len(fps):
            raise ValueError("UnitList: as many fingerprints as names")
        return cls(names, fps, params, step)

    def __len__(self) -> int:
        return len(self.names)

    def params_of(self, i: int) -> dict:
        p = self.params
        if p is None:
            return {}
        return p(i) if callable(p) else p

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.take(range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        return Unit(self.names[i], self.fingerprints[i], self.params_of(i), self.step)

    def __iter__(self) -> Iterator[Unit]:
        for i in range(len(self.names)):
            yield self[i]

    def take(self, indices: Iterable[int]) -> UnitList:
        """The units at ``indices``, as a list of its own (their params still made when read)."""
        indices = array("I", indices)
        params = self.params
        if callable(params):
            base = params
            params = lambda j: base(indices[j])  # noqa: E731 (the taken units' params, by their place in self)
        return UnitList([self.names[i] for i in indices], self.fingerprints.take(indices), params, self.step)

    def split(self, keep: Sequence[bool]) -> tuple[UnitList, UnitList]:
        """(the units where ``keep`` is true, the others), each in order."""
        return (
            self.take(i for i, k in enumerate(keep) if k),
            self.take(i for i, k in enumerate(keep) if not k),
        )


def split(units: Sequence[Unit], current: Sequence[bool]) -> tuple[Sequence[Unit], Sequence[Unit]]:
    """(the units where ``current`` is true, the others), in order; a UnitList's stay columns."""
    if isinstance(units, UnitList):
        return units.split(current)
    pairs = list(zip(units, current, strict=True))
    return [u for u, c in pairs if c], [u for u, c in pairs if not c]


@dataclass(frozen=True, slots=True)
class Marker:
    """What the engine keeps of a unit's marker: whether it is current (its fingerprint, whether the files it
    published are there), not its counts nor its list of files: a phase's tens of thousands of results are read
    again, a batch at a time, when a summary or the card adds them up (pipeline.engine.markers.results), so that
    the driver stays flat in the number of units (issue 39)."""

    fingerprint: str
    #: every file the unit published was there when the marker was read
    complete: bool = True
    #: it published a documents part
    documents_part: bool = False
    empty: bool = False


_COMPLETE, _DOCUMENTS, _EMPTY = 1, 2, 4
_FLAGS = 3  # bits


class MarkerMap(Mapping[str, Marker]):
    """A folder's markers by unit name: one int per unit (its packed fingerprint and three flags), a
    :class:`Marker` made when one is read."""

    __slots__ = ("_packed", "_odd")

    def __init__(self):
        self._packed: dict[str, int] = {}
        self._odd: dict[str, Marker] = {}  # fingerprints that are not the engine's (an earlier version's)

    def add(self, name: str, marker: Marker) -> None:
        value = pack(marker.fingerprint)
        name = sys.intern(name)
        if value is None:
            self._packed.pop(name, None)
            self._odd[name] = marker
            return
        self._odd.pop(name, None)
        flags = (_COMPLETE if marker.complete else 0) | (_DOCUMENTS if marker.documents_part else 0)
        self._packed[name] = value << _FLAGS | flags | (_EMPTY if marker.empty else 0)

    def __getitem__(self, name: str) -> Marker:
        value = self._packed.get(name)
        if value is None:
            return self._odd[name]
        return Marker(unpack(value >> _FLAGS), bool(value & _COMPLETE), bool(value & _DOCUMENTS), bool(value & _EMPTY))

    def __contains__(self, name) -> bool:
        return name in self._packed or name in self._odd

    def is_current(self, name: str, fingerprint: str) -> bool:
        """Whether the unit ``name`` of this fingerprint has a current marker (same fingerprint, complete)."""
        value = self._packed.get(name)
        if value is not None:
            return value & _COMPLETE != 0 and value >> _FLAGS == pack(fingerprint)
        m = self._odd.get(name)
        return m is not None and m.complete and m.fingerprint == fingerprint

    def published_part(self, name: str) -> bool:
        """Whether the unit's marker says it published a documents part."""
        value = self._packed.get(name)
        if value is not None:
            return value & _DOCUMENTS != 0
        m = self._odd.get(name)
        return m is not None and m.documents_part

    def __iter__(self) -> Iterator[str]:
        yield from self._packed
        yield from self._odd

    def __len__(self) -> int:
        return len(self._packed) + len(self._odd)
