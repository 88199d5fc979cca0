"""Decontamination in a run: the eval n-gram index built once on the driver and shipped to the final
phase's workers (stages/decontam does the matching; docs/decontam.md says why it runs first in ``final``).

The driver reads every eval set through the run's storage settings (local paths, or ``s3://`` with the
configured endpoint), builds the index (``stages.decontam.build_index``) and puts it in Ray's object store
once; each worker process gets the reference and maps the index's arrays without a copy.  The units'
fingerprints cover the decontam settings and each eval file's identity (the engine's, from the files the
section names), so a changed eval set redoes the final phase.
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


def opener(config: "RunConfig"):
    """Opens an eval file: s3:// with the run's endpoint and credentials, a local path as Python does (its
    errors say what is wrong: a folder, a missing file)."""
    from pipeline.config import s3_options

    s3 = s3_options(config)
    return lambda path: open_input(path, s3) if is_s3(path) else open(os.path.expanduser(path), "rb")


def build(ctx: "RunContext"):
    """The eval index of the run in Ray's object store, and its statistics (None, None when decontamination is off)."""
    if not ctx.config.decontam.enabled:
        return None, None
    import ray

    from stages.decontam import build_index

    index = build_index(ctx.config.decontam, opener(ctx.config))
    ctx.workers()  # starts Ray
    return ray.put(index), index.stats


def unpack(prepared: Any) -> tuple[Any, Any]:
    """(the eval index, or None; the stages' own prepared data) from what the final phase handed a worker."""
    if not isinstance(prepared, Prepared):
        return None, prepared
    if prepared.index is None:
        return None, prepared.stages
    import ray

    return ray.get(prepared.index), prepared.stages

