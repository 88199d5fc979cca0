"""Phase ``shards``: documents/final -> tokenized, globally shuffled training shards in every enabled
format (stages.writers.formats: MDS, WebDataset, Megatron IndexedDataset), as two declared steps.

``groups`` (a MAP step over the shuffle groups): one Ray Data pipeline: the parts are read, tasks tokenize
them (stages.tokenize: the tokenizer loads once per worker process), draw the training mix when there is one
(pipeline/mixing.py), and give every document its shuffle group and sort key (stages.shuffle_plan: a seeded
hash of its id); a hash shuffle brings each group's documents together, and one task per group writes its
shards (stages.writers.write_group), uploading each shard as it closes, then the group's indexes, then the
group's marker.  Tokenizing and planning stream into the shuffle: a step of their own would write every
token to disk once more.  A small input (``shards.local_max_docs``) takes the same path in one task on a
Ray worker, without Ray Data: its shuffle's set-up would cost more than the work (and the driver holds no
document, whatever the input).  A group the plan gives no document is recorded with the step's other empty
groups, in one marker (pipeline/engine/markers.py).

The unit is the group: ``shards.shuffle.groups`` of them, fixed by config, so the bytes do not depend on the
number of workers, and a rerun redoes only the groups without a current marker (the others are filtered out
before the shuffle).

``manifest`` (the FINAL step, after every group): each format's merged ``shards/<format>/index.json``, then
``shards/manifest.json``, last: a reader never sees an index or a manifest that names a missing shard.  The
engine deletes them before any rerun that has work to do.
"""

from __future__ import annotations

import functools
import json
import logging
import tempfile
import time
from collections import Counter

import numpy as np
import pyarrow as pa

from core.layout import DOCUMENTS, REJECTED, part_file
from core.memory import return_free_memory
from core.shuffle import grouped
from core.storage import Storage, open_input, resolve
from core.tables import count_rows, read_file
from pipeline import mixing
from pipeline.config import ConfigError, RunConfig, s3_options
from pipeline.datasets import blocks_for, read_files
from pipeline.distribute import Progress, failure, map_units
from pipeline.engine.steps import Job
from pipeline.phase import FINAL, MAP, PARTS, ROLE_SHARDS, Phase, Sink, Step, Unit, fingerprint
from pipeline.result import UnitResult, add_totals
from pipeline.units import PUBLISHED, UnitWork
from stages.base import REASON, StageSpec, split_rejected
from stages.mix import COPY, MixPlan, draw, group_totals
from stages.shuffle_plan import plan
from stages.tokenize import TokenizeConfig, TokenizeStage, special_id
from stages.writers import FORMATS, StorageSink, TokenInfo, enabled_formats, write_group
from stages.writers.manifest import dropped_entry, token_counts, tokenizer_entry, truncation_entry
from stages.writers.mds import index_bytes
from stages.writers.trainers import cut_warning, trainer_warnings

log = logging.getLogger(__name__)

MANIFEST = "_manifest"  # the unit of the final step: the merged indexes and the manifest, after every group
#: Above this many parts the input is never small: counting their rows would cost a request each on S3.
LOCAL_MAX_PARTS = 256


def group_name(group: int) -> str:
    return f"group-{group:05d}"


def group_number(name: str) -> int:
    return int(name.removeprefix("group-"))


def read_tokenizer(config: RunConfig) -> bytes:
    """The tokenizer file's bytes (read once on the driver, handed to every worker)."""
    with open_input(config.shards.tokenize.tokenizer, s3_options(config)) as f:
        return f.read()


def _sections(config: RunConfig) -> tuple[str, ...]:
    """The shards' settings (their file: the tokenizer), and the mix's when it draws."""
    return ("shards", "mix") if config.mix.draws else ("shards",)


