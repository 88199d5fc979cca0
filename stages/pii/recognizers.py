"""The presidio engines: a blank spaCy tokenizer, presidio's pattern recognizers, optional NER.

Nothing is downloaded.  The NLP engine is ``spacy.blank(lang)`` (a tokenizer,
no model), and tldextract (which presidio's e-mail check uses) reads the public
suffix list bundled with it instead of fetching publicsuffix.org.

Validation is presidio's own: each entity is found by presidio's recognizer
class for it (Luhn, IBAN mod-97, ``ipaddress``, python-phonenumbers, SSA
rules), configured with context words in en/de/fr/es.  Presidio's context
boost compares the words before a match with those lists through the *lemmas*
of the NLP engine; a blank pipeline has no lemmatizer (every lemma is empty),
so :class:`BlankNlpEngine` uses the lowercased token as its lemma, which is
what makes context words work without a model.
"""

from __future__ import annotations

import functools
import logging
import os

from stages.pii.config import PiiConfig

# Context words (presidio matches them as substrings of the lowercased words
# before a finding).  One list per entity, all four languages together: pages
# mix languages, and a German page may label a number "Phone".
CONTEXT = {
    "EMAIL_ADDRESS": ["email", "e-mail", "mail", "courriel", "correo"],
    "PHONE_NUMBER": [
        "phone",
        "telephone",
        "tel",
        "cell",
        "mobile",
        "call",
        "fax",
        "hotline",
        "whatsapp",
        "sms",
        "telefon",
        "mobil",
        "handy",
        "rufnummer",
        "anruf",
        "rufen",
        "téléphone",
        "tél",
        "portable",
        "appel",
        "appelez",
        "joindre",
        "teléfono",
        "móvil",
        "celular",
        "llam",
        "número de contacto",
    ],  # fmt: skip
    "IP_ADDRESS": [
        "ip",
        "ipv4",
        "ipv6",
        "adresse",
        "address",
        "dirección",
        "host",
        "server",
        "serveur",
        "servidor",
        "client",
    ],
    "CREDIT_CARD": [
        "credit",
        "card",
        "visa",
        "mastercard",
        "amex",
        "discover",
        "jcb",
        "diners",
        "maestro",
        "karte",
        "kreditkarte",
        "carte",
        "tarjeta",
        "paid",
        "bezahlt",
        "payé",
        "pagado",
    ],  # fmt: skip
    "IBAN_CODE": [
        "iban",
        "bank",
        "transaction",
        "konto",
        "überweisung",
        "virement",
        "compte",
        "cuenta",
        "transferencia",
    ],
    "US_SSN": ["social", "security", "ssn", "ssns", "ssid"],
    "URL_CREDENTIALS": ["password", "login", "user", "passwort", "mot de passe", "contraseña"],
}

# Negative context: words that, right before a number and with no positive
# context word, say it is not PII ("version 1.2.3.4", "ISBN 0-306-40615-2",
# "barcode 4006381333931").  presidio has positive context only; this is its
# mirror image, judged on the same surrounding words (whole words here: the
# lists hold short words such as "v" and "id").
NOT_PII_WORDS = [
    "isbn", "issn", "doi", "version", "versions", "release",
    "firmware", "build", "v", "ver", "update", "upgrade", "upgraded",
    "order", "invoice", "ref", "reference", "tracking", "shipment", "parcel", "barcode", "ean", "gtin", "upc", "sku",
    "article", "item", "serial", "model", "checksum", "hash", "commit", "sha", "md5", "uuid", "id", "identifier",
    "won", "lost", "beat", "drew", "score", "record", "season",
    "coordinates", "latitude", "longitude", "voucher", "loyalty",
    "bestellung", "bestellnummer", "rechnung", "rechnungsnummer", "sendungsnummer", "sendung", "paket", "strichcode",
    "artikelnummer", "artikel", "seriennummer", "prüfsumme", "kennung",
    "gutscheincode", "kundenkartennummer", "bilanz", "koordinaten",
    "commande", "facture", "dossier", "suivi", "colis", "envoi", "code-barres", "référence", "micrologiciel", "somme",
    "identifiant", "bilan", "coordonnées", "fidélité",
    "versión", "pedido", "factura", "expediente", "seguimiento",
    "envío", "paquete", "barras", "referencia", "artículo",
    "identificador", "marcador", "balance", "coordenadas", "vale",
]  # fmt: skip
NEGATIVE_CONTEXT = {e: NOT_PII_WORDS for e in ("PHONE_NUMBER", "IP_ADDRESS", "CREDIT_CARD", "US_SSN")}

