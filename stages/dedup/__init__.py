"""Phase 2: exact and MinHash-LSH fuzzy deduplication on Ray."""
