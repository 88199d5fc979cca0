"""Decontamination in a run: the eval n-gram index built once, in a Ray task, and shipped to the final
phase's workers (stages/decontam does the matching; docs/decontam.md says why it runs first in ``final``).

A task of its own (a worker process that exits after it) reads every eval set through the run's storage
settings (local paths, or ``s3://`` with the configured endpoint) and builds the index
(``stages.decontam.build_index``); its result goes to Ray's object store, and the driver holds only the
reference and the statistics: an eval set of 1M items (492 MB) took the driver to 5.5 GB when it was
built there.  The index may take at most ``INDEX_SHARE`` of the cluster's object store, which every worker
process maps it from without a copy: a bigger one is refused with one line before it is finished.  The
units' fingerprints cover the decontam settings and each eval file's identity (the engine's, from the files
the section names), so a changed eval set redoes the final phase.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.storage import is_s3, open_input

if TYPE_CHECKING:
    from pipeline.config import RunConfig
    from pipeline.context import RunContext


@dataclass(frozen=True)
class Prepared:
    """What the final phase hands its workers: its stages' own global data (top-fraction cutoffs) and the
    eval index (a Ray object reference, or None without decontamination)."""

    stages: Any = None
    index: Any = None


def opener(config: RunConfig):
    """Opens an eval file: s3:// with the run's endpoint and credentials, a local path as Python does (its
    errors say what is wrong: a folder, a missing file)."""
    from pipeline.config import s3_options

    s3 = s3_options(config)
    return lambda path: open_input(path, s3) if is_s3(path) else open(os.path.expanduser(path), "rb")


#: The share of the cluster's object store the eval index may take (it is mapped from there by every worker).
INDEX_SHARE = 0.5


def build(ctx: RunContext):
    """The eval index of the run in Ray's object store, built by a task, and its statistics (None, None when
    decontamination is off); EvalSetError (one line) for an eval set that cannot be read or indexed."""
    if not ctx.config.decontam.enabled:
        return None, None
    import ray

    from stages.decontam import EvalSetError

    ctx.workers()  # starts Ray
    limit = int(ray.cluster_resources().get("object_store_memory", 0) * INDEX_SHARE) or None
    # max_calls=1: the build's freed memory leaves with its worker process instead of staying in a pooled one
    task = ray.remote(num_returns=2, max_calls=1, max_retries=0)(_build_task)
    index, stats = task.remote(ctx.config.decontam, opener(ctx.config), limit)
    try:
        return index, ray.get(stats)
    except ray.exceptions.RayTaskError as e:
        if isinstance(getattr(e, "cause", None), EvalSetError):
            raise e.cause from None  # the eval set's own one-line error, as when it was built in the driver
        raise


def _build_task(config, open_file, limit: int | None):
    """Ray task: the index (to the object store) and its statistics (to the driver)."""
    from stages.decontam import build_index

    index = build_index(config, open_file, max_index_bytes=limit)
    return index, index.stats


def unpack(prepared: Any) -> tuple[Any, Any]:
    """(the eval index, or None; the stages' own prepared data) from what the final phase handed a worker."""
    if not isinstance(prepared, Prepared):
        return None, prepared
    if prepared.index is None:
        return None, prepared.stages
    import ray

    return ray.get(prepared.index), prepared.stages
