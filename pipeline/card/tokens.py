"""The card's Tokens section in numbers: what the shards hold, what the token count includes, what packing
dropped, and what each trainer does with this layout (stages/writers/trainers.py), from the manifest and
the recorded config.
"""

from __future__ import annotations

from stages.writers.trainers import TRAINERS, cut_warning, trainer_warnings


def _shards_config(config: dict):
    """The recorded ``shards`` section as a ShardsConfig, or None (a record this version cannot read)."""
    from stages.writers.config import ShardsConfig

    try:
        return ShardsConfig.model_validate(config.get("shards") or {})
    except Exception:  # an older or hand-edited record: the card shows no trainer warnings rather than failing
        return None


def _demonstration(sha256: str | None) -> str | None:
    from classifiers.demonstration import known

    demo = known(sha256)
    return demo.what if demo else None


def truncation(manifest: dict) -> list[dict]:
    """Per sample length L: samples longer than L and the share of the tokens a loader cutting at L loses."""
    t = manifest.get("tokens") or {}
    real = (t.get("in_samples") or 0) - (t.get("padding") or 0)
    rows = []
    for length, c in sorted((manifest.get("truncation") or {}).items(), key=lambda kv: int(kv[0])):
        rows.append(
            {
                "length": int(length),
                "samples": c.get("samples", 0),
                "tokens": c.get("tokens", 0),
                "share": round(c.get("tokens", 0) / real, 4) if real else None,
            }
        )
    return rows


def trainers(manifest: dict, shards) -> list[dict]:
    """What each trainer reads and does with these shards (the document layout's loss for one that cuts samples)."""
    formats = manifest.get("formats") or {}
    layout = (manifest.get("layout") or {}).get("kind")
    out = []
    for name, t in TRAINERS.items():
        does = t.with_packed if layout == "packed" else t.with_documents
        out.append(
            {
                "trainer": name,
                "label": t.label,
                "format": t.format,
                "written": t.format in formats,
                "does": does,
                "cuts": t.cuts and layout != "packed",
                "named": shards is not None and shards.trainer == name,
            }
        )
    return out


def headline_tokens(manifest: dict | None) -> int | None:
    """The card's token count: the first format's (MDS when written), BOS/EOS and padding included."""
    if not manifest or not manifest["formats"]:
        return None
    return next(iter(manifest["formats"].values()))["tokens"]


def tokens_stats(manifest: dict | None, config: dict) -> dict:
    """The ``tokens`` entry of stats.json."""
    if manifest is None:
        return {"present": False}
    n = manifest.get("samples", manifest["documents"])  # tokens per sample (a repeated document: each copy)
    headline = headline_tokens(manifest)
    tokenizer = manifest.get("tokenizer") or {}
    shards = _shards_config(config)
    warnings = trainer_warnings(shards) if shards is not None else []
    if shards is not None:
        measured = cut_warning(
            shards, manifest.get("truncation") or {}, (manifest.get("tokens") or {}).get("in_samples") or 0
        )
        warnings += [measured] if measured else []
    return {
        "present": True,
        **manifest,
        "tokens": headline,
        "tokens_per_document": round(headline / n, 1) if n and headline is not None else None,
        "breakdown": manifest.get("tokens"),
        "demonstration": _demonstration(tokenizer.get("sha256")),
        "truncation": truncation(manifest),
        "trainers": trainers(manifest, shards),
        "trainer_warnings": warnings,
    }
