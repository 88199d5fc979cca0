"""fastText's tokenization of a batch, done once for every model that reads the same prepared text.

fastText's ``Dictionary::getLine`` splits a line on ``' ' \\n \\r \\t \\v \\f \\0``,
ends it with the end-of-sentence token ``</s>`` (the ``\\n`` its ``predict``
appends; a literal ``</s>`` token ends the line there), drops the tokens that
start with ``__label__`` (labels), hashes every other token with its FNV-1a
variant (bytes as *signed* chars) and combines consecutive hashes into word
n-gram hashes.  None of that depends on the model: only the vocabulary lookup
and the n-gram buckets do (classifiers/projected.py).  :func:`tokenize` does
it for a whole Arrow batch with Arrow and numpy (the split in C++, each distinct
token hashed once), so three models of one preparation pay for it once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EOS = "</s>"
LABEL_PREFIX = "__label__"
FNV_OFFSET, FNV_PRIME = 2166136261, 16777619
NGRAM_PRIME = 116049371  # Dictionary::addWordNgrams
#: Tokens longer than this are hashed in Python, one at a time: the vectorized loop goes byte position by
#: byte position, so one 5,000-byte token would cost 5,000 numpy passes.
VECTOR_BYTES = 256


def fnv1a(data: bytes) -> int:
    """fastText's hash of one token (``Dictionary::hash``: each byte as a signed char, widened to 32 bits)."""
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ (b | 0xFFFFFF00 if b & 0x80 else b)) * FNV_PRIME) & 0xFFFFFFFF
    return h


def fnv1a_array(strings: pa.Array) -> np.ndarray:
    """:func:`fnv1a` of every string of an Arrow string array (uint32), vectorized over byte positions."""
    strings = strings.cast(pa.large_string())
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], np.int64)[strings.offset : strings.offset + n + 1]
    data = np.frombuffer(strings.buffers()[2], np.int8) if strings.buffers()[2] is not None else np.zeros(0, np.int8)
    lengths = np.diff(offsets)
    out = np.full(n, FNV_OFFSET, np.uint32)
    long = np.flatnonzero(lengths > VECTOR_BYTES)
    for i in long:
        out[i] = fnv1a(data[offsets[i] : offsets[i + 1]].tobytes())
    order = np.argsort(-np.minimum(lengths, VECTOR_BYTES + 1), kind="stable")
    order = order[lengths[order] <= VECTOR_BYTES]
    starts, lens = offsets[:-1][order], lengths[order]
    h = np.full(len(order), FNV_OFFSET, np.uint32)
    desc = -lens  # ascending, for searchsorted
    for pos in range(int(lens.max()) if len(lens) else 0):
        k = int(np.searchsorted(desc, -pos, side="left"))  # the tokens longer than pos come first
        h[:k] = (h[:k] ^ data[starts[:k] + pos].astype(np.int32).astype(np.uint32)) * np.uint32(FNV_PRIME)
    out[order] = h
    return out


@dataclass
class Tokens:
    """The tokens of a batch of documents, as fastText's ``getLine`` reads each document (``</s>`` last)."""

    n_docs: int
    #: per token (in document order): its document and its distinct token
    doc: np.ndarray
    uid: np.ndarray
    #: the distinct tokens (Arrow strings), and per distinct token its FNV hash and whether it is no word (a label)
    uniques: pa.Array
    uhash: np.ndarray
    uskip: np.ndarray
    _ngrams: dict = field(default_factory=dict)

    def words(self) -> np.ndarray:
        """Positions of the tokens that are words (not labels): what word n-grams are made of."""
        if "words" not in self._ngrams:
            self._ngrams["words"] = np.flatnonzero(~self.uskip[self.uid])
        return self._ngrams["words"]

    def ngrams(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(document, uint64 hash) of every word n-gram of length 2..n, as ``addWordNgrams`` computes them
        (the hashes sign-extended from int32, the arithmetic modulo 2^64)."""
        if n not in self._ngrams:
            words = self.words()
            doc = self.doc[words]
            h = self.uhash[self.uid[words]].astype(np.int32).astype(np.int64).view(np.uint64)
            docs, hashes = [], []
            acc = h.copy()
            with np.errstate(over="ignore"):
                for k in range(1, n):
                    if len(h) <= k:
                        break
                    acc = acc[:-1] * np.uint64(NGRAM_PRIME) + h[k:]
                    same = doc[k:] == doc[: len(doc) - k]
                    docs.append(doc[: len(doc) - k][same])
                    hashes.append(acc[same])
            self._ngrams[n] = (
                np.concatenate(docs) if docs else np.zeros(0, np.int64),
                np.concatenate(hashes) if hashes else np.zeros(0, np.uint64),
            )
        return self._ngrams[n]


def tokenize(texts: pa.Array | pa.ChunkedArray) -> Tokens:
    """fastText's tokens of each text (prepared: lowercased or cut as the model wants; its newlines may stay,
    they separate words as spaces do and the line's own end is added here)."""
    arr = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    arr = pc.fill_null(arr.cast(pa.large_string()), "")
    lists = pc.ascii_split_whitespace(arr)  # ' ' \t \n \v \f \r: fastText's separators but NUL
    encoded = lists.flatten().dictionary_encode()
    uniques = encoded.dictionary.cast(pa.large_string())
    if (
        len(uniques) and pc.any(pc.match_substring(uniques, "\x00")).as_py()
    ):  # rare: split at NUL too, as fastText does
        return tokenize(pc.replace_substring(arr, "\x00", " "))
    counts = np.diff(lists.offsets.to_numpy())
    offsets = np.r_[0, np.cumsum(counts)]
    found = pc.index(uniques, EOS).as_py()
    literal = found >= 0  # a "</s>" in the text itself
    if not literal:  # the </s> every line ends with
        uniques = pa.concat_arrays([uniques, pa.array([EOS], pa.large_string())])
        found = len(uniques) - 1
    indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    uid = np.insert(indices, offsets[1:], found)
    doc = np.repeat(np.arange(len(arr), dtype=np.int64), counts + 1)
    if literal:  # a line ends at its first </s>: tokens after a literal one are never read
        eos = (uid == found).astype(np.int64)
        before = np.cumsum(eos) - eos
        starts = np.r_[0, np.cumsum(counts + 1)[:-1]]
        keep = (before - before[starts][doc]) == 0
        doc, uid = doc[keep], uid[keep]
    # Never words: labels, and the empty strings Arrow's split leaves around leading or trailing spaces.
    uskip = pc.or_(pc.starts_with(uniques, LABEL_PREFIX), pc.equal(pc.binary_length(uniques), 0)).to_numpy(
        zero_copy_only=False
    )
    return Tokens(len(arr), doc, uid, uniques, fnv1a_array(uniques), uskip)
