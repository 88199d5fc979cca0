"""C4 cleaning (Raffel et al. 2020, "Exploring the Limits of Transfer Learning", Sec. 2.2).

Line rules (the line is removed, the document kept): a word longer than 1000
characters; fewer than 3 words; the word "javascript"; a cookie or policy
notice; no terminal punctuation.  Wikipedia
citation markers ([1], [edit], [citation needed]) are cut out of lines.
Document rules, judged on the lines that survive: "lorem ipsum" or a curly
bracket anywhere, or fewer than 5 sentences left.  (FineWeb runs C4 without the
terminal-punctuation rule; here it is on, as in C4: see docs/filters.md.)  The order is that of the
reference implementation (TensorFlow Datasets ``c4_utils.clean_page``).

The stage rewrites ``text`` to the kept lines and adds ``c4_lines_removed``,
``c4_chars_removed`` and ``c4_lines_removed_by`` (removed lines per rule).
"""

from __future__ import annotations

import re
from collections import Counter

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from stages.base import add_rejections, set_column
from stages.filters.rules import TERMINAL_PUNCTUATION
from stages.filters.words import count_line_words, longest_token

C4 = "C4 (Raffel et al. 2020, Sec. 2.2)"
FINEWEB = "FineWeb (Penedo et al. 2024)"

CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]", re.IGNORECASE)
_TERM = re.escape(TERMINAL_PUNCTUATION)
_CLOSERS = "\"'”’“‘»«›‹」』）)\\]"  # closing quotes and brackets: en, de („…“), fr (« … »), ja (「…」)
# C4's terminal marks are ., ?, ! and the end quotation mark; the same marks of
# every script count (a Japanese line ends in 。), and closing quotes may follow.
TERMINAL_LINE_END = re.compile(rf"(?:[{_TERM}][{_CLOSERS}]*|[\"”])$")
# A sentence ends at terminal punctuation (and closing quotes) before a space or
# the end of the line; CJK full stops need no space after them.
SENTENCE_END = re.compile(rf"[{_TERM}]+[{_CLOSERS}]*(?:\s+|$)|[。！？｡]+")
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")


class C4Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description=f"{C4}: run the C4 line cleaning and document rules")
    remove_citations: bool = Field(
        True, description=f"{C4}: cut Wikipedia citation markers ([1], [edit], [citation needed])"
    )
    filter_no_terminal_punct: bool = Field(
        True,
        description=f"{C4}: remove lines not ending in terminal punctuation ({FINEWEB} turns it off; "
        "on resiliparse text it keeps more real pages and removes more menus, see docs/filters.md)",
    )
    min_words_per_line: int | None = Field(3, ge=0, description=f"{C4}: remove lines with fewer words")
    max_word_length: int | None = Field(1000, ge=1, description=f"{C4} reference code: remove lines with a longer word")
    filter_javascript: bool = Field(True, description=f"{C4}: remove lines containing 'javascript'")
    filter_policy: bool = Field(True, description=f"{C4}: remove cookie/terms/privacy policy lines")
    policy_substrings: list[str] = Field(
        default_factory=lambda: list(POLICY_SUBSTRINGS), description=f"{C4} reference code: the policy phrases"
    )
    filter_lorem_ipsum: bool = Field(True, description=f"{C4}: remove documents containing 'lorem ipsum'")
    filter_curly_bracket: bool = Field(True, description=f"{C4}: remove documents containing '{{'")
    min_num_sentences: int | None = Field(5, ge=0, description=f"{C4}: remove documents with fewer sentences left")


def count_sentences(line: str) -> int:
    """Sentence ends in a non-empty line, plus one for a last sentence without terminal punctuation."""
    ends = list(SENTENCE_END.finditer(line))
    unterminated = not ends or ends[-1].end() < len(line)
    return len(ends) + unterminated


class C4Filter:
    name = "c4"

    def __init__(self, config: C4Config | None = None):
        self.config = config or C4Config()
        self.policy = tuple(p.lower() for p in self.config.policy_substrings)

    def clean(self, text: str) -> tuple[str, str | None, str | None, Counter]:
        """(kept text, reason, details, removed lines per rule) for one document."""
        c = self.config
        removed: Counter = Counter()
        kept: list[str] = []
        sentences = 0
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if c.max_word_length is not None and longest_token(line) > c.max_word_length:
                removed["too_long_word"] += 1
                continue
            if c.remove_citations:
                line = CITATION.sub("", line)
            if c.filter_no_terminal_punct and (not TERMINAL_LINE_END.search(line) or line.endswith("...")):
                removed["no_terminal_punct"] += 1
                continue
            if c.min_words_per_line is not None and count_line_words(line) < c.min_words_per_line:
                removed["too_few_words"] += 1
                continue
            lower = line.lower()
            if c.filter_lorem_ipsum and "lorem ipsum" in lower:
                return text, f"{self.name}:lorem_ipsum", None, removed
            if c.filter_javascript and "javascript" in lower:
                removed["javascript"] += 1
                continue
            if c.filter_curly_bracket and "{" in line:
                return text, f"{self.name}:curly_bracket", None, removed
            if c.filter_policy and any(p in lower for p in self.policy):
                removed["policy"] += 1
                continue
            if c.min_num_sentences is not None:
                sentences += count_sentences(line)
            kept.append(line)
        if c.min_num_sentences is not None and sentences < c.min_num_sentences:
            return text, f"{self.name}:too_few_sentences", f"{sentences} < {c.min_num_sentences}", removed
        return "\n".join(kept), None, None, removed

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts, reasons, details, lines, chars, by_rule = [], [], [], [], [], []
        for text in batch.column("text").to_pylist():
            if not text or not text.strip():
                texts.append(text)
                reasons.append(f"{self.name}:empty_text")
                details.append(None)
                lines.append(0)
                chars.append(0)
                by_rule.append([])
                continue
            new, reason, detail, removed = self.clean(text)
            texts.append(new)
            reasons.append(reason)
            details.append(detail)
            lines.append(sum(removed.values()))
            chars.append(len(text) - len(new))
            by_rule.append(sorted(removed.items()))
        batch = set_column(batch, "text", pa.array(texts, batch.schema.field("text").type))
        batch = set_column(batch, "c4_lines_removed", pa.array(lines, pa.int32()))
        batch = set_column(batch, "c4_chars_removed", pa.array(chars, pa.int64()))
        batch = set_column(batch, "c4_lines_removed_by", pa.array(by_rule, pa.map_(pa.string(), pa.int32())))
        return add_rejections(batch, reasons, details)
