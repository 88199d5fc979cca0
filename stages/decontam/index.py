"""The eval n-gram index: built once from every eval item (in a Ray task of its own in a run,
pipeline/eval_index.py), shipped to the workers, and asked, for a batch of documents, which documents
share an n-gram with which eval items.  The build keeps no Python object per item or n-gram: each
set's items are reduced chunk by chunk to compact arrays (the set's strings freed before the next set is
read), joined in blocks, then sorted once.

What is indexed: every window of ``ngram`` normalized words of every item
(stages/decontam/normalize.py); an item with fewer words but at least
``min_item_words`` as a whole (its words, in order: GPT-3 lowered N to such
lengths for short-item sets, Brown et al. 2020, App. C); shorter items are
skipped and counted, since a handful of words is a common phrase.

Two kinds, one contract (every hit is checked against the eval items' text,
so neither kind ever reports an n-gram no item holds):

- ``exact``: the (hash, item) pairs sorted by hash, two numpy arrays (12 bytes
  a pair); a document n-gram is looked up with ``searchsorted`` and a hit
  gives its items, each then checked by a search of that item's text alone;
- ``bloom``: a Bloom filter of the hashes (``bloom_fpr``, about 4.8 bytes per
  n-gram at 1e-8); a hit is checked by searching the n-gram in the text of
  all items, which also says which items hold it.  Later windows of the same
  document found in an item already matched are attributed to it without a
  new search, so a planted passage costs one search, not one per window.

Both keep the normalized items (" w1 w2 ... wn " each, joined by newlines)
for those checks: about as many bytes as the eval files' text.  Everything
large is a numpy array, which Ray's object store maps into every worker of a
node without a copy each.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from stages.decontam.bloom import BloomFilter
from stages.decontam.config import DecontamConfig
from stages.decontam.evalsets import EvalItems, EvalSetError, open_local_or_s3, read_eval_set
from stages.decontam.normalize import Ngrams, Words, ngrams, words_of
from stages.dedup.minhash import poly_hash_spans
from stages.named_files import Opener

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalSetStats:
    """What one eval set put in the index."""

    name: str
    path: str
    items: int
    items_ngrams: int  # items with at least `ngram` words: all their n-grams indexed
    items_whole: int  # shorter items matched whole
    items_skipped: int  # shorter than min_item_words: not indexed
    ngrams: int  # distinct (n-gram, item) pairs


@dataclass(frozen=True)
class IndexStats:
    """What the index holds and cost to build (for run.json and the card)."""

    kind: str
    ngram: int
    lengths: tuple[int, ...]  # n-gram lengths looked up: ngram, and those of items matched whole
    eval_sets: tuple[EvalSetStats, ...]
    keys: int  # distinct hashes
    nbytes: int  # arrays and text shipped to each worker
    build_seconds: float
    bloom_fpr: float | None = None  # the filter's rate with the keys it holds (<= decontam.bloom_fpr)
    bloom_hashes: int | None = None


@dataclass(frozen=True)
class Matches:
    """Verified (document, eval item) pairs of a batch, each pair once, sorted by document then item."""

    doc: np.ndarray  # int64
    item: np.ndarray  # int64: index into EvalIndex items
    ngrams: int  # n-grams looked up
    candidates: int  # hits of the hash set or filter that were checked against the text
    false_hits: int  # of those, n-grams that no item holds


@dataclass
class EvalIndex:
    """See the module docstring; picklable (numpy arrays, bytes, an Arrow array)."""

    kind: str
    lengths: tuple[int, ...]
    set_names: tuple[str, ...]
    item_set: np.ndarray  # int32: the eval set of every item
    item_ids: pa.LargeStringArray
    text: np.ndarray  # uint8: normalized items, " w1 ... wn " each, newline-joined
    item_offsets: np.ndarray  # int64: where each item's text starts in ``text`` (one more: the end)
    keys: np.ndarray | None = None  # exact: sorted uint64 hashes, one per (n-gram, item) pair
    key_items: np.ndarray | None = None  # exact: the item of each
    bloom: BloomFilter | None = None
    stats: IndexStats | None = field(default=None, compare=False)

    def label(self, item: int) -> str:
        """``set:id`` of an item."""
        return f"{self.set_names[self.item_set[item]]}:{self.item_ids[item].as_py()}"

    def find(self, words: Words) -> Matches:
        """Which documents of a normalized batch share an n-gram with which eval items (verified)."""
        grams = ngrams(words, self.lengths)
        finder = self._exact if self.kind == "exact" else self._bloom
        pairs, candidates, false_hits = finder(words, grams)
        if not pairs:
            empty = np.zeros(0, np.int64)
            return Matches(empty, empty, len(grams), candidates, false_hits)
        found = np.unique(np.array(pairs, np.int64), axis=0)
        return Matches(found[:, 0], found[:, 1], len(grams), candidates, false_hits)

    # ------------------------------------------------------------ lookups

    def _exact(self, words: Words, grams: Ngrams) -> tuple[list[tuple[int, int]], int, int]:
        keys = self.keys
        # Sorted queries search ~10x faster (neighbouring searches touch the same cache lines); hits are rare,
        # so the hashes found, not every query's position, are mapped back to the windows.
        queries = np.sort(grams.hashes)
        pos = np.minimum(np.searchsorted(keys, queries), len(keys) - 1)
        found = np.unique(queries[keys[pos] == queries]) if len(keys) else queries[:0]
        if not len(found):
            return [], 0, 0
        hit = np.flatnonzero(np.isin(grams.hashes, found))
        lo = np.searchsorted(keys, grams.hashes[hit], side="left")
        hi = np.searchsorted(keys, grams.hashes[hit], side="right")
        counts = hi - lo
        window = np.repeat(hit, counts)  # one row per (window, candidate item)
        slot = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)
        item = self.key_items[slot]
        order = np.lexsort((window, item, grams.doc[window]))  # by document, item, then position
        pairs: list[tuple[int, int]] = []
        false_hits, done = 0, set()
        for w, it in zip(window[order].tolist(), item[order].tolist(), strict=False):
            doc = int(grams.doc[w])
            if (doc, it) in done:
                continue  # a pair needs one verified window
            if self._in_item(self._needle(words, grams, w), it):
                done.add((doc, it))
                pairs.append((doc, it))
            else:
                false_hits += 1
        return pairs, len(window), false_hits

    def _bloom(self, words: Words, grams: Ngrams) -> tuple[list[tuple[int, int]], int, int]:
        hit = np.flatnonzero(self.bloom.contains(grams.hashes))
        if not len(hit):
            return [], 0, 0
        hit = hit[np.lexsort((grams.starts[hit], grams.doc[hit]))]
        pairs: list[tuple[int, int]] = []
        false_hits, matched, searched = 0, {}, {}
        for w in hit.tolist():
            doc, needle = int(grams.doc[w]), self._needle(words, grams, w)
            if any(self._in_item(needle, it) for it in matched.get(doc, ())):
                continue  # more of a passage already matched
            items = searched.get(needle)
            if items is None:
                items = searched[needle] = self._items_holding(needle)
            if not items:
                false_hits += 1
                continue
            for it in items:
                if it not in matched.setdefault(doc, []):
                    matched[doc].append(it)
                    pairs.append((doc, it))
        return pairs, len(hit), false_hits

    # ------------------------------------------------------------ exact checks

    @staticmethod
    def _needle(words: Words, grams: Ngrams, w: int) -> bytes:
        return b" " + words.text(int(grams.starts[w]), int(grams.ends[w])) + b" "

    def _in_item(self, needle: bytes, item: int) -> bool:
        return needle in self.text[self.item_offsets[item] : self.item_offsets[item + 1]].tobytes()

    def _items_holding(self, needle: bytes) -> list[int]:
        """Every item whose text holds ``needle``: one scan of the eval text, in place (a regex
        searches the array's buffer without copying it), skipping to the next item after a find."""
        pattern, text = re.compile(re.escape(needle)), memoryview(self.text)
        out, found = [], pattern.search(text)
        while found is not None:
            item = int(np.searchsorted(self.item_offsets, found.start(), side="right")) - 1
            out.append(item)
            found = pattern.search(text, int(self.item_offsets[item + 1]))
        return out


# ---------------------------------------------------------------- building


def build_index(
    config: DecontamConfig, open_file: Opener = open_local_or_s3, max_index_bytes: int | None = None
) -> EvalIndex:
    """Read every eval set and index its items (once per run, in one process); EvalSetError on a bad file, or
    once the index's arrays take more than ``max_index_bytes``.

    Sets are read one at a time and each is reduced to compact arrays before the next is read, so the
    items as Python strings are held for one set at most."""
    t0 = time.perf_counter()
    builder, total = _Builder(config, max_index_bytes), 0
    for i, s in enumerate(config.eval_sets):
        items = read_eval_set(s, open_file, config.max_file_bytes)
        total += len(items)
        if total > config.max_items:
            more = " or more" if i + 1 < len(config.eval_sets) else ""  # the sets not read yet
            raise EvalSetError(
                f"eval sets: {total:,} items{more}, more than decontam.max_items "
                f"({config.max_items:,}): raise it or give fewer sets"
            )
        builder.add(items)
        del items
    return builder.finish(t0)


#: Items normalized and hashed at a time: the hash's prefix tables grow with the bytes of a call.
CHUNK_ITEMS = 2048
#: Chunks joined into one block as they come (a block is big enough to be given back to the system when freed).
BLOCK_CHUNKS = 64


def index_items(config: DecontamConfig, sets: list[EvalItems], t0: float | None = None) -> EvalIndex:
    """The index of eval items already read."""
    builder = _Builder(config)
    for s in sets:
        builder.add(s)
    return builder.finish(time.perf_counter() if t0 is None else t0)


class _Builder:
    """The index, built set by set and chunk by chunk into compact arrays (no Python object per n-gram or
    item is kept), each concatenated and its pieces freed in turn: the cost of an eval set is about its
    arrays, not its strings."""

    def __init__(self, config: DecontamConfig, max_bytes: int | None = None):
        self.config, self.max_bytes = config, max_bytes
        # Per chunk, in blocks: hashes (uint64, one per distinct (n-gram, item) of a chunk, by item), their items
        # (int32), words per item (int32), each item's normalized text (uint8: " w1 ... wn \n") and its length.
        self.parts = {k: _Blocks() for k in ("hashes", "items", "counts", "text", "lengths")}
        self.names: list[str] = []
        self.paths: list[str] = []
        self.sizes: list[int] = []
        self.ids: list[pa.Array] = []
        self.n = 0

    def add(self, items: EvalItems) -> None:
        self.names.append(items.name)
        self.paths.append(items.path)
        self.sizes.append(len(items))
        self.ids.append(pa.array(items.ids, pa.large_string()))
        for i in range(0, len(items), CHUNK_ITEMS):
            chunk = _chunk(items.texts[i : i + CHUNK_ITEMS], self.n + i, self.config)
            for part, value in zip(self.parts.values(), chunk, strict=True):
                part.add(value)
            held = sum(part.nbytes for part in self.parts.values())
            if self.max_bytes is not None and held > self.max_bytes:
                raise EvalSetError(
                    f"eval sets: the index of the first {self.n + min(i + CHUNK_ITEMS, len(items)):,} items takes "
                    f"{held:,} bytes, more than the {self.max_bytes:,} it may take of the cluster's object store "
                    "(it is shipped to every worker through it): give fewer or shorter eval sets, or start Ray with a "
                    "larger object store"
                )
        self.n += len(items)

    def finish(self, t0: float) -> EvalIndex:
        config = self.config
        if not self.n:
            raise EvalSetError("no eval items to index (give eval sets with at least one item)")
        names = ("counts", "lengths", "text", "hashes", "items")
        counts, lengths, text, hashes, items = (self.parts[k].joined() for k in names)
        # By hash, then item: the chunks hold their pairs by item and follow each other, so a stable sort
        # by hash alone gives that order.  (An item's repeated n-grams were dropped in its chunk.)
        order = np.argsort(hashes, kind="stable")
        items = items[order]
        hashes = hashes[order]
        del order
        offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])

        whole = (counts >= config.min_item_words) & (counts < config.ngram)
        item_set = np.repeat(np.arange(len(self.sizes), dtype=np.int32), self.sizes)
        index = EvalIndex(
            kind=config.index,
            lengths=(config.ngram, *sorted(set(counts[whole].tolist()), reverse=True)),
            set_names=tuple(self.names),
            item_set=item_set,
            item_ids=pa.concat_arrays(self.ids) if len(self.ids) > 1 else self.ids[0],
            text=text,
            item_offsets=offsets,
        )
        distinct = np.r_[True, hashes[1:] != hashes[:-1]] if len(hashes) else np.zeros(0, bool)
        keys = int(distinct.sum())
        if config.index == "exact":
            index.keys, index.key_items = hashes, items
        else:
            index.bloom = BloomFilter.build(hashes[distinct], config.bloom_fpr)
        del distinct
        sets = len(self.sizes)
        per_set = np.bincount(item_set[items], minlength=sets) if len(items) else np.zeros(sets, np.int64)

        def of_set(mask: np.ndarray, i: int) -> int:
            return int((mask & (item_set == i)).sum())

        index.stats = IndexStats(
            kind=config.index,
            ngram=config.ngram,
            lengths=index.lengths,
            eval_sets=tuple(
                EvalSetStats(
                    name,
                    path,
                    size,
                    of_set(counts >= config.ngram, i),
                    of_set(whole, i),
                    of_set(counts < config.min_item_words, i),
                    int(per_set[i]),
                )
                for i, (name, path, size) in enumerate(zip(self.names, self.paths, self.sizes, strict=True))
            ),
            keys=keys,
            nbytes=index_bytes(index),
            build_seconds=round(time.perf_counter() - t0, 3),
            bloom_fpr=index.bloom.fpr if index.bloom is not None else None,
            bloom_hashes=index.bloom.k if index.bloom is not None else None,
        )
        for s in index.stats.eval_sets:
            if s.items_skipped:
                log.warning(
                    "decontam: eval set '%s': %d of %d items have fewer than %d words and are not indexed "
                    "(common phrases)",
                    s.name,
                    s.items_skipped,
                    s.items,
                    config.min_item_words,
                )
        return index


