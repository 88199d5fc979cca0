"""fastText document classifiers: load a supervised model once per process, score batches.

Any supervised fastText model works by path (``.bin`` or quantized ``.ftz``):
DCLM's ``openlm-research/dclm-fasttext`` (labels ``__label__hq`` /
``__label__cc``), a FineWeb-Edu-style classifier, Dolma's Jigsaw toxicity and
NSFW models, or one trained with ``classifiers/train_quality.py``.  The score
of a document is the model's probability of one label (the *positive* label).

Text is prepared the way fastText models are trained and queried (DCLM's and
DataTrove's classifiers do the same): one line per document (newlines become
spaces, as fastText reads up to the first newline), optionally lowercased and
cut to a number of characters.  The preparation runs in Arrow over the whole
batch (:func:`prepared_lines`, once per preparation however many models share
it); each model is called once per batch (``multilinePredict``, the binding
that works with numpy 2 in ``fasttext-numpy2-wheel``).
"""

from __future__ import annotations

import functools
import itertools
import mmap
import os
import re
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: First bytes of every fastText model file (``.bin`` and ``.ftz``): magic and version.
FASTTEXT_MAGIC = 793712314
LABEL_PREFIX = "__label__"


class QualityModelError(ValueError):
    """A model or label problem, worded as one line naming the config field."""


class MissingLabel(QualityModelError):
    """The model has no such label (the fault of the ``label`` field, not of the file)."""


def check_model_file(path: str, structure: bool = False, label: str | None = None) -> ModelFile | None:
    """Check that ``path`` is a fastText model file without loading it.

    By default only its existence and magic number (cheap, for config
    validation).  With ``structure``, also that the file is exactly as long as
    its own headers say: fastText's loader spins forever, eating memory, on a
    file cut inside its dictionary (an interrupted copy), and silently reads
    zeros for a file cut inside its matrices; and that it is a supervised
    classifier holding ``label`` (if given).  That walk reads the headers and the
    dictionary, never the matrices (:func:`read_model_file`); it returns what it read.
    """
    if not os.path.isfile(path):
        from stages.named_files import relative_hint

        raise QualityModelError(f"no fastText model file at {path!r}{relative_hint(path)}")
    with open(path, "rb") as f:
        head = f.read(8)
    if len(head) < 8 or struct.unpack("<i", head[:4])[0] != FASTTEXT_MAGIC:
        raise QualityModelError(f"{path!r} is not a fastText model (.bin or .ftz)")
    if not structure:
        return None
    size = os.path.getsize(path)
    found = read_model_file(path)
    if found is None or found.size > size:
        raise QualityModelError(
            f"{path!r} is truncated or damaged ({size:,} bytes: less than its headers say; an interrupted copy?)"
        )
    if found.size < size:
        raise QualityModelError(f"{path!r} has {size - found.size:,} bytes after the model (not a fastText file?)")
    if found.model != SUPERVISED:
        raise QualityModelError(f"{path!r} is a word-vector model, not a supervised classifier")
    if label is not None and found.label(label) is None:
        shown = ", ".join(found.short_labels[:20]) + (", ..." if len(found.labels) > 20 else "")
        raise MissingLabel(f"{label!r} is not a label of {path!r} (its labels: {shown})")
    return found


#: ``args.model`` of a supervised classifier (fastText's model_name::sup); 1 and 2 are word vectors.
SUPERVISED = 3
#: Dictionary entries skipped per regular-expression match when looking for the labels (see read_model_file).
_SKIP = 4096
_ENTRIES = {n: re.compile(rb"(?:[^\x00]*\x00[\x00-\xff]{9}){%d}" % n) for n in (_SKIP, 1)}


@dataclass(frozen=True)
class ModelFile:
    """What a fastText model file's headers and dictionary say (:func:`read_model_file`)."""

    version: int
    #: args.model: 1 cbow, 2 skip-gram, 3 supervised
    model: int
    #: the labels as the file spells them (``__label__hq``), in dictionary order
    labels: tuple[str, ...]
    #: the label prefix of the model's arguments, as saved (fastText 0.9 saves none: ``__label__``)
    prefix: str
    #: the file size its headers imply
    size: int

    @property
    def short_labels(self) -> list[str]:
        return [lab.removeprefix(self.prefix) for lab in self.labels]

    def label(self, label: str) -> str | None:
        """``hq`` or ``__label__hq`` as the model spells it, or None if the model has no such label."""
        full = label if label.startswith(self.prefix) else self.prefix + label
        return full if full in self.labels else None