# Mastercard's 2-series (2221-2720, issued since 2017), which presidio's card pattern predates.
MASTERCARD_2_SERIES = r"\b(?:222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)[- ]?\d{4}[- ]?\d{4}[- ]?\d{4}\b"


def ip_recognizer_class():
    """presidio's IpRecognizer, with two refinements of its IPv4 rule.

    The pattern no longer matches four numbers out of a longer dotted run (an
    OID such as 1.3.6.1.4.1, a version 1.2.3.4.5): presidio's own IPv6 pattern
    has the same guard.  And two kinds of dotted quads are not host addresses:
    240.0.0.0/4 (reserved, which holds the netmasks 255.x.x.x) and quads of
    single digits (section numbers 6.2.4.1, versions 2.7.2.2, the resolvers
    1.1.1.1 and 8.8.8.8): a random address is one of those with probability
    10^4 / 2^32, about 2e-6.
    """
    import ipaddress

    from presidio_analyzer import Pattern
    from presidio_analyzer.predefined_recognizers import IpRecognizer

    patterns = [
        Pattern(p.name, r"(?<!\d\.)" + p.regex + r"(?!\.\d)", p.score) if p.name == "IPv4" else p
        for p in IpRecognizer.PATTERNS
    ]

    class HostIpRecognizer(IpRecognizer):
        def __init__(self, **kw):
            super().__init__(patterns=patterns, **kw)

        def invalidate_result(self, pattern_text: str) -> bool:
            if super().invalidate_result(pattern_text):
                return True
            ip = ipaddress.ip_interface(pattern_text).ip
            return ip.version == 4 and (ip.is_reserved or max(ip.packed) < 10)

    return HostIpRecognizer


def glued(text: str, start: int, end: int) -> bool:
    """A match joined to a word or number by a hyphen, slash, underscore or # (A-2025-079346, 811-1827109-6728008):
    part of a longer identifier, not a number on its own."""
    before = start >= 2 and text[start - 1] in "-_/#" and text[start - 2].isalnum()
    after = end + 1 < len(text) and text[end] in "-_/" and text[end + 1].isalnum()
    return before or after


def unglued(cls):
    """A presidio pattern recognizer class that drops matches glued to a longer identifier (see ``glued``)."""

    class Unglued(cls):
        def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
            results = super().analyze(text, entities, nlp_artifacts, regex_flags)
            return [r for r in results if not glued(text, r.start, r.end)]

    Unglued.__name__ = f"Unglued{cls.__name__}"
    return Unglued


#: The score of a valid phone number written as a bare run of digits (or in groups no region uses): it needs a
#: context word to pass the default threshold.
UNFORMATTED_PHONE_SCORE = 0.3


