"""Phase ``shards``: documents/final -> tokenized, globally shuffled MDS and WebDataset shards.

One Ray Data pipeline: the parts are read, tasks tokenize them
(stages.tokenize: the tokenizer loads once per worker process) and give every document
its shuffle group and sort key (stages.shuffle_plan: a seeded hash of its id),
a hash shuffle brings each group's documents together, and one task per group
writes its shards (stages.writers.write_group), uploading each shard as it
closes, then the group's indexes, then the group's marker.

A small input (``shards.local_max_docs``) takes the same steps in the driver,
without Ray Data: its shuffle's set-up would cost more than the work.

The unit is the group: ``shards.shuffle.groups`` of them, fixed by config, so
the bytes do not depend on the number of workers, and a rerun redoes only the
groups without a current marker (the others are filtered out before the
shuffle).  When every group is done, the merged ``shards/mds/index.json``,
``shards/webdataset/index.json`` and ``shards/manifest.json`` are written,
last: a reader never sees an index or a manifest that names a missing shard.
Any rerun that has work to do first deletes them.
"""

from __future__ import annotations

import functools
import json
import tempfile
import time
from collections import Counter

import numpy as np
import pyarrow as pa

from pipeline.config import ConfigError, RunConfig, s3_options
from pipeline.context import RunContext
from pipeline.distribute import Progress, failure
from pipeline.phase import Phase, Unit, fingerprint, register
from core.storage import Storage, resolve
from core.layout import marker_path, part_file
from pipeline.units import UnitWork
from stages.base import REASON, split_rejected
from stages.shuffle_plan import plan
from stages.tokenize import TokenizeConfig, TokenizeStage, read_tokenizer_json, special_id
from stages.writers import StorageSink, merge_mds_indexes, merge_wds_indexes, write_group
from stages.writers.mds import index_bytes

MANIFEST = "_manifest"  # the unit that writes the merged indexes and the manifest, after every group
#: One marker for every group the plan gave no document (a file per empty group would be 500k files for
#: 10 documents in 500k groups): it names them and the corpus they are empty for.
EMPTY = "_empty_groups"
#: Settings of how the phase runs, not of what it writes (left out of fingerprints and the manifest's hash).
RUN_ONLY = {"enabled": True, "local_max_docs": True, "layout": {"max_dropped_share"}}
#: Above this many parts the input is never small: counting their rows would cost a request each on S3.
LOCAL_MAX_PARTS = 256


def group_name(group: int) -> str:
    return f"group-{group:05d}"