def _draw(job: Job) -> MixPlan | None:
    """The training mix of this corpus (None: every document once), drawn once per run of the phase; the plan
    of an earlier run of the same corpus and settings is reused (pipeline/mixing.py)."""
    if "mix" not in job.memo:
        groups = next(p for p in job.ctx.step_plans(job.phase) if p.step.name == "groups")
        corpus = Unit(
            MANIFEST,
            groups.fingerprint,
            {"corpus": groups.fingerprint, "source": job.source, "parts": [p.name for p in job.parts]},
        )
        small = job.config.shards.local_max_docs
        job.memo["mix"] = mixing.draw_plan(
            job.ctx, corpus, lambda: read_tokenizer(job.config), lambda files: _is_small(job.storage, files, small)
        )
    return job.memo["mix"]


def _groups(job: Job, todo: list[Unit]):
    """The ``groups`` step: the groups to do, tokenized, planned, shuffled and written."""
    try:
        mix = _draw(job)
    except ConfigError:
        raise
    except Exception as e:  # a part that cannot be read: every group fails with the reason, no marker
        yield from (failure(u.name, e) for u in todo)
        return
    yield from _write_groups(job, todo, mix)


def _manifest(job: Job, unit: Unit) -> UnitResult:
    """The ``manifest`` step: every group is done; the merged indexes and the manifest make the shards visible."""
    groups = sorted(job.unit_results("groups"), key=lambda r: r.unit)
    check_dropped(job.config, groups)
    return write_manifest(job, unit, groups, _draw(job))


STEPS = (
    Step(
        "groups",
        "documents tokenized (and drawn to the mix), given a seeded shuffle group and key, shuffled by "
        "group; each group written to every format",
        MAP,
        _groups,
        reads=(PARTS,),
        sections=_sections,
        units=lambda config: [group_name(g) for g in range(config.shards.shuffle.groups)],
        counted=True,
        resume=True,
        outputs=lambda config: [("shards", f.name) for f in FORMATS],
        unit_outputs=lambda config, unit: [("shards", f.name, unit) for f in FORMATS],
        in_task=True,  # its Ray Data shuffle's executor and pieces are a task's, not the driver's
    ),
    Step(
        "manifest",
        "each format's merged index, then the manifest (what every format holds, the tokenizer beside)",
        FINAL,
        _manifest,
        depends=("groups",),
        unit=MANIFEST,
        counted=True,
        outputs=lambda config: [*(("shards", f.name, "index.json") for f in FORMATS), ("shards", "manifest.json")],
    ),
)


class ShardsPhase(Phase):
    name = "shards"
    label = "documents tokenized, shuffled and written to training shards"
    unit_kind = "group"
    role = ROLE_SHARDS
    sections = ("shards", "mix")
    headline_keys = ("in", "documents", "samples", "tokens", *(f"{f.name}_shards" for f in FORMATS))

    def stages(self, config: RunConfig, prepared=None) -> list[StageSpec]:
        return [StageSpec(TokenizeStage, config.shards.tokenize, "shards.tokenize")]

    def steps(self, config: RunConfig) -> list[Step]:
        return list(STEPS)

    def sinks(self, config: RunConfig) -> list[Sink]:
        formats = [Sink(f.name, f.label, f"shards/{f.name}/", ROLE_SHARDS) for f in enabled_formats(config.shards)]
        return [
            *formats,
            Sink(
                "manifest",
                "what every format holds: files, samples, tokens, the tokenizer",
                "shards/manifest.json",
                "manifest",
            ),
            Sink(
                "rejected",
                "documents with no tokens or that the tokenizer refused",
                f"{REJECTED}/{self.name}/",
                "rejected",
            ),
        ]

    def enabled(self, config: RunConfig) -> bool:
        return config.shards.enabled

    def check(self, config: RunConfig) -> None:
        """A layout or formats that do not fit the trainer the config names: a warning, before anything runs."""
        for warning in trainer_warnings(config.shards):
            log.warning("shards: %s", warning)