def phone_recognizer_class():
    """presidio's PhoneRecognizer, scoring a match by how it is written.

    presidio gives every number python-phonenumbers accepts as valid the same
    0.4.  Here a number written the way a phone number is written, in
    international form (+49 ...) or grouped as its region groups it
    (phonenumbers' STRICT_GROUPING check: 030 1234567, (212) 555-0123), gets
    ``FORMATTED`` (0.5); a valid number written otherwise (a bare run of digits
    such as a timestamp 1652342830, odd groups such as "1 2 3 4 5 6 7 8") gets
    ``UNFORMATTED`` (0.3), which passes the default 0.4 only with a context word
    before it.  Three shapes that phonenumbers takes for numbers are not phone
    numbers here: a calendar date (05.12.2022), a dotted quad (255.255.255.0,
    an IP or a version), a decimal number (168.2639); nor is a number glued to a
    word by a hyphen (A-2025-079346).
    """
    import datetime as dt
    import re

    import phonenumbers
    from phonenumbers import CountryCodeSource, re_util
    from phonenumbers.phonenumbermatcher import Leniency, _verify
    from presidio_analyzer import EntityRecognizer
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    # phonenumbers compiles its per-region metadata patterns on use and counts on re's cache (512
    # entries), which a dozen regions overflow: keep them (its own switch for this)
    re_util.enable_pattern_cache()
    dotted_quad = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
    decimal = re.compile(r"\d+[.,]\d+")
    date_formats = ("%d.%m.%Y", "%d.%m.%y", "%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d", "%d-%m-%Y", "%Y.%m.%d", "%Y/%m/%d")

    def is_date(s: str) -> bool:
        for fmt in date_formats:
            try:
                dt.datetime.strptime(s, fmt)
                return True
            except ValueError:
                pass
        return False

    class GroupedPhoneRecognizer(PhoneRecognizer):
        FORMATTED, UNFORMATTED = 0.5, UNFORMATTED_PHONE_SCORE

        def analyze(self, text, entities, nlp_artifacts=None):
            results = []
            for region in self.supported_regions:
                matcher = phonenumbers.PhoneNumberMatcher(text, region, leniency=self.leniency)
                for match in matcher:
                    raw = match.raw_string
                    if (
                        dotted_quad.fullmatch(raw)
                        or decimal.fullmatch(raw)
                        or is_date(raw)
                        or self._glued(text, match.start, match.end)
                    ):
                        continue
                    result = self._get_recognizer_result(match, text, region, nlp_artifacts)
                    result.score = self.FORMATTED if self._formatted(raw, region, matcher) else self.UNFORMATTED
                    results.append(result)
            return EntityRecognizer.remove_duplicates(results)

        @staticmethod
        def _formatted(raw: str, region: str, matcher) -> bool:
            if raw.startswith(("+", "\uff0b")):
                return True
            if raw.isdigit():
                return False
            # the match's number object has lost how it was written: parse the text again
            number = phonenumbers.parse(raw, region, keep_raw_input=True)
            if number.country_code_source == CountryCodeSource.FROM_NUMBER_WITHOUT_PLUS_SIGN:
                return False  # "4953 0765 ..." read as +49 53...: a country code without its plus is no format
            return _verify(Leniency.STRICT_GROUPING, number, raw, matcher)

        @staticmethod
        def _glued(text: str, start: int, end: int) -> bool:
            return glued(text, start, end)

    return GroupedPhoneRecognizer


# scheme://user:password@host -> the "user:password" part (a password may be empty only
# with a user, as in "user:@host"; "host:port@" never occurs in a URL).
URL_CREDENTIALS_PATTERN = r"(?<=\b[A-Za-z][A-Za-z0-9+.\-]{0,15}://)[^\s/?#@:\[\]<>\"']+:[^\s/?#@\[\]<>\"']+(?=@[\w\[])"


# presidio probes torch for a GPU on import unless told the device; our engines are CPU-only.
os.environ.setdefault("PRESIDIO_DEVICE", "cpu")


def offline_tldextract() -> None:
    """Make tldextract use its bundled public suffix snapshot: no HTTP, no cache directory."""
    import tldextract.tldextract as tx

    if not getattr(tx.TLD_EXTRACTOR, "_curate_offline", False):
        extractor = tx.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)
        extractor._curate_offline = True
        tx.TLD_EXTRACTOR = extractor  # tldextract.extract() looks this global up at each call


def _quiet_presidio() -> None:
    # presidio logs a warning per analyze() call for entities no recognizer of a language supports
    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)


