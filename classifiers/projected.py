"""A supervised fastText model read from its file and projected onto its labels: scoring by table lookups.

fastText scores a line as ``loss(W_out · mean(W_in[rows]))``, where ``rows``
are the line's word ids and word n-gram buckets.  The product is linear, so
``W_out · mean(W_in[rows]) = mean((W_in · W_outᵀ)[rows])``: projecting every
input row onto the labels once, at load, leaves ``nlabels`` numbers per row (2
for a quality model instead of its 16 to 256 dimensions), and a document costs
a lookup of its tokens, a gather and a sum per label.  With the tokenization
shared by every model of a preparation (classifiers/fasttext_tokens.py), a
second and third model cost only their lookups.

The model is read from the file as fastText 0.9 writes it (``FastText::saveModel``:
args, dictionary, pruned n-gram index, input and output matrices, dense or
product-quantized) without loading fastText; a dense input matrix is projected
in chunks from a memory map, so a worker holds the projection (rows x labels)
and the vocabulary, not the model (DCLM's 2.4 GB model becomes tens of MB).

Scores equal fastText's ``predict`` (tests/classifiers/test_classifiers_projected.py checks
every sample document and random texts against the binding) up to float
rounding: fastText sums float32 vectors, this sums float64 projections
(differences ~1e-6).  Supported: the softmax, one-vs-all and negative-sampling
losses (the last two with fastText's own sigmoid table), word n-grams of any
length, quantized models with or without a vocabulary cutoff.  Not supported,
:class:`Unsupported` raised so the caller uses fastText itself: hierarchical
softmax, character n-grams (``maxn > 0``), other model kinds.
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from classifiers.fasttext_tokens import LABEL_PREFIX, Tokens, fnv1a_array

MAGIC = 793712314
LOSSES = {1: "hs", 2: "ns", 3: "softmax", 4: "ova"}
SUPERVISED = 3
KSUB = 256  # centroids per sub-quantizer (8-bit codes)
SIGMOID_TABLE, MAX_SIGMOID = 512, 8  # fastText's sigmoid lookup table (loss.cc)
#: Rows of a dense input matrix projected at a time (a memory-mapped slice of this many rows).
CHUNK_ROWS = 1 << 18


class Unsupported(ValueError):
    """A model this scorer does not reproduce exactly (fastText itself scores it)."""


@dataclass
class _Reader:
    """Little-endian reads from a memory-mapped model file."""

    mm: mmap.mmap
    pos: int = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.mm, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.mm, dtype=dtype, count=count, offset=self.pos)
        self.pos += out.nbytes
        return out


def _pq(r: _Reader) -> tuple[int, int, int, int, np.ndarray]:
    dim, nsubq, dsub, lastdsub = r.take("iiii")
    return dim, nsubq, dsub, lastdsub, r.array(np.float32, dim * KSUB)


def _pq_blocks(dim: int, nsubq: int, dsub: int, lastdsub: int, centroids: np.ndarray) -> list[np.ndarray]:
    """Per sub-quantizer its 256 centroids (256 x its width), as ProductQuantizer::get_centroids lays them out."""
    blocks = []
    for m in range(nsubq):
        d = lastdsub if m == nsubq - 1 else dsub
        start = m * KSUB * dsub
        blocks.append(centroids[start : start + KSUB * d].reshape(KSUB, d))
    return blocks


def _matrix(r: _Reader, project_onto: np.ndarray | None = None) -> np.ndarray:
    """The matrix at the reader (DenseMatrix or QuantMatrix), or, with ``project_onto`` (labels x dim), its rows
    projected onto it (rows x labels, float64) without materializing the matrix."""
    (quantized,) = r.take("?")
    if not quantized:
        m, n = r.take("qq")
        start = r.pos
        r.pos += 4 * m * n
        if project_onto is None:
            return np.frombuffer(r.mm, np.float32, m * n, start).reshape(m, n).astype(np.float64)
        out = np.empty((m, project_onto.shape[0]), np.float64)
        for lo in range(0, m, CHUNK_ROWS):
            hi = min(m, lo + CHUNK_ROWS)
            rows = np.frombuffer(r.mm, np.float32, (hi - lo) * n, start + 4 * lo * n).reshape(hi - lo, n)
            out[lo:hi] = rows.astype(np.float64) @ project_onto.T
        return out
    qnorm, m, n, codesize = r.take("?qqi")
    codes = r.array(np.uint8, codesize)
    dim, nsubq, dsub, lastdsub, centroids = _pq(r)
    codes = codes.reshape(m, nsubq)
    norms = np.ones(m, np.float64)
    if qnorm:
        norm_codes = r.array(np.uint8, m)
        norm_centroids = _pq(r)[4]
        norms = norm_centroids[norm_codes].astype(np.float64)  # npq: dim 1, one sub-quantizer of width 1
    blocks = _pq_blocks(dim, nsubq, dsub, lastdsub, centroids)
    target = project_onto if project_onto is not None else np.eye(n)
    out = np.zeros((m, target.shape[0]), np.float64)
    for s, block in enumerate(blocks):  # each sub-quantizer's 256 centroids projected once, then gathered
        table = block.astype(np.float64) @ target[:, s * dsub : s * dsub + block.shape[1]].T
        out += table[codes[:, s]]
    return out * norms[:, None]


@dataclass
class ProjectedModel:
    path: str
    labels: list[str]  # as the model spells them (with the prefix)
    loss: str
    word_ngrams: int
    bucket: int
    nwords: int
    #: the vocabulary's words (Arrow strings, ids 0..nwords-1), their FNV hashes sorted, and the ids in that order
    words: pa.Array
    word_hash: np.ndarray
    word_ids: np.ndarray
    #: where each hash prefix (its top ``32 - shift`` bits) starts in ``word_hash``: a lookup reads one slot
    prefix_starts: np.ndarray
    shift: int
    #: the input row of each n-gram bucket (-1: pruned); None: not pruned, the row is nwords + bucket
    bucket_rows: np.ndarray | None
    #: every input row projected onto each label (labels x rows: one contiguous gather per label)
    projection: np.ndarray

    @classmethod
    def load(cls, path: str) -> ProjectedModel:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            r = _Reader(mm)
            magic, _version = r.take("ii")
            if magic != MAGIC:
                raise Unsupported(f"{path!r} is not a fastText model")
            dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr_update, _t = r.take(
                "12id"
            )
            if model != SUPERVISED:
                raise Unsupported("not a supervised model")
            if LOSSES.get(loss) not in ("softmax", "ova", "ns"):
                raise Unsupported(f"loss {LOSSES.get(loss, loss)} (hierarchical softmax is scored by fastText)")
            if maxn > 0:
                raise Unsupported("character n-grams (maxn > 0)")
            size, nwords, nlabels, _ntokens, prune_size = r.take("iiiqq")
            entries = []
            for _ in range(size):
                end = mm.find(b"\0", r.pos)
                entries.append(mm[r.pos : end])
                r.pos = end + 1 + 8 + 1  # \0, int64 count, int8 type
            pairs = r.array(np.int32, 2 * max(prune_size, 0)).reshape(-1, 2).copy()  # no view outlives the map
            input_start = r.pos
            skip = _Reader(mm, input_start)
            _skip_matrix(skip)
            output = _matrix(skip)  # labels x dim (small; its own quantized flag first, as the input's)
            projection = _matrix(_Reader(mm, input_start), project_onto=output)
        words = pa.array([e.decode("utf-8", "surrogateescape") for e in entries[:nwords]], pa.large_string())
        labels = [e.decode("utf-8", "replace") for e in entries[nwords:]]
        hashes = fnv1a_array(words)
        order = np.argsort(hashes, kind="stable")
        bits = max(8, int(np.ceil(np.log2(max(nwords, 2)))))  # about one word per prefix
        shift = 32 - bits
        starts = np.searchsorted(hashes[order] >> np.uint32(shift), np.arange((1 << bits) + 1)).astype(np.int64)
        bucket_rows = None
        if prune_size >= 0:  # -1: not pruned; else only the kept buckets have rows (0: none)
            bucket_rows = np.full(bucket, -1, np.int64)
            bucket_rows[pairs[:, 0]] = nwords + pairs[:, 1].astype(np.int64)
        return cls(
            path,
            labels,
            LOSSES[loss],
            word_ngrams,
            bucket,
            nwords,
            words,
            hashes[order],
            order.astype(np.int64),
            starts,
            shift,
            bucket_rows,
            np.ascontiguousarray(projection.T),
        )

    # ---------------------------------------------------------------- scoring

    def word_rows(self, tokens: Tokens) -> np.ndarray:
        """Per distinct token its word id, -1 when the vocabulary has no such word: the first word of the same
        hash, its string compared (once for the batch); a token whose string differs (two words of one hash, or an
        unknown token with a known word's hash) looks at the other words of its hash one by one."""
        q = tokens.uhash
        prefix = (q >> np.uint32(self.shift)).astype(np.int64)
        lo, hi = self.prefix_starts[prefix], self.prefix_starts[prefix + 1]
        at = np.full(len(q), -1, np.int64)
        for j in range(int((hi - lo).max()) if len(q) else 0):  # the words of the same prefix, in hash order
            todo = np.flatnonzero((hi - lo > j) & (at < 0))
            at[todo[self.word_hash[lo[todo] + j] == q[todo]]] = -2 - j  # marked: found at offset j
        found = np.flatnonzero(at < -1)
        pos = lo[found] + (-2 - at[found])
        out = np.full(len(q), -1, np.int64)
        cand = self.word_ids[pos]
        same = pc.equal(tokens.uniques.take(pa.array(found)), self.words.take(pa.array(cand))).to_numpy(
            zero_copy_only=False
        )
        out[found[same]] = cand[same]
        for i, p in zip(found[~same], pos[~same], strict=False):  # rare: the same hash, another string
            token = tokens.uniques[int(i)].as_py()
            while p < len(self.word_hash) and self.word_hash[p] == q[i]:
                if self.words[int(self.word_ids[p])].as_py() == token:
                    out[i] = self.word_ids[p]
                    break
                p += 1
        return out

    def ngram_rows(self, hashes: np.ndarray) -> np.ndarray:
        """The input row of each word n-gram hash (``pushHash``), -1 for a pruned one."""
        bucket = (hashes % np.uint64(self.bucket)).astype(np.int64)
        return self.nwords + bucket if self.bucket_rows is None else self.bucket_rows[bucket]

    def probabilities(self, tokens: Tokens) -> np.ndarray:
        """Per document the probability of each label (n_docs x labels), NaN where the line has no input row."""
        ids = self.word_rows(tokens)
        words = tokens.words()  # label tokens are never input rows
        word_row = ids[tokens.uid[words]]
        doc_w = tokens.doc[words][word_row >= 0]
        word_row = word_row[word_row >= 0]
        doc_n, ngram_hash = (
            tokens.ngrams(self.word_ngrams)
            if self.word_ngrams > 1
            else (np.zeros(0, np.int64), np.zeros(0, np.uint64))
        )
        ngram_row = self.ngram_rows(ngram_hash)
        doc_n, ngram_row = doc_n[ngram_row >= 0], ngram_row[ngram_row >= 0]
        doc = np.concatenate([doc_w, doc_n])
        rows = np.concatenate([word_row, ngram_row])
        count = np.bincount(doc, minlength=tokens.n_docs).astype(np.float64)
        logits = np.zeros((tokens.n_docs, len(self.labels)), np.float64)
        for j, p in enumerate(self.projection):
            logits[:, j] = np.bincount(doc, weights=p[rows], minlength=tokens.n_docs)
        with np.errstate(invalid="ignore", divide="ignore"):
            logits /= count[:, None]
        if self.loss == "softmax":
            z = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs = z / z.sum(axis=1, keepdims=True)
        else:
            probs = _table_sigmoid(logits)
        probs[count == 0] = np.nan
        return probs


def _skip_matrix(r: _Reader) -> None:
    (quantized,) = r.take("?")
    if not quantized:
        m, n = r.take("qq")
        r.pos += 4 * m * n
        return
    qnorm, m, _n, codesize = r.take("?qqi")
    r.pos += codesize
    _pq(r)
    if qnorm:
        r.pos += m
        _pq(r)


def _table_sigmoid(x: np.ndarray) -> np.ndarray:
    """fastText's sigmoid (Loss::sigmoid): 0 below -8, 1 above 8, else its 513-entry table."""
    table = 1.0 / (1.0 + np.exp(-(np.arange(SIGMOID_TABLE + 1) * 2 * MAX_SIGMOID / SIGMOID_TABLE - MAX_SIGMOID)))
    table = table.astype(np.float32).astype(np.float64)
    idx = np.clip(np.nan_to_num((x + MAX_SIGMOID) * SIGMOID_TABLE / MAX_SIGMOID / 2), 0, SIGMOID_TABLE).astype(
        np.int64
    )
    out = table[idx]
    out = np.where(x < -MAX_SIGMOID, 0.0, np.where(x > MAX_SIGMOID, 1.0, out))
    return np.where(np.isnan(x), np.nan, out)


@functools.lru_cache(maxsize=16)
def _load_projected(path: str) -> ProjectedModel:
    return ProjectedModel.load(path)


def load_projected(path: str | os.PathLike) -> ProjectedModel:
    """The model at ``path`` projected, once per process (Unsupported: fastText must score it)."""
    from classifiers.quality import check_model_file

    path = os.fspath(path)
    check_model_file(path, structure=True)
    return _load_projected(path)


class ProjectedScorer:
    """The probability of one label and the top label, from a batch's shared tokens (QualityScorer's results)."""

    def __init__(self, path: str | os.PathLike, positive_label: str, field: str = "classifiers"):
        from classifiers.quality import QualityModelError

        self.model = load_projected(path)
        positive = positive_label if positive_label.startswith(LABEL_PREFIX) else LABEL_PREFIX + positive_label
        if positive not in self.model.labels:
            names = ", ".join(lab.removeprefix(LABEL_PREFIX) for lab in self.model.labels)
            raise QualityModelError(
                f"{field}.label: {positive_label!r} is not a label of {os.fspath(path)} (its labels: {names})"
            )
        self.column = self.model.labels.index(positive)
        self.names = pa.array([lab.removeprefix(LABEL_PREFIX) for lab in self.model.labels], pa.string())

    def score_tokens(self, tokens: Tokens) -> tuple[np.ndarray, pa.Array]:
        """(score float32, NaN where the line has no input row; top label without prefix, null there)."""
        probs = self.model.probabilities(tokens)
        missing = np.isnan(probs[:, 0])
        # fastText reports exp(log(p + 1e-5)): the same values, clipped to [0, 1] as QualityScorer clips them
        scores = np.clip(probs[:, self.column] + 1e-5, 0.0, 1.0).astype(np.float32)
        top = self.names.take(pa.array(np.where(missing, 0, np.nan_to_num(probs).argmax(axis=1))))
        return scores, pc.if_else(pa.array(~missing), top, pa.scalar(None, pa.string()))
