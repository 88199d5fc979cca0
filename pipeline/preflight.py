"""What a run can know before it starts any work, checked by ``validate``, ``run --dry-run`` and ``run``.

- every file and model the config names: each enabled config section lists
  them in ``named_files()`` (stages.named_files), and each is opened and
  checked here (a tokenizer loads and holds its special tokens, a fastText
  model has the fastText header, a block list is readable text, a spaCy
  pipeline is importable);
- the output root: a folder (or S3 prefix) where a probe file can be created
  and removed;
- the local inputs: WARC files by their content (pipeline.inputs.check_formats);
- document inputs (JSON lines, Parquet), local and ``s3://``: the fields ``documents`` names are there, read
  from a Parquet footer or a JSON lines file's first records (:func:`check_document_fields`);
- ``dedup.against``: each earlier run's dedup index exists and was built with this run's settings
  (pipeline.dedup.index.problems).

Every problem is one line naming the field (or the input) and the fix; all of
them are reported at once, as one ConfigError.
"""

from __future__ import annotations

import errno
import os
import posixpath
import uuid
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel

from core.storage import Storage, is_s3, open_input
from core.threads import map_bounded
from pipeline.config import ConfigError, RunConfig, s3_options
from pipeline.inputs import MAX_LISTED, InputError, check_formats
from pipeline.readers import reader_for
from stages.named_files import NamedFile, NamedFileError
from stages.sources import JSONL_NAMES


def named_files(section: BaseModel, prefix: str = "") -> Iterator[tuple[str, NamedFile]]:
    """(path of its section, e.g. ``shards.``; named file) of every enabled section of ``section`` (a
    section with ``enabled: false`` reads nothing, nor do the sections inside it)."""
    if getattr(section, "enabled", True) is False:
        return
    lister = getattr(section, "named_files", None)
    for named in lister() if callable(lister) else ():
        yield prefix, named
    for name in type(section).model_fields:
        value = getattr(section, name)
        if isinstance(value, BaseModel):
            yield from named_files(value, f"{prefix}{name}.")
        elif isinstance(value, list):  # a list of sections (classifiers): each by its index
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from named_files(item, f"{prefix}{name}.{i}.")


def check_named_files(config: RunConfig) -> list[str]:
    """One line per named file that is missing or not what its field needs."""
    s3 = s3_options(config)

    def open_file(path: str):  # local files through Python: its errors say what is wrong (a folder...)
        return open_input(path, s3) if is_s3(path) else open(os.path.expanduser(path), "rb")

    def problem(item: tuple[str, NamedFile]) -> str | None:
        section, named = item
        try:
            named.check(named.path, open_file)
        except NamedFileError as e:  # e.field: another field of the section is at fault (a special token...)
            return f"config error: {section}{e.field or named.field}: {e}"
        return None

    with ThreadPoolExecutor(8) as pool:
        return [p for p in pool.map(problem, list(named_files(config))) if p]


_OUTPUT_FIX = {
    errno.EACCES: "choose another output.root or give this user write access to it",
    errno.EPERM: "choose another output.root or give this user write access to it",
    errno.EROFS: "it is on a read-only filesystem: choose another output.root",
    errno.ENOSPC: "its disk is full: free space or choose another output.root",
    errno.EDQUOT: "the disk quota is exhausted: free space or choose another output.root",
}


def check_output(config: RunConfig) -> list[str]:
    """The output root must be a folder (or S3 prefix) where a file can be created and removed."""
    root = config.output.root
    if is_s3(root):
        return _probe_s3(config)
    path = os.path.abspath(os.path.expanduser(root))
    blocker = next((p for p in _ancestors(path) if os.path.exists(p) and not os.path.isdir(p)), None)
    if blocker is not None:
        where = "is a file" if blocker == path else f"is inside {blocker}, which is a file"
        return [f"config error: output.root: {root} {where}, not a folder (give the path of a folder)"]
    created = [p for p in _ancestors(path) if not os.path.exists(p)]
    probe = os.path.join(path, f".curate-probe-{uuid.uuid4().hex}")
    try:
        os.makedirs(path, exist_ok=True)
        with open(probe, "wb") as f:
            f.write(b"\0" * 4096)  # a few blocks: an empty file is created even on a full disk
    except OSError as e:
        fix = _OUTPUT_FIX.get(e.errno, "choose another output.root")
        return [f"config error: output.root: cannot write in {root} ({e.strerror or e}): {fix}"]
    finally:
        if os.path.exists(probe):
            os.remove(probe)
        for p in reversed(created):  # leave the disk as it was: a dry run writes nothing
            try:
                os.rmdir(p)
            except OSError:
                break
    return []