class ShardsPhase(Phase):
    name = "shards"
    unit_kind = "group"
    writes_documents = False

    def enabled(self, config: RunConfig) -> bool:
        return config.shards.enabled

    def settings(self, config: RunConfig) -> dict:
        return config.shards.model_dump(mode="json", exclude=RUN_ONLY)

    def expand_markers(self, markers: dict[str, dict]) -> dict[str, dict]:
        """The empty groups' marker read as one marker per group (RunContext.markers)."""
        empty = markers.pop(EMPTY, None)
        for g in (empty or {}).get("groups", []):
            virtual = _empty_marker(g, empty["corpus"])
            if markers.get(virtual["unit"], {}).get("fingerprint") != virtual["fingerprint"]:
                markers[virtual["unit"]] = virtual
        return markers

    def units(self, ctx: RunContext) -> list[Unit]:
        source = ctx.source(self)
        parts = ctx.parts(source)
        tokenizer = read_tokenizer_json(ctx.config.shards.tokenize.tokenizer)
        corpus = fingerprint([(p.name, p.fingerprint) for p in parts], self.settings(ctx.config),
                             fingerprint(tokenizer))
        params = {"source": source.name, "parts": [p.name for p in parts], "corpus": corpus}
        groups = [Unit(group_name(g), fingerprint(corpus, g), {"group": g}) for g in range(ctx.config.shards.shuffle.groups)]
        return [*groups, Unit(MANIFEST, corpus, params)]

    def run(self, ctx: RunContext, todo: list[Unit]):
        manifest = next(u for u in ctx.units_of(self) if u.name == MANIFEST)
        for name in ("mds/index.json", "webdataset/index.json", "manifest.json"):  # never point at shards being rewritten
            if ctx.storage.exists("shards", name):
                ctx.storage.fs.delete_file(ctx.storage.path("shards", name))
        groups = [u for u in todo if u.name != MANIFEST]
        new = list(self._write_groups(ctx, manifest, groups)) if groups else []
        yield from new
        stats = {**{k: v for k, v in ctx.markers(self).items() if k != MANIFEST}, **{s["unit"]: s for s in new}}
        every = [u for u in ctx.units_of(self) if u.name != MANIFEST]
        if all(u.name in stats and "failed" not in stats[u.name] and stats[u.name].get("fingerprint") == u.fingerprint
               for u in every):
            groups = [stats[u.name] for u in every]
            check_dropped(ctx.config, groups)
            yield write_manifest(ctx, manifest, groups)

    def _write_groups(self, ctx: RunContext, manifest: Unit, groups: list[Unit]):
        import ray

        config = ctx.config
        todo = {u.params["group"]: u for u in groups}
        source = manifest.params["source"]
        files = [ctx.storage.path("documents", source, part_file(p)) for p in manifest.params["parts"]]
        for u in groups:  # a group folder holds only what this run writes
            for fmt in ("mds", "webdataset"):
                ctx.storage.delete_dir("shards", fmt, u.name)
        progress = Progress(self.name, len(groups), self.unit_kind, ctx.progress, counts=("documents", "tokens"))
        seen = set()
        if files and _is_small(ctx.storage, files, config.shards.local_max_docs):
            for stats in _write_groups_here(ctx, files, todo):
                seen.add(stats["unit"])
                progress.update(stats)
                yield stats
        elif files:
            tokenizer = read_tokenizer_json(config.shards.tokenize.tokenizer)
            workers = ctx.workers()  # starts Ray
            columns = _columns(config, files, ctx.storage)
            ds = ray.data.read_parquet(files, filesystem=ctx.storage.fs, columns=columns)
            # Tasks, not an actor pool: actors would hold every CPU the shuffle after them needs.
            ds = ds.map_batches(_tokenize_and_plan, batch_format="pyarrow", num_cpus=1,
                                fn_kwargs={"config": config.model_dump(mode="json"), "tokenizer": tokenizer,
                                           "groups": sorted(todo)})
            ds = ds.groupby("group", num_partitions=max(1, min(len(todo), 4 * workers))).map_groups(
                _write_group_task, batch_format="pyarrow",
                fn_kwargs={"config": config.model_dump(mode="json"), "tokenizer": tokenizer,
                           "units": {g: u.to_json() for g, u in todo.items()}})
            for row in ds.iter_rows():
                stats = json.loads(row["stats"])
                seen.add(stats["unit"])
                progress.update(stats)
                yield stats
        empty = [g for g, u in sorted(todo.items()) if u.name not in seen]  # groups the plan gave no document
        if empty:
            _mark_empty(ctx.storage, manifest.params["corpus"], empty)
        for g in empty:
            stats = _empty_marker(g, manifest.params["corpus"])
            progress.update(stats)
            yield stats
        progress.close()

    def summarize(self, stats: list[dict]) -> dict:
        groups = [s for s in stats if s["unit"] != MANIFEST and "failed" not in s]
        totals: Counter = Counter()
        reasons: Counter = Counter()
        for s in groups:
            totals.update({k: s.get(k, 0) for k in ("in", "documents", "samples", "tokens", "dropped_tokens", "dropped_documents", "rejected")})
            totals.update({f"{fmt}_shards": len(s[f"{fmt}_shards"]) for fmt in ("mds", "wds")})
            reasons.update(s.get("rejected_by_reason", {}))
        manifest = next((s for s in stats if s["unit"] == MANIFEST), None)
        return {"groups": len(groups), **dict(totals), "rejected_by_reason": dict(reasons),
                "manifest": bool(manifest and "failed" not in manifest)}

    def headline(self, summary: dict) -> dict:
        return {k: summary.get(k, 0) for k in ("in", "documents", "samples", "tokens", "mds_shards", "wds_shards")}


