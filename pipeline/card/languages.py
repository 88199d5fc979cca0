"""The card's ``language:`` list: language-ID labels as the Hub's metadata wants them (an ISO 639-1 code where
one exists, else ISO 639-3), the original labels kept in stats.json.

lid.176 (the default language ID) labels with Wikipedia's language codes, a few of which ISO retired or
gives to another language: ``als`` is Alemannic there (ISO: Tosk Albanian, ``gsw`` is Alemannic), ``eml``
(Emilian-Romagnol) was retired in 2009 for ``egl`` and ``rgn``, ``bh`` (Bihari) and ``sh`` (Serbo-Croatian)
are deprecated ISO 639-1 codes.  Other models label ``eng_Latn`` (GlotLID, FineWeb-2) or ``eng``: the language
subtag is taken and a 639-3 code with a 639-1 equivalent becomes that (``eng`` -> ``en``).  A label that is
no valid language code after this (``unknown``, ``xx``) stays out of the front matter.
"""

from __future__ import annotations

import functools
import re

#: lid.176's Wikipedia codes that mean another language in ISO 639, or were retired (bare labels only: a
#: script-tagged label such as ``als_Latn`` is ISO's own code).
WIKIPEDIA_CODES = {"als": "gsw", "eml": "egl"}
#: Deprecated ISO 639-1 codes and their replacements (ISO 639 Registration Authority's change notices).
DEPRECATED = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro", "sh": "hbs", "bh": "bho"}
_SUBTAG = re.compile(r"[A-Za-z]{2,3}")


@functools.cache
def _alpha2() -> dict[str, str]:
    """ISO 639-2/T and 639-3 codes that have an ISO 639-1 code (``eng`` -> ``en``), deprecated 639-1 codes left out."""
    from langcodes.data_dicts import LANGUAGE_ALPHA3

    return {three: two for two, three in LANGUAGE_ALPHA3.items() if len(two) == 2 and two not in DEPRECATED}


def hub_code(label: str) -> str | None:
    """The Hub's language code for a language-ID label, or None when it names no valid language."""
    from langcodes import tag_is_valid

    if label in WIKIPEDIA_CODES:
        return WIKIPEDIA_CODES[label]
    lang = re.split(r"[_-]", label, maxsplit=1)[0]
    if not _SUBTAG.fullmatch(lang):
        return None
    lang = lang.lower()
    lang = DEPRECATED.get(lang, lang)
    lang = _alpha2().get(lang, lang)
    private = len(lang) == 3 and "qaa" <= lang <= "qtz"
    return lang if tag_is_valid(lang) and not private and lang not in ("und", "zxx", "mul", "mis") else None


def hub_languages(counts: dict[str, int]) -> dict[str, str | None]:
    """Each label of ``counts`` (documents per label, most first) and its Hub code."""
    return {label: hub_code(label) for label in counts}


def front_matter_codes(mapping: dict[str, str | None]) -> list[str]:
    """The distinct valid codes, in the labels' order."""
    return list(dict.fromkeys(code for code in mapping.values() if code))
