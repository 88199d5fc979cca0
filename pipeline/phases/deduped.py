"""Phase ``deduped``: exact and MinHash-LSH deduplication of the whole corpus on Ray, as declared steps.

The steps (one module each in pipeline/dedup/) are declared once, in :data:`STEPS`, and the engine runs
them (pipeline/engine/steps.py): step 1 (signatures) maps over the parts and resumes part by part; the
corpus-wide steps after it rerun whenever the phase runs (each hands the next what it found, in memory); the
write step maps over the parts again and publishes ``documents/deduped`` and ``rejected/deduped``, one part
per input part, each marked like any other part; the last step writes the dedup index's settings file and
marks the corpus (``_done/deduped/_corpus.json``, the phase's one counted unit) with the summary.  What
each step's output depends on is declared with it (its config sections, the files it reads), so the
fingerprints come from the engine; what a rerun rewrites is deleted first, and with ``keep_intermediate:
false`` the intermediates under ``dedup/`` are deleted once the corpus is done.
"""

from __future__ import annotations

from collections import Counter

from core.layout import DOCUMENTS, REJECTED, part_file
from pipeline.config import RunConfig
from pipeline.dedup import (
    boilerplate,
    components,
    content,
    decisions,
    earlier,
    edges,
    ids,
    index as dedup_index,
    paragraphs,
    signatures,
    verify,
    write,
)
from pipeline.dedup.context import PHASE, SOURCE_PHASE, STAGE, DedupContext
from pipeline.dedup.earlier import REASON as DUPLICATE_EARLIER
from pipeline.dedup.ids import REASON as DUPLICATE_ID
from pipeline.engine.steps import Job
from pipeline.phase import FINAL, MAP, PARTS, SHUFFLE, Phase, Step, Unit
from pipeline.result import UnitResult
from stages.base import StageInfo, StageSpec
from stages.dedup import lsh
from stages.dedup.keep import EXACT, NEAR, URL
from stages.filters import text_filter_specs

#: The phase's one counted unit: the whole corpus (its marker is _done/deduped/_corpus.json).
CORPUS = "_corpus"


def _dedup(job: Job) -> DedupContext:
    """The run as the dedup steps see it (pipeline/dedup/context.py): the parts in order, part number = position."""
    if "dedup" not in job.memo:
        job.memo["dedup"] = DedupContext(
            job.config,
            job.storage,
            tuple(p.name for p in job.parts),
            job.workers(),
            job.ctx.progress,
            job.source or SOURCE_PHASE,
        )
    return job.memo["dedup"]


def _kept(config: RunConfig) -> bool:
    return config.dedup.keep_intermediate


def _folders(*folders: tuple[str, ...]):
    return lambda config: list(folders)


def _boilerplate_on(config: RunConfig) -> bool:
    return config.dedup.minhash.enabled and config.dedup.minhash.boilerplate.enabled


#: What step 1 writes per part (dedup/<folder>/part-<part>.parquet).
SIGNATURE_FOLDERS = ("buckets", "meta", "signatures")


def _signatures(job: Job, todo: list[Unit]):
    return signatures.compute_signatures(_dedup(job), todo)


def _signature_summary(total: UnitResult) -> dict:
    stats = total.totals
    # any part with scores: a cluster keeps its best-scored copy (``has_score``: a marker of an earlier version)
    scored = stats.get("scored_parts", 0) > 0 or stats.get("has_score") is True
    return {**signatures.summarize([stats]), "use_score": scored}


def _boilerplate(job: Job) -> dict:
    return boilerplate.find_boilerplate(_dedup(job), job.summary["bucket_rows"])


def _earlier_indexes(config: RunConfig) -> list[str]:
    """The earlier runs' index settings files (their corpus fingerprints): a ConfigError when one is missing or
    built with other settings."""
    dedup_index.check(config)
    return [f"{root.rstrip('/')}/{dedup_index.FOLDER}/{dedup_index.SETTINGS}" for root in config.dedup.against]


def _edges(job: Job) -> dict:
    found, info = edges.find_edges(_dedup(job), [job.totals["signatures"].totals])
    job.memo["edges"] = found
    return info