def _columns(config: RunConfig, files: list[str], storage: Storage) -> list[str]:
    """The columns of documents/final the shards need (never the rest of a wide part)."""
    import pyarrow.parquet as pq

    layout = config.shards.layout
    wanted = ["id", "url", "text", *layout.metadata]
    have = pq.ParquetFile(files[0], filesystem=storage.fs).schema_arrow.names
    missing = [c for c in layout.metadata if c not in have]
    if missing:
        raise ValueError(f"config error: shards.layout.metadata: no such column in documents: {', '.join(missing)}")
    return list(dict.fromkeys(wanted))


def _is_small(storage: Storage, files: list[str], local_max_docs: int) -> bool:
    """Whether the documents to shard fit ``shards.local_max_docs`` (rows from the Parquet footers)."""
    import pyarrow.parquet as pq
    from concurrent.futures import ThreadPoolExecutor

    if local_max_docs <= 0 or len(files) > LOCAL_MAX_PARTS:
        return False
    with ThreadPoolExecutor(16) as pool:
        rows = pool.map(lambda f: pq.ParquetFile(f, filesystem=storage.fs).metadata.num_rows, files)
        return sum(rows) <= local_max_docs


def _write_groups_here(ctx: RunContext, files: list[str], todo: dict[int, Unit]):
    """The shuffle of a small input in this process: the same plan, groups and bytes as on Ray."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    config = ctx.config.model_dump(mode="json")
    tokenizer = read_tokenizer_json(ctx.config.shards.tokenize.tokenizer)
    columns = _columns(ctx.config, files, ctx.storage)
    table = pa.concat_tables([pq.read_table(f, filesystem=ctx.storage.fs, columns=columns) for f in files])
    planned = _tokenize_and_plan(table, config, tokenizer, sorted(todo))
    units = {g: u.to_json() for g, u in todo.items()}
    for g in sorted(todo):
        rows = planned.filter(pc.equal(planned.column("group"), g))
        if len(rows):  # a group without documents is written as empty by the caller
            yield json.loads(_write_group_task(rows, config, tokenizer, units).column("stats")[0].as_py())


@functools.lru_cache(maxsize=2)
def _tokenize_stage(tokenize: str, tokenizer: str) -> TokenizeStage:
    """One tokenizer per worker process, whatever the number of tasks it runs."""
    return TokenizeStage(TokenizeConfig.model_validate_json(tokenize), tokenizer_json=tokenizer)


def _tokenize_and_plan(batch: pa.Table, config: dict, tokenizer: str, groups: list[int]) -> pa.Table:
    """Ray Data task: tokenizes a batch, gives each document its group and key, keeps the groups to do."""
    shards = RunConfig.model_validate(config).shards
    stage = _tokenize_stage(shards.tokenize.model_dump_json(), tokenizer)
    group, key = plan(batch.column("id"), shards.shuffle.seed, shards.shuffle.groups)
    keep = np.isin(group, np.array(groups, dtype=np.int64))
    batch = stage(batch.filter(pa.array(keep)))  # marks documents without tokens (reason no_tokens)
    if not shards.layout.text:
        batch = batch.drop_columns(["text"])
    batch = batch.append_column("group", pa.array(group[keep])).append_column("key", pa.array(key[keep], pa.uint64()))
    if REASON not in batch.column_names:
        batch = batch.append_column(REASON, pa.nulls(len(batch), pa.string())).append_column("details", pa.nulls(len(batch), pa.string()))
    return batch


def _write_group_task(rows: pa.Table, config: dict, tokenizer: str, units: dict) -> pa.Table:
    """Ray Data map_groups: one group's documents -> its shards, indexes and marker; a stats row."""
    unit = Unit.from_json(units[int(rows.column("group")[0].as_py())])
    run_config = RunConfig.model_validate(config)
    try:
        stats = _write_one_group(rows, run_config, tokenizer, unit)
    except Exception as e:  # the group fails alone (no marker, a rerun redoes it), unless the output cannot be written
        stats = failure(unit.name, e, resolve(run_config.output.root)[1])
    return pa.table({"stats": [json.dumps(stats)]})


