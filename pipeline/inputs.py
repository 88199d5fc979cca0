"""Turn the config's ``inputs`` into a sorted, de-duplicated list of input file URIs (WARC, JSON lines, Parquet).

An entry is a local path, a glob, an ``s3://`` URI or glob, a folder, or a
Common Crawl listing (``warc.paths`` / ``warc.paths.gz``) whose relative lines
are joined to ``inputs_base``.  An entry that matches nothing is an error that
names it, never an empty run.
"""

from __future__ import annotations

import gzip
import logging
import os
import posixpath
import re
from collections.abc import Iterable

from core import storage
from core.storage import S3Options
from core.threads import map_bounded
from stages.pii.names import masked_stem, short_hash

log = logging.getLogger(__name__)


class InputError(ValueError):
    pass


_LISTING = re.compile(r"(^|/)[^/]*\.paths(\.gz)?$")


def _read_listing(uri: str, base: str, s3: S3Options | None) -> list[str]:
    with storage.open_input(uri, s3) as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    out = []
    for line in data.decode("utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        out.append(line if "://" in line or line.startswith("/") else posixpath.join(base.rstrip("/") + "/", line))
    return out


def expand_inputs(entries: list[str], base: str = "s3://commoncrawl/", s3: S3Options | None = None) -> list[str]:
    found: list[str] = []
    for entry in entries:
        matches = storage.glob(entry, s3)
        if not matches:
            raise InputError(f"input not found: {entry} (no file matches this path or pattern)")
        for m in matches:
            if _LISTING.search(m):
                found.extend(_read_listing(m, base, s3))
            else:
                found.append(m)
    return sorted(dict.fromkeys(found))


#: Problems listed one a line before the rest are summed up (a listing of 90,000 wrong files is one error).
MAX_LISTED = 20


def check_formats(inputs: Iterable[str]) -> list[str]:
    """Every local input must be a file some source reads (WARC, JSON lines, Parquet) by its content (first
    bytes, decompressed if need be), whatever its name: raise InputError naming each that is not.  Remote
    inputs are checked by the unit that reads them (a request per file at plan time would cost minutes on a
    snapshot).  Returns the local document inputs (JSON lines, Parquet): the only ones whose fields the plan
    reads next (pipeline.preflight), so that a snapshot's WARCs are each opened once."""
    from stages.sources import NotAnInputError, check_input, sniff_stream

    def problem(uri: str) -> tuple[str | None, bool]:
        try:
            with open(os.path.expanduser(uri), "rb") as f:
                kind = check_input(sniff_stream(f, uri), uri)
        except NotAnInputError as e:
            return f"input error: {e}", False
        except OSError as e:
            return f"input error: input {uri} cannot be read: {e.strerror or e}", False
        return None, kind == "documents"

    local = [f for f in inputs if not storage.is_s3(f)]
    checked = list(map_bounded(problem, local))
    problems = [p for p, _ in checked if p]
    if problems:
        more = len(problems) - MAX_LISTED
        raise InputError(
            "\n".join(
                problems[:MAX_LISTED]
                + ([f"input error: ... and {more} more files that no source reads"] if more > 0 else [])
            )
        )
    return [uri for uri, (_, documents) in zip(local, checked, strict=True) if documents]


def without_output(inputs: list[str], output_root: str) -> list[str]:
    """The inputs minus anything under the output root (an output folder inside an input folder
    would otherwise be read back as input when the run resumes)."""
    root = _comparable(output_root).rstrip("/") + "/"
    kept = [f for f in inputs if not _comparable(f).startswith(root)]
    if len(kept) < len(inputs):
        log.warning("%d input files are inside the output root %s: not read", len(inputs) - len(kept), output_root)
    if inputs and not kept:
        raise InputError(f"input not found: every input file is inside the output root {output_root}")
    return kept


def _comparable(uri: str) -> str:
    return uri if "://" in uri else os.path.abspath(os.path.expanduser(uri))


def unit_name(uri: str) -> str:
    """A stable, unique, readable name for an input file's outputs, free of PII: a file name that holds a PII
    candidate (an e-mail address, a phone number, any 7+ digits but a Common Crawl name's) is ``MASKED``
    (stages/pii/names.py); the 8 hex digits of the URI's SHA-1 keep the names apart."""
    stem = posixpath.basename(uri)
    for ext in (".gz", ".zst", ".warc", ".arc", ".jsonl", ".json", ".ndjson", ".parquet"):
        stem = stem.removesuffix(ext)
    stem = masked_stem(uri) or re.sub(r"[^A-Za-z0-9._-]+", "_", stem)[:80] or "input"
    return f"{stem}-{short_hash(uri)}"


#: Names that tell an input's kind (its content decides how it is read; the name, what columns the run's parts have).
_KIND_NAMES = {
    "warc": (".warc", ".warc.gz", ".arc", ".arc.gz"),
    "documents": (
        ".jsonl",
        ".jsonl.gz",
        ".jsonl.zst",
        ".json.gz",
        ".json.zst",
        ".json",
        ".ndjson",
        ".ndjson.gz",
        ".parquet",
        ".pq",
    ),
}


def input_kinds(inputs: list[str]) -> list[str]:
    """The source kinds of ``inputs`` (stages.sources.kinds), in SOURCES' order, by their names (every kind for a name
    that does not tell): what the plan knows without a request per file, the same on any machine (``curate report``
    away from the inputs), so the units' fingerprints do not depend on where the inputs are."""
    from stages.sources.kinds import SOURCES

    found: set[str] = set()
    for uri in inputs:
        named = {k for k, ends in _KIND_NAMES.items() if uri.lower().endswith(ends)}
        found |= named or {s.name for s in SOURCES}
    return [s.name for s in SOURCES if s.name in found]
