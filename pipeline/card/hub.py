"""The output root as a Hugging Face dataset repository: the card's ``configs`` and what to upload.

``README.md`` (the card) sits at the output root, so ``datasets.load_dataset(OUTPUT_ROOT)`` and the Hub
resolve its ``configs`` paths as they are written.  The card offers one config, ``default``: the
documents after PII redaction (issue 18: never ``rejected/``, never a phase before redaction).  The
shards are uploaded beside it but stay outside the ``configs`` (``datasets`` takes one format per config,
and a tar of token arrays is no table a viewer can show).

``allow_patterns`` is what ``huggingface_hub.upload_folder``/``upload_large_folder`` should upload of the
root (its own ``filter_repo_objects`` applies them): the card, its plots and stats.json, the published
documents and the shards with their indexes, manifest and tokenizer; never ``rejected/``, the phases
before redaction, ``dedup/``, ``dedup_index/`` (what a later run deduplicates against: ids, hashes, signatures),
``_done/`` or ``run.json``.  ``ignore_patterns`` leaves out hidden files (an
interrupted write's ``.name.tmp``).
"""

from __future__ import annotations

from stages.writers.formats import FORMATS

#: The card's folder (plots, stats.json) and the card itself, at the output root (a Hub dataset repo's README.md).
FOLDER = "card"
README = "README.md"
#: Hidden files anywhere (fnmatch's ``*`` crosses folders): temporary files of interrupted writes.
IGNORE_PATTERNS = [".*", "*/.*"]


def configs(dataset: str) -> list[dict]:
    """The card's ``configs``: the published documents as the ``default`` config's train split."""
    return [{"config_name": "default", "data_files": [{"split": "train", "path": f"documents/{dataset}/*.parquet"}]}]


def allow_patterns(dataset: str | None, formats: list[str] | None) -> list[str]:
    """What to upload of the output root (``formats``: the shard formats of the manifest, None without one;
    ``dataset`` None: no documents, the shards alone)."""
    out = [README, f"{FOLDER}/*.svg", f"{FOLDER}/stats.json", *([f"documents/{dataset}/*.parquet"] if dataset else [])]
    if formats is not None:
        out += ["shards/manifest.json", "shards/tokenizer/*", "shards/*/index.json"]
        out += [f"shards/{f.name}/{pattern}" for f in FORMATS if f.name in formats for pattern in f.files]
    return out
