"""Every name the card reads from the other phases' outputs, in one place.

The ``final`` (quality filter + PII) and ``shards`` phases were written at the
same time as the card; the names below are the documented ones (DESIGN.md,
docs/shards.md, stages/quality.py, stages/pii).  When a phase lands with
another name, change it here: nothing else in pipeline/card spells them.
"""

from __future__ import annotations

# ---------------------------------------------------------------- phases (run order)

EXTRACTED = "extracted"
DEDUPED = "deduped"
FINAL = "final"
SHARDS = "shards"
#: Phases the funnel always shows (as "not run" when absent or disabled), in run order.
EXPECTED_PHASES = (EXTRACTED, DEDUPED, FINAL, SHARDS)

# ---------------------------------------------------------------- columns of documents/<phase>

LANGUAGE = "language"
TEXT = "text"
URL = "url"
SOURCE = "source"
#: quality score (stages/quality.py SCORE), added in phase extracted
QUALITY_SCORE = "quality_score"
#: cluster size of a kept document (pipeline/phase2/write.py), in phase deduped
DUP_CLUSTER_SIZE = "dup_cluster_size"
#: per-document PII counts (stages/pii/config.py count_column): pii_<entity lowercased>
PII_PREFIX = "pii_"

# ---------------------------------------------------------------- rejected/<phase> (stages/base.py REJECTED_SCHEMA)

STAGE = "stage"
REASON = "reason"
DETAILS = "details"

# ---------------------------------------------------------------- stages, in the order they run

#: Rejected rows name their stage; the funnel shows one step per stage in this order
#: (stages it does not know come after these, by name).
STAGE_ORDER = (
    "read", "url_filter", "decode", "extract", "langid",
    "gopher_quality", "gopher_repetition", "c4", "fineweb", "quality",  # phase extracted
    "dedup",  # phase deduped
    "quality_filter", "pii",  # phase final
    "shards",  # phase shards (tokenization: no_tokens)
)  # fmt: skip
#: The step of a phase whose rows name no stage of their own (a phase that rejected nothing).
PHASE_STAGE = {DEDUPED: "dedup", SHARDS: "shards"}
#: The stage whose step reports the documents with PII redacted.
PII_STAGE = "pii"
#: The reason the quality filter gives (stages/quality.py REASON).
QUALITY_REASON = "quality"
#: Reasons of the dedup stage: exact and near duplicates.
EXACT_DUPLICATE = "exact_duplicate"
NEAR_DUPLICATE = "duplicate"

# ---------------------------------------------------------------- shards/manifest.json (docs/shards.md)

MANIFEST = ("shards", "manifest.json")
#: top-level key: {format: {...}}; per format, totals (or a "shards" list whose entries carry them)
MANIFEST_FORMATS = "formats"
MANIFEST_SHARDS = "shards"
MANIFEST_TOTALS = ("samples", "tokens", "bytes")
#: top-level key: documents written into the shards (each format holds every document)
MANIFEST_DOCUMENTS = "documents"
MANIFEST_TOKENIZER = "tokenizer"
MANIFEST_HASHES = ("config_sha256", "config_hash")

# ---------------------------------------------------------------- run.json config sections per phase

#: Which sections of the run config are each phase's settings (the card's processing section).
PHASE_SETTINGS = {
    EXTRACTED: ("warc", "charset", "extract", "langid", "filters", "quality"),
    DEDUPED: ("dedup",),
    FINAL: ("quality.filter", "pii"),
    SHARDS: ("shards",),
}
