"""What the filters share: rule verdicts over a batch, skip records, terminal punctuation.

A filter measures every rule on the whole batch (numpy/Arrow arrays), then
:func:`first_failure` names, per document, the first rule in order that fails,
with the measured value and the threshold in ``details``.  A rule that does not
apply to a document (e.g. no stop-word list for its language) is *skipped*,
never failed, and the skip is recorded in the ``filter_skipped`` column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.base import add_rejections, set_column

SKIPPED = "filter_skipped"


@dataclass(frozen=True)
class Rule:
    """One published rule: its reason, whether each document fails, and the measurement."""

    reason: str
    fails: np.ndarray  # bool per document
    value: np.ndarray  # the measured value per document
    op: str  # how the failing value compares with the threshold, e.g. "<"
    threshold: float


def above(reason: str, value: np.ndarray, limit: float | None, applies: np.ndarray | bool = True) -> list[Rule]:
    """The rule "value > limit removes the document"; none if the rule is switched off (limit None)."""
    return [] if limit is None else [Rule(reason, (value > limit) & applies, value, ">", limit)]


def below(reason: str, value: np.ndarray, limit: float | None, applies: np.ndarray | bool = True) -> list[Rule]:
    """The rule "value < limit removes the document"; none if the rule is switched off (limit None)."""
    return [] if limit is None else [Rule(reason, (value < limit) & applies, value, "<", limit)]


def first_failure(rules: list[Rule], n: int) -> tuple[list[str | None], list[str | None]]:
    """Per document: the first failing rule's reason and "value op threshold"."""
    reasons: list[str | None] = [None] * n
    details: list[str | None] = [None] * n
    decided = np.zeros(n, dtype=bool)
    for rule in rules:
        hit = np.asarray(rule.fails, dtype=bool) & ~decided
        for i in np.flatnonzero(hit):
            reasons[i] = rule.reason
            details[i] = f"{_fmt(rule.value[i])} {rule.op} {_fmt(rule.threshold)}"
        decided |= hit
    return reasons, details


def _fmt(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.4g}"


def reject(batch: pa.Table, rules: list[Rule]) -> pa.Table:
    reasons, details = first_failure(rules, len(batch))
    return add_rejections(batch, reasons, details)


def record_skips(batch: pa.Table, skips: list[list[str]] | None) -> pa.Table:
    """Append skip notes (one list per row) to the ``filter_skipped`` column."""
    if skips is None or not any(skips):
        if SKIPPED in batch.column_names:
            return batch
        return set_column(batch, SKIPPED, pa.nulls(len(batch), pa.list_(pa.string())))
    if SKIPPED in batch.column_names:
        old = batch.column(SKIPPED).to_pylist()
        skips = [(o or []) + s for o, s in zip(old, skips, strict=False)]
    return set_column(batch, SKIPPED, pa.array([s or None for s in skips], pa.list_(pa.string())))


def texts_of(batch: pa.Table) -> pa.Array:
    """The ``text`` column as one large_string array, with nulls as empty strings."""
    return text_array(batch.column("text"))


def text_array(texts) -> pa.Array:
    """Texts (a list, an Arrow array or chunked array) as one large_string array, with nulls as empty strings."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.chunk(0) if texts.num_chunks == 1 else texts.combine_chunks()
    elif not isinstance(texts, pa.Array):
        texts = pa.array(texts, pa.large_string())
    return pc.fill_null(texts.cast(pa.large_string()), "")


def as_np(arr) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False) if hasattr(arr, "to_numpy") else arr)


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num/den with 0 where den is 0 (an empty document fails nothing by ratio)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 0)
    return out


def empty_rule(stage: str, texts: pa.Array) -> Rule:
    """Documents that are empty or only whitespace are rejected first (nothing to judge)."""
    chars = as_np(pc.utf8_length(pc.utf8_trim_whitespace(texts)))
    return Rule(f"{stage}:empty_text", chars == 0, chars, "==", 0)


# Sentence-terminal punctuation of every script (Unicode Sentence_Terminal, as listed
# in DataTrove's utils/text.py TERMINAL_PUNCTUATION, Apache-2.0): FineWeb's line_punct
# rule and the sentence count of the C4 rule.
TERMINAL_PUNCTUATION = (
    "!.?\u0589\u061d\u061e\u061f\u06d4\u0700\u0701\u0702\u07f9\u0837\u0839"
    "\u083d\u083e\u0964\u0965\u104a\u104b\u1362\u1367\u1368\u166e\u1735\u1736\u17d4\u17d5"
    "\u17d6\u17d9\u17da\u1803\u1809\u1944\u1945\u1aa8\u1aa9\u1aaa\u1aab\u1b5a\u1b5b\u1b5e"
    "\u1b5f\u1b7d\u1b7e\u1c3b\u1c3c\u1c7e\u1c7f\u203c\u203d\u2047\u2048\u2049\u2e2e\u2e3c"
    "\u2e53\u2e54\u3002\ua4ff\ua60e\ua60f\ua6f3\ua6f7\ua876\ua877\ua8ce\ua8cf\ua92f\ua9c8"
    "\ua9c9\uaa5d\uaa5e\uaa5f\uaaf0\uaaf1\uabeb\ufe52\ufe56\ufe57\uff01\uff0e\uff1f\uff61"
    "\U00010a56\U00010a57\U00010f55\U00010f56\U00010f57\U00010f58\U00010f59\U00010f86\U00010f87\U00010f88\U00010f89\U00011047\U00011048\U000110be"
    "\U000110bf\U000110c0\U000110c1\U00011141\U00011142\U00011143\U000111c5\U000111c6\U000111cd\U000111de\U000111df\U00011238\U00011239\U0001123b"
    "\U0001123c\U000112a9\U0001144b\U0001144c\U000115c2\U000115c3\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce\U000115cf\U000115d0"
    "\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7\U00011641\U00011642\U0001173c\U0001173d\U0001173e\U00011944\U00011946"
    "\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011c41\U00011c42\U00011ef7\U00011ef8\U00011f43\U00011f44\U00016a6e\U00016a6f\U00016af5\U00016b37"
    "\U00016b38\U00016b44\U00016e98\U0001bc9f\U0001da88"
)
