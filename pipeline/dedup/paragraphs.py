"""Step 4b: paragraph (or line) deduplication of the documents that document dedup kept (``dedup/paragraphs/``).

Runs after step 4 (its decisions say which documents are gone) and before
step 5, which rewrites the texts (:class:`PartEdits`).  Exact matches of
normalized paragraphs (stages.dedup.paragraphs), with memory bounded per task:

1. per part, one Ray task: the counted pieces of the part's kept documents
   -> ``hashes/`` ``(hash, doc, idx)``, every occurrence, and ``counts/``
   ``(hash, part, count, first_doc, first_idx)``, one row per distinct hash
   of the part (a combiner: a line on every page of a site costs one row per
   part in the shuffle, not one per page; ``count``: occurrences, or in
   ``min_count`` mode the documents holding it, as CCNet counts);
2. a shuffle of ``counts/`` by hash: each hash's corpus-wide count and first
   occurrence (smallest ``(doc, idx)``: parts by name, then row, then
   position); the hashes that are repeated (``keep_first``: 2 or more,
   ``min_count``: ``min_count`` or more) go back, by a second shuffle, to the
   parts that hold them: ``repeated/`` ``(hash, count, first_doc, first_idx)``;
   each shuffle group also writes its most repeated hashes to ``top/``;
3. in step 5, per part: an occurrence whose hash is in ``repeated/`` is
   removed, except (``keep_first``) the first occurrence itself; in
   ``min_count`` mode a later copy inside one document goes too, whatever the
   count (CCNet keeps a document's first copy of a paragraph no other holds).

With one partition nothing is shuffled (the same functions run in the driver).
Like steps 2-4 the folder is rebuilt on every run: everything in it depends on
the decisions of step 4.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.layout import part_file
from core.tables import READ_THREADS, read_tables
from pipeline.config import RunConfig
from pipeline.dedup.context import ROW_BITS, DedupContext, Parts, part_groups, row_of, run_storage
from pipeline.dedup.decisions import read_decisions
from pipeline.dedup.shuffle import by_part, by_value
from pipeline.phase import Unit
from stages.base import DETAILS, REASON, ChainStats, run_chain, set_column
from stages.dedup import paragraphs
from stages.dedup.config import ParagraphsConfig
from stages.filters import build_filters

FOLDER = ("dedup", "paragraphs")
#: The stage named by the rows step 5 rejects after removing paragraphs, and the reason of a document left empty.
STAGE = "paragraph_dedup"
EMPTY = "paragraph_dedup:empty"
#: Characters of a repeated paragraph shown in the summary (cut after redaction, at a space, "…" added).
SNIPPET_CHARS = 100
#: Characters of it read and redacted before the cut: a value (at most 300 characters) that crosses the cut is
#: read whole, so no part of it is left before the cut.
SNIPPET_READ_CHARS = SNIPPET_CHARS + 600

log = logging.getLogger(__name__)

HASH_SCHEMA = pa.schema([("hash", pa.uint64()), ("doc", pa.int64()), ("idx", pa.int32())])
COUNT_SCHEMA = pa.schema(
    [
        ("hash", pa.uint64()),
        ("part", pa.int64()),
        ("count", pa.int64()),
        ("first_doc", pa.int64()),
        ("first_idx", pa.int32()),
    ]
)


@dataclass(frozen=True)
class Repeated:
    """One of the most repeated paragraphs: its hash, how many copies the corpus holds, its first ~100 characters
    (redacted, then cut)."""

    hash: str
    count: int
    text: str | None  # None: the redactor could not run
    cut_after_redaction: bool = True  # earlier versions cut first (the card drops their last word)


@dataclass
class ParagraphSummary:
    """Step 4b's part of the phase summary (``paragraphs``); step 5 adds what it removed."""

    unit: str
    mode: str
    pieces: int = 0  # counted pieces of the kept documents
    shuffle_rows: int = 0  # (hash, part) rows of the shuffle
    shuffle_bytes: int = 0
    partitions: int = 0
    documents_edited: int = 0
    removed: int = 0  # pieces removed
    chars_removed: int = 0
    documents_rejected: int = 0  # rejected after the rewrite (empty, or by a filter rule)
    top: list[Repeated] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def settings(config: RunConfig) -> dict:
    """What step 4b and the rewrite depend on, for the corpus fingerprint ({} when off: older runs keep theirs)."""
    p = config.dedup.paragraphs
    if not p.enabled:
        return {}
    return {"paragraphs": p.model_dump(mode="json"), "filters": config.filters.model_dump(mode="json")}


