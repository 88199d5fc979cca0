"""Turn the config's ``inputs`` into a sorted, de-duplicated list of WARC URIs.

An entry is a local path, a glob, an ``s3://`` URI or glob, a folder, or a
Common Crawl listing (``warc.paths`` / ``warc.paths.gz``) whose relative lines
are joined to ``inputs_base``.  An entry that matches nothing is an error that
names it, never an empty run.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import posixpath
import re

from pipeline import storage
from pipeline.storage import S3Options


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
    """A stable, unique, readable name for an input file's outputs."""
    stem = posixpath.basename(uri)
    for ext in (".gz", ".warc", ".arc"):
        stem = stem.removesuffix(ext)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)[:80] or "input"
    return f"{stem}-{hashlib.sha1(uri.encode()).hexdigest()[:8]}"