def _write_groups(job: Job, groups: list[Unit], mix: MixPlan | None = None):
    config, storage = job.config, job.storage
    todo = {group_number(u.name): u for u in groups}
    files = [storage.path(DOCUMENTS, job.source, part_file(p.name)) for p in job.parts]
    progress = Progress(
        ShardsPhase.name, len(groups), ShardsPhase.unit_kind, job.ctx.progress, counts=("documents", "tokens")
    )
    seen = set()
    if files and _is_small(storage, files, config.shards.local_max_docs):
        for stats in _write_groups_here(job, files, todo, mix):
            seen.add(stats.unit)
            progress.update(stats)
            yield stats
    elif files:
        tokenizer = read_tokenizer(config)
        workers = job.workers()  # starts Ray
        listed = storage.sizes(DOCUMENTS, job.source)
        blocks = blocks_for([listed.get(part_file(p.name), 0) for p in job.parts], 2 * workers)
        columns = _columns(config, files, storage)  # a column the parts of one source lack is null in their rows
        ds = read_files(config.output.root, s3_options(config), files, blocks, columns=columns, missing_ok=True)
        # Tasks, not an actor pool: actors would hold every CPU the shuffle after them needs.
        ds = ds.map_batches(
            _tokenize_and_plan,
            batch_format="pyarrow",
            num_cpus=1,
            fn_kwargs={
                "config": config.model_dump(mode="json"),
                "tokenizer": tokenizer,
                "groups": sorted(todo),
                "mix": mix.to_json() if mix else None,
            },
        )
        ds = grouped(ds, "group", max(1, min(len(todo), 4 * workers))).map_groups(
            _write_group_task,
            batch_format="pyarrow",
            fn_kwargs={
                "config": config.model_dump(mode="json"),
                "tokenizer": tokenizer,
                "units": {g: u.to_json() for g, u in todo.items()},
            },
        )
        for row in ds.iter_rows():
            stats = UnitResult.from_json(json.loads(row["stats"]))
            seen.add(stats.unit)
            progress.update(stats)
            yield stats
    for _group, u in sorted(todo.items()):  # groups the plan gave no document
        if u.name not in seen:
            stats = UnitResult(u.name, u.fingerprint, totals={"groups": 1}, empty=True)
            progress.update(stats)
            yield stats
    progress.close()


def _columns(config: RunConfig, files: list[str], storage: Storage) -> list[str]:
    """The columns of documents/final the shards need (never the rest of a wide part)."""
    import pyarrow.parquet as pq

    layout = config.shards.layout
    wanted = ["id", "url", "text", *layout.metadata, *mixing.columns(config)]
    have = pq.ParquetFile(files[0], filesystem=storage.fs).schema_arrow.names
    return [c for c in dict.fromkeys(wanted) if c in have]  # a metadata column no document has stays null


def _is_small(storage: Storage, files: list[str], local_max_docs: int) -> bool:
    """Whether the documents to shard fit ``shards.local_max_docs`` (rows from the Parquet footers)."""
    if local_max_docs <= 0 or len(files) > LOCAL_MAX_PARTS:
        return False
    return count_rows(storage, files) <= local_max_docs


def _write_groups_here(ctx: Job, files: list[str], todo: dict[int, Unit], mix: MixPlan | None = None):
    """The shuffle of a small input in one task on a Ray worker (SmallShards), without Ray Data's set-up: the
    same plan, groups and bytes as on Ray Data, and the driver holds none of it whatever the input."""
    unit = Unit(
        "small-input",
        "",
        {
            "files": files,
            "units": {str(g): u.to_json() for g, u in todo.items()},
            "mix": mix.to_json() if mix else None,
        },
    )
    ctx.workers()  # starts Ray as the run says (an address, its CPUs, without what a local run does not use)
    for out in map_units(ctx.config, [unit], SmallShards, workers=1):
        if "failed" in out:  # the task failed as a whole (a part cannot be read, its worker died): so does every group
            yield from (
                UnitResult.failure(u.name, out["failed"], fatal=out.get("fatal")) for _, u in sorted(todo.items())
            )
        else:
            yield from (UnitResult.from_json(r) for r in out["groups"])