def find_repeated(ctx: DedupContext) -> ParagraphSummary:
    """Steps 1-2 above; returns the summary (step 5 fills in the removals)."""
    cfg = ctx.dedup.paragraphs
    ctx.storage.delete_dir(*FOLDER)
    units = [Unit(u, "") for u in ctx.units]
    summary = ParagraphSummary(cfg.unit, cfg.mode)
    failed = {}
    # counts added up as parts finish
    for s in ctx.per_part("paragraphs", HashPart, units, numbered=True, source=ctx.source):
        if "failed" in s:
            failed[s["unit"]] = s["failed"]
        else:
            summary.pieces += s["pieces"]
            summary.shuffle_rows += s["distinct"]
            summary.shuffle_bytes += s["bytes"]
    if failed:  # the parts were read in step 1: a failure here is not a bad input, stop the phase
        raise RuntimeError(f"paragraph hashes failed for {len(failed)} parts: {failed}")
    decide = {"threshold": threshold(cfg), "top": cfg.top, "parts": ctx.parts}
    p = ctx.partitions(summary.shuffle_rows)
    summary.partitions = p
    if summary.shuffle_rows == 0:
        pass
    elif p == 1:
        ctx.in_task(_repeated_here, ctx.files(*FOLDER, "counts"), decide)
    else:
        ds = by_value(ctx.read(ctx.files(*FOLDER, "counts"), p), "hash", p, _decide, **decide)
        by_part(ds, "part", min(len(ctx.units), p), _write_repeated, parts=ctx.parts).materialize()
    summary.top = _top(ctx, cfg)
    return summary


def _repeated_here(files: list[str], decide: dict) -> None:
    """The single-partition path, in one task."""
    parts = decide["parts"]
    _write_repeated(_decide(read_tables(parts.storage(), files), **decide), parts)


def threshold(cfg: ParagraphsConfig) -> int:
    """Copies of a paragraph from which it is removed (all but the first with keep_first)."""
    return 2 if cfg.mode == "keep_first" else cfg.min_count


class HashPart:
    """Step 1 for one part: the counted pieces of its kept documents."""

    def __init__(self, config: RunConfig, source: str):
        self.cfg = config.dedup.paragraphs
        self.batch_docs = config.dedup.batch_docs
        self.storage = run_storage(config)
        self.source = source

    def process(self, unit: Unit) -> dict:
        part_no = unit.params["part_no"]
        name = part_file(unit.name)
        decided = read_decisions(self.storage, unit.name)  # kept members of a cluster are listed too, without a reason
        gone = np.sort(row_of(decided.filter(pc.is_valid(decided.column("reason"))).column("doc").to_numpy()))
        source = pq.ParquetFile(self.storage.path("documents", self.source, name), filesystem=self.storage.fs)
        tables, start = [HASH_SCHEMA.empty_table()], 0
        for batch in source.iter_batches(batch_size=self.batch_docs, columns=["text"]):
            rows = np.arange(start, start + batch.num_rows, dtype=np.int64)
            kept = np.flatnonzero(~np.isin(rows, gone))  # documents that document dedup removed lose nothing here
            pieces = paragraphs.hash_pieces(batch.column("text").take(pa.array(kept)), self.cfg)
            doc = (np.int64(part_no) << ROW_BITS) + rows[kept][pieces.column("row").to_numpy()]
            tables.append(
                pa.table(
                    {"hash": pieces.column("hash"), "doc": pa.array(doc, pa.int64()), "idx": pieces.column("idx")},
                    schema=HASH_SCHEMA,
                )
            )
            start += batch.num_rows
        hashes = pa.concat_tables(tables).combine_chunks()
        counts = part_counts(hashes, part_no, documents=self.cfg.mode == "min_count")
        self.storage.write_parquet(hashes, *FOLDER, "hashes", name)
        self.storage.write_parquet(counts, *FOLDER, "counts", name)
        return {"unit": unit.name, "pieces": len(hashes), "distinct": len(counts), "bytes": counts.nbytes}


