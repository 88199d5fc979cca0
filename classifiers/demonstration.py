"""Demonstration models: told by what they are (the sha256 of the file), not by where they are.

The models under samples/ that the sample runs use are small and trained on the
samples; a card must say so whatever path the run gave them (a copy, a
renamed file, an object-store path mirrored locally).  Each committed
demonstration model's digest is registered in ``demonstrations.json`` beside
this module by the command that makes it (:func:`register`); :func:`identify`
hashes a model file (only files small enough to be one: a production model is
gigabytes and is never hashed) and looks the digest up.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

REGISTRY = Path(__file__).with_name("demonstrations.json")
#: No demonstration model is larger: a bigger file is not hashed (a production model is gigabytes).
MAX_BYTES = 16 << 20


@dataclass(frozen=True)
class Demonstration:
    sha256: str
    #: what it is, for the card ("the demonstration toxicity model trained on samples/classifiers/comments.jsonl")
    what: str
    #: the command that makes it
    made_by: str


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _registry() -> dict[str, dict]:
    return json.loads(REGISTRY.read_text(encoding="utf-8")) if REGISTRY.is_file() else {}


def identify(path: str | os.PathLike | None) -> Demonstration | None:
    """The demonstration model at ``path``, or None (not one, not a local file, or too large to be one)."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size > MAX_BYTES:
        return None
    return _identify(os.path.abspath(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _identify(path: str, size: int, mtime_ns: int) -> Demonstration | None:
    digest = sha256_of(path)
    entry = _registry().get(digest)
    return Demonstration(digest, entry["what"], entry["made_by"]) if entry else None


def known(digest: str | None) -> Demonstration | None:
    """The demonstration model whose file has this sha256 (recorded elsewhere, e.g. in a shards manifest), or None."""
    entry = _registry().get(digest or "")
    return Demonstration(digest, entry["what"], entry["made_by"]) if entry else None


def register(path: str | os.PathLike, what: str, made_by: str, replaces: str | None = None) -> str:
    """Record the model at ``path`` as a demonstration model (``replaces``: the digest of the model it
    replaces, dropped); returns its digest."""
    digest = sha256_of(path)
    entries = {k: v for k, v in _registry().items() if k != replaces}
    entries[digest] = {"what": what, "made_by": made_by}
    REGISTRY.write_text(json.dumps(dict(sorted(entries.items())), indent=2) + "\n", encoding="utf-8")
    return digest