def _verify(job: Job) -> dict:
    ctx, found = _dedup(job), job.memo["edges"]
    if not verify.needed(ctx, found):
        return {}
    job.memo["edges"] = verify.verify_edges(ctx, found)
    return {"edges_verified": job.memo["edges"].rows}


def _components(job: Job) -> dict:
    ctx, found = _dedup(job), job.memo["edges"]
    out = {"components_path": "local" if components.is_local(ctx, found) else "distributed"}
    job.memo["components"] = None
    if found.rows:
        job.memo["components"], info = components.find_components(ctx, found)
        out.update(info)
    return out


def _decisions(job: Job) -> dict:
    found, s = job.memo["components"], job.summary
    if found is None and not s["duplicate_ids"] and not s.get("duplicate_earlier"):
        return {}
    return decisions.decide(_dedup(job), found, s["use_score"])


def _paragraphs(job: Job) -> dict:
    job.memo["paragraphs"] = paragraphs.find_repeated(_dedup(job))  # its summary is completed by the write step
    return {}


def _write_sections(config: RunConfig) -> tuple[str, ...]:
    """The rejected rows' text, and with paragraph dedup the filter rules it applies again to the rewritten texts."""
    return ("output.rejected_text", *(("dedup.paragraphs", "filters") if config.dedup.paragraphs.enabled else ()))


def _finish(job: Job, unit: Unit) -> UnitResult:
    """The dedup index's settings file (the index is complete), then the corpus's result: the phase's summary."""
    storage, config = job.storage, job.config
    written = job.totals.get("write", UnitResult(""))
    bands, rows = lsh.bands_rows(config.dedup.minhash)
    summary = {"parts": len(job.parts), "bands": bands, "rows": rows, **job.summary, "step_seconds": dict(job.seconds)}
    summary.update(write.summarize(written))
    if job.memo.get("paragraphs") is not None:
        summary["paragraphs"] = paragraphs.summarize_parts(job.memo["paragraphs"], [written.totals])
    names = [p.name for p in job.parts]
    dedup_index.write_settings(storage, config.dedup, unit.fingerprint, names, summary["kept"])
    # one listing, not a request per part file; the marker names no part (90,000 names: 1.8 MB of JSON, read by none)
    summary["index_bytes"] = sum(storage.sizes(dedup_index.FOLDER, suffix=".parquet").values())
    return corpus_result(summary, unit.name)


def corpus_result(summary: dict, unit: str = CORPUS) -> UnitResult:
    """The corpus unit's result from the summary: its documents in, kept and removed, the rest as totals."""
    rest = {k: v for k, v in summary.items() if k not in ("in", "kept", "rejected", "rejected_by_reason")}
    return UnitResult(
        unit,
        docs_in=summary.get("in", 0),
        kept=summary.get("kept", 0),
        rejected=summary.get("rejected", 0),
        by_reason=Counter(summary.get("rejected_by_reason") or {}),
        totals=rest,
    )


