"""The columns and file fields the card reads from the other phases' outputs, each taken from the module
that writes it (one spelling in the whole code base).

Phases, stages, their labels, order and settings are not here: the card reads them from the run's plan
(pipeline.plan, recorded in run.json).
"""

from __future__ import annotations

from stages.base import DETAILS, REASON  # noqa: F401  (rejected/<phase>: stages/base.py REJECTED_SCHEMA)
from stages.classify import SCORE_SUFFIX  # noqa: F401  (a classifier's score column: <name>_score)
from stages.dedup.keep import (  # noqa: F401  (dedup's reasons)
    EARLIER as EARLIER_DUPLICATE,  # noqa: F401  (dedup.against's reason)
    EXACT as EXACT_DUPLICATE,
    NEAR as NEAR_DUPLICATE,
)

# ---------------------------------------------------------------- columns of documents/<phase>

LANGUAGE = "language"
#: language ID's confidence (stages/langid.py), a float column ending in _score that is no classifier's
LANGUAGE_SCORE = "language_score"
TEXT = "text"
URL = "url"
SOURCE = "source"
#: cluster size of a kept document (pipeline/dedup/write.py), in the dedup phase
DUP_CLUSTER_SIZE = "dup_cluster_size"
#: per-document PII counts (stages/pii/config.py count_column): pii_<entity lowercased>
PII_PREFIX = "pii_"
#: the stage column of rejected rows
STAGE = "stage"
#: the stage whose rows the PII section reports on, the config section of the dedup phase, and the shards' config
#: section (the shards phase itself is the one whose role is shards: pipeline.phase.ROLE_SHARDS)
PII_STAGE = "pii"
DEDUP_SECTION = "dedup"
SHARDS_SECTION = "shards"

# ---------------------------------------------------------------- shards/manifest.json (docs/shards.md)

MANIFEST = ("shards", "manifest.json")
#: top-level key: {format: {...}}; per format, totals (or a "shards" list whose entries carry them)
MANIFEST_FORMATS = "formats"
MANIFEST_SHARDS = "shards"
MANIFEST_TOTALS = ("samples", "tokens", "bytes")
#: top-level key: distinct documents whose tokens are in the shards (documents packing dropped whole are not; see
#: ``dropped``), and the samples they are (a training mix repeats documents as new samples)
MANIFEST_DOCUMENTS = "documents"
MANIFEST_SAMPLES = "samples"
#: top-level key: the shuffle groups the shards phase wrote (its units)
MANIFEST_GROUPS = "groups"
MANIFEST_TOKENIZER = "tokenizer"
MANIFEST_HASHES = ("config_sha256", "config_hash")
#: what the manifest says for trainers (stages/writers/manifest.py), shown as written
MANIFEST_OBJECTS = ("tokens", "dropped", "truncation", "layout")
MANIFEST_TOKENIZED = "documents_tokenized"
MANIFEST_FORMAT_FIELDS = ("layout", "documents", "url_pattern", "dtype")
