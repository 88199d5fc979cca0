"""Step 2d: documents that duplicate a document an earlier run kept (``dedup/earlier-duplicates/``).

With ``dedup.against: [ROOT, ...]`` every document of this run is looked up in
the earlier runs' dedup indexes (pipeline/dedup/index.py; their documents are
never read, their outputs never written):

* exactly: its text hash (16 bytes) equals an earlier kept document's;
* fuzzily: one of its LSH keys (band keys, and content keys of step 2c) equals
  one of an earlier document's, and the pair passes the signature check of
  step 2b (agreement on the positions that are host boilerplate in neither,
  or full agreement above ``boilerplate.identical_threshold``; the earlier
  side's boilerplate positions are stored in its index).

A document found either way is removed with reason ``duplicate_earlier``;
``details`` names the earlier run (its root as given), the earlier id and how
it matched.  Earlier documents always win: they are in no cluster of this run.
Like the repeated ids of step 1b, the removed documents leave the duplicate
graph before step 2 draws its edges, and their decisions join step 4's.  Of
several earlier matches, exact ones come first, then the first run listed,
then the index's order (part name, row): the choice depends only on the data.

The joins run in this process while the keys fit one task (``partition_rows``:
8 bytes each, ~27 per document), else as Ray Data shuffles by key
(pipeline/dedup/earlier_shuffle.py: the same pairs, so the same decisions);
either way only the candidate pairs' signatures are read.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import s3_options
from pipeline.dedup import ids, index as dedup_index
from pipeline.dedup.boilerplate import fixed_bytes, masks_of
from pipeline.dedup.content import FOLDER as CONTENT_FOLDER
from pipeline.dedup.context import DedupContext, row_of
from pipeline.dedup.signatures import signature_width
from pipeline.dedup.verify import check_settings, duplicates, signatures_of
from stages.dedup import lsh
from stages.dedup.keep import EARLIER

FOLDER = ("dedup", "earlier-duplicates")
REASON = EARLIER  # "duplicate_earlier" (stages/dedup/keep.py)
#: An earlier document is numbered ``run << 48 | index file << 32 | row``.
RUN_BITS, FILE_BITS = 48, 32


def needed(ctx: DedupContext) -> bool:
    return bool(ctx.dedup.against)


def find_earlier(ctx: DedupContext) -> dict:
    """Step 2d; returns its part of the summary (``duplicate_earlier``: documents removed)."""
    ctx.storage.delete_dir(*FOLDER)
    if not needed(ctx):
        return {}
    dedup_index.check(ctx.config)
    m = ctx.dedup.minhash
    excluded = ids.excluded_docs(ctx)  # already removed for a repeated id
    runs = [_Earlier(ctx, i, root) for i, root in enumerate(ctx.dedup.against)]

    p = ctx.partitions(_join_rows(ctx, runs))
    if p > 1:  # the keys do not fit one task: shuffles (pipeline/dedup/earlier_shuffle.py)
        from pipeline.dedup import earlier_shuffle

        found = earlier_shuffle.find(ctx, [r.index_files(ctx) for r in runs], excluded, p)
    else:
        found = _find_here(ctx, runs, excluded)
    t_doc, near_docs = found.pop("through"), found.pop("near_docs")

    f_doc, f_ref, f_exact = (np.concatenate(found[k]) for k in ("doc", "ref", "exact"))
    order = np.lexsort((f_ref, ~f_exact, f_doc))  # per doc: exact first, then the first run, file, row
    f_doc, f_ref, f_exact = f_doc[order], f_ref[order], f_exact[order]
    first = np.concatenate(([True], f_doc[1:] != f_doc[:-1])) if len(f_doc) else np.zeros(0, bool)
    f_doc, f_ref, f_exact = f_doc[first], f_ref[first], f_exact[first]
    earlier_ids = _ids(runs, f_ref)
    through = member(f_doc, np.sort(t_doc)) if m.enabled else np.zeros(len(f_doc), bool)
    match = np.where(f_exact, "exact", np.where(through, "near_through_copy", "near")).tolist()
    details = [
        json.dumps({"earlier_run": runs[int(r >> RUN_BITS)].root, "earlier_id": i, "match": how})
        for r, i, how in zip(f_ref.tolist(), earlier_ids, match, strict=False)
    ]
    table = pa.table(
        {
            "doc": pa.array(f_doc, pa.int64()),
            "reason": pa.array([REASON] * len(f_doc), pa.string()),
            "details": pa.array(details, pa.string()),
            "cluster_size": pa.array(np.full(len(f_doc), 2), pa.int32()),
        }
    )
    if len(table):
        ctx.storage.write_parquet(table, *FOLDER, "part-0.parquet")
    return {
        "duplicate_earlier": len(table),
        "duplicate_earlier_exact": int(f_exact.sum()),
        "duplicate_earlier_through_copy": int(through.sum()),
        "earlier_index_docs": int(sum(r.docs for r in runs)),
        "earlier_candidates_near": near_docs,
        "earlier_partitions": p,
    }


def _find_here(ctx: DedupContext, runs: list[_Earlier], excluded: np.ndarray) -> dict:
    """The found pairs, joined in this process: ``{"doc", "ref", "exact"}`` (lists of arrays: exact, near,
    through a copy), ``through`` (the documents of the last kind) and ``near_docs``."""
    m = ctx.dedup.minhash
    meta = ctx.read_local(ctx.files("dedup", "meta"))
    meta = meta.take(pa.array(np.argsort(meta.column("doc").to_numpy(), kind="stable")))
    doc = meta.column("doc").to_numpy()
    text_hash = fixed_bytes(meta.column("text_hash").combine_chunks(), 16)
    keep = ~member(doc, excluded)
    doc, text_hash = doc[keep], text_hash[keep]

    # exact: the same text hash as an earlier kept document
    e_ref, e_hash = _concat([r.hashes() for r in runs], 16)
    exact_doc, exact_ref = _exact(doc, text_hash, e_ref, e_hash)
    found = {"doc": [exact_doc], "ref": [exact_ref], "exact": [np.ones(len(exact_doc), bool)]}

    t_doc, near_docs = np.zeros(0, np.int64), 0
    if m.enabled:
        k_doc, k_key = _current_keys(ctx)
        ok = ~member(k_doc, excluded)
        k_doc, k_key = k_doc[ok], k_key[ok]
        e_kref, e_key = _concat_keys([r.keys() for r in runs])
        near = ~member(k_doc, np.sort(exact_doc))
        c_doc, c_ref = _join(k_doc[near], k_key[near], e_kref, e_key)
        if (
            len(c_doc) and m.verify != "off"
        ):  # verify "exact" needs shingles the index does not hold: the signature check
            passed = _verify(ctx, runs, c_doc, c_ref)
            c_doc, c_ref = c_doc[passed], c_ref[passed]
        near_docs = len(np.unique(c_doc))
        t_doc, t_ref = _through_this_run(
            ctx, runs, k_doc, k_key, np.concatenate([exact_doc, c_doc]), np.concatenate([exact_ref, c_ref])
        )
        for d, r in ((c_doc, c_ref), (t_doc, t_ref)):
            found["doc"].append(d)
            found["ref"].append(r)
            found["exact"].append(np.zeros(len(d), bool))
    found["through"], found["near_docs"] = t_doc, near_docs
    return found


def _join_rows(ctx: DedupContext, runs: list[_Earlier]) -> int:
    """How many rows the joins see: this run's keys and hashes, the earlier ones (a band key per band and
    about one content key per document)."""
    mine = ctx.rows(ctx.files("dedup", "buckets") + ctx.files(*CONTENT_FOLDER) + ctx.files("dedup", "meta"))
    per_doc = 1 + (lsh.bands_rows(ctx.dedup.minhash)[0] + 1 if ctx.dedup.minhash.enabled else 0)
    return mine + per_doc * sum(r.docs for r in runs)


def excluded_docs(ctx: DedupContext) -> np.ndarray:
    """The sorted doc keys removed as duplicates of an earlier run's documents."""
    files = ctx.files(*FOLDER)
    return np.sort(ctx.read_local(files).column("doc").to_numpy()) if files else np.zeros(0, np.int64)


