"""The built-in phases, registered in run order (importing a module registers its phase)."""

import pipeline.phases.extracted  # noqa: F401  (1: WARC -> filtered documents)
import pipeline.phases.deduped  # noqa: F401,I001  (2: exact + fuzzy dedup)