def context_enhancer(negative_factor: float = 0.6):
    """presidio's LemmaContextAwareEnhancer with negative context, and index lookups instead of scans.

    Positive context is presidio's unchanged (+0.35, at least 0.4; the same
    surrounding words, found by bisection and set lookups where presidio scans
    lists, which makes a call linear instead of quadratic in its length).  A
    finding with no positive word but a negative word (``negative_context`` of
    its recognizer) among the words before it *in its sentence* loses
    ``negative_factor``: 0.6 takes even a checksum-validated 1.0 below the 0.5
    threshold.
    """
    import bisect

    from presidio_analyzer import RecognizerResult
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    class ContextEnhancer(LemmaContextAwareEnhancer):
        def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):
            results = super().enhance_using_context(text, raw_results, nlp_artifacts, recognizers, context)
            by_id = {r.id: r for r in recognizers}
            for r in results:
                rec = by_id.get((r.recognition_metadata or {}).get(RecognizerResult.RECOGNIZER_IDENTIFIER_KEY))
                negative = getattr(rec, "negative_context", None)
                if not negative or r.analysis_explanation is None or r.analysis_explanation.supportive_context_word:
                    continue
                words = self._words_before_in_sentence(nlp_artifacts, r.start)
                if self._find_supportive_word_in_context(words, negative, "whole_word"):
                    r.score = max(0.0, r.score - negative_factor)
            return results

        def _index(self, nlp_artifacts):
            index = getattr(nlp_artifacts, "_curate_index", None)
            if index is None:
                ends = [
                    i + n
                    for i, n in zip(nlp_artifacts.tokens_indices, (len(t) for t in nlp_artifacts.tokens), strict=False)
                ]
                index = nlp_artifacts._curate_index = (ends, set(nlp_artifacts.keywords))
            return index

        def _extract_surrounding_words(self, nlp_artifacts, word, start):
            if not nlp_artifacts.tokens:
                return [""]
            ends, keywords = self._index(nlp_artifacts)
            # presidio's _find_index_of_match_token: the first token that ends after `start`
            i = bisect.bisect_right(ends, start)
            if i >= len(ends):
                raise ValueError(
                    f"Did not find word '{word}' in the list of tokens although it is expected to be found"
                )
            lemmas = nlp_artifacts.lemmas
            words = self._n_words(i, self.context_prefix_count, lemmas, keywords, -1)
            words += self._n_words(i, self.context_suffix_count, lemmas, keywords, 1)
            return list(set(words))

        def _words_before_in_sentence(self, nlp_artifacts, start: int) -> list[str]:
            """Up to context_prefix_count keywords before the match, not reaching past a line break or
            a sentence end (. ! ? before a capital): "... commit 6478c5c. El cortafuegos bloquea ahora
            2a02:..." must not read "commit" as the IP address's context."""
            if not nlp_artifacts.tokens:
                return []
            ends, keywords = self._index(nlp_artifacts)
            doc, lemmas = nlp_artifacts.tokens, nlp_artifacts.lemmas
            out, j = [], bisect.bisect_right(ends, start) - 1
            while j >= 0 and len(out) < self.context_prefix_count:
                tok = doc[j]
                if "\n" in tok.text or (
                    tok.text in (".", "!", "?") and j + 1 < len(doc) and doc[j + 1].text[:1].isupper()
                ):
                    break
                if lemmas[j].lower() in keywords:
                    out.append(lemmas[j].lower())
                j -= 1
            return out

        @staticmethod
        def _n_words(i: int, n: int, lemmas: list[str], keywords: set[str], step: int) -> list[str]:
            # presidio's _add_n_words: the match's own token counts as one of n + 1
            out, remaining = [], n + 1
            while 0 <= i < len(lemmas) and remaining > 0:
                lemma = lemmas[i].lower()
                if lemma in keywords:
                    out.append(lemma)
                    remaining -= 1
                i += step
            return out

    return ContextEnhancer()


def blank_nlp_engine(languages: list[str], tokenizer: str = "xx", lemmas: bool = True):
    """A presidio SpacyNlpEngine whose pipeline for every language is ``spacy.blank(tokenizer)``.

    The analyzer languages only select recognizers (phone regions differ); one
    language-neutral tokenizer (``xx``) serves them all and loads in a fraction
    of a second (the French one alone compiles its exceptions for seconds).
    ``lemmas=True`` gives tokens their lowercased text as lemma so presidio's
    context words work; ``False`` is presidio's behaviour with a blank pipeline.
    """
    import spacy
    from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine

    class BlankNlpEngine(SpacyNlpEngine):
        def _doc_to_nlp_artifact(self, doc, language: str) -> NlpArtifacts:
            if not lemmas:
                return super()._doc_to_nlp_artifact(doc, language)
            return NlpArtifacts(
                entities=[],
                tokens=doc,
                tokens_indices=[t.idx for t in doc],
                lemmas=[t.lower_ for t in doc],
                nlp_engine=self,
                language=language,
                scores=[],
            )

    engine = BlankNlpEngine(models=[{"lang_code": lang, "model_name": "blank"} for lang in languages])
    nlp = spacy.blank(tokenizer)
    nlp.max_length = 10**8  # our calls are chunked; a tokenizer needs no more memory per character
    engine.nlp = {lang: nlp for lang in languages}  # set directly: load() would download a model
    return engine