class SmallShards:
    """A small input's groups in one task: each part read (the columns the shards need), tokenized and planned
    in turn, as Ray Data's tasks do, then each group written."""

    def __init__(self, config: RunConfig):
        self.config = config

    def process(self, unit: Unit) -> dict:
        import pyarrow.compute as pc

        storage = Storage(self.config.output.root, s3_options(self.config))
        config, tokenizer = self.config.model_dump(mode="json"), read_tokenizer(self.config)
        files, units = unit.params["files"], {int(g): u for g, u in unit.params["units"].items()}
        columns, wanted = _columns(self.config, files, storage), sorted(units)
        planned = []
        for f in files:
            part = read_file(storage, f, columns, missing_ok=True)
            planned.append(_tokenize_and_plan(part, config, tokenizer, wanted, unit.params["mix"]))
            return_free_memory()  # the tokenizer's per-call lists and encodings: freed, not kept by the allocator
        planned = pa.concat_tables(
            planned, promote_options="default"
        )  # parts of different sources may lack some columns
        groups = []
        for g in sorted(units):
            rows = planned.filter(pc.equal(planned.column("group"), g))
            if len(rows):  # a group without documents is written as empty by the caller
                groups.append(json.loads(_write_group_task(rows, config, tokenizer, units).column("stats")[0].as_py()))
        return {"groups": groups}


@functools.lru_cache(maxsize=2)
def _tokenize_stage(tokenize: str, tokenizer: bytes) -> TokenizeStage:
    """One tokenizer per worker process, whatever the number of tasks it runs."""
    return TokenizeStage(TokenizeConfig.model_validate_json(tokenize), tokenizer_bytes=tokenizer)


def _tokenize_and_plan(
    batch: pa.Table, config: dict, tokenizer: bytes, groups: list[int], mix: dict | None = None
) -> pa.Table:
    """Ray Data task: tokenizes a batch, gives each document its group and key, keeps the groups to do.
    With a training mix (``mix``, stages/mix.py), every document is tokenized once and drawn 0..n times first."""
    shards = RunConfig.model_validate(config).shards
    stage = _tokenize_stage(shards.tokenize.model_dump_json(), tokenizer)
    drawn = (
        draw(stage(batch), MixPlan.from_json(mix)) if mix is not None else batch
    )  # a repeat: a new id, its own group
    group, key = plan(drawn.column("id"), shards.shuffle.seed, shards.shuffle.groups)
    keep = np.isin(group, np.array(groups, dtype=np.int64))
    batch = (
        drawn.filter(pa.array(keep)) if mix is not None else stage(batch.filter(pa.array(keep)))
    )  # reason no_tokens...
    if not shards.layout.text:
        batch = batch.drop_columns(["text"])
    batch = batch.append_column("group", pa.array(group[keep])).append_column("key", pa.array(key[keep], pa.uint64()))
    if REASON not in batch.column_names:
        batch = batch.append_column(REASON, pa.nulls(len(batch), pa.string())).append_column(
            "details", pa.nulls(len(batch), pa.string())
        )
    return batch


def _write_group_task(rows: pa.Table, config: dict, tokenizer: bytes, units: dict) -> pa.Table:
    """Ray Data map_groups: one group's documents -> its shards, indexes and marker; a stats row."""
    unit = Unit.from_json(units[int(rows.column("group")[0].as_py())])
    run_config = RunConfig.model_validate(config)
    try:
        stats = _write_one_group(rows, run_config, tokenizer, unit)
    except Exception as e:  # the group fails alone (no marker, a rerun redoes it), unless the output cannot be written
        stats = failure(unit.name, e, resolve(run_config.output.root)[1])
    return pa.table({"stats": [json.dumps(stats.to_json())]})