class _Earlier:
    """One earlier run's index: its files, read column by column."""

    def __init__(self, ctx: DedupContext, number: int, root: str):
        self.number, self.root = number, root
        self.storage = dedup_index.earlier_storage(ctx.config, root)
        # the parts its settings.json lists, all of them (else a config error): never a stray file, never fewer
        self.files, self.docs = dedup_index.listed_files(self.storage, f"dedup.against[{number}] ({root})")

    def index_files(self, ctx: DedupContext):
        """This index as Ray tasks read it (pipeline/dedup/earlier_shuffle.py)."""
        from pipeline.dedup.earlier_shuffle import IndexFiles

        return IndexFiles(self.root, s3_options(ctx.config), tuple(self.files), self.number)

    def ref(self, file_no: int, rows: np.ndarray) -> np.ndarray:
        return ref_of(self.number, file_no, rows)

    def read(self, file_no: int, columns: list[str]) -> pa.Table:
        return self.storage.read_parquet(dedup_index.FOLDER, self.files[file_no], columns=columns)

    def hashes(self) -> tuple[np.ndarray, np.ndarray]:
        refs, hashes = [], []
        for f in range(len(self.files)):
            col = self.read(f, ["text_hash"]).column("text_hash").combine_chunks()
            refs.append(self.ref(f, np.arange(len(col))))
            hashes.append(fixed_bytes(col, 16))
        return (
            np.concatenate(refs) if refs else np.zeros(0, np.int64),
            np.concatenate(hashes) if hashes else np.zeros((0, 16), np.uint8),
        )

    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        refs, keys = [], []
        for f in range(len(self.files)):
            col = self.read(f, ["keys"]).column("keys").combine_chunks()
            lengths = np.diff(col.offsets.to_numpy())
            refs.append(self.ref(f, np.repeat(np.arange(len(col)), lengths)))
            keys.append(col.flatten().to_numpy().astype(np.uint64))
        return (
            np.concatenate(refs) if refs else np.zeros(0, np.int64),
            np.concatenate(keys) if keys else np.zeros(0, np.uint64),
        )


