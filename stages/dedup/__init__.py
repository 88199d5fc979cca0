"""Deduplication stages: exact and MinHash-LSH fuzzy deduplication (the steps on Ray: pipeline/dedup/).

Modules, one idea each:

* ``config``     -- the ``dedup:`` section of a run config
* ``normalize``  -- text normalization over Arrow batches
* ``minhash``    -- shingles, shingle hashes, datasketch-compatible signatures
* ``lsh``        -- bands x rows for a threshold, band bucket keys
* ``exact``      -- exact text / URL keys
* ``edges``      -- buckets -> star edges (optional exact Jaccard verification)
* ``components`` -- connected components: numpy or scipy locally, large-star/small-star on Ray Data
* ``keep``       -- which document of a cluster stays, and why the others go
* ``hashing``    -- MurmurHash3 finalizers over numpy arrays
"""
