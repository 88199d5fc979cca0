"""``shards/manifest.json`` as the card uses it: documents, and per format shards, samples, tokens, bytes.

Assumed shape (docs/shards.md: "shard list, sizes, hashes, samples/tokens per
format, tokenizer and config hashes"); the names are in pipeline.card.names::

    {"documents": 414,
     "formats": {"mds": {"shards": [{"name", "bytes", "sha256", "samples", "tokens"}, ...],
                          "samples": 414, "tokens": 180000, "bytes": 123456},
                 "webdataset": {...}},
     "tokenizer": {"path": ..., "sha256": ..., ...},
     "config_sha256": "..."}

A format's totals, when absent, are the sums over its shard list.  Nothing
else in the card reads the manifest.
"""

from __future__ import annotations

from pipeline.card import names as N
from pipeline.storage import Storage


class ManifestError(ValueError):
    """The manifest exists but lacks what the card needs."""


def read_manifest(storage: Storage) -> dict | None:
    """The normalized manifest, or None when the shards phase has not written one."""
    if not storage.exists(*N.MANIFEST):
        return None
    return normalize(storage.read_json(*N.MANIFEST))


def normalize(raw: dict) -> dict:
    formats = {}
    for name, fmt in sorted((raw.get(N.MANIFEST_FORMATS) or {}).items()):
        shards = fmt.get(N.MANIFEST_SHARDS) or []
        totals = {k: int(fmt[k]) if k in fmt else sum(int(s.get(k, 0)) for s in shards) for k in N.MANIFEST_TOTALS}
        formats[name] = {"shards": len(shards), **totals}
    if N.MANIFEST_DOCUMENTS not in raw:
        raise ManifestError(f"{'/'.join(N.MANIFEST)}: no {N.MANIFEST_DOCUMENTS!r} (documents written)")
    tokenizer = raw.get(N.MANIFEST_TOKENIZER)
    config_hash = next((raw[k] for k in N.MANIFEST_HASHES if k in raw), None)
    return {"documents": int(raw[N.MANIFEST_DOCUMENTS]), "formats": formats,
            "tokenizer": tokenizer if isinstance(tokenizer, dict) else {"name": tokenizer} if tokenizer else {},
            "config_hash": config_hash}
