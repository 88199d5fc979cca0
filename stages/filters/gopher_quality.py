"""Gopher quality filter (Rae et al. 2021, "Scaling Language Models", App. A1.1.1).

"We remove any document that does not contain between 50 and 100,000 words,
or whose mean word length is outside the range of 3 to 10 characters; any
document with a symbol-to-word ratio greater than 0.1 for either the hash
symbol or the ellipsis; any document with more than 90% of lines starting with
a bullet point, or more than 30% ending with an ellipsis.  We also require that
80% of words in a document contain at least one alphabetic character, and
apply a stop word filter, to remove documents that do not contain at least two
of the following English words: the, be, to, of, and, that, have and with."

Words are whitespace tokens without their surrounding punctuation
(:mod:`stages.filters.words`); lines are the non-blank lines.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from stages.filters import lines as ln, stopwords
from stages.filters.labels import canonical
from stages.filters.rules import SKIPPED, above, below, empty_rule, ratio, record_skips, reject, texts_of
from stages.filters.words import NO_SPACE_LANGUAGES, BatchWords, batch_words, prime_words

GOPHER = "Gopher (Rae et al. 2021, App. A1.1.1)"
#: Languages whose stop words (particles, endings) are written attached to other words.
AFFIX_LANGUAGES = frozenset({"ko"})
#: Languages where the 3..10 characters of an English word mean nothing: words
#: without spaces between them, or Hangul, a syllable per character (FineWeb-2
#: re-fitted the bounds as 1..5 for Chinese and Japanese, 1..6 for Korean).
NO_LENGTH_RULE = NO_SPACE_LANGUAGES | {"ko"}


class GopherQualityConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description=f"{GOPHER}: run the Gopher quality rules")
    min_doc_words: int | None = Field(
        50, ge=0, le=10_000_000, description=f"{GOPHER}: fewer words -> removed (null = off)"
    )
    max_doc_words: int | None = Field(
        100_000, ge=1, le=100_000_000, description=f"{GOPHER}: more words -> removed (null = off)"
    )
    min_avg_word_length: float | None = Field(
        3, ge=0, le=1000, description=f"{GOPHER}: lower mean word length (characters) -> removed"
    )
    max_avg_word_length: float | None = Field(
        10, ge=0, le=1000, description=f"{GOPHER}: higher mean word length -> removed"
    )
    max_symbol_word_ratio: float | None = Field(
        0.1,
        ge=0,
        le=1000,
        description=f"{GOPHER}: more '#' per word, or more ellipses ('...' or '…') per word -> removed",
    )
    max_bullet_lines_ratio: float | None = Field(
        0.9, ge=0, le=1, description=f"{GOPHER}: larger fraction of lines starting with a bullet -> removed"
    )
    bullets: str = Field(
        "•-", min_length=1, description="characters that start a bullet line (DataTrove's: '•' and '-')"
    )
    max_ellipsis_lines_ratio: float | None = Field(
        0.3, ge=0, le=1, description=f"{GOPHER}: larger fraction of lines ending with an ellipsis -> removed"
    )
    min_alpha_words_ratio: float | None = Field(
        0.8, ge=0, le=1, description=f"{GOPHER}: smaller fraction of words with an alphabetic character -> removed"
    )
    min_stop_words: int | None = Field(
        2,
        ge=0,
        le=10_000,
        description=f"{GOPHER}: fewer distinct stop words -> removed (skipped for languages without a list)",
    )
    stop_words: dict[str, list[str]] = Field(
        default_factory=dict,
        description="stop-word lists by language code, replacing the bundled ones (en: Gopher's 8 words; "
        "31 other languages: FineWeb-2, Penedo et al. 2025)",
    )


class GopherQualityFilter:
    name = "gopher_quality"
    label = "Gopher quality rules"
    needs = ("text", "language")  # stop words and the word-length rule depend on the language
    adds = (SKIPPED,)
    types = {SKIPPED: pa.list_(pa.string())}  # the Arrow type of what it adds
    reasons = (
        "gopher_quality:empty_text",
        "gopher_quality:min_doc_words",
        "gopher_quality:max_doc_words",
        "gopher_quality:min_avg_word_length",
        "gopher_quality:max_avg_word_length",
        "gopher_quality:hash_ratio",
        "gopher_quality:ellipsis_ratio",
        "gopher_quality:bullet_lines",
        "gopher_quality:ellipsis_lines",
        "gopher_quality:alpha_words",
        "gopher_quality:stop_words",
    )
    derives = (prime_words, ln.prime_newline_parts)  # what it reads through the batch cache

    def __init__(self, config: GopherQualityConfig | None = None):
        self.config = c = config or GopherQualityConfig()
        lists = {**stopwords.bundled(), **{k: stopwords.normalise(v) for k, v in c.stop_words.items()}}
        self.stop_words = {lang: words for lang, words in lists.items() if words}
        self._stop_sets = {lang: pa.array(sorted(ws), pa.large_string()) for lang, ws in self.stop_words.items()}
        self.bullets = tuple(c.bullets)

    def __call__(self, batch: pa.Table) -> pa.Table:
        c, n, name = self.config, len(batch), self.name
        texts = texts_of(batch)
        langs = _languages(batch)
        words = batch_words(texts)
        n_words = words.counts
        skips: list[list[str]] = [[] for _ in range(n)]

        rules = [empty_rule(name, texts)]
        rules += below(f"{name}:min_doc_words", n_words, c.min_doc_words)
        rules += above(f"{name}:max_doc_words", n_words, c.max_doc_words)

        avg_len = ratio(words.per_doc_sum(words.lengths), n_words)
        length_rule = np.array([lang not in NO_LENGTH_RULE for lang in langs], dtype=bool)
        if c.min_avg_word_length is not None or c.max_avg_word_length is not None:
            for i in np.flatnonzero(~length_rule):
                skips[i].append(f"{name}:avg_word_length: thresholds are for alphabetic words, not {langs[i]}")
        rules += below(f"{name}:min_avg_word_length", avg_len, c.min_avg_word_length, length_rule)
        rules += above(f"{name}:max_avg_word_length", avg_len, c.max_avg_word_length, length_rule)

        hashes = ratio(_count(texts, "#"), n_words)
        ellipses = ratio(_count(texts, "...") + _count(texts, "…"), n_words)
        rules += above(f"{name}:hash_ratio", hashes, c.max_symbol_word_ratio)
        rules += above(f"{name}:ellipsis_ratio", ellipses, c.max_symbol_word_ratio)

        lines, bullet_lines, ellipsis_lines = self.line_counts(texts)
        rules += above(f"{name}:bullet_lines", ratio(bullet_lines, lines), c.max_bullet_lines_ratio)
        rules += above(f"{name}:ellipsis_lines", ratio(ellipsis_lines, lines), c.max_ellipsis_lines_ratio)

        if c.min_alpha_words_ratio is not None:
            has_alpha = pc.match_substring_regex(words.words, r"\pL").to_numpy(zero_copy_only=False)
            alpha = ratio(words.per_doc_sum(has_alpha.astype(np.float64)), n_words)
            rules += below(f"{name}:alpha_words", alpha, c.min_alpha_words_ratio)

        if c.min_stop_words is not None:
            has_list = np.array([lang in self.stop_words for lang in langs], dtype=bool)
            for i in np.flatnonzero(~has_list):
                skips[i].append(f"{name}:stop_words: no stop-word list for {langs[i]}")
            found = self._distinct_stop_words(words, langs)
            rules += below(f"{name}:stop_words", found, c.min_stop_words, has_list)

        return record_skips(reject(batch, rules), skips)

    def line_counts(self, texts: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per document: non-blank lines, lines starting with a bullet, lines ending with an ellipsis.

        A line is a piece of ``text.split("\\n")``, stripped (``str.strip()``).
        """
        parts = ln.newline_parts(texts)
        lines = ln.strip(parts.values)
        nonblank = ln.lengths(lines) > 0
        bullet = np.zeros(len(lines), dtype=bool)
        for b in set(self.bullets):
            bullet |= pc.starts_with(lines, b).to_numpy(zero_copy_only=False)
        ellipsis = pc.or_(pc.ends_with(lines, "..."), pc.ends_with(lines, "…")).to_numpy(zero_copy_only=False)
        return parts.per_doc(nonblank), parts.per_doc(bullet & nonblank), parts.per_doc(ellipsis & nonblank)

    def _distinct_stop_words(self, words: BatchWords, langs: list[str | None]) -> np.ndarray:
        """Distinct stop words of its language per document."""
        found = np.zeros(words.n_docs, dtype=np.int64)
        doc_langs = np.array([lang or "" for lang in langs], dtype=object)
        listed = sorted(set(doc_langs) & set(self._stop_sets))
        if len(words.words) == 0 or not listed:
            return found
        lowered = _without_elision(pc.utf8_lower(words.words))
        hit_words, hit_docs = [], []
        for lang in listed:  # one set lookup per language of the batch
            sel = (doc_langs == lang)[words.doc]
            candidates = lowered if sel.all() else lowered.filter(pa.array(sel))
            docs = words.doc[sel]
            if lang in AFFIX_LANGUAGES:
                # Korean particles and endings are written attached to the word
                # ("문서의" = 문서 + 의); FineWeb-2 split them with a morphological
                # tokenizer.  Here a stop word may also be a word's first or last 1-2 syllables.
                ends = [pc.utf8_slice_codeunits(candidates, a, b) for a, b in ((0, 1), (0, 2), (-1, None), (-2, None))]
                candidates = pa.concat_arrays([candidates, *ends])
                docs = np.tile(docs, 5)
            hit = pc.is_in(candidates, value_set=self._stop_sets[lang]).to_numpy(zero_copy_only=False)
            hit_words.append(candidates.filter(pa.array(hit)))
            hit_docs.append(docs[hit])
        doc = np.concatenate(hit_docs)
        if len(doc) == 0:
            return found
        codes = pc.dictionary_encode(pa.concat_arrays(hit_words)).indices.to_numpy(zero_copy_only=False)
        width = int(codes.max()) + 1
        pairs = np.unique(doc.astype(np.int64) * width + codes)
        return np.bincount(pairs // width, minlength=words.n_docs)


def _without_elision(lowered: pa.Array) -> pa.Array:
    """ "l'homme" counts as "l", "that's" as "that": the elided article or
    pronoun is the stop word (spaCy and FineWeb-2's lists split them off)."""
    apostrophe = pc.or_(pc.match_substring(lowered, "'"), pc.match_substring(lowered, "’"))
    if not pc.any(apostrophe).as_py():
        return lowered
    cut = pc.replace_substring_regex(lowered.filter(apostrophe), r"['’].*", "")
    return pc.replace_with_mask(lowered, apostrophe, cut)


def _count(texts, needle: str) -> np.ndarray:
    return pc.count_substring(texts, needle).to_numpy(zero_copy_only=False).astype(np.int64)


def _languages(batch: pa.Table) -> list[str | None]:
    """Each row's language as lid.176's code where it has one (GlotLID's rus_Cyrl is ru: its stop words)."""
    return [canonical(x) if x else x for x in batch.column("language").to_pylist()]
