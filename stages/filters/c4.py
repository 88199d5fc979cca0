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
``c4_chars_removed`` and ``c4_lines_removed_by`` (removed lines per rule: a list of
``{rule, lines}`` structs, not an Arrow map, which Hugging Face ``datasets`` cannot read).

The rules are written per line (``text.splitlines()``, each line stripped) and
run over all the lines of a batch at once: Arrow kernels with regexes that
match what the Python ones match (:mod:`stages.filters.charclasses`), Python
only for the few lines that need it (longer than ``max_word_length``, with a
``[``, in a script without spaces).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from stages.base import add_rejections, set_column
from stages.filters import lines as ln
from stages.filters.charclasses import SPACE, re2_chars
from stages.filters.rules import TERMINAL_PUNCTUATION, texts_of
from stages.filters.words import NO_SPACE_RE2, count_line_words, longest_token

C4 = "C4 (Raffel et al. 2020, Sec. 2.2)"
FINEWEB = "FineWeb (Penedo et al. 2024)"

CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]", re.IGNORECASE)
_TERM = re.escape(TERMINAL_PUNCTUATION)
_QUOTE_CHARS = "\"'”’“‘»«›‹」』"  # closing quotes: en, de („…“), fr (« … »), ja (「…」)
_BRACKET_CHARS = "）)]"  # closing brackets: C4's reference removes "(see above.)" (end_mark_brackets)
_CLOSE_CHARS = _QUOTE_CHARS + _BRACKET_CHARS
_CLOSERS = re.escape(_CLOSE_CHARS)
# A sentence ends at terminal punctuation (and closing quotes) before a space or
# the end of the line; CJK full stops need no space after them.
SENTENCE_END = re.compile(rf"[{_TERM}]+[{_CLOSERS}]*(?:\s+|$)|[。！？｡]+")
POLICY_SUBSTRINGS = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)

# The same patterns for RE2 (Arrow).  Lines hold no line break, so "$" means the same in both.
_TERM2, _CLOSERS2 = re2_chars(TERMINAL_PUNCTUATION), re2_chars(_CLOSE_CHARS)
_QUOTES2 = re2_chars('"”')
# C4's terminal marks are ., ?, ! and the end quotation mark; the same marks of
# every script count (a Japanese line ends in 。), and closing quotes may follow
# (closing brackets too with ``end_mark_brackets``).
TERMINAL_LINE_END_RE2 = f"(?:[{_TERM2}][{re2_chars(_QUOTE_CHARS)}]*|[{_QUOTES2}])$"
TERMINAL_LINE_END_BRACKETS_RE2 = f"(?:[{_TERM2}][{_CLOSERS2}]*|[{_QUOTES2}])$"
# C4 removes a line ending in an ellipsis ("..."; "...\"" ends in an end mark and stays); with end_mark_brackets,
# an ellipsis inside closing brackets ("(and so on...)") is no end either.
ELLIPSIS_END_RE2 = r"\.\.\.$"
ELLIPSIS_END_BRACKETS_RE2 = rf"\.\.\.[{re2_chars(_BRACKET_CHARS)}]*$"
SENTENCE_END_RE2 = f"[{_TERM2}]+[{_CLOSERS2}]*(?:[{SPACE}]+|$)|[{re2_chars('。！？｡')}]+"
# A line whose last sentence is terminated: SENTENCE_END's last match reaches the line's end.
_LAST_SENTENCE_ENDS_RE2 = f"[{_TERM2}][{_CLOSERS2}]*[{SPACE}]*$"
# Where str.splitlines() breaks lines.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
SPLITLINES_RE2 = f"\\r\\n|[{re2_chars(_LINE_BREAKS)}]"

# What happens to a line, in the order of the reference code's checks.
KEEP, BLANK, TOO_LONG_WORD, NO_TERMINAL_PUNCT, TOO_FEW_WORDS, LOREM_IPSUM, JAVASCRIPT, CURLY_BRACKET, POLICY = range(9)
#: Line rules as named in ``c4_lines_removed_by`` (in name order, as the list is written).
LINE_RULES = {
    "javascript": JAVASCRIPT,
    "no_terminal_punct": NO_TERMINAL_PUNCT,
    "policy": POLICY,
    "too_few_words": TOO_FEW_WORDS,
    "too_long_word": TOO_LONG_WORD,
}
#: Rules that remove the whole document at the first line that has it.
DOCUMENT_RULES = {LOREM_IPSUM: "lorem_ipsum", CURLY_BRACKET: "curly_bracket"}


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
    end_mark_brackets: bool = Field(
        False,
        description="also keep a line whose end mark is followed by a closing bracket ), ] or ） ('(see above.)'); "
        f"off: as {C4}'s reference code, which removes it (on: 891 more lines kept in 162 of the 917 sample pages)",
    )
    min_words_per_line: int | None = Field(3, ge=0, le=10_000, description=f"{C4}: remove lines with fewer words")
    max_word_length: int | None = Field(
        1000, ge=1, le=100_000_000, description=f"{C4} reference code: remove lines with a longer word"
    )
    filter_javascript: bool = Field(True, description=f"{C4}: remove lines containing 'javascript'")
    filter_policy: bool = Field(True, description=f"{C4}: remove cookie/terms/privacy policy lines")
    policy_substrings: list[str] = Field(
        default_factory=lambda: list(POLICY_SUBSTRINGS), description=f"{C4} reference code: the policy phrases"
    )
    filter_lorem_ipsum: bool = Field(True, description=f"{C4}: remove documents containing 'lorem ipsum'")
    filter_curly_bracket: bool = Field(True, description=f"{C4}: remove documents containing '{{'")
    min_num_sentences: int | None = Field(
        5, ge=0, le=1_000_000, description=f"{C4}: remove documents with fewer sentences left"
    )