def part_counts(hashes: pa.Table, part_no: int, documents: bool = False) -> pa.Table:
    """One row per distinct hash of a part: its count there (occurrences, or with ``documents`` the documents
    holding it) and its first ``(doc, idx)`` (COUNT_SCHEMA)."""
    h, doc, idx = (hashes.column(c).to_numpy() for c in ("hash", "doc", "idx"))
    order = np.lexsort((idx, doc, h))
    h, doc, idx = h[order], doc[order], idx[order]
    starts = _runs(h)
    if documents:  # a document is counted once, however often it repeats the piece (documents are in one part)
        new_doc = np.concatenate(([True], (h[1:] != h[:-1]) | (doc[1:] != doc[:-1]))) if len(h) else np.zeros(0, bool)
        n = np.add.reduceat(new_doc.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)
    else:
        n = np.diff(np.append(starts, len(h)))
    return pa.table(
        {
            "hash": pa.array(h[starts], pa.uint64()),
            "part": pa.array(np.full(len(starts), np.int64(part_no) << ROW_BITS)),
            "count": pa.array(n.astype(np.int64)),
            "first_doc": pa.array(doc[starts], pa.int64()),
            "first_idx": pa.array(idx[starts], pa.int32()),
        },
        schema=COUNT_SCHEMA,
    )


def _runs(sorted_values: np.ndarray) -> np.ndarray:
    """Start of each run of equal values."""
    if not len(sorted_values):
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.concatenate(([True], sorted_values[1:] != sorted_values[:-1])))


def _decide(group: pa.Table, threshold: int, top: int, parts: Parts) -> pa.Table:
    """Per hash of the group (every (hash, part) row of its hashes): the corpus count and first occurrence.

    Returns the rows of the repeated hashes, each with the corpus-wide count and
    first occurrence (COUNT_SCHEMA); writes the group's ``top`` most repeated
    hashes to ``top/``.
    """
    h, doc, idx = (group.column(c).to_numpy() for c in ("hash", "first_doc", "first_idx"))
    order = np.lexsort((idx, doc, h))
    group = group.take(pa.array(order))
    h = h[order]
    starts = _runs(h)
    total = np.add.reduceat(group.column("count").to_numpy(), starts) if len(starts) else np.zeros(0, np.int64)
    run = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(h))))
    repeated = total[run] >= threshold
    first_doc, first_idx = doc[order][starts][run], idx[order][starts][run]
    out = pa.table(
        {
            "hash": group.column("hash"),
            "part": group.column("part"),
            "count": pa.array(total[run]),
            "first_doc": pa.array(first_doc, pa.int64()),
            "first_idx": pa.array(first_idx, pa.int32()),
        },
        schema=COUNT_SCHEMA,
    ).filter(pa.array(repeated))
    if top:
        best = starts[total >= threshold]
        t = total[total >= threshold]
        pick = np.lexsort((h[best], -t))[:top]
        rows = (
            group.take(pa.array(best[pick]))
            .select(["hash", "first_doc", "first_idx"])
            .append_column("count", pa.array(t[pick]))
        )
        if len(rows):
            # one file per group, named by its smallest hash: the same name on a retry, whatever the worker
            parts.storage().write_parquet(rows, *FOLDER, "top", f"top-{int(h[0]):016x}.parquet")
    return out


def _write_repeated(group: pa.Table, parts: Parts) -> pa.Table:
    """Store each part's repeated hashes in repeated/part-<unit>.parquet, sorted by hash."""
    storage = parts.storage()
    groups = part_groups(group.column("part").to_numpy())
    rows = group.select(["hash", "count", "first_doc", "first_idx"])

    def write(p: int, at: np.ndarray) -> None:
        mine = rows.take(pa.array(at))
        mine = mine.take(pc.sort_indices(mine, [("hash", "ascending")]))
        storage.write_parquet(mine, *FOLDER, "repeated", parts.file(p))

    with ThreadPoolExecutor(READ_THREADS) as pool:
        list(pool.map(lambda g: write(*g), groups))
    return pa.table({"parts": [len(groups)]})


def _top(ctx: DedupContext, cfg: ParagraphsConfig) -> list[Repeated]:
    """The ``cfg.top`` most repeated paragraphs (ties: smallest hash), their first characters PII-redacted."""
    files = ctx.files(*FOLDER, "top")
    if not files or not cfg.top:
        return []
    rows = ctx.read_local(files)
    rows = (
        rows.take(pc.sort_indices(rows, [("count", "descending"), ("hash", "ascending")]))
        .slice(0, cfg.top)
        .to_pylist()
    )
    texts = _redacted([_snippet(ctx, cfg, r["first_doc"], r["first_idx"]) for r in rows], ctx.config)
    return [
        Repeated(f"{r['hash']:016x}", r["count"], None if t is None else shorten(t))
        for r, t in zip(rows, texts, strict=False)
    ]


