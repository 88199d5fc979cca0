"""Redaction of strings about to be published (the dataset card, stats.json), whatever the run's PII settings.

The run may have switched entities off, annotated them, or set a low
``max_candidate_digits``; what the card shows must hold no PII anyway:

- every pattern entity is on and *replaced* (``<EMAIL_ADDRESS>``), always the
  whole value (an e-mail with its name, an IBAN with every group); the run's
  thresholds, phone regions and NER models are kept;
- text is read through its normalized view with percent-decoding on
  (``john.smith%40gmail.com``, ``536%2D22%2D1974``, full-width forms, ``(at)``);
- a text too dense to analyze (more than ``max(run's max_candidate_digits,
  20,000)`` digits in candidates) is masked whole;
- whatever still looks like PII afterwards (the PII stage's candidate pattern:
  7+ digits, ``x@y.z``, a dotted quad, an IBAN shape, ``://user:pass@``...) is
  masked as a whole token (``<MASKED>``): a date or an order number may be
  masked too, a missed phone number is never shown;
- URLs: the userinfo removed, values decoded and read as in the PII stage
  (stages/pii/urls.py), the leftover check on each value, and an IP host
  (any spelling) replaced by ``<IP_ADDRESS>``;
- hosts: an IP address in any spelling a browser accepts (``81.2.69.161.``,
  ``1359103393``, ``0x51.2.0105.161``, IPv6, bracketed, full-width digits) is
  :data:`IP_HOST`; a label with PII (``536-22-1974.example``) is replaced, as the
  PII stage replaces it (stages/pii/urls.py: the host read whole and label by label);
- names (files, paths, the command, the config, the tokenizer's fields: :meth:`PublicRedactor.names`)
  keep Common Crawl's file names and hex digests readable (stages/pii/names.py).

presidio is built only when some string needs it (seconds, once per process).
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from stages.pii.candidates import candidate_pattern
from stages.pii.config import PATTERN_ENTITIES, PiiConfig
from stages.pii.names import crawl_names, digests
from stages.pii.normalize import PERCENT, TRIGGER, text_view
from stages.pii.redact import Finding, Redactor, resolve
from stages.pii.urls import KEYED_ENTITIES, MASK, UrlRedactor, ip_host  # noqa: F401  (ip_host: this module's API)

log = logging.getLogger(__name__)

#: A host that is an IP address (an IP address is PII: never printed), and a URL without a host.
IP_HOST = "(IP address)"
NO_HOST = "(no host)"
#: What an IP host becomes inside a published URL.
IP_TOKEN = "<IP_ADDRESS>"
#: Published texts are short (the card's examples: 2,000 characters); past this many candidate digits
#: a text is masked whole rather than shown unread, whatever the run's own limit.
PUBLIC_MAX_CANDIDATE_DIGITS = 20_000

# the host of a URL, as parts.py reads it (scheme://[userinfo@]host)
_URL_HOST = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<host>\[[^\]/?#]*\]|[^:/?#]*)", re.DOTALL)
# where a leftover candidate's whole value ends: an IBAN's later groups, else the whitespace-delimited token
_TRAILING = ".,;:!?)]}>'\""
_IBAN_HEAD = re.compile(r"[A-Za-z]{2}\d{2}")
_IBAN_TAIL = re.compile(r"(?:[ -]?[A-Z0-9]{1,4}(?![a-z]))+")
_IBAN_TAIL_DIGITS = re.compile(
    r"(?:[ -]?(?=[a-zA-Z]{0,3}\d)[A-Za-z0-9]{1,4}(?![A-Za-z0-9]))+"
)  # lower case: groups with a digit


# a redaction token the PII stage wrote into a host, percent-encoded and lower-cased with it ("%3cus_ssn%3e")
_HOST_TOKEN = re.compile(r"%3c([a-z_]+)(?:%3a([0-9a-f]+))?%3e", re.IGNORECASE)


#: What a kept name stands in for while the rest of its string is redacted (letters only: no candidate).
_HELD = "zqxjheld"


def _tokens_shown(host: str) -> str:
    return _HOST_TOKEN.sub(lambda m: f"<{m.group(1).upper()}{':' + m.group(2).lower() if m.group(2) else ''}>", host)


def public_config(run_pii: dict | None) -> PiiConfig:
    """The run's PII settings (thresholds, phone regions, NER models) with every pattern entity on and replaced."""
    from pydantic import ValidationError

    raw = dict(run_pii or {})
    raw.pop("enabled", None)
    try:
        config = PiiConfig.model_validate(raw)
    except ValidationError as e:  # e.g. a NER model not installed here
        log.warning(
            "public redaction: the run's pii settings do not validate here (%s); using the defaults",
            str(e).splitlines()[0],
        )
        config = PiiConfig()
    for entity in PATTERN_ENTITIES:
        config.entities.of(entity).enabled = True
    for entity in config.entities.enabled():
        config.entities.of(entity).action = "replace"
    config.placeholder = "<{entity}>"
    config.max_candidate_digits = max(config.max_candidate_digits, PUBLIC_MAX_CANDIDATE_DIGITS)
    config.urls.enabled = False  # URLs are read value by value here (urls())
    return config


