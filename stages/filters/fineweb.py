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

from stages.filters.gopher_repetition import duplicates
from stages.filters.rules import TERMINAL_PUNCTUATION, above, below, empty_rule, ratio, reject, texts_of
from stages.filters.words import count_words

FINEWEB = "FineWeb (Penedo et al. 2024, Sec. 3.5)"


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
    short_line_length: int = Field(30, ge=0, description=f"{FINEWEB}: a line of at most this many characters is short")
    char_duplicates_ratio: float | None = Field(
        0.01, ge=0, le=1, description=f"{FINEWEB}: larger fraction of characters in repeated lines -> removed"
    )
    new_line_ratio: float | None = Field(0.3, ge=0, description=f"{FINEWEB}: more newlines per word -> removed")


class FineWebQualityFilter:
    name = "fineweb"

    def __init__(self, config: FineWebQualityConfig | None = None):
        self.config = config or FineWebQualityConfig()
        self.stop_chars = tuple(TERMINAL_PUNCTUATION)

    def line_stats(self, text: str) -> tuple[int, int, int, int]:
        """(lines, lines ending in punctuation, short lines, characters in repeated lines) over non-blank lines."""
        lines = [line for line in text.split("\n") if line.strip()]
        punct = sum(1 for line in lines if line.rstrip().endswith(self.stop_chars))
        short = sum(1 for line in lines if len(line) <= self.config.short_line_length)
        return len(lines), punct, short, duplicates(lines)[1]

    def __call__(self, batch: pa.Table) -> pa.Table:
        c = self.config
        texts = texts_of(batch)
        docs = texts.to_pylist()
        stats = np.array([self.line_stats(t) for t in docs], dtype=np.float64).reshape(len(docs), 4)
        lines, punct, short, dup_chars = stats.T
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
            per_word = ratio(newlines, np.maximum(count_words(texts), 1))
            rules += above(f"{self.name}:new_line_ratio", per_word, c.new_line_ratio)
        return reject(batch, rules)
