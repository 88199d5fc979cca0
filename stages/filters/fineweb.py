"""FineWeb quality filter (Penedo et al. 2024, "The FineWeb Datasets", Sec. 3.5).

FineWeb's own rules, on the non-blank lines of a document:

- line_punct_ratio: fraction of lines ending in terminal punctuation < 0.12;
- short_line_ratio: fraction of lines of at most 30 characters > 0.67;
- char_dup_ratio: characters in lines that repeat an earlier line, over the
  document's characters without newlines, > 0.01;
- new_line_ratio: newlines per word > 0.3 (lists and menus).

Thresholds and definitions as in DataTrove's ``FineWebQualityFilter`` (the
published code), except that a line may end in whitespace after its
punctuation and words are words (not punctuation tokens); see docs/filters.md.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from stages.filters import lines as ln
from stages.filters.charclasses import re2_chars
from stages.filters.rules import TERMINAL_PUNCTUATION, above, below, empty_rule, ratio, reject, texts_of
from stages.filters.words import word_counts

FINEWEB = "FineWeb (Penedo et al. 2024, Sec. 3.5)"
_STOP_CHARS = re2_chars(TERMINAL_PUNCTUATION)


class FineWebQualityConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description=f"{FINEWEB}: run the FineWeb quality rules")
    line_punct_thr: float | None = Field(
        0.12, ge=0, le=1, description=f"{FINEWEB}: smaller fraction of lines ending in terminal punctuation -> removed"
    )
    line_punct_exclude_zero: bool = Field(
        False, description=f"{FINEWEB} (DataTrove option): do not remove documents with no punctuated line at all"
    )
    short_line_thr: float | None = Field(
        0.67, ge=0, le=1, description=f"{FINEWEB}: larger fraction of short lines -> removed"
    )
    short_line_length: int = Field(
        30, ge=0, le=1_000_000, description=f"{FINEWEB}: a line of at most this many characters is short"
    )
    char_duplicates_ratio: float | None = Field(
        0.01, ge=0, le=1, description=f"{FINEWEB}: larger fraction of characters in repeated lines -> removed"
    )
    new_line_ratio: float | None = Field(
        0.3, ge=0, le=1000, description=f"{FINEWEB}: more newlines per word -> removed"
    )


class FineWebQualityFilter:
    name = "fineweb"
    label = "FineWeb rules"
    needs = ("text",)
    reasons = (
        "fineweb:empty_text",
        "fineweb:line_punct_ratio",
        "fineweb:short_line_ratio",
        "fineweb:char_dup_ratio",
        "fineweb:new_line_ratio",
    )
    derives = (ln.prime_newline_parts,)  # what it reads through the batch cache

    def __init__(self, config: FineWebQualityConfig | None = None):
        self.config = config or FineWebQualityConfig()

    def line_stats(self, texts: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per document: lines, lines ending in punctuation, short lines, characters in repeated lines.

        Lines are the non-blank pieces of ``text.split("\\n")``; a line ends in
        punctuation when ``line.rstrip()`` does; short lines and repeats are
        judged on the line as it is.
        """
        parts = ln.newline_parts(texts)
        nonblank = ln.lengths(ln.strip(parts.values)) > 0
        values = parts.values.filter(pa.array(nonblank))
        doc = parts.doc[nonblank]
        punct = pc.match_substring_regex(ln.rstrip(values), f"[{_STOP_CHARS}]$").to_numpy(zero_copy_only=False)
        short = ln.lengths(values) <= self.config.short_line_length
        _, dup_chars = ln.duplicates(values, doc, parts.n_docs)
        n = parts.n_docs
        return (np.bincount(doc, minlength=n), np.bincount(doc, weights=punct, minlength=n),
                np.bincount(doc, weights=short, minlength=n), dup_chars)  # fmt: skip

    def __call__(self, batch: pa.Table) -> pa.Table:
        c = self.config
        texts = texts_of(batch)
        lines, punct, short, dup_chars = self.line_stats(texts)
        newlines = pc.count_substring(texts, "\n").to_numpy(zero_copy_only=False)

        chars = pc.utf8_length(texts).to_numpy(zero_copy_only=False) - newlines
        punct_ratio = ratio(punct, lines)
        # line_punct_exclude_zero: a document with no punctuated line at all is not judged by this rule.
        judged = ~((punct_ratio == 0) & c.line_punct_exclude_zero)
        rules = [empty_rule(self.name, texts)]
        rules += below(f"{self.name}:line_punct_ratio", punct_ratio, c.line_punct_thr, judged)
        rules += above(f"{self.name}:short_line_ratio", ratio(short, lines), c.short_line_thr)
        rules += above(f"{self.name}:char_dup_ratio", ratio(dup_chars, chars), c.char_duplicates_ratio)
        if c.new_line_ratio is not None:
            # A document without words but with newlines counts one word (DataTrove would divide by zero).
            per_word = ratio(newlines, np.maximum(word_counts(texts), 1))
            rules += above(f"{self.name}:new_line_ratio", per_word, c.new_line_ratio)
        return reject(batch, rules)