def _write_one_group(rows: pa.Table, config: RunConfig, tokenizer: str, unit: Unit) -> dict:
    t0 = time.perf_counter()
    storage = Storage(config.output.root, s3_options(config))
    shards = config.shards
    stage = _tokenize_stage(shards.tokenize.model_dump_json(), tokenizer)  # for its dtype and special ids
    # Rows arrive in the shuffle's order; (key, id) fixes one whatever the path and the worker count.
    rows = rows.sort_by([("key", "ascending"), ("id", "ascending")])
    docs, rejected = split_rejected(rows, "shards")
    keys = docs.column("key").to_numpy()
    pad = special_id(stage.tokenizer, "layout.pad" if shards.layout.pad else "tokenize.eos", shards.layout.pad or shards.tokenize.eos)
    with UnitWork.for_phase(storage, ShardsPhase.name, unit) as work, tempfile.TemporaryDirectory() as staging:
        if rejected is not None:
            work.rejected().write(rejected)
        result = write_group(unit.name, docs.drop_columns(["group", "key"]), keys, shards.layout, stage.dtype, staging,
                             mds=shards.mds, mds_sink=StorageSink(storage, "shards", "mds", unit.name),
                             wds=shards.webdataset, wds_sink=StorageSink(storage, "shards", "webdataset", unit.name),
                             pad_id=pad)
        n_rej = 0 if rejected is None else len(rejected)
        if len(rows) != result.documents + n_rej:
            raise RuntimeError(f"{unit.name}: {len(rows)} documents in != {result.documents} written + {n_rej} rejected")
        reasons = Counter(rejected.column(REASON).to_pylist()) if rejected is not None else Counter()
        return work.commit({
            "in": len(rows), "documents": result.documents, "samples": result.samples, "tokens": result.tokens,
            "dropped_tokens": result.dropped_tokens, "dropped_documents": result.dropped_documents,
            "rejected": n_rej, "rejected_by_reason": dict(reasons),
            "dtype": np.dtype(stage.dtype).name, "tokenizer_sha256": stage.tokenizer_sha256,
            "mds_index": result.mds_index, "wds_index": result.wds_index,
            "mds_shards": [s.to_dict() for s in result.mds_shards], "wds_shards": [s.to_dict() for s in result.wds_shards],
            "seconds": round(time.perf_counter() - t0, 3),
        })


def _empty_group() -> dict:
    return {"in": 0, "documents": 0, "samples": 0, "tokens": 0, "dropped_tokens": 0, "dropped_documents": 0, "rejected": 0,
            "rejected_by_reason": {}, "mds_index": None, "wds_index": None, "mds_shards": [], "wds_shards": []}


def _empty_marker(group: int, corpus: str) -> dict:
    """The marker an empty group would have had: the same fingerprint as its unit."""
    return {"unit": group_name(group), "fingerprint": fingerprint(corpus, group), **_empty_group()}


def _mark_empty(storage: Storage, corpus: str, groups: list[int]) -> None:
    """Add ``groups`` to the one marker of the empty groups of ``corpus`` (an earlier corpus's list is dropped)."""
    where = marker_path(ShardsPhase.name, EMPTY)
    old = storage.read_json(*where) if storage.exists(*where) else {}
    known = set(old.get("groups", [])) if old.get("corpus") == corpus else set()
    storage.write_json({"unit": EMPTY, "fingerprint": corpus, "corpus": corpus, "groups": sorted(known | set(groups)),
                        **_empty_group()}, *where)