def _ancestors(path: str) -> list[str]:
    """``path`` and its parents, outermost first."""
    out = [path]
    while os.path.dirname(out[-1]) != out[-1]:
        out.append(os.path.dirname(out[-1]))
    return list(reversed(out))


def _probe_s3(config: RunConfig) -> list[str]:
    storage = Storage(config.output.root, s3_options(config))
    probe = storage.path(f".curate-probe-{uuid.uuid4().hex}")
    try:
        with storage.fs.open_output_stream(probe) as out:
            out.write(b"probe")
        storage.fs.delete_file(probe)
    except OSError as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        return [
            f"config error: output.root: cannot write to {posixpath.join(config.output.root, '')} ({first}): "
            f"check the bucket, the credentials and storage.endpoint_url"
        ]
    return []


#: ``s3://`` document inputs whose fields are checked at plan time, at most (spread over each source's list: a dump's
#: files share a schema, and a request or two per file for 90,000 files would cost minutes).
MAX_REMOTE_FIT_CHECKS = 64
#: Names that say a remote file may be documents (a remote WARC is never opened at plan time).
_DOCUMENT_NAMES = (*JSONL_NAMES, ".parquet", ".pq")


def _spread(items: list[str], n: int) -> list[str]:
    """At most ``n`` of ``items``, evenly spaced, the first and the last included."""
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def check_document_fields(config: RunConfig, inputs: Sequence[str], local: Collection[str] | None = None) -> list[str]:
    """One line per document input (JSON lines, Parquet) without a field ``documents`` names (its source's
    settings with named sources), from a bounded read: the Parquet footer, or the first records (at most
    stages.sources.documents_fit.FIRST_RECORDS and FIRST_BYTES).  Every local input is looked at (or those of
    ``local``: the ones that may be documents); of the ``s3://`` ones named like documents,
    MAX_REMOTE_FIT_CHECKS per source."""
    from pipeline.sources import input_sources
    from stages.sources import sniff_stream
    from stages.sources.documents_fit import fit_problem

    s3 = s3_options(config)
    owner = input_sources(config, inputs)  # {} unless the run names sources
    index = {s.name: i for i, s in enumerate(config.sources)}
    remote: dict[str | None, list[str]] = {}
    for uri in inputs:
        if is_s3(uri) and uri.lower().endswith(_DOCUMENT_NAMES):
            remote.setdefault(owner.get(uri), []).append(uri)
    todo = [u for u in inputs if not is_s3(u) and (local is None or u in local)]
    todo += [u for uris in remote.values() for u in _spread(uris, MAX_REMOTE_FIT_CHECKS)]

    def problem(uri: str) -> str | None:
        name = owner.get(uri)
        try:
            with open_input(uri, s3) if is_s3(uri) else open(os.path.expanduser(uri), "rb") as f:
                found = sniff_stream(f, uri)
                if found.kind != "documents":
                    return None  # WARCs; what no source reads is check_formats' to say
                fault = fit_problem(f, found, config.for_source(name).documents)
        except OSError:
            return None  # unreadable: check_formats (local) or the unit (remote) says so
        if fault is None:
            return None
        key, what = fault
        where = f"sources[{index[name]}] ({name}): documents.{key}" if name else f"documents.{key}"
        fix = "the field that holds the text" if key == "text" else "the field that holds it, or null"
        return f"config error: {where}: input {uri} {what}: set documents.{key} to {fix}"

    problems = [p for p in map_bounded(problem, todo) if p]
    more = len(problems) - MAX_LISTED
    rest = [f"config error: ... and {more} more document inputs like these"] if more > 0 else []
    return problems[:MAX_LISTED] + rest


def preflight(config: RunConfig, inputs: Sequence[str]) -> None:
    """Raise one ConfigError listing every problem found before any work (none: returns)."""
    from pipeline.dedup import index as dedup_index  # dedup.against: each earlier run's index, its settings

    problems = [*check_named_files(config), *check_output(config), *dedup_index.problems(config)]
    own = {f for f in inputs if reader_for(config, f) is not None}  # a reader of the run's own reads them
    try:
        documents: list[str] | None = check_formats(f for f in inputs if f not in own)
    except InputError as e:
        problems += str(e).splitlines()
        documents = None  # which are documents is not known: every local input's fields are looked at
    # each local input opened once more only if it may be documents (a snapshot's WARCs: opened once)
    problems += check_document_fields(config, inputs, None if documents is None else {*documents, *own})
    if problems:
        raise ConfigError("\n".join(problems))