def _write_one_group(rows: pa.Table, config: RunConfig, tokenizer: bytes, unit: Unit) -> UnitResult:
    t0 = time.perf_counter()
    storage = Storage(config.output.root, s3_options(config))
    shards = config.shards
    stage = _tokenize_stage(shards.tokenize.model_dump_json(), tokenizer)  # for its dtype and special ids
    # Rows arrive in the shuffle's order; (key, id) fixes one whatever the path and the worker count.
    rows = rows.sort_by([("key", "ascending"), ("id", "ascending")])
    docs, rejected = split_rejected(rows, "shards")
    keys = docs.column("key").to_numpy()
    pad = special_id(
        stage.tokenizer,
        "layout.pad" if shards.layout.pad else "tokenize.eos",
        shards.layout.pad or shards.tokenize.eos,
    )
    with UnitWork.for_phase(storage, ShardsPhase.name, unit) as work, tempfile.TemporaryDirectory() as staging:
        if rejected is not None:
            work.rejected().write(rejected)
        sinks = {f.name: StorageSink(storage, "shards", f.name, unit.name) for f in enabled_formats(shards)}
        token = TokenInfo(stage.dtype, max(stage.vocab_size, stage.tokenizer.max_id + 1))
        result = write_group(
            unit.name, docs.drop_columns(["group", "key"]), keys, shards, token, staging, sinks, pad_id=pad
        )
        n_rej = 0 if rejected is None else len(rejected)
        if len(rows) != result.documents + n_rej:
            raise RuntimeError(
                f"{unit.name}: {len(rows)} documents in != {result.documents} written + {n_rej} rejected"
            )
        reasons = Counter(rejected.column(REASON).to_pylist()) if rejected is not None else Counter()
        totals = result.totals()
        if COPY in docs.column_names:  # the training mix: samples, documents and tokens per source
            totals["mix"] = group_totals(docs)
        written = result.files.items()
        outputs = {
            "dtype": np.dtype(stage.dtype).name,
            "tokenizer_sha256": stage.tokenizer_sha256,
            "indexes": result.indexes,
            "files": {fmt: [f.to_dict() for f in files] for fmt, files in written},
            PUBLISHED: sorted(f"shards/{fmt}/{unit.name}/{f.name}" for fmt, files in written for f in files),
        }
        return work.commit(
            UnitResult(
                unit.name,
                docs_in=len(rows),
                kept=result.documents,
                rejected=n_rej,
                by_reason=reasons,
                totals=totals,
                outputs=outputs,
                seconds=time.perf_counter() - t0,
            )
        )


def check_dropped(config: RunConfig, groups: list[UnitResult]) -> None:
    """Packing that drops more than ``shards.layout.max_dropped_share`` of the tokens is an error, before any
    manifest makes the shards visible (a seq_len longer than a group's tokens used to write 0 samples and exit 0)."""
    layout = config.shards.layout
    dropped = sum(g.totals.get("dropped_tokens", 0) for g in groups)
    total = dropped + sum(g.totals.get("tokens", 0) for g in groups)
    if not total or dropped / total <= layout.max_dropped_share:
        return
    documents = sum(g.totals.get("dropped_documents", 0) for g in groups)
    raise ConfigError(
        "config error: shards.layout.max_dropped_share: packing "
        f"dropped {dropped:,} of {total:,} tokens ({dropped / total:.1%}, "
        f"{documents:,} whole documents), more than the {layout.max_dropped_share:.1%} allowed: each of the "
        f"{config.shards.shuffle.groups} groups drops its last "
        f"partial sequence of seq_len {layout.seq_len}. Fix: lower "
        "shards.layout.seq_len, use fewer shards.shuffle.groups, "
        "set shards.layout.remainder to pad or keep, or raise "
        f"shards.layout.max_dropped_share (the groups already written are kept)"
    )


