"""Settings each field accepts that cannot be what was meant, found across the whole config when it is loaded.

- a boolean where a number belongs: YAML reads ``true``, ``yes`` and ``on`` as booleans, which pydantic then
  takes as 1 (``shuffle.groups: true``, one shuffle group): every number field, found by comparing what was
  written with what was validated, so no field needs a check of its own;
- a minimum above its maximum (``min_doc_words`` > ``max_doc_words`` rejects every document): every pair named
  ``min_X``/``max_X`` or ``X_low``/``X_high`` of every section, per language (filters.by_language) and per
  named source;
- a language label no language-ID model gives (``by_language: {klingon: 0.2}`` would never apply): lid.176's
  codes, FineWeb-2's ``xxx_Xxxx`` names, and the labels of the ``langid.model`` the run names.

Each problem is one line naming the field and the fix (pipeline.config.parse_config raises them together).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from pipeline.config import RunConfig


def booleans_as_numbers(raw: Any, value: Any, path: str = "") -> list[str]:
    """Where ``raw`` (the config as written) holds a boolean that validated into a number (``value``)."""
    if isinstance(raw, bool):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return [
                f"config error: {path}: {str(raw).lower()} is not a number (YAML reads true/false, yes/no and on/off "
                f"as booleans, which would count as {value!r}): give a number"
            ]
        return []
    if isinstance(raw, dict) and isinstance(value, BaseModel):
        pairs = (
            (k, v, getattr(value, k)) for k, v in raw.items() if isinstance(k, str) and k in type(value).model_fields
        )
    elif isinstance(raw, dict) and isinstance(value, dict):
        pairs = ((k, v, value[k]) for k, v in raw.items() if k in value)
    elif isinstance(raw, list) and isinstance(value, list) and len(raw) == len(value):
        pairs = ((str(i), v, value[i]) for i, v in enumerate(raw))
    else:
        return []
    return [p for k, r, v in pairs for p in booleans_as_numbers(r, v, f"{path}.{k}" if path else k)]


def _bound_pairs(model: BaseModel) -> Iterator[tuple[str, str]]:
    """(lower field, upper field) of a model: ``min_X``/``max_X`` and ``X_low``/``X_high``."""
    names = type(model).model_fields
    for name in names:
        if name.startswith("min_") and f"max_{name[4:]}" in names:
            yield name, f"max_{name[4:]}"
        elif name.endswith("_low") and f"{name[:-4]}_high" in names:
            yield name, f"{name[:-4]}_high"


def crossed_bounds(model: BaseModel, path: str = "") -> list[str]:
    """Every lower bound above its upper bound in ``model`` and the sections inside it."""
    out = []
    for low, high in _bound_pairs(model):
        lo, hi = getattr(model, low), getattr(model, high)
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            out.append(
                f"config error: {path}{low}: {lo} is more than {path}{high} ({hi}): no value is at least the one and "
                f"at most the other (for a filter: every document is removed): lower {low} or raise {high}"
            )
    for name in type(model).model_fields:
        value = getattr(model, name)
        items = (
            value.items()
            if isinstance(value, dict)
            else enumerate(value)
            if isinstance(value, list)
            else [(None, value)]
        )
        for key, item in items:
            if isinstance(item, BaseModel):
                out += crossed_bounds(item, f"{path}{name}." + (f"{key}." if key is not None else ""))
    return out


def _language_bounds(config: RunConfig) -> list[str]:
    """Crossed bounds in each language's effective filter settings (a language may set one side only)."""
    from stages.filters.by_language import TEXT_FILTERS

    out = []
    for name in TEXT_FILTERS:
        for lang, settings in config.filters.language_settings(name).by_language.items():
            out += crossed_bounds(settings, f"filters.by_language.{lang}.{name}.")
    return out


# ----------------------------------------------------------------------------- language labels


def known_languages(config: RunConfig) -> tuple[frozenset[str], str]:
    """The labels documents can get (lid.176's codes and, with ``langid.model``, that model's labels), and how to
    say so in a message.  FineWeb-2's ``xxx_Xxxx`` names are accepted besides (see :func:`unknown_language`)."""
    from stages.filters.labels import lid176_to_fineweb2

    known = set(lid176_to_fineweb2()) | {"unknown"}  # "unknown": what language ID says of a text it cannot label
    what = "lid.176's codes (en, de, zh...) and FineWeb-2's names (rus_Cyrl...)"
    if config.langid.model:
        from classifiers.quality import read_model_file

        try:
            found = read_model_file(config.langid.model)
        except OSError:
            found = None  # a missing model: the named-file check says so
        if found is not None:
            known |= set(found.short_labels)
            labels = ", ".join(found.short_labels[:8])
            what = f"the labels of {config.langid.model} ({labels}...), lid.176's codes and FineWeb-2's names"
    return frozenset(known), what


def unknown_language(label: str, known: frozenset[str]) -> bool:
    from stages.filters.labels import NAME_RE

    return label not in known and not NAME_RE.fullmatch(label)


def _language_keys(config: RunConfig) -> Iterator[tuple[str, list[str]]]:
    """(field, the labels it names) of every setting keyed by document language."""
    yield "langid.keep", list(config.langid.keep)
    yield "langid.min_score_by_language", list(config.langid.min_score_by_language)
    yield "filters.by_language", list(config.filters.by_language)
    yield "filters.gopher_quality.stop_words", list(config.filters.gopher_quality.stop_words)
    for i, c in enumerate(config.classifiers):
        yield f"classifiers.{i}.filter.by_language", list(c.filter.by_language)
    yield "pii.ner_models", list(config.pii.ner_models)


def unknown_languages(config: RunConfig) -> list[str]:
    known, what = known_languages(config)
    out = []
    for field, labels in _language_keys(config):
        bad = [lab for lab in labels if unknown_language(lab, known)]
        if bad:
            out.append(
                f"config error: {field}: {bad[0]!r} is not a language label (documents are labelled with {what}): "
                "a setting for it would never apply; give the label language ID gives"
            )
    return out


def check_config(config: RunConfig, raw: dict) -> list[str]:
    """Every problem above, the run's settings first, then each named source's (``sources[i] (name): ...``)."""
    out = [
        *booleans_as_numbers(raw, config),
        *crossed_bounds(config),
        *_language_bounds(config),
        *unknown_languages(config),
    ]
    sources = raw.get("sources") if isinstance(raw.get("sources"), list) else []
    for i, source in enumerate(config.sources):
        effective = config.for_source(source.name)
        written = sources[i] if i < len(sources) and isinstance(sources[i], dict) else {}
        mine = [
            *_source_booleans(written, effective),
            *crossed_bounds(effective),
            *_language_bounds(effective),
            *unknown_languages(effective),
        ]
        out += [
            f"config error: sources[{i}] ({source.name}): {p.removeprefix('config error: ')}"
            for p in mine
            if p not in out
        ]
    return list(dict.fromkeys(out))


def _source_booleans(written: dict, effective: RunConfig) -> list[str]:
    """A named source's overrides as written against its effective settings (classifiers: by name)."""
    out = []
    for section, over in written.items():
        if section in ("name", "inputs") or not isinstance(over, dict) or section not in type(effective).model_fields:
            continue
        value = getattr(effective, section)
        if section == "classifiers":
            by_name = {c.name: c for c in value}
            out += [
                p
                for name, o in over.items()
                if name in by_name
                for p in booleans_as_numbers(o, by_name[name], f"classifiers.{name}")
            ]
        else:
            out += booleans_as_numbers(over, value, section)
    return out
