"""The deduped phase's steps: global deduplication of phase 1's kept documents on Ray.

Steps, one module each (intermediates under ``dedup/``, each a set of Parquet files), declared once in
pipeline/phases/deduped.py (``STEPS``) and run by the engine:

1. ``signatures`` -- per phase-1 part, in parallel: MinHash signatures, LSH
   bucket rows ``(band, key, doc)`` with the exact-text (and URL) keys as extra
   "bands", and each document's id, text hash and score.
   ``doc`` = part number << 32 | row.
2. ``edges`` -- a Ray Data shuffle groups the bucket rows by bucket; each
   partition turns its buckets into star edges.
   ``verify`` -- LSH candidate pairs are kept if their full signatures agree.
3. ``components`` -- connected components: numpy or scipy in one process when the
   edge set is small, else large-star/small-star over Ray Data.
4. ``decisions`` -- cluster members get their id/hash/score from ``meta/``,
   then the keep rule runs per cluster.
5. ``write`` -- ``documents/deduped/`` and ``rejected/deduped/`` per part:
   the phase-1 rows minus the removed ones, in their original order, plus a
   completion marker with the part's counts (kept + rejected = input).

Only step 1 reads the texts; no step holds the corpus, all signatures or all
edges in one process (except step 3's local path, below its edge limit).
``context`` and ``shuffle`` hold what the steps share.
"""
