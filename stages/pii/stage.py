"""PiiStage: detect and redact PII in a batch of documents (the stage contract of stages/base.py).

For a batch: the candidate regex scans every text in Arrow (a document
without a candidate costs that one scan, is never converted to a Python
string, and comes back as the same Arrow value); the windows
around candidates are packed, per analyzer language and per set of entities
their candidates may be (an e-mail window does not need the phone
recognizer), into a few presidio ``analyze`` calls of at most ``chunk_chars`` characters, separated by filler
words so that no context word reaches across from one window to the next; the
findings are mapped back to their documents, overlaps resolved, and each
entity's action applied.

Columns: ``text`` is replaced by the redacted text; one ``int32`` column per
enabled entity, ``pii_<entity>`` (``pii_email_address``, ``pii_phone_number``,
``pii_ip_address``, ``pii_credit_card``, ``pii_iban_code``, ``pii_us_ssn``,
``pii_url_credentials``, ``pii_person``, ``pii_location``), counts what was
found in the document (also for the annotate action, which leaves the text alone).
``url`` is redacted by urls.py (``pii_url`` counts its findings), and ``id``,
``source``, ``metadata`` and the other string columns by fields.py (counted in the
stage's counters, ``fields.*``).

The stage is also a filter (stages/base.py): a document whose candidates hold
more than ``max_candidate_digits`` digits (a log, a directory, a table of
numbers) gets ``reason`` ``pii_dense`` instead of being analyzed, because
python-phonenumbers would spend minutes on it; the scan stops at that point.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.base import add_rejections, set_column
from stages.pii.candidates import Piece, candidate_pattern, candidate_spans, find_pieces, marked_texts, pieces
from stages.pii.config import (
    ENTITIES,
    NER_ENTITIES,
    PATTERN_ENTITIES,
    URL_COUNT_COLUMN,
    URL_ORIGINAL_COLUMN,
    PiiConfig,
    count_column,
)
from stages.pii.fields import FieldRedactor
from stages.pii.normalize import PERCENT, PERCENT_RE2, TRIGGER, TRIGGER_RE2, TextView, text_view
from stages.pii.recognizers import UNFORMATTED_PHONE_SCORE, ner_analyzer, pattern_analyzer
from stages.pii.redact import Finding, Redactor, resolve
from stages.pii.urls import KEYED_ENTITIES, KEYED_SCORE, UrlRedactor

# Between two windows in one presidio call: more words than presidio's context
# reaches back (5), none of them a stop word, so context never crosses windows.
SEPARATOR = "\n\n" + " ".join(["zqxj"] * 8) + "\n\n"
# reason of a document whose candidates are too dense to analyze (a dump of numbers)
DENSE_REASON = "pii_dense"
# Up to this many characters, detect_all scans with Python's re: Arrow compiles the RE2 candidate expression
# (its Unicode classes) at every call, ~15 ms, more than Python's re takes over a few hundred URL values.
PYTHON_SCAN_CHARS = 200_000
# Longest entity a chunk cut is guaranteed not to split (an e-mail address is at most 254).
MAX_ENTITY_CHARS = 300


def _strings(col: pa.ChunkedArray, name: str) -> bool:
    """Whether a column holds strings to read: an all-null column (a source without URLs) has nothing to redact."""
    if pa.types.is_null(col.type):
        return False
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        raise TypeError(f"pii: the {name} column must hold strings (got {col.type})")
    return True


class PiiStage:
    """Replaces ``text`` with its redacted form and adds ``pii_<entity>`` count columns."""

    name = "pii"
    label = "PII redacted"
    #: it reads ``text`` (and ``url``, and ``language`` when present: it picks the phone regions)
    needs = ("text",)
    #: columns it may add: one count per entity, the URL findings and, when asked for, the original URL
    adds = (*(count_column(e) for e in ENTITIES), URL_COUNT_COLUMN, URL_ORIGINAL_COLUMN)
    #: the Arrow types of the counts (url_original, only with keep_original, is not declared: never filled in)
    types = {**{count_column(e): pa.int32() for e in ENTITIES}, URL_COUNT_COLUMN: pa.int32()}
    reasons = (DENSE_REASON,)

    @classmethod
    def declare(cls, config: PiiConfig | None) -> dict:
        """The count columns of the entities this config enables."""
        config = config or PiiConfig()
        return {"adds": [*(count_column(e) for e in config.entities.enabled()), URL_COUNT_COLUMN, URL_ORIGINAL_COLUMN]}

    def __init__(self, config: PiiConfig | None = None, decode_percent: bool = False):
        self.config = config or PiiConfig()
        #: also read percent-encoded text decoded (URL values and published strings; see normalize.py)
        self.decode_percent = decode_percent
        self.trigger = TRIGGER_RE2 + (f"|{PERCENT_RE2}" if decode_percent else "")
        self.trigger_py = re.compile(TRIGGER.pattern + (f"|{PERCENT.pattern}" if decode_percent else ""))
        enabled = self.config.entities.enabled() if self.config.enabled else []  # disabled: no engine is built
        self.entities = enabled
        self.pattern_entities = [e for e in enabled if e in PATTERN_ENTITIES]
        self.ner_entities = [e for e in enabled if e in NER_ENTITIES]
        self.thresholds = {e: self.config.entities.of(e).score_threshold for e in enabled}
        self.pattern = candidate_pattern(self.config, self.pattern_entities)
        self.analyzer = pattern_analyzer(self.config) if self.pattern is not None else None
        self.ner = ner_analyzer(self.config) if self.ner_entities else None
        self.languages = set(self.config.phone_regions)
        self.redactor = Redactor(self.config)
        self.overlap = 2 * max(self.config.context_chars, MAX_ENTITY_CHARS)
        self.columns = {e: count_column(e) for e in enabled}
        #: the entities a key can name for its value (a URL's query key, a metadata key: urls.keyed_entity)
        self.keyed = frozenset(e for e in KEYED_ENTITIES if e in self.entities and self.thresholds[e] <= KEYED_SCORE)
        self.urls = self._url_redactor() if self.config.enabled and self.config.urls.enabled else None
        self.fields = FieldRedactor(self)
        self._counters: Counter = Counter()

    def _url_redactor(self) -> UrlRedactor:
        """The url column's redactor: the same recognizers (pattern entities: a slug is not a sentence for NER)."""
        keep = {e for e in self.entities if self.config.entities.of(e).action == "annotate"}

        def token(f: Finding, value: str) -> str | None:
            return None if f.entity in keep else self.redactor.ops[f.entity](value)

        return UrlRedactor(
            self._detect_url_values,
            token,
            min(self.config.min_phone_digits, 9),
            keyed=self.keyed,
            host_leftover=self._looks_like_pii if self.pattern is not None else None,
        )

    def _looks_like_pii(self, text: str) -> bool:
        """A candidate of the enabled entities in the text or its view (percent-decoded): a host label such as
        ``4158675309`` or ``81-2-69-160`` that no recognizer confirms is masked, as the card's hosts table does."""
        return bool(self.pattern.python.search(text_view(text, decode_percent=True).text))

    def _detect_url_values(self, texts: list[str], langs: list[str | None]):
        """detect_all on URL values, its counters kept apart (``url.chars_analyzed``, ...)."""
        return self.detect_apart("url", texts, langs)

    def detect_apart(self, prefix: str, texts: list[str], langs: list[str | None]):
        """detect_all of pattern entities, its counters kept apart from the text's (``<prefix>.chars_analyzed``...)."""
        text_counters, self._counters = self._counters, Counter()
        try:
            return self.detect_all(texts, langs, ner=False)
        finally:
            for k, v in self._counters.items():
                text_counters[f"{prefix}.{k}"] += v
            self._counters = text_counters

    # ---------------------------------------------------------------- helpers

    def _language(self, lang: str | None) -> str:
        return lang if lang in self.languages else "default"

    def _analyze(
        self, analyzer, lang: str, entities: list[str], batch_pieces: list[Piece], texts: list[str]
    ) -> list[tuple[Piece, Finding]]:
        """Run presidio over pieces packed into calls of at most chunk_chars; findings in document offsets."""
        out: list[tuple[Piece, Finding]] = []
        floor = min(self.thresholds[e] for e in entities)
        call: list[Piece] = []
        size = 0

        def flush():
            nonlocal call, size
            if not call:
                return
            offsets, parts, pos = [], [], 0
            for p in call:
                offsets.append(pos)
                parts.append(texts[p.doc][p.start : p.end])
                pos += p.end - p.start + len(SEPARATOR)
            text = SEPARATOR.join(parts)
            self._counters["chars_analyzed"] += len(text)
            self._counters["presidio_calls"] += 1
            for r in analyzer.analyze(text=text, language=lang, entities=entities, score_threshold=floor):
                if r.score < self.thresholds[r.entity_type]:
                    continue
                i = bisect.bisect_right(offsets, r.start) - 1
                p, base = call[i], offsets[i]
                start, end = p.start + r.start - base, p.start + r.end - base
                if end <= p.end and p.own_start <= start < p.own_end:
                    out.append((p, Finding(start, end, r.entity_type, round(r.score, 4))))
            call, size = [], 0

        with _memory_zone(analyzer, lang):
            for p in batch_pieces:
                if size and size + (p.end - p.start) > self.config.chunk_chars:
                    flush()
                call.append(p)
                size += p.end - p.start + len(SEPARATOR)
            flush()
        return out

    # ---------------------------------------------------------------- the stage

    def __call__(self, batch: pa.Table) -> pa.Table:
        if not self.config.enabled:
            return batch
        n = len(batch)
        counts = {e: np.zeros(n, dtype=np.int32) for e in self.entities}
        if n and self.entities and _strings(batch.column("text"), "text"):
            col = batch.column("text")
            langs = batch.column("language") if "language" in batch.column_names else pa.nulls(n, pa.string())
            need, viewed = self._scan(col, langs)
            rows = np.flatnonzero(need)
            sub = pc.take(col, rows)
            texts = sub.to_pylist()  # only these documents become Python strings
            found, dense = self._detect(texts, pc.take(langs, rows).to_pylist(), self._marked(sub), viewed[rows])
            changed: dict[int, str] = {}
            for k, findings in found.items():
                new, per_entity = self.redactor.apply(texts[k], findings)
                for e, c in per_entity.items():
                    counts[e][rows[k]] = c
                    self._counters[f"found.{e}"] += c
                if new != texts[k]:
                    changed[int(rows[k])] = new
            batch = self._replace_values(batch, "text", changed)
            if dense:
                batch = self._reject_dense(batch, {int(rows[k]): d for k, d in dense.items()})
            self._counters["docs"] += n
            self._counters["docs_with_findings"] += len(found)
            self._counters["docs_changed"] += len(changed)
        for e, col_name in self.columns.items():
            batch = set_column(batch, col_name, pa.array(counts[e], pa.int32()))
        if self.urls is not None:
            batch = self._redact_urls(batch)
        return self.fields(batch)  # id, source, metadata and the other string columns (fields.py)

    def _redact_urls(self, batch: pa.Table) -> pa.Table:
        """The url column redacted (urls.py), ``pii_url`` counts, and ``url_original`` when asked for."""
        n = len(batch)
        found = np.zeros(n, dtype=np.int32)
        if "url" in batch.column_names and self.config.urls.keep_original:
            batch = set_column(batch, URL_ORIGINAL_COLUMN, batch.column("url"))
        if "url" in batch.column_names and n and _strings(batch.column("url"), "url"):
            col = batch.column("url")
            rows = np.flatnonzero(self.urls.needs(col))
            langs = pc.take(batch.column("language"), rows).to_pylist() if "language" in batch.column_names else None
            changed = {}
            for row, r in zip(rows, self.urls.redact(pc.take(col, rows).to_pylist(), langs), strict=False):
                found[row] = r.findings
                for e, c in r.counts.items():
                    self._counters[f"url.found.{e}"] += c
                self._counters["url.values_masked"] += r.masked
                self._counters["url.cut"] += r.cut
                if r.url != col[int(row)].as_py():
                    changed[int(row)] = r.url
            self._counters["url.read"] += len(rows)
            self._counters["url.changed"] += len(changed)
            batch = self._replace_values(batch, "url", changed)
        return set_column(batch, URL_COUNT_COLUMN, pa.array(found, pa.int32()))

    def _scan(
        self, texts: pa.ChunkedArray | pa.Array, langs: pa.ChunkedArray | pa.Array
    ) -> tuple[np.ndarray, np.ndarray]:
        """(documents presidio must see, documents that need a normalized view): vectorized RE2 scans of the batch.

        presidio sees a document with a candidate, with a view trigger (an obfuscated form may hide a
        candidate) or in a language with an NER model.
        """

        def matches(pattern: str) -> np.ndarray:
            return pc.fill_null(pc.match_substring_regex(texts, pattern), False).to_numpy(zero_copy_only=False)

        need = np.zeros(len(texts), dtype=bool)
        viewed = np.zeros(len(texts), dtype=bool)
        if self.pattern is not None:
            need |= matches(self.pattern.re2)
            viewed = matches(self.trigger)
            need |= viewed
        if self.ner is not None:
            need |= pc.fill_null(pc.is_in(langs, pa.array(list(self.config.ner_models))), False).to_numpy(
                zero_copy_only=False
            )
        return need, viewed

    def detect(self, texts: list[str | None], langs: list[str | None]) -> dict[int, list[Finding]]:
        """Document index -> its findings (no overlaps, in text order, original offsets), for documents with any.

        Documents over ``max_candidate_digits`` are left out (the stage rejects them).
        """
        found, _dense = self.detect_all(texts, langs)
        return found

    def detect_all(
        self, texts: list[str | None], langs: list[str | None], ner: bool = True
    ) -> tuple[dict[int, list[Finding]], dict[int, str]]:
        """:meth:`detect`, and the documents too dense to analyze
        (index -> why); ``ner=False``: pattern entities only."""
        if sum(len(t) for t in texts if t) <= PYTHON_SCAN_CHARS:  # a few short strings (URL values): Python's re
            viewed = np.array([bool(t) and self.trigger_py.search(t) is not None for t in texts], dtype=bool)
            return self._detect(texts, langs, [None] * len(texts), viewed, ner)
        arr = pa.array(texts, pa.large_string())
        _need, viewed = self._scan(arr, pa.array(langs, pa.string()))
        return self._detect(texts, langs, self._marked(arr), viewed, ner)

    def _detect(
        self,
        texts: list[str | None],
        langs: list[str | None],
        marked: list[str | None],
        viewed: np.ndarray,
        ner: bool = True,
    ) -> tuple[dict[int, list[Finding]], dict[int, str]]:
        """Findings per document in original offsets, resolved;
        documents with a trigger are read through their view."""
        views: dict[int, TextView] = {}
        for i in np.flatnonzero(viewed):
            if texts[i]:
                view = text_view(texts[i], self.decode_percent)
                if view.changed:
                    views[int(i)] = view
        read = [views[i].text if i in views else t for i, t in enumerate(texts)]
        marks = [None if i in views else m for i, m in enumerate(marked)]  # the RE2 marks are of the original
        found, dense = self._find(read, langs, marks, ner)
        out = {}
        for k, fs in found.items():
            if k in views:
                fs = [Finding(*views[k].span(f.start, f.end), f.entity, f.score) for f in fs]
            out[k] = resolve(fs)
        return out, dense

    def _marked(self, texts: pa.Array | pa.ChunkedArray) -> list[str | None]:
        return marked_texts(texts, self.pattern) if self.pattern is not None else [None] * len(texts)

    def _find(
        self, texts: list[str | None], langs: list[str | None], marked: list[str | None], ner: bool = True
    ) -> tuple[dict[int, list[Finding]], dict[int, str]]:
        """Raw findings per document, and the documents too dense to analyze (with the reason's details)."""
        by_lang: dict[tuple[str, frozenset], list[Piece]] = defaultdict(list)
        ner_pieces: dict[str, list[Piece]] = defaultdict(list)
        dense: dict[int, str] = {}
        for i, text in enumerate(texts):
            if not text:
                continue
            lang = self._language(langs[i])
            if self.pattern is not None:
                spans = candidate_spans(text, marked[i], self.pattern)
                found = find_pieces(i, text, spans, self.config, self.overlap)
                if found is None:
                    dense[i] = f"PII candidates hold more than {self.config.max_candidate_digits} digits"
                    continue
                if found:
                    self._counters["docs_with_candidates"] += 1
                    for p in self._bare_number(text, found):
                        by_lang[lang, p.entities].append(p)
            if ner and self.ner is not None and langs[i] in self.config.ner_models:
                ner_pieces[langs[i]] += pieces(i, 0, len(text), self.config.chunk_chars, self.overlap)
        results: dict[int, list[Finding]] = defaultdict(list)
        for (lang, kinds), ps in by_lang.items():
            entities = [e for e in self.pattern_entities if e in kinds]
            if not entities:
                continue
            for p, f in self._analyze(self.analyzer, lang, entities, ps, texts):
                results[p.doc].append(f)
        for lang, ps in ner_pieces.items():
            for p, f in self._analyze(self.ner, lang, self.ner_entities, ps, texts):
                results[p.doc].append(f)
        return results, dense

    def _bare_number(self, text: str, found: list[Piece]) -> list[Piece]:
        """A text that is one bare run of ASCII digits (a URL's article id, 20200102) has no word for context, so the
        phone recognizer cannot score it past UNFORMATTED_PHONE_SCORE: it is not asked (what costs the most), unless
        the phone threshold is that low.  Cards (Luhn) and SSNs are still checked."""
        if (
            not (text.isascii() and text.isdigit())
            or self.thresholds.get("PHONE_NUMBER", 1.0) <= UNFORMATTED_PHONE_SCORE
        ):
            return found
        return [replace(p, entities=p.entities - {"PHONE_NUMBER", "IP_ADDRESS"}) for p in found]

    def _reject_dense(self, batch: pa.Table, dense: dict[int, str]) -> pa.Table:
        """Mark documents too dense in candidates as rejected (stages.base filter contract)."""
        reasons: list[str | None] = [None] * len(batch)
        details: list[str | None] = [None] * len(batch)
        for row, why in dense.items():
            reasons[row], details[row] = DENSE_REASON, why
        self._counters["docs_rejected_dense"] += len(dense)
        return add_rejections(batch, reasons, details)

    @staticmethod
    def _replace_values(batch: pa.Table, name: str, changed: dict[int, str | None]) -> pa.Table:
        """Swap in the changed values of a string column; every other value is the same Arrow string."""
        if not changed:
            return batch
        col = batch.column(name)
        mask = np.zeros(len(batch), dtype=bool)
        rows = sorted(changed)
        mask[rows] = True
        new = pc.replace_with_mask(
            col.combine_chunks(), pa.array(mask), pa.array([changed[r] for r in rows], col.type)
        )
        return set_column(batch, name, new)

    def drain_counters(self) -> dict:
        out, self._counters = dict(self._counters), Counter()
        return out


def _memory_zone(analyzer, lang: str):
    """spaCy's memory zone around one batch's presidio calls: the strings and lexemes its tokenizer adds for
    every new token (each number, id, e-mail address...) are freed after it; without one a worker's vocabulary
    grows with every document it ever analyzed (~3 entries a document: GBs over a Common Crawl file set)."""
    import contextlib

    nlp = getattr(getattr(analyzer, "nlp_engine", None), "nlp", None) or {}
    zone = getattr(nlp.get(lang), "memory_zone", None)
    return zone() if callable(zone) else contextlib.nullcontext()