def read_model_file(path: str) -> ModelFile | None:
    """The headers and labels of the model at ``path`` (FastText::saveModel in fastText 0.9), and the file size they
    imply, or None if they run past the end.  The dictionary's words are skipped in C (a regular expression over
    runs of entries: word, NUL, count, type), so a dictionary of a million words costs milliseconds; the labels,
    which fastText sorts after the words, are read one by one."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _walk_model(mm)


def _walk_model(mm: mmap.mmap) -> ModelFile | None:
    size, pos = len(mm), 0

    def take(fmt: str) -> tuple:
        nonlocal pos
        n = struct.calcsize(fmt)
        if pos + n > size:
            raise EOFError
        values = struct.unpack_from(fmt, mm, pos)
        pos += n
        return values

    def quantizer() -> None:  # ProductQuantizer: dim, nsubq, dsub, lastdsub, dim x 256 centroids
        nonlocal pos
        dim = take("<iiii")[0]
        pos += 4 * dim * 256

    def matrix() -> None:
        nonlocal pos
        (quantized,) = take("<?")
        if quantized:  # QuantMatrix: qnorm, m, n, codesize, codes, quantizer, [norm codes, norm quantizer]
            qnorm, m, _, codesize = take("<?qqi")
            pos += codesize
            quantizer()
            if qnorm:
                pos += m
                quantizer()
        else:  # DenseMatrix: m, n, m x n floats
            m, n = take("<qq")
            pos += 4 * m * n

    def skip(entries: int) -> None:  # word bytes, \0, int64 count, int8 type; words hold no \0
        nonlocal pos
        for n in (_SKIP, 1):
            while entries >= n:
                found = _ENTRIES[n].match(mm, pos)
                if found is None:
                    raise EOFError
                pos, entries = found.end(), entries - n

    try:
        _, version = take("<ii")  # magic, version
        # dim, ws, epoch, minCount, neg, wordNgrams, loss, model, bucket, minn, maxn, lrUpdateRate; t
        args = take("<12id")
        entries, nwords, _, _, pruned = take("<iiiqq")  # size, nwords, nlabels, ntokens, pruneidx size
        skip(max(min(nwords, entries), 0))
        labels = []
        for _ in range(max(entries - max(nwords, 0), 0)):
            end = mm.find(b"\0", pos)
            if end < 0 or end + 10 > size:
                return None
            if mm[end + 9] == 1:  # a label (0: a word)
                labels.append(mm[pos:end].decode("utf-8", "replace"))
            pos = end + 10
        pos += 8 * max(pruned, 0)
        matrix()  # input
        matrix()  # output
    except (EOFError, struct.error):
        return None
    return ModelFile(version, args[7], tuple(labels), LABEL_PREFIX, pos)


def load_model(path: str | os.PathLike, field: str = "quality.model"):
    """The model at ``path``, loaded once per process (a production model is gigabytes) and shared by
    every classifier that names the file; ``field`` names the config field in an error."""
    try:
        return _load_model(os.fspath(path))
    except QualityModelError as e:
        raise QualityModelError(f"{field}: {e}") from None


@functools.lru_cache(maxsize=16)
def _load_model(path: str):
    import fasttext

    check_model_file(path, structure=True)
    fasttext.FastText.eprint = lambda *a, **k: None  # silence the load-time warning
    try:
        model = fasttext.load_model(path)
    except (ValueError, RuntimeError, MemoryError) as e:
        raise QualityModelError(f"cannot load {path!r}: {e}".replace("\n", " ")) from None
    if model.f.getArgs().model != fasttext.FastText.model_name.supervised:
        raise QualityModelError(f"{path!r} is a word-vector model, not a supervised classifier")
    return model


def label_prefix(model) -> str:
    return model.f.getArgs().label or LABEL_PREFIX


def full_label(model, label: str) -> str:
    """``hq`` or ``__label__hq`` -> the label as the model spells it."""
    prefix = label_prefix(model)
    return label if label.startswith(prefix) else prefix + label


def prepare_texts(
    texts: pa.Array | pa.ChunkedArray, lowercase: bool = False, max_chars: int | None = None, one_line: bool = True
) -> pa.Array:
    """One line per document, as the model reads it (vectorized in Arrow; null -> ""); ``one_line=False`` keeps
    the newlines (fastText's tokenizer splits words at them as at spaces: classifiers/fasttext_tokens.py)."""
    arr = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    arr = pc.fill_null(arr.cast(pa.large_string()), "")
    if max_chars is not None:
        arr = pc.utf8_slice_codeunits(arr, 0, max_chars)
    if one_line:
        arr = pc.replace_substring(arr, "\n", " ")
    if lowercase:
        arr = pc.utf8_lower(arr)
    return arr


def prepared_lines(
    texts: pa.Array | pa.ChunkedArray, lowercase: bool = False, max_chars: int | None = None
) -> list[str]:
    """The batch as the Python strings fastText's multi-line predict takes: prepared, each ending with
    "\n" as fastText's own predict() adds it (the end-of-line token </s> is part of every training example)."""
    eol, empty = pa.scalar("\n", pa.large_string()), pa.scalar("", pa.large_string())
    return pc.binary_join_element_wise(prepare_texts(texts, lowercase, max_chars), eol, empty).to_pylist()


class QualityScorer:
    """Probability of the positive label and the top label, for a batch of texts (any supervised fastText model)."""

    def __init__(
        self,
        model,
        positive_label: str = "hq",
        lowercase: bool = False,
        max_chars: int | None = None,
        field: str = "quality",
    ):
        """``model``: a path (loaded once per process) or an already loaded fastText model; ``field``: the config
        section named in an error (``quality``, ``classifiers.1``)."""
        self.model = load_model(model, f"{field}.model") if isinstance(model, (str, os.PathLike)) else model
        self.labels = list(self.model.labels)
        self.positive = full_label(self.model, positive_label)
        if self.positive not in self.labels:
            names = ", ".join(self._short(lab) for lab in self.labels)
            where = model if isinstance(model, (str, os.PathLike)) else "the model"
            key = "positive_label" if field == "quality" else "label"
            raise QualityModelError(
                f"{field}.{key}: {positive_label!r} is not a label of {where} (its labels: {names})"
            )
        self.lowercase, self.max_chars = lowercase, max_chars

    def _short(self, label: str) -> str:
        return label.removeprefix(label_prefix(self.model))

    def score(self, texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
        """(score float32, NaN where the model predicts nothing; top label without prefix, null there)."""
        return self.score_lines(prepared_lines(texts, self.lowercase, self.max_chars))

    def score_lines(self, lines: list[str]) -> tuple[np.ndarray, pa.Array]:
        """:meth:`score` on lines :func:`prepared_lines` made (shared by the models of one preparation)."""
        # One C++ call for the batch.
        labels, probs = self.model.f.multilinePredict(lines, -1, 0.0, "replace")
        n = len(labels)
        per_row = np.fromiter(map(len, labels), dtype=np.int64, count=n)
        has = per_row > 0
        # A row with predictions but without the positive label: hierarchical softmax drops labels
        # below ~1e-5 even with k=-1, so its probability is ~0.
        scores = np.where(has, np.float32(0.0), np.float32(np.nan)).astype(np.float32)
        if has.any():
            flat_labels = np.fromiter(itertools.chain.from_iterable(labels), dtype=object, count=int(per_row.sum()))
            flat_probs = np.concatenate(probs).astype(np.float32)
            is_pos = flat_labels == self.positive
            rows = np.repeat(np.arange(n), per_row)
            # fastText reports exp(log(p + 1e-5)), so a certain label shows 1.00001: clipped to [0, 1].
            scores[rows[is_pos]] = np.clip(flat_probs[is_pos], 0.0, 1.0)
        top = [lab[0] if lab else None for lab in labels]  # labels come sorted by probability
        top_arr = pc.utf8_slice_codeunits(pa.array(top, pa.string()), len(label_prefix(self.model)))
        return scores, pc.if_else(pa.array(has), top_arr, pa.scalar(None, pa.string()))