#: The steps of the phase, in order: the one declaration the plan shows and the engine runs.  Its shuffles run
#: ``in_task``: their Ray Data executors and pieces are a task's, not the driver's (pipeline/engine/beside.py).
STEPS = (
    Step(
        "signatures",
        "MinHash signatures, LSH band keys and exact hashes, part by part",
        MAP,
        _signatures,
        reads=(PARTS,),
        sections=("dedup.exact", "dedup.minhash", "dedup.keep", "dedup.batch_docs"),
        resume=True,
        outputs=_folders(*(("dedup", f) for f in SIGNATURE_FOLDERS)),
        unit_outputs=lambda config, unit: [("dedup", f, part_file(unit)) for f in SIGNATURE_FOLDERS],
        keep=_kept,
        summarize=_signature_summary,
    ),
    Step(
        "ids",
        "documents with the same id across parts",
        SHUFFLE,
        lambda job: ids.find_duplicate_ids(_dedup(job)),
        depends=("signatures",),
        outputs=_folders(ids.FOLDER),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "boilerplate",
        "signature values a host's pages share (host boilerplate)",
        SHUFFLE,
        _boilerplate,
        depends=("signatures",),
        reads=(PARTS,),
        sections=("dedup.minhash.boilerplate",),
        when=_boilerplate_on,
        outputs=_folders(boilerplate.FOLDER),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "content",
        "content candidates of pages with a long host block",
        SHUFFLE,
        lambda job: content.content_buckets(_dedup(job)),
        depends=("boilerplate",),
        reads=(PARTS,),
        when=_boilerplate_on,
        outputs=_folders(content.FOLDER),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "earlier",
        "documents an earlier run kept (dedup.against): exact hash or LSH key + signature check",
        SHUFFLE,
        lambda job: earlier.find_earlier(_dedup(job)),
        depends=("ids", "content"),
        sections=("dedup.against",),
        files=_earlier_indexes,
        when=lambda config: bool(config.dedup.against),
        outputs=_folders(earlier.FOLDER),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "edges",
        "candidate pairs from shared band keys and exact hashes (shuffle by key)",
        SHUFFLE,
        _edges,
        depends=("ids", "content", "earlier"),
        outputs=_folders(("dedup", "edges")),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "verify",
        "candidate pairs checked against their signatures",
        SHUFFLE,
        _verify,
        depends=("edges",),
        when=lambda config: config.dedup.minhash.enabled and config.dedup.minhash.verify != "off",
        outputs=_folders(("dedup", "edges-verified")),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "components",
        "connected components of the duplicate graph",
        SHUFFLE,
        _components,
        depends=("edges", "verify"),
        sections=("dedup.components",),
        outputs=_folders(("dedup", "components")),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "decisions",
        "one document kept per cluster, the others removed",
        SHUFFLE,
        _decisions,
        depends=("components", "ids", "earlier"),
        outputs=_folders(("dedup", "decisions")),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "paragraphs",
        "repeated paragraphs or lines found across the corpus (shuffle by hash)",
        SHUFFLE,
        _paragraphs,
        depends=("decisions",),
        reads=(PARTS,),
        sections=("dedup.paragraphs",),
        when=lambda config: config.dedup.paragraphs.enabled,
        outputs=_folders(paragraphs.FOLDER),
        keep=_kept,
        in_task=True,
    ),
    Step(
        "write",
        "kept and removed documents written, part by part",
        MAP,
        lambda job, todo: write.write_outputs(_dedup(job), todo),
        depends=("decisions", "paragraphs"),
        reads=(PARTS,),
        sections=_write_sections,
        publishes_parts=True,
        outputs=_folders((DOCUMENTS, PHASE), (REJECTED, PHASE), (dedup_index.FOLDER,)),
    ),
    Step(
        "corpus",
        "the dedup index completed and the corpus marked done, with the summary",
        FINAL,
        _finish,
        depends=("write",),
        unit=CORPUS,
        counted=True,
    ),
)


class DedupedPhase(Phase):
    name = "deduped"
    label = "exact and near duplicates removed"
    unit_kind = "corpus"
    sections = ("dedup",)
    #: columns a kept document gets (pipeline/dedup/write.py, paragraphs.py)
    adds = ("dup_cluster_size", "para_dedup_removed", "para_dedup_chars_removed")

    def enabled(self, config: RunConfig) -> bool:
        return config.dedup.enabled

    def declared_stages(self, config: RunConfig) -> list[StageInfo]:
        """The stages its removals name: document dedup, and paragraph dedup's filter rules on the rewritten texts."""
        if config.dedup.against:  # dedup.against: also copies of what earlier runs kept
            out = [
                StageInfo(
                    STAGE,
                    "exact and near duplicates removed (within the run and of earlier runs' documents)",
                    ("text",),
                    (),
                    (EXACT, URL, NEAR, DUPLICATE_ID, DUPLICATE_EARLIER),
                )
            ]
        else:
            out = [
                StageInfo(STAGE, "exact and near duplicates removed", ("text",), (), (EXACT, URL, NEAR, DUPLICATE_ID))
            ]
        if config.dedup.paragraphs.enabled:
            rules = [r for cls, cfg in text_filter_specs(config.filters) for r in StageSpec(cls, cfg).info().reasons]
            out.append(
                StageInfo(
                    paragraphs.STAGE,
                    "repeated paragraphs removed; documents too short after it",
                    ("text",),
                    ("para_dedup_removed", "para_dedup_chars_removed"),
                    (paragraphs.EMPTY, *rules),
                )
            )
        return out

    def steps(self, config: RunConfig) -> list[Step]:
        return list(STEPS)