def ref_of(run: int, file_no: int, rows: np.ndarray) -> np.ndarray:
    """An earlier document's number: its run's place in ``dedup.against``, its index file, its row."""
    return (np.int64(run) << RUN_BITS) | (np.int64(file_no) << FILE_BITS) | rows.astype(np.int64)


def member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Row-wise: the value is in the sorted array."""
    if len(sorted_set) == 0 or len(values) == 0:
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _concat(pairs: list[tuple[np.ndarray, np.ndarray]], width: int) -> tuple[np.ndarray, np.ndarray]:
    if not pairs:
        return np.zeros(0, np.int64), np.zeros((0, width), np.uint8)
    return np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])


def _concat_keys(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    return np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])


def _exact(
    doc: np.ndarray, text_hash: np.ndarray, e_ref: np.ndarray, e_hash: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(doc, first earlier ref) of every document whose 16-byte text hash an earlier document has."""
    if len(doc) == 0 or len(e_ref) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    e_key = np.ascontiguousarray(e_hash[:, :8]).view("<u8").ravel()
    order = np.lexsort((e_ref, e_key))  # per hash, the first ref first
    e_key, e_ref, e_hash = e_key[order], e_ref[order], e_hash[order]
    key = np.ascontiguousarray(text_hash[:, :8]).view("<u8").ravel()
    lo, hi = np.searchsorted(e_key, key, "left"), np.searchsorted(e_key, key, "right")
    d, r = expand(doc, lo, hi, e_ref)
    full = (
        (text_hash[np.searchsorted(doc, d)] == e_hash[_positions(lo, hi)]).all(axis=1) if len(d) else np.zeros(0, bool)
    )
    d, r = d[full], r[full]
    first = np.concatenate(([True], d[1:] != d[:-1])) if len(d) else np.zeros(0, bool)
    return d[first], r[first]


