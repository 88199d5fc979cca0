"""Paragraph and line deduplication, per document: split, normalize, hash, and rewrite without some pieces.

A document's *pieces* are its paragraphs or lines (``ParagraphsConfig.unit``):

* ``line``: ``text.split("\\n")`` (CCNet);
* ``paragraph``: the blocks between blank lines; a text without a blank line
  is split at every newline (the extractor writes one block per line, and
  Dolma's paragraph dedup splits at newlines).

A piece is *counted* when its normalized text reaches ``min_chars`` characters
and ``min_words`` words; only counted pieces are hashed (64 bits:
``poly_hash64`` with MurmurHash3's finalizer) and only they can be removed.
Normalization (``normalizer``): ``curate``, stages.dedup.normalize's switches
(lower case, each number to one 0, Unicode punctuation and symbols to spaces)
and whitespace collapsed; or ``ccnet``, CCNet's ``normalize_for_dedup``
(:func:`ccnet_normalize`).  Splitting, normalizing and hashing run over a whole Arrow
batch; the rewrite (:func:`remove_pieces`) runs in Python, on the documents
that lose a piece only, and splits them the same way (RE2 and Python's ``re``
read :data:`BLANK_LINES` alike: ASCII only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.dedup.config import ParagraphsConfig
from stages.dedup.minhash import poly_hash_spans
from stages.dedup.normalize import collapse_whitespace, normalize_texts, string_buffers

#: One or more blank lines (only ASCII spaces, tabs, CR, FF, VT on them): the paragraph separator.
BLANK_LINES = r"\n(?:[ \t\r\f\v]*\n)+"
_BLANK = re.compile(f"({BLANK_LINES})")  # captured: the rewrite keeps the separators it does not remove
#: What CCNet's normalize_for_dedup deletes (cc_net/text_normalizer.py): its list of Unicode punctuation, and the
#: non-printing characters U+0000-U+001F and U+007F-U+009F.  ASCII punctuation is kept.
CCNET_PUNCT = "，。、„”“«»１」「《》´∶：？！（）；–—．～’…━〈〉【】％►"
_CCNET_DELETE = "[" + "".join(f"\\x{{{ord(c):X}}}" for c in CCNET_PUNCT) + "\\x{0}-\\x{1F}\\x{7F}-\\x{9F}]"
#: What Python's str.strip() strips (str.isspace), which CCNet's strip() does first.
_PY_SPACE = (
    "[\\x{9}-\\x{D}\\x{1C}-\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}]"
)
#: Schema of the counted pieces of a batch.
PIECE_SCHEMA = pa.schema([("hash", pa.uint64()), ("row", pa.int64()), ("idx", pa.int32()), ("chars", pa.int32())])


@dataclass(frozen=True)
class Pieces:
    """Every piece of a batch's documents, flat: ``values[i]`` is piece ``idx[i]`` of row ``row[i]``."""

    values: pa.LargeStringArray
    row: np.ndarray  # int64
    idx: np.ndarray  # int32


def _texts(texts: pa.Array | pa.ChunkedArray) -> pa.LargeStringArray:
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks else pa.array([], pa.large_string())
    return pc.fill_null(texts.cast(pa.large_string()), "")


def _flat(lists: pa.ListArray, rows: np.ndarray) -> Pieces:
    """The pieces of ``lists`` (one list per text), numbered by ``rows[list]`` and position."""
    parent = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = lists.offsets.to_numpy().astype(np.int64)
    idx = (np.arange(len(parent), dtype=np.int64) - offsets[parent]).astype(np.int32)
    return Pieces(lists.flatten().cast(pa.large_string()), rows[parent], idx)


def split_pieces(texts: pa.Array | pa.ChunkedArray, unit: str) -> Pieces:
    """Every piece of every text of a batch (see the module docstring for the rule)."""
    texts = _texts(texts)
    rows = np.arange(len(texts), dtype=np.int64)
    if unit == "line":
        return _flat(pc.split_pattern(texts, "\n"), rows)
    blank = pc.match_substring_regex(texts, BLANK_LINES).to_numpy(zero_copy_only=False)
    if not blank.any():
        return _flat(pc.split_pattern(texts, "\n"), rows)
    if blank.all():
        return _flat(pc.split_pattern_regex(texts, BLANK_LINES), rows)
    by_blank, by_line = np.flatnonzero(blank), np.flatnonzero(~blank)
    a = _flat(pc.split_pattern_regex(texts.take(pa.array(by_blank)), BLANK_LINES), by_blank)
    b = _flat(pc.split_pattern(texts.take(pa.array(by_line)), "\n"), by_line)
    return Pieces(
        pa.concat_arrays([a.values, b.values]), np.concatenate([a.row, b.row]), np.concatenate([a.idx, b.idx])
    )