def count_sentences(line: str) -> int:
    """Sentence ends in a non-empty line, plus one for a last sentence without terminal punctuation."""
    ends = list(SENTENCE_END.finditer(line))
    unterminated = not ends or ends[-1].end() < len(line)
    return len(ends) + unterminated


def count_sentences_batch(lines: pa.Array) -> np.ndarray:
    """``count_sentences`` of every line, in two Arrow passes."""
    ends = pc.count_substring_regex(lines, SENTENCE_END_RE2).to_numpy(zero_copy_only=False)
    terminated = pc.match_substring_regex(lines, _LAST_SENTENCE_ENDS_RE2).to_numpy(zero_copy_only=False)
    return ends.astype(np.int64) + ~terminated


class C4Filter:
    name = "c4"
    label = "C4 rules"
    needs = ("text",)
    adds = ("c4_lines_removed", "c4_chars_removed", "c4_lines_removed_by")
    types = {
        "c4_lines_removed": pa.int32(),
        "c4_chars_removed": pa.int64(),  # the Arrow types of what it adds
        "c4_lines_removed_by": pa.list_(pa.struct([("rule", pa.string()), ("lines", pa.int32())])),
    }
    reasons = ("c4:empty_text", "c4:lorem_ipsum", "c4:curly_bracket", "c4:too_few_sentences")

    def __init__(self, config: C4Config | None = None):
        self.config = config or C4Config()
        self.policy = tuple(p.lower() for p in self.config.policy_substrings)

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts = texts_of(batch)
        parts = ln.split(texts, SPLITLINES_RE2, regex=True)  # text.splitlines(), plus empty pieces
        outcome, lines = self.judge_lines(ln.strip(parts.values))
        reasons, details, new_text, removed = self.judge_documents(parts, outcome, lines, texts)
        rewritten = pc.is_valid(new_text)
        chars = np.where(_np(rewritten), ln.lengths(texts) - ln.lengths(pc.fill_null(new_text, "")), 0)
        column = batch.column("text")
        column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        batch = set_column(batch, "text", pc.if_else(rewritten, new_text.cast(column.type), column))
        batch = set_column(batch, "c4_lines_removed", pa.array(removed.sum(axis=1), pa.int32()))
        batch = set_column(batch, "c4_chars_removed", pa.array(chars, pa.int64()))
        batch = set_column(batch, "c4_lines_removed_by", _rule_counts(removed))
        return add_rejections(batch, reasons, details)

    def judge_lines(self, lines: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """Each stripped line's fate (KEEP, BLANK or the first rule it fails) and the line as kept (citations cut)."""
        c = self.config
        outcome = np.where(ln.lengths(lines) > 0, KEEP, BLANK).astype(np.int8)

        def fail(rule: int, hit: np.ndarray) -> None:
            outcome[(outcome == KEEP) & hit] = rule

        if c.max_word_length is not None:
            # Only a line longer than the limit can hold a longer word: Python measures those.
            fail(TOO_LONG_WORD, _python(lines, (outcome == KEEP) & (ln.lengths(lines) > c.max_word_length),
                                        lambda line: longest_token(line) > c.max_word_length))  # fmt: skip
        if c.remove_citations:
            cited = (outcome == KEEP) & _np(pc.match_substring(lines, "["))
            if cited.any():
                cut = [CITATION.sub("", line) for line in lines.filter(pa.array(cited)).to_pylist()]
                lines = pc.replace_with_mask(lines, pa.array(cited), pa.array(cut, lines.type))
        if c.filter_no_terminal_punct:
            end, ellipsis = (
                (TERMINAL_LINE_END_BRACKETS_RE2, ELLIPSIS_END_BRACKETS_RE2)
                if c.end_mark_brackets
                else (TERMINAL_LINE_END_RE2, ELLIPSIS_END_RE2)
            )
            no_end = ~_np(pc.match_substring_regex(lines, end)) | _np(pc.match_substring_regex(lines, ellipsis))
            fail(NO_TERMINAL_PUNCT, no_end)
        if c.min_words_per_line is not None:
            fail(TOO_FEW_WORDS, self._too_few_words(lines, outcome == KEEP))
        if c.filter_lorem_ipsum:
            fail(LOREM_IPSUM, ln.contains_lower(lines, ["lorem ipsum"], outcome == KEEP))
        if c.filter_javascript:
            fail(JAVASCRIPT, ln.contains_lower(lines, ["javascript"], outcome == KEEP))
        if c.filter_curly_bracket:
            fail(CURLY_BRACKET, _np(pc.match_substring(lines, "{")))
        if c.filter_policy:
            fail(POLICY, ln.contains_lower(lines, self.policy, outcome == KEEP))
        return outcome, lines

    def _too_few_words(self, lines: pa.Array, where: np.ndarray) -> np.ndarray:
        """``count_line_words(line) < min_words_per_line``: fewer whitespace tokens (ICU words where needed)."""
        k = self.config.min_words_per_line
        if k <= 0:
            return np.zeros(len(lines), dtype=bool)
        # k runs of non-space characters, in one regex pass per line.
        few = ~_np(pc.match_substring_regex(lines, f"(?:[^{SPACE}]+[{SPACE}]+){{{k - 1}}}[^{SPACE}]"))
        segmented = where & _np(pc.match_substring_regex(lines, NO_SPACE_RE2))
        if segmented.any():
            few[segmented] = [count_line_words(x) < k for x in lines.filter(pa.array(segmented)).to_pylist()]
        return few

    def judge_documents(self, parts: ln.Parts, outcome: np.ndarray, lines: pa.Array, texts: pa.Array):
        """(reasons, details, new text or null, removed lines per rule) per document."""
        c, n, doc = self.config, parts.n_docs, parts.doc
        empty = ln.lengths(ln.strip(texts)) == 0
        # A document rule stops the reading at its first line: later lines count for nothing.
        stop = np.full(n, len(outcome))
        triggers = np.flatnonzero(np.isin(outcome, list(DOCUMENT_RULES)))
        docs, first = np.unique(doc[triggers], return_index=True)
        stop[docs] = triggers[first]
        read = np.arange(len(outcome)) < stop[doc]
        removed = np.column_stack(
            [np.bincount(doc[read & (outcome == rule)], minlength=n) for rule in LINE_RULES.values()]
        ).reshape(n, len(LINE_RULES))
        removed[empty] = 0

        reasons: list[str | None] = [None] * n
        details: list[str | None] = [None] * n
        rejected = empty | (stop < len(outcome))
        for d in np.flatnonzero(stop < len(outcome)):
            reasons[d] = f"{self.name}:{DOCUMENT_RULES[outcome[stop[d]]]}"
        kept = outcome == KEEP
        if c.min_num_sentences is not None:
            sentences = np.bincount(
                doc[kept], weights=count_sentences_batch(lines.filter(pa.array(kept))), minlength=n
            )
            few = ~rejected & (sentences < c.min_num_sentences)
            for d in np.flatnonzero(few):
                reasons[d] = f"{self.name}:too_few_sentences"
                details[d] = f"{int(sentences[d])} < {c.min_num_sentences}"
            rejected |= few
        for d in np.flatnonzero(empty):
            reasons[d] = f"{self.name}:empty_text"

        # The kept lines of the kept documents, joined with "\n"; null where the text stays.
        kept &= ~rejected[doc]
        joined = pc.binary_join(ln.group(lines.filter(pa.array(kept)), doc[kept], n), pa.scalar("\n", lines.type))
        new_text = pc.if_else(pa.array(~rejected), joined, pa.nulls(n, joined.type))
        return reasons, details, new_text, removed


def _np(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def _python(values: pa.Array, where: np.ndarray, test) -> np.ndarray:
    """``test(value)`` in Python for the values ``where`` is true (False elsewhere)."""
    out = np.zeros(len(values), dtype=bool)
    if where.any():
        out[where] = [test(v) for v in values.filter(pa.array(where)).to_pylist()]
    return out


#: ``c4_lines_removed_by``'s type: a list of structs, which every Parquet reader and Hugging Face ``datasets``
#: (3.6 to 5.2: a list of {rule, lines} dicts) read; an Arrow map has no ``datasets`` type, and JSON text
#: would need parsing for every query.
RULE_COUNTS = pa.list_(pa.struct([("rule", pa.string()), ("lines", pa.int32())]))


def _rule_counts(removed: np.ndarray) -> pa.Array:
    """``c4_lines_removed_by``: per document, ``[{rule, lines}]`` for the rules that removed lines, in name order."""
    nonzero = removed > 0
    offsets = np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))]).astype(np.int32)
    names = np.array(list(LINE_RULES), dtype=object)
    rules = pa.array(np.broadcast_to(names, removed.shape)[nonzero], pa.string())
    lines = pa.array(removed[nonzero], pa.int32())
    items = pa.StructArray.from_arrays([rules, lines], fields=list(RULE_COUNTS.value_type))
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=RULE_COUNTS)