def shorten(text: str, chars: int = SNIPPET_CHARS) -> str:
    """The first ``chars`` characters of a redacted text, cut at a space (never inside a placeholder such as
    ``<EMAIL_ADDRESS>``), "…" when cut."""
    if len(text) <= chars:
        return text
    cut = text.rfind(" ", 0, chars + 1)
    cut = cut if cut > 0 else chars
    opened = text.rfind("<", 0, cut)
    if opened > text.rfind(">", 0, cut):  # inside a placeholder: before it
        cut = opened
    return text[:cut].rstrip() + "…"


def _redacted(texts: list[str], config: RunConfig) -> list[str | None]:
    """The snippets through the card's PublicRedactor (they are published); None for all when it cannot run."""
    try:
        from stages.pii.public import PublicRedactor

        return [t or "" for t in PublicRedactor(config.pii.model_dump(mode="json")).texts(texts)]
    except Exception as e:  # a display aid: never shown unredacted, never a reason to fail the phase
        log.error(
            "paragraph dedup: the most repeated paragraphs could not be redacted (%s: %s); their text is left out",
            type(e).__name__,
            e,
        )
        return [None] * len(texts)


def _snippet(ctx: DedupContext, cfg: ParagraphsConfig, doc: int, idx: int) -> str:
    """The first SNIPPET_READ_CHARS characters of piece ``idx`` of document ``doc`` (one row group read)."""
    source = pq.ParquetFile(ctx.source_file(ctx.units[int(doc >> ROW_BITS)]), filesystem=ctx.storage.fs)
    row = int(doc & ((1 << ROW_BITS) - 1))
    for g in range(source.num_row_groups):
        n = source.metadata.row_group(g).num_rows
        if row < n:
            text = source.read_row_group(g, columns=["text"]).column("text")[row].as_py() or ""
            return paragraphs.piece_text(text, cfg.unit, idx)[:SNIPPET_READ_CHARS]
        row -= n
    return ""


# ------------------------------------------------------------------------------------------------ step 5


class PartEdits:
    """What step 5 does to one part's texts: remove its repeated pieces, then judge the changed documents again.

    Before the document decisions are applied (rows still in input order),
    :meth:`apply` rewrites the texts of the documents that lose a piece, adds
    ``para_dedup_removed`` and ``para_dedup_chars_removed`` and sets
    ``reason``/``details`` on the rewritten documents that are now empty or
    fail a Gopher/C4/FineWeb rule of the run's config (the rules judge the new
    text; C4's own line removals are not applied a second time).
    """

    def __init__(self, config: RunConfig, storage, unit: str):
        self.cfg = config.dedup.paragraphs
        self.filters = build_filters(config.filters)
        self.stats: Counter = Counter()
        self.doc, self.idx = _removals(storage, unit, self.cfg.mode)  # sorted by (doc, idx)
        self.rows = row_of(self.doc)

    def apply(self, table: pa.Table, start: int) -> pa.Table:
        n = len(table)
        removed = np.zeros(n, np.int32)
        chars = np.zeros(n, np.int64)
        reason = pa.nulls(n, pa.string())
        details = pa.nulls(n, pa.string())
        lo, hi = np.searchsorted(self.rows, [start, start + n])
        if hi > lo:
            local = self.rows[lo:hi] - start
            edited, first = np.unique(local, return_index=True)
            bounds = np.append(first, hi - lo)
            old = table.column("text").take(pa.array(edited)).to_pylist()
            new = [
                paragraphs.remove_pieces(t or "", self.cfg.unit, set(self.idx[lo + a : lo + b].tolist()))
                for t, a, b in zip(old, bounds[:-1], bounds[1:], strict=False)
            ]
            removed[edited] = np.diff(bounds)
            chars[edited] = [len(o or "") - len(t) for o, t in zip(old, new, strict=False)]
            text = _replace(table.column("text"), edited, new)
            table = set_column(table, "text", text)
            reason, details = self._judge(table, edited, removed, chars)
            self.stats.update(
                {"documents_edited": len(edited), "removed": int(removed.sum()), "chars_removed": int(chars.sum())}
            )
        table = set_column(table, "para_dedup_removed", pa.array(removed, pa.int32()))
        table = set_column(table, "para_dedup_chars_removed", pa.array(chars, pa.int64()))
        return set_column(set_column(table, REASON, reason), DETAILS, details)

    def _judge(
        self, table: pa.Table, edited: np.ndarray, removed: np.ndarray, chars: np.ndarray
    ) -> tuple[pa.Array, pa.Array]:
        """``reason``/``details`` for the whole batch: set on the edited rows that are empty or fail a filter rule."""
        n = len(table)
        texts = table.column("text").take(pa.array(edited))
        reasons: list[str | None] = [None] * len(edited)
        found: list[str | None] = [None] * len(edited)
        # run_chain moves each rejected row out with its first rule's reason, as in phase 1; the row's
        # position rides in ``id`` (the rejected set keeps only its own columns)
        needs = sorted({c for stage in self.filters for c in getattr(stage, "needs", ())} - {"id", "text"})
        judged = pa.table(
            {
                "id": pa.array([str(i) for i in range(len(edited))], pa.string()),
                "text": texts,
                **{c: _column(table, c, edited) for c in needs},
            }
        )
        _, rejected = run_chain(self.filters, judged, ChainStats())
        for r in rejected:
            for i, why, d in zip(
                r.column("id").to_pylist(), r.column(REASON).to_pylist(), r.column(DETAILS).to_pylist(), strict=False
            ):
                reasons[int(i)], found[int(i)] = why, d
        empty = pc.equal(pc.utf8_trim_whitespace(texts), "").to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(empty):
            reasons[i] = EMPTY  # whatever a rule said: nothing is left
        out_reason = np.full(n, None, object)
        out_details = np.full(n, None, object)
        for i, row in enumerate(edited.tolist()):
            if reasons[i] is not None:
                out_reason[row] = reasons[i]
                out_details[row] = json.dumps(
                    {
                        "paragraphs_removed": int(removed[row]),
                        "chars_removed": int(chars[row]),
                        "rule_details": found[i],
                    }
                )
                self.stats["documents_rejected"] += 1
        return pa.array(out_reason, pa.string()), pa.array(out_details, pa.string())

    def empty(self, table: pa.Table) -> pa.Table:
        """The columns :meth:`apply` adds, on an empty table (an empty part keeps the schema of the others)."""
        table = set_column(table, "para_dedup_removed", pa.array([], pa.int32()))
        return set_column(table, "para_dedup_chars_removed", pa.array([], pa.int64()))