class PublicRedactor:
    """Strings about to be published (the dataset card, stats.json): every pattern entity on and
    replaced, whole values only (never a partial mask), whatever the run's own pii settings."""

    def __init__(self, run_pii: dict | None = None):
        self.config = public_config(run_pii)
        pattern = candidate_pattern(self.config, list(PATTERN_ENTITIES))
        self.leftover_pattern = pattern.python
        # a string needs presidio when it has a candidate or a view trigger (escapes included); published strings are
        # few and short: Python's re (Arrow would compile the RE2 form at every call)
        self.prefilter = re.compile(f"(?:{pattern.python.pattern})|(?:{TRIGGER.pattern})|(?:{PERCENT.pattern})")
        self._urls = UrlRedactor(
            self._detect_values,
            self._token,
            min(self.config.min_phone_digits, 9),
            encode=False,
            leftover=self.looks_like_pii,
            host_leftover=self.looks_like_pii,
            keyed=frozenset(KEYED_ENTITIES),
        )

    # ------------------------------------------------------------ building blocks

    @functools.cached_property
    def stage(self):
        from stages.pii.stage import PiiStage

        return PiiStage(self.config, decode_percent=True)

    @functools.cached_property
    def redactor(self) -> Redactor:
        return Redactor(self.config)

    def _token(self, f: Finding, value: str) -> str:
        return self.redactor.ops[f.entity](value)

    def _needs(self, values: Sequence[str | None]) -> list[bool]:
        return [bool(v) and self.prefilter.search(v) is not None for v in values]

    def _ner_languages(self, lang: str | None) -> list[str | None]:
        """The languages a text is read in: its own, or, without a NER model for it, every NER model's too."""
        models = list(self.config.ner_models) if self.stage.ner is not None else []
        return [lang] if lang in models or not models else [lang, *models]

    def _detect_values(self, texts: list[str], langs: list[str | None]):
        return self.stage.detect_all(texts, langs, ner=False)

    def looks_like_pii(self, text: str) -> bool:
        """A leftover candidate (the PII stage's pattern) in the text or its normalized view."""
        return bool(self.leftover_pattern.search(text_view(text, decode_percent=True).text))

    def mask_leftovers(self, text: str) -> str:
        """Every token (whitespace-delimited; an IBAN with its later groups) around a leftover candidate as MASK."""
        view = text_view(text, decode_percent=True)
        spans = []
        for m in self.leftover_pattern.finditer(view.text):
            s, e = view.span(*m.span())
            s = max(text.rfind(c, 0, s) for c in " \t\n\r\f\v") + 1
            head = _IBAN_HEAD.match(m.group())
            tail = (
                (_IBAN_TAIL if head and head.group().isupper() else _IBAN_TAIL_DIGITS).match(text, e) if head else None
            )
            e = tail.end() if tail else e
            nxt = [i for i in (text.find(c, e) for c in " \t\n\r\f\v") if i >= 0]
            end = min(nxt) if nxt else len(text)
            while end > e and text[end - 1] in _TRAILING:  # the sentence's punctuation is not the value's
                end -= 1
            spans.append((s, end))
        out, pos = [], 0
        for s, e in sorted(spans):
            if e <= pos:
                continue
            out += [text[pos : max(s, pos)], MASK]
            pos = e
        out.append(text[pos:])
        return "".join(out)

    # ------------------------------------------------------------ the public API

    def texts(self, texts: Iterable[str | None], languages: Iterable[str | None] | None = None) -> list[str | None]:
        """Each text with PII replaced by typed placeholders and leftovers masked; too dense: MASK alone."""
        texts = list(texts)
        langs = list(languages) if languages is not None else [None] * len(texts)
        out = list(texts)
        todo = [
            i
            for i, (t, need) in enumerate(zip(texts, self._needs(texts), strict=False))
            if t and (need or self.config.ner_models)
        ]
        if not todo:
            return out
        findings: dict[int, list[Finding]] = {i: [] for i in todo}
        dense: set[int] = set()
        by_lang: dict[str | None, list[int]] = {}
        for i in todo:
            for lang in self._ner_languages(langs[i]):
                by_lang.setdefault(lang, []).append(i)
        for lang, rows in by_lang.items():
            found, too_dense = self.stage.detect_all([texts[i] for i in rows], [lang] * len(rows))
            for k, fs in found.items():
                findings[rows[k]] += fs
            dense.update(rows[k] for k in too_dense)
        for i in todo:
            if i in dense:
                out[i] = MASK
                continue
            redacted, _ = self.redactor.apply(texts[i], resolve(findings[i]))
            out[i] = self.mask_leftovers(redacted)
        return out

    def urls(self, urls: Iterable[str | None]) -> list[str | None]:
        """Each URL without userinfo, PII values replaced (``<EMAIL_ADDRESS>``,
        leftovers ``<MASKED>``), an IP host as IP_TOKEN."""
        urls = list(urls)
        out = [r.url for r in self._urls.redact(urls)]
        return [self._url_host(u) if u else u for u in out]

    def _url_host(self, url: str) -> str:
        """An IP host as IP_TOKEN (the redactor keeps the server's address; the card prints none)."""
        m = _URL_HOST.match(url)
        if not m or not m.group("host") or not ip_host(m.group("host")):
            return url
        out = m.group("head") + IP_TOKEN + url[m.end("host") :]
        try:  # a bracketed IPv6 host replaced by its token can leave a stray "]" after it ("[::1]:80]:8080")
            urlsplit(out)
            return out
        except ValueError:
            return m.group("head") + IP_TOKEN  # the host alone: what followed it does not split without the brackets

    def hosts(self, hosts: Iterable[str | None]) -> list[str]:
        """Each host as it may be published: IP_HOST for an IP address, labels with PII replaced as in a URL
        (stages/pii/urls.py: read whole and label by label, leftovers masked), NO_HOST for none.  A label the PII
        stage already replaced (``%3cus_ssn%3e``, lower-cased with its host) is shown as its token."""
        hosts = list(hosts)
        out: list[str] = [NO_HOST if not h else IP_HOST if ip_host(h) else _tokens_shown(h) for h in hosts]
        todo = [
            i
            for i, (h, need) in enumerate(zip(out, self._needs(out), strict=False))
            if need and out[i] not in (IP_HOST, NO_HOST)
        ]
        for i, public in zip(todo, self._urls.hosts([out[i] for i in todo]), strict=False):
            out[i] = public
        return out

    def names(self, strings: Iterable[str | None], urls: bool = False) -> list[str | None]:
        """File names, paths, the command, config values, a tokenizer's fields: each redacted as text (or, ``urls``,
        as a URL), with Common Crawl's file names and folders and hex digests (a tokenizer's sha256) kept as they
        are (stages/pii/names.py); whatever else looks like PII in them is redacted as anywhere."""
        strings = list(strings)
        held: list[dict[str, str]] = []
        replaced: list[str | None] = []
        for s in strings:
            keep: dict[str, str] = {}
            if s:
                out, pos = [], 0
                for a, b in sorted(crawl_names(s) + digests(s)):
                    if a < pos:
                        continue
                    mark = _HELD + "".join(chr(97 + int(d)) for d in str(len(keep)))
                    keep[mark] = s[a:b]
                    out += [s[pos:a], mark]
                    pos = b
                s = "".join(out) + s[pos:]
            replaced.append(s)
            held.append(keep)
        redacted = self.urls(replaced) if urls else self.texts(replaced)
        out = []
        for r, keep in zip(redacted, held, strict=False):
            for mark, value in sorted(keep.items(), key=lambda kv: -len(kv[0])):  # "...ba" before "...b"
                r = r.replace(mark, value) if r else r
            out.append(r)
        return out

    def details(self, details: Iterable[str | None]) -> list[str | None]:
        """Each details string redacted: a JSON value has its strings redacted (URLs as URLs), other text as text."""
        return [None if d is None else self._detail(d) for d in details]

    def _detail(self, detail: str) -> str:
        try:
            parsed = json.loads(detail)
        except ValueError:
            return self.texts([detail])[0]
        if isinstance(parsed, str):
            return self.texts([detail])[0]
        return json.dumps(self._json(parsed), ensure_ascii=False, separators=(", ", ": "))

    def _json(self, value):
        if isinstance(value, str):
            return self.urls([value])[0] if _URL_HOST.match(value) else self.texts([value])[0]
        if isinstance(value, dict):
            return {self._json(k): self._json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._json(v) for v in value]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and self.looks_like_pii(str(value)):
            return MASK  # a long number (a phone, a card) written as a JSON number
        return value
