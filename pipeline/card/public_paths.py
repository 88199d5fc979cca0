"""The paths stats.json and the card print, as a published card may print them: never the folders of the machine
that ran the job.

A run's config holds absolute paths (pipeline/paths.py makes them so before anything ships); its record keeps
the working directory they were read from (``run.json``'s ``working_dir``, never published).  A path inside it
is shown relative to it, as the config wrote it (``samples/quality/model.ftz``); any other local path by its
name (``dclm.bin``: a model is told by its sha256 where the card knows it); an ``s3://`` URI as it is.  That
covers the config (its path fields: the model, the tokenizer, eval sets, the output root...), the command, the
input files, the classifiers' models and the tokenizer; then the working directory's prefix is taken out of
every other string the card prints of the run (error messages, labels).
"""

from __future__ import annotations

from typing import Any

from pipeline.paths import map_paths, public_path, public_text


def _texts(value: Any, working_dir: str) -> Any:
    """``value`` (JSON) with the working directory's prefix taken out of every string."""
    if isinstance(value, str):
        return public_text(value, working_dir)
    if isinstance(value, list):
        return [_texts(v, working_dir) for v in value]
    if isinstance(value, dict):
        return {k: _texts(v, working_dir) for k, v in value.items()}
    return value


def _arg(arg: str, working_dir: str | None) -> str:
    """One word of the command: a path as a path (``-o /scratch/out`` -> ``out``), ``--x=path`` too."""
    key, eq, value = arg.partition("=")
    if eq and key.startswith("--"):
        return f"{key}={public_path(value, working_dir)}"
    return public_path(arg, working_dir)


def publish_paths(stats: dict, working_dir: str | None) -> dict:
    """``stats`` (changed in place and returned) with its paths as published; ``working_dir``: the run's (None for a
    record made before it was kept: every absolute path is then shown by its name)."""
    from pipeline.config import RunConfig

    run = stats["run"]
    if run.get("command"):
        run["command"] = [_arg(a, working_dir) for a in run["command"]]
    run["config"] = map_paths(run.get("config") or {}, RunConfig, lambda value, _mark: public_path(value, working_dir))
    for e in stats.get("classifiers", {}).get("entries", []):
        if isinstance(e.get("model"), str):
            e["model"] = public_path(e["model"], working_dir)
    tokenizer = (stats.get("tokens") or {}).get("tokenizer")
    if isinstance(tokenizer, dict) and isinstance(tokenizer.get("path"), str):
        tokenizer["path"] = public_path(tokenizer["path"], working_dir)
    for f in stats.get("sources", {}).get("per_file", []):
        f["file"] = public_path(f["file"], working_dir)
    if working_dir:
        for key in [k for k in stats if k != "examples"]:  # the examples are the data's own text
            stats[key] = _texts(stats[key], working_dir)
    return stats