def processing_config(config: RunConfig) -> dict:
    """The config minus where things run and are stored: what decides the bytes."""
    return config.model_dump(
        mode="json",
        exclude={
            "output": {"root"},
            "storage": True,
            "ray": True,
            "name": True,
            "shards": {"local_max_docs": True, "trainer": True, "layout": {"max_dropped_share"}},
        },
    )


def write_manifest(job: Job, unit: Unit, groups: list[UnitResult], mix: MixPlan | None = None) -> UnitResult:
    """Each format's merged index, then the manifest (the engine writes the marker after it): the dataset
    becomes visible."""
    storage, cfg = job.storage, job.config.shards
    totals = functools.reduce(add_totals, (g.totals for g in groups), {})
    given = totals.get("documents", 0)
    layouts = any(not f.per_document for f in enabled_formats(cfg))  # formats that take the layout's samples
    dropped = dropped_entry(totals if layouts else {}, cfg.layout)
    formats = {}
    for fmt in enabled_formats(cfg):
        indexes = {
            g.unit: g.outputs["indexes"][fmt.name] for g in groups if g.outputs.get("indexes", {}).get(fmt.name)
        }
        merged = fmt.merge(indexes)
        with storage.atomic_output("shards", fmt.name, "index.json") as out:
            out.write(index_bytes(merged))
        files = [
            {**f, "name": f"{g.unit}/{f['name']}"}
            for g in groups
            for f in g.outputs.get("files", {}).get(fmt.name, [])
        ]
        layout = "document" if fmt.per_document else cfg.layout.kind
        formats[fmt.name] = {
            "shards": files,
            "samples": sum(f["samples"] for f in files),
            "tokens": sum(f["tokens"] for f in files),
            "bytes": sum(f["bytes"] for f in files),
            "index": f"shards/{fmt.name}/index.json",
            "layout": layout,
            "documents": given if fmt.per_document else given - dropped["documents"],
            **fmt.describe(merged),
        }
    data = read_tokenizer(job.config)
    entry = tokenizer_entry(_tokenize_stage(cfg.tokenize.model_dump_json(), data).tokenizer, cfg)
    with storage.atomic_output(
        "shards", *entry["file"].split("/")
    ) as out:  # a trainer elsewhere needs the file itself
        out.write(data)
    samples = given - dropped["documents"]
    mix_section = mixing.manifest_mix(mix, groups) if mix is not None else None
    documents = mix_section["documents_drawn"] if mix_section else samples  # the mix repeats documents as new samples
    manifest = {
        "run": job.config.name,
        "source": job.source,
        "documents": documents,
        "samples": samples,
        "repeats": samples - documents,
        "documents_tokenized": given,
        "tokenizer": entry,
        "layout": cfg.layout.model_dump(mode="json", exclude={"max_dropped_share"}),
        "tokens": token_counts(totals, given, entry),
        "dropped": dropped,
        "truncation": truncation_entry(totals, cfg.layout),
        "shuffle": cfg.shuffle.model_dump(mode="json"),
        "config_sha256": fingerprint(processing_config(job.config)),
        "fingerprint": unit.fingerprint,
        "groups": [g.unit for g in groups],
        "formats": formats,
        **({"mix": mix_section} if mix_section else {}),
    }
    storage.write_json(manifest, "shards", "manifest.json")
    measured = cut_warning(cfg, manifest["truncation"], totals.get("tokens", 0))
    if measured:
        log.warning("shards: %s", measured)
    published = [*(f"shards/{f}/index.json" for f in formats), f"shards/{entry['file']}", "shards/manifest.json"]
    return UnitResult(
        MANIFEST,
        totals={"manifest": 1},
        outputs={
            "documents": manifest["documents"],
            **{f"{f}_samples": v["samples"] for f, v in formats.items()},
            PUBLISHED: published,
        },
    )