def check_dropped(config: RunConfig, groups: list[dict]) -> None:
    """Packing that drops more than ``shards.layout.max_dropped_share`` of the tokens is an error, before any
    manifest makes the shards visible (a seq_len longer than a group's tokens used to write 0 samples and exit 0)."""
    layout = config.shards.layout
    dropped = sum(g.get("dropped_tokens", 0) for g in groups)
    total = dropped + sum(g.get("tokens", 0) for g in groups)
    if not total or dropped / total <= layout.max_dropped_share:
        return
    documents = sum(g.get("dropped_documents", 0) for g in groups)
    raise ConfigError(
        f"config error: shards.layout.max_dropped_share: packing dropped {dropped:,} of {total:,} tokens ({dropped / total:.1%}, "
        f"{documents:,} whole documents), more than the {layout.max_dropped_share:.1%} allowed: each of the "
        f"{config.shards.shuffle.groups} groups drops its last partial sequence of seq_len {layout.seq_len}. Fix: lower "
        f"shards.layout.seq_len, use fewer shards.shuffle.groups, set shards.layout.remainder to pad or keep, or raise "
        f"shards.layout.max_dropped_share (the groups already written are kept)")


def processing_config(config: RunConfig) -> dict:
    """The config minus where things run and are stored: what decides the bytes."""
    return config.model_dump(mode="json", exclude={"output": {"root"}, "storage": True, "ray": True, "name": True,
                                                   "shards": {"local_max_docs": True, "layout": {"max_dropped_share"}}})


def write_manifest(ctx: RunContext, unit: Unit, groups: list[dict]) -> dict:
    """The merged indexes, then the manifest, then the marker: the dataset becomes visible."""
    storage, cfg = ctx.storage, ctx.config.shards
    formats = {}
    for fmt, key, enabled, merge in (("mds", "mds", cfg.mds.enabled, merge_mds_indexes),
                                     ("webdataset", "wds", cfg.webdataset.enabled, merge_wds_indexes)):
        if not enabled:
            continue
        indexes = {g["unit"]: g[f"{key}_index"] for g in groups if g.get(f"{key}_index")}
        with storage.atomic_output("shards", fmt, "index.json") as out:
            out.write(index_bytes(merge(indexes)))
        files = [{**s, "name": f"{g['unit']}/{s['name']}"} for g in groups for s in g[f"{key}_shards"]]
        formats[fmt] = {"shards": files, "samples": sum(s["samples"] for s in files), "tokens": sum(s["tokens"] for s in files),
                        "bytes": sum(s["bytes"] for s in files), "index": f"shards/{fmt}/index.json"}
    dtypes = {g["dtype"] for g in groups if g.get("dtype")}
    manifest = {
        "run": ctx.config.name,
        "source": unit.params["source"],
        "documents": sum(g["documents"] for g in groups),
        "tokenizer": {"path": cfg.tokenize.tokenizer, "sha256": next(iter({g["tokenizer_sha256"] for g in groups if g.get("tokenizer_sha256")}), None),
                      "dtype": next(iter(dtypes), None)},
        "layout": cfg.layout.model_dump(mode="json", exclude={"max_dropped_share"}),
        "dropped": {"documents": sum(g.get("dropped_documents", 0) for g in groups),
                    "tokens": sum(g.get("dropped_tokens", 0) for g in groups)},
        "shuffle": cfg.shuffle.model_dump(mode="json"),
        "config_sha256": fingerprint(processing_config(ctx.config)),
        "fingerprint": unit.fingerprint,
        "groups": [g["unit"] for g in groups],
        "formats": formats,
    }
    storage.write_json(manifest, "shards", "manifest.json")
    return UnitWork(storage, unit, marker_path(ShardsPhase.name, MANIFEST)).commit(
        {"documents": manifest["documents"], **{f"{f}_samples": v["samples"] for f, v in formats.items()}})


register(ShardsPhase)