class _Blocks:
    """Arrays added one at a time, joined into blocks of BLOCK_CHUNKS as they come: the small arrays' memory is
    reused by the next ones, and a block is big enough to go back to the system when freed."""

    def __init__(self):
        self.blocks: list[np.ndarray] = []
        self.parts: list[np.ndarray] = []
        self.nbytes = 0

    def add(self, part: np.ndarray) -> None:
        self.parts.append(part)
        self.nbytes += part.nbytes
        if len(self.parts) >= BLOCK_CHUNKS:
            self.blocks.append(_joined(self.parts))

    def joined(self) -> np.ndarray:
        if self.parts:
            self.blocks.append(_joined(self.parts))
        return _joined(self.blocks)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts as one array, each freed once copied (the list is emptied): the peak is the result and one part."""
    out = np.empty(sum(len(p) for p in parts), parts[0].dtype)
    at = 0
    parts.reverse()
    while parts:
        part = parts.pop()
        out[at : at + len(part)] = part
        at += len(part)
        del part
    return out


def _chunk(texts: list[str], first: int, config: DecontamConfig) -> tuple[np.ndarray, ...]:
    """(hashes, items, word counts, text, text lengths) of some items: the distinct (hash, item) pairs by item
    (every ``ngram`` window of an item that long, the whole item for one of ``min_item_words`` or more,
    nothing for a shorter one), and each item's normalized text with its length."""
    words = words_of(pa.array(texts, pa.large_string()))
    grams = ngrams(words, (config.ngram,))
    whole = np.flatnonzero((words.counts >= config.min_item_words) & (words.counts < config.ngram))
    first_word = np.cumsum(words.counts) - words.counts
    last_word = first_word + words.counts - 1
    whole_hashes = (
        poly_hash_spans(words.data, words.starts[first_word[whole]], words.ends[last_word[whole]])
        if len(whole)
        else np.zeros(0, np.uint64)
    )
    hashes = np.concatenate([grams.hashes, whole_hashes])
    items = np.concatenate([grams.doc, whole]).astype(np.int64)
    order = np.lexsort((hashes, items))  # by item, then hash: an item's repeated n-grams side by side
    hashes, items = hashes[order], items[order]
    keep = np.r_[True, (hashes[1:] != hashes[:-1]) | (items[1:] != items[:-1])] if len(hashes) else np.zeros(0, bool)
    data = words.data.tobytes()
    bounds = zip(words.offsets[:-1].tolist(), words.offsets[1:].tolist(), strict=True)
    text = b"".join(b" " + data[a:b] + b" \n" for a, b in bounds)
    return (
        hashes[keep],
        (items[keep] + first).astype(np.int32),
        words.counts.astype(np.int32),
        np.frombuffer(text, np.uint8),
        np.diff(words.offsets) + 3,
    )


def index_bytes(index: EvalIndex) -> int:
    """Bytes the index holds (what a worker receives)."""
    arrays = [
        index.item_set,
        index.item_offsets,
        index.keys,
        index.key_items,
        index.bloom.bits if index.bloom is not None else None,
    ]
    return index.text.nbytes + index.item_ids.nbytes + sum(a.nbytes for a in arrays if a is not None)