def _positions(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The concatenated ranges [lo_i, hi_i)."""
    n = hi - lo
    total = int(n.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(n)[:-1])), n)
    return starts + np.arange(total)


def expand(doc: np.ndarray, lo: np.ndarray, hi: np.ndarray, refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(doc, ref) for every ref in each doc's sorted range [lo, hi)."""
    return np.repeat(doc, hi - lo), refs[_positions(lo, hi)]


def _current_keys(ctx: DedupContext) -> tuple[np.ndarray, np.ndarray]:
    """(doc, key) of every LSH bucket row of this run (band keys and step 2c's content keys)."""
    files = ctx.files("dedup", "buckets") + ctx.files(*CONTENT_FOLDER)
    docs, keys = [], []
    for f in files:
        t = pq.read_table(f, filesystem=ctx.storage.fs, columns=["band", "key", "doc"])
        lsh_rows = t.column("band").to_numpy() >= 0
        docs.append(t.column("doc").to_numpy()[lsh_rows])
        keys.append(t.column("key").to_numpy()[lsh_rows].astype(np.uint64))
    if not docs:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    return np.concatenate(docs), np.concatenate(keys)


#: Rounds of :func:`_through_this_run` (a chain of copies longer
#: than this is cut; 2 rounds found all on the benchmark).
MAX_ROUNDS = 8


def _through_this_run(
    ctx: DedupContext, runs: list[_Earlier], k_doc: np.ndarray, k_key: np.ndarray, f_doc: np.ndarray, f_ref: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(doc, earlier ref) of this run's documents linked to an earlier one through a copy in this run.

    Within a run, A and B sharing an LSH bucket (and passing the check) are one cluster; when A is a
    copy of an earlier document E, that cluster is {E, A, B} and E is kept, so B goes too.  B is
    checked against E itself (as step 4 checks every removed member against its kept document),
    not only against A: a chain of copies never removes a document unlike the earlier one.  B is
    often no LSH candidate of E directly: two copies edited apart (a paragraph dropped in one, added
    in the other) are further from each other than from their original.
    """
    if len(f_doc) == 0 or len(k_doc) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    new_doc, new_ref = first_per_doc(f_doc, f_ref)  # sorted by doc: each found document's earlier match
    done = new_doc
    out_doc, out_ref = [], []
    for _ in range(MAX_ROUNDS):
        seeds = member(k_doc, new_doc)
        seed_ref = new_ref[np.searchsorted(new_doc, k_doc[seeds])]
        rest = ~member(k_doc, done)
        c_doc, c_ref = _join(k_doc[rest], k_key[rest], seed_ref, k_key[seeds])
        if len(c_doc) and ctx.dedup.minhash.verify != "off":
            passed = _verify(ctx, runs, c_doc, c_ref)
            c_doc, c_ref = c_doc[passed], c_ref[passed]
        if len(c_doc) == 0:
            break
        new_doc, new_ref = first_per_doc(c_doc, c_ref)
        out_doc.append(new_doc)
        out_ref.append(new_ref)
        done = np.union1d(done, new_doc)
    if not out_doc:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_doc), np.concatenate(out_ref)


def first_per_doc(doc: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each document once, with its smallest ref, sorted by document."""
    order = np.lexsort((ref, doc))
    doc, ref = doc[order], ref[order]
    first = np.concatenate(([True], doc[1:] != doc[:-1])) if len(doc) else np.zeros(0, bool)
    return doc[first], ref[first]


def _join(doc: np.ndarray, key: np.ndarray, e_ref: np.ndarray, e_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique (doc, earlier ref) pairs that share a key, sorted."""
    if len(doc) == 0 or len(e_key) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(e_key, kind="stable")
    e_key, e_ref = e_key[order], e_ref[order]
    lo, hi = np.searchsorted(e_key, key, "left"), np.searchsorted(e_key, key, "right")
    d, r = expand(doc, lo, hi, e_ref)
    if len(d) == 0:
        return d, r
    pairs = np.unique(np.stack([d, r], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def _verify(ctx: DedupContext, runs: list[_Earlier], doc: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Each candidate pair passes the signature check of step 2b (boilerplate positions of both sides left out)."""
    m = ctx.dedup.minhash
    width = signature_width(m)
    sig_a = signatures_of(ctx.parts, doc, width)
    mask_a = masks_of(ctx.parts, doc, m.num_perm)
    sig_b, mask_b = read_signatures(lambda run, file_no, cols: runs[run].read(file_no, cols), ref, width, m.num_perm)
    return duplicates(sig_a, sig_b, mask_a, mask_b, check_settings(m))


def read_signatures(read, ref: np.ndarray, width: int, num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """The signature (len x width bytes) and boilerplate positions (len x num_perm) of each earlier ref, read
    index file by index file with ``read(run, file_no, columns)``."""
    sig = np.zeros((len(ref), width), np.uint8)
    mask = np.zeros((len(ref), num_perm), bool)
    run_file = ref >> FILE_BITS
    for rf in np.unique(run_file):
        at = run_file == rf
        t = read(int(rf >> (RUN_BITS - FILE_BITS)), int(rf & ((1 << (RUN_BITS - FILE_BITS)) - 1)), ["sig", "mask"])
        rows = pa.array(row_of(ref[at]))
        sig[at] = fixed_bytes(t.column("sig").combine_chunks().take(rows), width)
        raw = fixed_bytes(t.column("mask").combine_chunks().take(rows), (num_perm + 7) // 8)
        mask[at] = np.unpackbits(raw, axis=1, count=num_perm).astype(bool)
    return sig, mask


def _ids(runs: list[_Earlier], ref: np.ndarray) -> list[str]:
    """The earlier id of each ref."""
    out = np.empty(len(ref), object)
    run_file = ref >> FILE_BITS
    for rf in np.unique(run_file):
        at = np.flatnonzero(run_file == rf)
        run = runs[int(rf >> (RUN_BITS - FILE_BITS))]
        col = run.read(int(rf & ((1 << (RUN_BITS - FILE_BITS)) - 1)), ["id"]).column("id")
        out[at] = col.take(pa.array(row_of(ref[at]))).to_pylist()
    return out.tolist()