def pattern_recognizers(config: PiiConfig, language: str, regions: list[str]) -> list:
    """presidio's recognizer for each enabled pattern entity, for one analyzer language."""
    from presidio_analyzer import Pattern, PatternRecognizer
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        UsSsnRecognizer,
    )

    def url_credentials(**kw):
        return PatternRecognizer(
            supported_entity="URL_CREDENTIALS",
            patterns=[Pattern("user:password@ in a URL", URL_CREDENTIALS_PATTERN, 1.0)],
            name="UrlCredentialsRecognizer",
            **kw,
        )

    cards = CreditCardRecognizer.PATTERNS + [Pattern("Mastercard 2-series (weak)", MASTERCARD_2_SERIES, 0.3)]
    classes = {
        "EMAIL_ADDRESS": EmailRecognizer,
        "PHONE_NUMBER": functools.partial(phone_recognizer_class(), supported_regions=tuple(regions)),
        "IP_ADDRESS": ip_recognizer_class(),
        "CREDIT_CARD": functools.partial(unglued(CreditCardRecognizer), patterns=cards),
        "IBAN_CODE": IbanRecognizer,
        "US_SSN": unglued(UsSsnRecognizer),
        "URL_CREDENTIALS": url_credentials,
    }
    out = []
    for e in config.entities.enabled():
        if e in classes:
            rec = classes[e](supported_language=language, context=CONTEXT[e])
            rec.negative_context = NEGATIVE_CONTEXT.get(e)
            out.append(rec)
    return out


@functools.cache
def import_presidio(with_torch: bool = False) -> None:
    """Import presidio_analyzer (and spaCy) with ``transformers``, ``azure`` (and ``torch``) hidden.

    presidio imports ``transformers.pipeline`` and spaCy's thinc imports ``torch`` when
    they are installed (they are on most training clusters): 8.4 s and 3.2 s per worker
    process here, for engines the pattern recognizers never use.  Hidden, their optional
    imports fail and are set aside; other code imports them as usual afterwards.  A
    spaCy NER model may need torch (``with_torch``).
    """
    import sys

    # azure: presidio's remote recognizers (Azure AI Language, Health De-identification) import its SDK when it
    # is installed (~0.1 s, ~10 MB); a run never calls them
    hidden = [m for m in ("transformers", "azure", *(() if with_torch else ("torch",))) if m not in sys.modules]
    if "presidio_analyzer" in sys.modules or not hidden:
        return
    for m in hidden:
        sys.modules[m] = None  # type: ignore[assignment]  # `import m` raises ImportError
    try:
        import presidio_analyzer  # noqa: F401
    finally:
        for m in hidden:
            del sys.modules[m]


def pattern_analyzer(config: PiiConfig):
    """One presidio AnalyzerEngine with the enabled pattern recognizers for every analyzer language."""
    import_presidio(with_torch=bool(config.ner_models))
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry

    offline_tldextract()
    _quiet_presidio()
    # analyzer language = document language, or "default"; regions: default's plus the language's
    base = config.phone_regions["default"]
    langs = {lang: list(dict.fromkeys(base + regions)) for lang, regions in config.phone_regions.items()}
    registry = RecognizerRegistry(supported_languages=list(langs))
    for lang, regions in langs.items():
        for rec in pattern_recognizers(config, lang, regions):
            registry.add_recognizer(rec)
    return AnalyzerEngine(
        registry=registry,
        nlp_engine=blank_nlp_engine(list(langs)),
        supported_languages=list(langs),
        context_aware_enhancer=context_enhancer(),
    )


def ner_analyzer(config: PiiConfig):
    """An AnalyzerEngine with spaCy NER (PERSON, LOCATION) for the languages in ``ner_models``; None without them."""
    import_presidio(with_torch=bool(config.ner_models))
    import spacy
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import SpacyRecognizer

    wanted = [e for e in ("PERSON", "LOCATION") if config.entities.of(e).enabled]
    if not wanted or not config.ner_models:
        return None
    _quiet_presidio()
    engine = SpacyNlpEngine(models=[{"lang_code": k, "model_name": v} for k, v in config.ner_models.items()])
    engine.nlp = {
        lang: spacy.load(name) for lang, name in config.ner_models.items()
    }  # installed or a path: no download
    registry = RecognizerRegistry(supported_languages=list(config.ner_models))
    for lang in config.ner_models:
        registry.add_recognizer(SpacyRecognizer(supported_language=lang, supported_entities=wanted))
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=list(config.ner_models))


def presidio_default_analyzer():
    """The baseline: presidio's AnalyzerEngine with all its default recognizers, on the same blank pipeline."""
    from presidio_analyzer import AnalyzerEngine

    offline_tldextract()
    _quiet_presidio()
    return AnalyzerEngine(
        nlp_engine=blank_nlp_engine(["en"], tokenizer="en", lemmas=False), supported_languages=["en"]
    )