def _column(table: pa.Table, name: str, rows: np.ndarray) -> pa.Array:
    """``table[name]`` at ``rows`` (nulls when the part has no such column: the rules skip what they cannot judge)."""
    if name not in table.column_names:
        return pa.nulls(len(rows), pa.string())
    return table.column(name).take(pa.array(rows))


def _replace(column: pa.ChunkedArray, rows: np.ndarray, values: list[str]) -> pa.Array:
    """``column`` with ``values`` at ``rows`` (its type kept)."""
    mask = np.zeros(len(column), bool)
    mask[rows] = True
    return pc.replace_with_mask(column.combine_chunks(), pa.array(mask), pa.array(values, column.type))


def _removals(storage, unit: str, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(doc, idx) of the pieces a part loses, sorted: occurrences of its repeated hashes (keep_first: but the first;
    min_count: and the later copies inside a document of any hash)."""
    name = part_file(unit)
    none = np.zeros(0, np.int64), np.zeros(0, np.int32)
    rep = storage.read_parquet(*FOLDER, "repeated", name) if storage.exists(*FOLDER, "repeated", name) else None
    if (rep is None or not len(rep)) and (mode != "min_count" or not storage.exists(*FOLDER, "hashes", name)):
        return none
    occ = storage.read_parquet(*FOLDER, "hashes", name)
    h = occ.column("hash").to_numpy()
    doc, idx = occ.column("doc").to_numpy(), occ.column("idx").to_numpy()
    hit = np.zeros(len(h), bool)
    if rep is not None and len(rep):
        keys = rep.column("hash").to_numpy()
        at = np.minimum(np.searchsorted(keys, h), len(keys) - 1)
        hit = keys[at] == h
        if mode == "keep_first":
            first_doc, first_idx = rep.column("first_doc").to_numpy()[at], rep.column("first_idx").to_numpy()[at]
            hit &= ~((doc == first_doc) & (idx == first_idx))
    if mode == "min_count":
        hit |= _later_in_document(h, doc, idx)
    order = np.lexsort((idx[hit], doc[hit]))
    return doc[hit][order], idx[hit][order]


def _later_in_document(h: np.ndarray, doc: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Occurrences that repeat a piece their own document held before (by position)."""
    order = np.lexsort((idx, doc, h))
    hs, ds = h[order], doc[order]
    later = np.zeros(len(h), bool)
    later[order[1:]] = (hs[1:] == hs[:-1]) & (ds[1:] == ds[:-1])
    return later


def summarize_parts(summary: ParagraphSummary, part_stats: list[dict]) -> dict:
    """The summary with step 5's removals over all parts added."""
    for s in part_stats:
        for k, v in s.get("paragraphs", {}).items():
            setattr(summary, k, getattr(summary, k) + v)
    return summary.to_dict()
