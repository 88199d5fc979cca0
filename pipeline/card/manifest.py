"""``shards/manifest.json`` as the card uses it: documents, and per format shards, samples, tokens, bytes.

Assumed shape (docs/shards.md: "shard list, sizes, hashes, samples/tokens per
format, tokenizer and config hashes"); the names are in pipeline.card.names::

    {"documents": 414, "samples": 414, "repeats": 0, "groups": ["group-00000", ...],
     "formats": {"mds": {"shards": [{"name", "bytes", "sha256", "samples", "tokens"}, ...],
                          "samples": 414, "tokens": 180000, "bytes": 123456},
                 "webdataset": {...}},
     "tokenizer": {"path": ..., "sha256": ..., ...},
     "config_sha256": "..."}

``documents`` are distinct documents, ``samples`` what the shards hold of them: with a training mix,
which repeats documents as new samples, ``repeats`` = samples - documents (a manifest before issue 38
has no ``samples``: its ``documents`` counted samples, and its mix section the distinct documents).
A format's totals, when absent, are the sums over its shard list.  What a
trainer needs of the shards (docs/shards.md: ``tokens`` with and without
BOS/EOS, ``dropped``, ``truncation``, ``layout``, ``documents_tokenized``; per
format its ``layout``, ``documents``, ``url_pattern``, ``dtype``) is passed
through when present (a manifest before issue 20 has none).  Nothing
else in the card reads the manifest.  A manifest that is truncated or not
shaped like this is a ManifestError naming the file and the field.
"""

from __future__ import annotations

from core.storage import Storage
from pipeline.card import names as N
from pipeline.card.reading import CardInputError, read_object


class ManifestError(CardInputError):
    """The manifest exists but is not valid JSON or lacks what the card needs."""


def read_manifest(storage: Storage) -> dict | None:
    """The normalized manifest, or None when the shards phase has not written one."""
    if not storage.exists(*N.MANIFEST):
        return None
    try:
        raw = read_object(storage, *N.MANIFEST)
    except CardInputError as e:
        raise ManifestError(str(e)) from None
    return {**normalize(raw, storage.uri(*N.MANIFEST)), **_trainer_fields(raw)}


def _trainer_fields(raw: dict) -> dict:
    """The fields about the tokens and the layout that the card shows as they are (objects and counts only)."""
    out = {k: raw[k] for k in N.MANIFEST_OBJECTS if isinstance(raw.get(k), dict)}
    if type(raw.get(N.MANIFEST_TOKENIZED)) is int:
        out[N.MANIFEST_TOKENIZED] = raw[N.MANIFEST_TOKENIZED]
    for name, fmt in (raw.get(N.MANIFEST_FORMATS) or {}).items():
        extras = {k: fmt[k] for k in N.MANIFEST_FORMAT_FIELDS if isinstance(fmt, dict) and k in fmt}
        if extras:
            out.setdefault("format_fields", {})[name] = extras
    return out


def _count(value, where: str) -> int:
    if type(value) is int or (type(value) is float and value.is_integer()):
        return int(value)
    raise ManifestError(f"{where} is {value!r:.40}, expected a whole number")


def _object(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise ManifestError(f"{where} is not a JSON object")
    return value


def normalize(raw: dict, uri: str = "/".join(N.MANIFEST)) -> dict:
    formats = {}
    raw_formats = raw.get(N.MANIFEST_FORMATS)
    for name, fmt in sorted(
        _object({} if raw_formats is None else raw_formats, f"{uri}: {N.MANIFEST_FORMATS!r}").items()
    ):
        where = f"{uri}: {N.MANIFEST_FORMATS}.{name}"
        fmt = _object(fmt, where)
        shards = fmt.get(N.MANIFEST_SHARDS)
        shards = [] if shards is None else shards
        if not isinstance(shards, list):
            raise ManifestError(f"{where}.{N.MANIFEST_SHARDS} is not a list")
        shards = [_object(s, f"{where}.{N.MANIFEST_SHARDS}[{i}]") for i, s in enumerate(shards)]
        totals = {
            k: _count(fmt[k], f"{where}.{k}")
            if k in fmt
            else sum(_count(s.get(k, 0), f"{where}.{N.MANIFEST_SHARDS}[{i}].{k}") for i, s in enumerate(shards))
            for k in N.MANIFEST_TOTALS
        }
        formats[name] = {"shards": len(shards), **totals}
    if N.MANIFEST_DOCUMENTS not in raw:
        raise ManifestError(f"{uri}: no {N.MANIFEST_DOCUMENTS!r} (documents written)")
    tokenizer = raw.get(N.MANIFEST_TOKENIZER)
    config_hash = next((raw[k] for k in N.MANIFEST_HASHES if k in raw), None)
    mix = raw["mix"] if isinstance(raw.get("mix"), dict) else None
    documents = _count(raw[N.MANIFEST_DOCUMENTS], f"{uri}: {N.MANIFEST_DOCUMENTS}")
    if N.MANIFEST_SAMPLES in raw:
        samples = _count(raw[N.MANIFEST_SAMPLES], f"{uri}: {N.MANIFEST_SAMPLES}")
    else:  # before issue 38 "documents" counted samples; the mix section, the distinct documents
        samples = documents
        documents = _count(mix.get("documents_drawn", documents), f"{uri}: mix.documents_drawn") if mix else documents
    groups = raw.get(N.MANIFEST_GROUPS)
    return {
        "documents": documents,
        "samples": samples,
        "repeats": samples - documents,
        "groups": len(groups) if isinstance(groups, list) else None,
        "formats": formats,
        "tokenizer": tokenizer if isinstance(tokenizer, dict) else {"name": tokenizer} if tokenizer else {},
        "config_hash": config_hash,
        "mix": mix,
    }
