"""Where a config's paths point, and how a run shows them.

Every path a config names (a model, the tokenizer, block lists, eval sets, the output root, earlier runs'
roots, spaCy pipelines given as folders: the fields typed ``ConfigPath``, stages/named_files.py) is read
from the **working directory** the run starts in when it is relative, as ``--input`` and ``--output`` are,
as DataTrove's and NeMo Curator's command lines read theirs.  A cluster's workers do not share that
directory (a worker started by ``ray start`` runs in the folder ``ray start`` ran in), so
:func:`resolve_paths` makes every such path absolute on the driver when a config file is loaded, before
anything ships: workers receive absolute paths, and each file must be at that path on every node (a shared
filesystem, the same image, or ``ray job submit --working-dir``, which unpacks the working dir at the same
path on every node that keeps Ray's default temp dir).  Input files keep the name they were given (the
``source`` column, unit names); the driver hands each unit its absolute path.

What a run publishes never shows the driver's folders: :func:`public_path` gives a path inside the working
directory relative to it (as the config wrote it) and any other local path by its name.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Callable
from typing import Any, Union

from pydantic import BaseModel

from stages.named_files import PathField, public_path, public_text  # noqa: F401 (re-exported)

#: (value, its field's marker) -> the value to put in its place
PathMap = Callable[[str, PathField], str]


def _marker_in(tp: Any) -> PathField | None:
    """The PathField marking ``tp`` (an annotation) or the items of the list, mapping or optional it is."""
    if typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        return next((a for a in args[1:] if isinstance(a, PathField)), None) or _marker_in(args[0])
    return next((m for m in map(_marker_in, typing.get_args(tp)) if m is not None), None)


def marker(model: type[BaseModel], name: str) -> PathField | None:
    """The PathField of a model's field ``name``, or None if it holds no paths."""
    field = model.model_fields[name]
    return next((m for m in field.metadata if isinstance(m, PathField)), None) or _marker_in(field.annotation)


def _model_in(tp: Any) -> tuple[type[BaseModel] | None, bool]:
    """(the config model inside an annotation, whether the field maps names to such models)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp, False
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if origin in (Union, types.UnionType) or origin is typing.Annotated:
        return _model_in(args[0]) if args else (None, False)
    if origin in (list, tuple) and args:
        return _model_in(args[0])[0], False
    if origin is dict and len(args) == 2:
        return _model_in(args[1])[0], True
    return None, False


def _strings(value: Any, f: Callable[[str], str]) -> Any:
    """``value`` (a string, or a list or mapping of them) with every string mapped by ``f``."""
    if isinstance(value, str):
        return f(value)
    if isinstance(value, list):
        return [_strings(v, f) for v in value]
    if isinstance(value, dict):
        return {k: _strings(v, f) for k, v in value.items()}
    return value


def map_paths(data: Any, model: type[BaseModel], f: PathMap) -> Any:
    """``data`` (a section of a config as JSON: raw, or a dump) with every path of ``model``'s fields mapped by ``f``;
    named sources' overrides follow the run config's sections they override."""
    from pipeline.sources import SourceConfig

    if not isinstance(data, dict):
        return data
    out = dict(data)
    for key, value in data.items():
        if key not in model.model_fields or value is None:
            continue
        mark = marker(model, key)
        if mark is not None:
            out[key] = _strings(value, lambda s, m=mark: f(s, m))
            continue
        sub, by_name = _model_in(model.model_fields[key].annotation)
        if sub is None:
            if issubclass(model, SourceConfig) and isinstance(value, dict):
                out[key] = _override(key, value, f)
        elif isinstance(value, dict):
            out[key] = {k: map_paths(v, sub, f) for k, v in value.items()} if by_name else map_paths(value, sub, f)
        elif isinstance(value, list):
            out[key] = [map_paths(v, sub, f) for v in value]
    return out


def _override(section: str, over: dict, f: PathMap) -> dict:
    """A named source's override of one run-config section, its paths mapped (classifiers: by classifier name)."""
    from pipeline.config import RunConfig

    sub, _ = _model_in(RunConfig.model_fields[section].annotation)
    if sub is None:
        return over
    if typing.get_origin(RunConfig.model_fields[section].annotation) is list:  # {name: overrides of that entry}
        return {name: map_paths(v, sub, f) for name, v in over.items()}
    return map_paths(over, sub, f)


def _walk(model: BaseModel, f: PathMap) -> None:
    """Map every path of a validated config in place (defaults included: they are paths too)."""
    from pipeline.sources import SourceConfig

    for name in type(model).model_fields:
        value = getattr(model, name)
        if value is None:
            continue
        mark = marker(type(model), name)
        if mark is not None:
            model.__dict__[name] = _strings(value, lambda s, m=mark: f(s, m))
        elif isinstance(model, SourceConfig) and isinstance(value, dict):
            model.__dict__[name] = _override(name, value, f)
        elif isinstance(value, BaseModel):
            _walk(value, f)
        elif isinstance(value, (list, dict)):
            for item in value.values() if isinstance(value, dict) else value:
                if isinstance(item, BaseModel):
                    _walk(item, f)


def absolute(value: str, base: str, or_name: bool = False) -> str:
    """``value`` read from ``base`` (a folder): an absolute local path; an ``s3://`` URI or an empty value as it is;
    with ``or_name``, a bare name that is not a file or folder in ``base`` too (a package)."""
    if not value.strip() or "://" in value:
        return value
    path = os.path.join(base, os.path.expanduser(value))
    if or_name and not ("/" in value or os.sep in value or value.startswith((".", "~")) or os.path.exists(path)):
        return value
    return os.path.normpath(path)


def resolve_paths(config, base: str | None = None) -> None:
    """Make every path of ``config`` (a RunConfig) absolute, read from ``base`` (default: the working directory)."""
    base = os.path.abspath(base or os.getcwd())
    _walk(config, lambda value, mark: absolute(value, base, mark.or_name))
    config._by_source = {}  # named sources' effective configs: rebuilt from the absolute paths when asked for
