"""The built-in phases, registered in run order (importing a module registers its phase)."""

import pipeline.phases.extracted  # noqa: F401  (1: WARC -> filtered documents)
import pipeline.phases.deduped  # noqa: F401,I001  (2: exact + fuzzy dedup)
import pipeline.phases.final  # noqa: F401,I001  (3: quality filter + PII redaction: the text to tokenize)
import pipeline.phases.shards  # noqa: F401,I001  (4: tokenized, shuffled MDS + WebDataset shards)
import pipeline.phases.card  # noqa: F401,I001  (last: the dataset card of the run)
