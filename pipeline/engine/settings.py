"""What every unit's fingerprint covers, read from the components' own declarations.

A unit's output depends on what it reads (an input file's identity, the fingerprints of the parts or the
step outputs it reads) and on the settings of every component it runs.  Each component says what those are:

- a stage (``StageSpec``): its class, and its config object (or the part of it the class's optional
  ``depends_on(config)`` names: a classifier scores with its model and preparation, not with its filter);
- a source kind: its config ``section``, and the stages only its rows meet;
- a sink: ``Sink.settings(config)`` (whether the rejected rows keep their text);
- a step: its ``sections`` (dotted config paths), ``files`` and ``version``;
- any file a config object names (``named_files()``: models, the tokenizer, block lists, eval sets), by
  identity: a small file by its content, a large one by size and modification time.

A config model leaves out of this what changes how a phase runs but not what it writes: the names in its
class attribute ``run_only`` (``shards.local_max_docs``, ``ray``...).  Nothing here is kept by hand per
phase, so a component's setting cannot be forgotten.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from core.storage import S3Options, is_s3, resolve
from pipeline.phase import INPUTS
from pipeline.readers import source_kinds

if TYPE_CHECKING:
    from pipeline.config import RunConfig
    from pipeline.phase import Phase, Sink, Step
    from stages.base import StageSpec

#: Files up to this size are identified by their content (a tokenizer, a block list); larger ones (a
#: fastText model of gigabytes) by size and modification time, as reading them at every plan would cost.
CONTENT_MAX_BYTES = 16 << 20
_IDENTITIES: dict[tuple, Any] = {}  # (path, size, mtime) -> identity: a file is hashed once per process


def settings_json(value: Any) -> Any:
    """``value`` as JSON-able data (a config model as its JSON dump: the same whether it was read from YAML or
    from run.json), without the fields its config models declare ``run_only``."""
    if isinstance(value, BaseModel):
        return _without_run_only(value, value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: settings_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): settings_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [settings_json(v) for v in value]
    return to_jsonable_python(value, fallback=repr)


def _without_run_only(model: Any, dumped: Any) -> Any:
    """``dumped`` (the JSON dump of ``model``) without what ``model`` and the models inside it declare ``run_only``."""
    if isinstance(model, BaseModel) and isinstance(dumped, dict):
        skip = getattr(type(model), "run_only", ())
        return {k: _without_run_only(getattr(model, k, None), v) for k, v in dumped.items() if k not in skip}
    if isinstance(model, (list, tuple)) and isinstance(dumped, list) and len(model) == len(dumped):
        return [_without_run_only(m, d) for m, d in zip(model, dumped, strict=True)]
    if isinstance(model, dict) and isinstance(dumped, dict):
        return {k: _without_run_only(model.get(k), v) for k, v in dumped.items()}
    return dumped


def section(config: RunConfig, path: str) -> Any:
    """The config object at a dotted path (``dedup.minhash``); ``*``: the whole config."""
    value: Any = config
    for key in [] if path == "*" else path.split("."):
        value = getattr(value, key)
    return value


def named_paths(value: Any) -> Iterator[str]:
    """Every file the config objects in ``value`` name (their enabled sections' ``named_files()``)."""
    from pipeline.preflight import named_files  # the same walk as the plan-time checks of these files

    if isinstance(value, BaseModel):
        yield from (named.path for _, named in named_files(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from named_paths(getattr(value, f.name))
    elif isinstance(value, dict):
        for v in value.values():
            yield from named_paths(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from named_paths(v)


def file_identity(path: str, s3: S3Options | None = None) -> Any:
    """What tells this file's version: its content's hash (small local files), else its size and
    modification time; None when it is not a file (a spaCy pipeline named by its package)."""
    if is_s3(path):
        fs, where = resolve(path, s3)
        info = fs.get_file_info(where)
        return [info.size, info.mtime_ns] if info.size is not None else None
    local = os.path.expanduser(path)
    if not os.path.isfile(local):
        return None
    st = os.stat(local)
    key = (os.path.abspath(local), st.st_size, st.st_mtime_ns)
    if key not in _IDENTITIES:
        if st.st_size > CONTENT_MAX_BYTES:
            _IDENTITIES[key] = [st.st_size, st.st_mtime_ns]
        else:
            with open(local, "rb") as f:
                _IDENTITIES[key] = hashlib.sha256(f.read()).hexdigest()[:16]
    return _IDENTITIES[key]


def files(value: Any, s3: S3Options | None) -> list:
    """The identities of the files ``value`` names, in order."""
    return [[p, file_identity(p, s3)] for p in named_paths(value)]


def class_id(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def stage(spec: StageSpec, s3: S3Options | None) -> dict:
    """A stage's part of a fingerprint: its class, the settings it depends on, the files its config names."""
    declared = getattr(spec.cls, "depends_on", None)
    value = declared(spec.config) if callable(declared) else spec.config
    return {"stage": class_id(spec.cls), "settings": settings_json(value), "files": files(spec.config, s3)}


def sink(spec: Sink, config: RunConfig) -> dict:
    return {"sink": spec.name, "settings": settings_json(spec.settings(config)) if spec.settings else None}


def sections(config: RunConfig, paths: tuple[str, ...], s3: S3Options | None) -> dict:
    """Each dotted config path's settings and the identities of the files its sections name."""
    return {p: {"settings": settings_json(section(config, p)), "files": files(section(config, p), s3)} for p in paths}


def map_phase(phase: Phase, config: RunConfig, s3: S3Options | None) -> dict:
    """Every component a map phase runs with ``config`` (a named source's effective config for its units): the
    source kinds (reading the input files), its stages, its sinks."""
    out: dict[str, Any] = {}
    if getattr(phase, "reads", None) == INPUTS:  # every source kind: a remote file's is first seen by its unit
        out["sources"] = [
            {
                "source": cls.name,
                **(
                    sections(config, (cls.section,), s3)
                    if cls.section
                    else {"settings": settings_json(cls.settings())}
                ),
                "stages": [stage(s, s3) for s in cls.stages(config)],
            }
            for cls in source_kinds(config)
        ]
    out["stages"] = [stage(s, s3) for s in phase.stages(config)]
    out["sinks"] = [sink(s, config) for s in phase.sinks(config)]
    return out


def step(spec: Step, config: RunConfig, s3: S3Options | None) -> dict:
    """A step's own part of its fingerprint: its sections, the files it reads, its version."""
    paths = spec.sections(config) if callable(spec.sections) else spec.sections
    return {
        "step": spec.name,
        "sections": sections(config, tuple(paths), s3),
        "files": [[p, file_identity(p, s3)] for p in (spec.files(config) if spec.files else [])],
        "version": spec.version() if spec.version else None,
    }
