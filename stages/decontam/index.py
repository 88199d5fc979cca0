"""The eval n-gram index: built once on the driver from every eval item, shipped to the workers, and
asked, for a batch of documents, which documents share an n-gram with which eval items.

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

from stages.dedup.minhash import poly_hash_spans
from stages.decontam.bloom import BloomFilter
from stages.decontam.config import DecontamConfig
from stages.decontam.evalsets import EvalItems, EvalSetError, open_local_or_s3, read_eval_set
from stages.decontam.normalize import Ngrams, Words, ngrams, words_of
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


def build_index(config: DecontamConfig, open_file: Opener = open_local_or_s3) -> EvalIndex:
    """Read every eval set and index its items (on the driver, once per run); EvalSetError on a bad file."""
    t0 = time.perf_counter()
    sets = [read_eval_set(s, open_file, config.max_file_bytes) for s in config.eval_sets]
    total = sum(len(s) for s in sets)
    if total > config.max_items:
        raise EvalSetError(f"eval sets: {total:,} items, more than decontam.max_items "
            f"({config.max_items:,}): raise it or give fewer sets")
    return index_items(config, sets, t0)


#: Items normalized and hashed at a time: the hash's prefix tables grow with the bytes of a call.
CHUNK_ITEMS = 2048


def index_items(config: DecontamConfig, sets: list[EvalItems], t0: float | None = None) -> EvalIndex:
    """The index of eval items already read."""
    t0 = time.perf_counter() if t0 is None else t0
    texts = [t for s in sets for t in s.texts]
    if not texts:
        raise EvalSetError("no eval items to index (give eval sets with at least one item)")
    chunks = [_chunk(texts[i : i + CHUNK_ITEMS], i, config) for i in range(0, len(texts), CHUNK_ITEMS)]
    hashes = np.concatenate([c.hashes for c in chunks])
    items = np.concatenate([c.items for c in chunks])
    counts = np.concatenate([c.counts for c in chunks])
    order = np.lexsort((items, hashes))
    hashes, items = hashes[order], items[order]
    distinct = np.r_[True, (hashes[1:] != hashes[:-1]) | (items[1:] != items[:-1])] if len(hashes) else np.zeros(0, bool)
    hashes, items = hashes[distinct], items[distinct]

    whole = (counts >= config.min_item_words) & (counts < config.ngram)
    text, offsets = _joined([p for c in chunks for p in c.pieces])
    item_set = np.repeat(np.arange(len(sets), dtype=np.int32), [len(s) for s in sets])
    index = EvalIndex(
        kind=config.index, lengths=(config.ngram, *sorted(set(counts[whole].tolist()), reverse=True)),
        set_names=tuple(s.name for s in sets), item_set=item_set,
        item_ids=pa.array([i for s in sets for i in s.ids], pa.large_string()), text=text, item_offsets=offsets,
    )
    keys = np.unique(hashes)
    if config.index == "exact":
        index.keys, index.key_items = hashes, items.astype(np.int32)
    else:
        index.bloom = BloomFilter.build(keys, config.bloom_fpr)
    per_set = np.bincount(item_set[items], minlength=len(sets)) if len(items) else np.zeros(len(sets), np.int64)

    def of_set(mask: np.ndarray, i: int) -> int:
        return int((mask & (item_set == i)).sum())

    index.stats = IndexStats(
        kind=config.index, ngram=config.ngram, lengths=index.lengths,
        eval_sets=tuple(
            EvalSetStats(s.name, s.path, len(s), of_set(counts >= config.ngram, i), of_set(whole, i),
                         of_set(counts < config.min_item_words, i), int(per_set[i]))
            for i, s in enumerate(sets)
        ),
        keys=len(keys), nbytes=index_bytes(index), build_seconds=round(time.perf_counter() - t0, 3),
        bloom_fpr=index.bloom.fpr if index.bloom is not None else None, bloom_hashes=index.bloom.k if index.bloom is not None else None,
    )
    for s in index.stats.eval_sets:
        if s.items_skipped:
            log.warning("decontam: eval set '%s': %d of %d items have fewer "
                "than %d words and are not indexed (common phrases)",
                        s.name, s.items_skipped, s.items, config.min_item_words)
    return index


@dataclass(frozen=True)
class _Chunk:
    hashes: np.ndarray  # uint64, one per (n-gram, item)
    items: np.ndarray  # int64: the item of each
    counts: np.ndarray  # words per item
    pieces: list[bytes]  # each item normalized, as " w1 ... wn "


def _chunk(texts: list[str], first: int, config: DecontamConfig) -> _Chunk:
    """The (hash, item) pairs of some items: every ``ngram`` window of an item that long, the whole
    item for one of ``min_item_words`` or more, nothing for a shorter one."""
    words = words_of(pa.array(texts, pa.large_string()))
    grams = ngrams(words, (config.ngram,))
    whole = np.flatnonzero((words.counts >= config.min_item_words) & (words.counts < config.ngram))
    first_word = np.cumsum(words.counts) - words.counts
    last_word = first_word + words.counts - 1
    whole_hashes = poly_hash_spans(words.data, words.starts[first_word[whole]], words.ends[last_word[whole]]) if len(whole) else np.zeros(0, np.uint64)
    data = words.data.tobytes()
    pieces = [b" " + data[a:b] + b" " for a, b in zip(words.offsets[:-1].tolist(), words.offsets[1:].tolist(), strict=False)]
    return _Chunk(np.concatenate([grams.hashes, whole_hashes]), np.concatenate([grams.doc, whole]).astype(np.int64) + first, words.counts, pieces)


def _joined(pieces: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """The pieces joined by newlines (a uint8 array: Ray hands numpy arrays to the workers of a node
    without a copy each), and where each starts (one more: the end)."""
    offsets = np.zeros(len(pieces) + 1, np.int64)
    np.cumsum([len(p) + 1 for p in pieces], out=offsets[1:])
    return np.frombuffer(b"\n".join(pieces) + b"\n", np.uint8), offsets


def index_bytes(index: EvalIndex) -> int:
    """Bytes the index holds (what a worker receives)."""
    arrays = [index.item_set, index.item_offsets, index.keys, index.key_items, index.bloom.bits if index.bloom is not None else None]
    return index.text.nbytes + index.item_ids.nbytes + sum(a.nbytes for a in arrays if a is not None)