def ccnet_normalize(texts: pa.Array | pa.ChunkedArray) -> pa.LargeStringArray:
    """CCNet's ``normalize_for_dedup`` over a batch: strip (Python's whitespace), lower case, each decimal digit to
    ``0``, CCNET_PUNCT and the non-printing characters deleted; inner whitespace as it is.  (Lower case is Unicode's
    simple mapping, one code point to one: ``İ`` is ``i`` where Python's str.lower gives ``i̇``.)"""
    arr = pc.replace_substring_regex(_texts(texts), f"^{_PY_SPACE}+|{_PY_SPACE}+$", "")
    arr = pc.replace_substring_regex(pc.utf8_lower(arr), r"\p{Nd}", "0")
    return pc.replace_substring_regex(arr, _CCNET_DELETE, "")


def normalized_pieces(values: pa.Array, config: ParagraphsConfig) -> pa.LargeStringArray:
    """The pieces as they are hashed (``config.normalizer``)."""
    if config.normalizer == "ccnet":
        return ccnet_normalize(values)
    return collapse_whitespace(normalize_texts(values, config.normalize))


def hash_pieces(texts: pa.Array | pa.ChunkedArray, config: ParagraphsConfig) -> pa.Table:
    """The counted pieces of a batch: ``(hash, row, idx, chars)`` (PIECE_SCHEMA), ordered by row, then idx."""
    pieces = split_pieces(texts, config.unit)
    normalized = normalized_pieces(pieces.values, config)
    chars = pc.utf8_length(normalized).to_numpy(zero_copy_only=False).astype(np.int64)
    counted = (chars > 0) & (chars >= config.min_chars)
    if config.min_words > 1:
        if config.normalizer == "ccnet":  # whitespace as it is: runs of it
            runs = pc.list_value_length(pc.utf8_split_whitespace(normalized))
            words = runs.to_numpy(zero_copy_only=False).astype(np.int64)
        else:  # single spaces
            words = pc.count_substring(normalized, " ").to_numpy(zero_copy_only=False).astype(np.int64) + 1
        counted &= words >= config.min_words
    data, offsets = string_buffers(normalized)
    keep = np.flatnonzero(counted)
    hashes = poly_hash_spans(data, offsets[:-1][keep], offsets[1:][keep])
    order = np.lexsort((pieces.idx[keep], pieces.row[keep]))  # b's rows may come before a's
    keep = keep[order]
    return pa.table(
        {
            "hash": pa.array(hashes[order], pa.uint64()),
            "row": pa.array(pieces.row[keep], pa.int64()),
            "idx": pa.array(pieces.idx[keep], pa.int32()),
            "chars": pa.array(chars[keep].astype(np.int32)),
        },
        schema=PIECE_SCHEMA,
    )


def split_text(text: str, unit: str) -> tuple[list[str], list[str]]:
    """(pieces, separators) of one text: ``separators[i]`` sits
    between pieces i and i + 1 (as :func:`split_pieces`)."""
    if unit == "paragraph" and _BLANK.search(text):
        parts = _BLANK.split(text)
        return parts[0::2], parts[1::2]
    pieces = text.split("\n")
    return pieces, ["\n"] * (len(pieces) - 1)


def remove_pieces(text: str, unit: str, drop: set[int]) -> str:
    """``text`` without the pieces numbered in ``drop``; a kept piece keeps the separator that preceded it."""
    pieces, seps = split_text(text, unit)
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i in drop:
            continue
        if out:
            out.append(seps[i - 1])
        out.append(piece)
    return "".join(out)


def piece_text(text: str, unit: str, idx: int) -> str:
    """Piece ``idx`` of ``text``, stripped ("" when there is none)."""
    pieces, _ = split_text(text, unit)
    return pieces[idx].strip() if 0 <= idx < len(pieces) else ""
