"""Local folders and S3 behind one small interface (pyarrow.fs).

pyarrow's S3 client needs no boto stack; credentials come from the usual AWS
variables (``AWS_ACCESS_KEY_ID`` ...) and the endpoint from the config or
``AWS_ENDPOINT_URL``.  Writes are atomic.  Locally, a file is written under a
temporary name and renamed once complete.  On S3, it is staged in a local temporary
file and uploaded to its final key once complete: a PUT (or multipart upload) makes
an object appear whole or not at all, and no temporary object is deleted, since
pyarrow recreates the parent "folder" of every object it deletes as a zero-byte
marker object (apache/arrow#36275).  So a run leaves no marker objects; only a
rerun that deletes an earlier unit's files leaves that folder's marker.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posixpath
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from wcmatch import glob as wglob


def jsonable(obj):
    """What ``json`` writes for an object it does not know: a sequence (a column of paths) as a list, else its
    text."""
    return list(obj) if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)) else str(obj)


class OutputError(RuntimeError):
    """The output root cannot be written (a full disk, a read-only filesystem, a refused permission): the run
    stops, with one line saying why and what to do."""

    @classmethod
    def of(cls, fault: int, root: str) -> OutputError:
        from core.faults import FAULTS

        fix = (
            "free space (or set another output.root)"
            if fault in (errno.ENOSPC, errno.EDQUOT)
            else "make it writable (or set another output.root)"
        )
        return cls(
            f"output error: {FAULTS[fault]} writing to {root}: {fix}, then rerun the same command "
            f"(finished units are kept)"
        )


#: Bytes per read when a complete local file is uploaded.
UPLOAD_CHUNK = 8 << 20
#: Characters of JSON text written at once (Storage.write_json).
JSON_BATCH = 1 << 16


@dataclass(frozen=True)
class S3Options:
    endpoint_url: str | None = None
    region: str | None = None
    anonymous: bool = False
    max_attempts: int = 10


def _s3(options: S3Options) -> pafs.S3FileSystem:
    endpoint = options.endpoint_url or os.environ.get("AWS_ENDPOINT_URL")
    kwargs: dict = {"region": options.region or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"}
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs["endpoint_override"] = parsed.netloc or parsed.path
        kwargs["scheme"] = parsed.scheme or "https"
        # Path-style addressing: S3-compatible servers rarely do virtual hosts.
        kwargs["force_virtual_addressing"] = False
    if options.anonymous:
        kwargs["anonymous"] = True
    kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=options.max_attempts)
    return pafs.S3FileSystem(**kwargs)


def is_s3(uri: str) -> bool:
    return uri.startswith("s3://")


def resolve(uri: str, s3: S3Options | None = None) -> tuple[pafs.FileSystem, str]:
    """A filesystem and the path inside it for a local path or ``s3://`` URI."""
    if is_s3(uri):
        return _s3(s3 or S3Options()), uri[len("s3://") :].rstrip("/")
    return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(uri))


def location(uri: str) -> str:
    """One spelling of where ``uri`` is, to tell two spellings of a place apart from two places: a local path
    absolute, normalized and with its symlinks resolved; an ``s3://`` URI without ``.``, doubled or trailing
    slashes."""
    if is_s3(uri):
        key = posixpath.normpath("/" + uri[len("s3://") :]).lstrip("/")
        return f"s3://{key}"
    return os.path.realpath(os.path.expanduser(uri))


def open_input(uri: str, s3: S3Options | None = None) -> BinaryIO:
    """A seekable binary stream, never decompressed here (the reader sees gzip members)."""
    fs, path = resolve(uri, s3)
    return fs.open_input_file(path)


def size(uri: str, s3: S3Options | None = None) -> int | None:
    fs, path = resolve(uri, s3)
    info = fs.get_file_info(path)
    return info.size if info.type == pafs.FileType.File else None


def glob(pattern: str, s3: S3Options | None = None) -> list[str]:
    """Expand a glob (``*``, ``?``, ``[]``, ``**``) locally or on S3, sorted."""
    fs, path = resolve(pattern, s3)
    if not any(c in path for c in "*?["):
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            return [_uri(pattern, path)]
        if info.type == pafs.FileType.Directory:
            return [_uri(pattern, p) for p in _list_files(fs, path)]
        return []
    parts = path.split("/")
    fixed = []
    for part in parts:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    root = "/".join(fixed) or "/"
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return []
    out = [p for p in _list_files(fs, root) if _match(p, path)]
    return [_uri(pattern, p) for p in sorted(out)]


def _match(path: str, pattern: str) -> bool:
    # Shell semantics: '*' and '?' stay within one folder, '**' crosses any number of them.
    return wglob.globmatch(path, pattern, flags=wglob.GLOBSTAR)


def _list_files(fs: pafs.FileSystem, root: str) -> list[str]:
    return sorted(path for path, _ in _files(fs, root))


def _files(fs: pafs.FileSystem, root: str) -> Iterator[tuple[str, int]]:
    """(path, size) of every file under ``root``.  A local folder is walked one entry at a time: pyarrow's
    listing makes a FileInfo per file first, ~26 MB (and +40 MB at its peak, with the lists made from it) over
    a snapshot's 90,000 markers or parts, read several times as a run plans (issue 39)."""
    if not isinstance(fs, pafs.LocalFileSystem):
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        yield from ((i.path, i.size) for i in infos if i.type == pafs.FileType.File)
        return
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for e in entries:
                if e.is_dir():
                    stack.append(e.path)
                elif e.is_file():
                    yield e.path, e.stat().st_size


def _hidden(name: str) -> bool:
    return posixpath.basename(name).startswith(".")


def _uri(template: str, path: str) -> str:
    if is_s3(template):
        return "s3://" + path.lstrip("/")
    # Keep relative inputs relative: the run's record of its sources then does
    # not depend on where the checkout lives.
    return path if os.path.isabs(os.path.expanduser(template)) else os.path.relpath(path)


class Storage:
    """The run's output root: parts, markers, JSON, all written atomically."""

    def __init__(self, root: str, s3: S3Options | None = None):
        self.root_uri = root.rstrip("/")
        self.s3 = s3
        self.fs, self.root = resolve(root, s3)
        self.local = isinstance(self.fs, pafs.LocalFileSystem)

    def uri(self, *parts: str) -> str:
        return posixpath.join(self.root_uri, *parts)

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def exists(self, *parts: str) -> bool:
        return self.fs.get_file_info(self.path(*parts)).type != pafs.FileType.NotFound

    def list(self, *parts: str, suffix: str = "") -> list[str]:
        """Relative names of the files under a folder, sorted (empty if it is absent): no size kept for each."""
        return sorted(self.names(*parts, suffix=suffix))

    def names(self, *parts: str, suffix: str = "") -> Iterator[str]:
        """Relative names of the files under a folder, as listed (in no order): a scan of tens of thousands of
        files without a list of their names."""
        return (name for name, _ in self._walk(parts, suffix))

    def paths(self, *parts: str, suffix: str = "") -> list[str]:
        """The files under a folder as full paths (what a reader opens), sorted; empty if it is absent."""
        return [self.path(*parts, n) for n in self.list(*parts, suffix=suffix)]

    def sizes(self, *parts: str, suffix: str = "") -> dict[str, int]:
        """The files under a folder (relative names, sorted) and their sizes in bytes, from one listing."""
        return dict(sorted(self._walk(parts, suffix)))

    def _walk(self, parts: tuple[str, ...], suffix: str) -> Iterator[tuple[str, int]]:
        """The files under a folder (relative names, not hidden, ending in ``suffix``) and their sizes, as listed."""
        base = self.path(*parts)
        if self.fs.get_file_info(base).type != pafs.FileType.Directory:
            return
        cut = len(base.rstrip("/")) + 1
        found = ((path[cut:], size) for path, size in _files(self.fs, base))
        yield from ((n, s) for n, s in found if n.endswith(suffix) and not _hidden(n))

    def delete_dir(self, *parts: str) -> None:
        if self.exists(*parts):
            self.fs.delete_dir(self.path(*parts))

    @contextlib.contextmanager
    def atomic_output(self, *parts: str) -> Iterator[pa.NativeFile]:
        """An output stream that appears under its name only when closed cleanly."""
        final = self.path(*parts)
        if not self.local:
            # Staged locally, uploaded when complete: closing an S3 stream completes its upload even
            # after an error, so a failed write must never reach the key.
            fd, staged = tempfile.mkstemp(prefix=".upload-", suffix=posixpath.basename(final)[-40:])
            os.close(fd)
            try:
                with pa.OSFile(staged, "wb") as out:
                    yield out
                self.upload_file(staged, *parts)
            finally:
                os.remove(staged)
            return
        self.fs.create_dir(posixpath.dirname(final), recursive=True)
        # One temporary name per output (not per attempt): an attempt cut off by a killed driver, a
        # lost worker or S3 going away leaves its temporary file, which the retry overwrites and moves.
        tmp = posixpath.join(posixpath.dirname(final), f".{posixpath.basename(final)}.tmp")
        try:
            with self.fs.open_output_stream(tmp, compression=None) as out:  # bytes as given, whatever the name
                yield out
            self.fs.move(tmp, final)
        finally:
            if self.fs.get_file_info(tmp).type != pafs.FileType.NotFound:
                self.fs.delete_file(tmp)

    def upload_file(self, local: str, *parts: str) -> None:
        """Publish the complete local file ``local`` under ``parts`` (atomically, as atomic_output does)."""
        final = self.path(*parts)
        if self.local:
            with self.atomic_output(*parts) as out, open(local, "rb") as src:
                while chunk := src.read(UPLOAD_CHUNK):
                    out.write(chunk)
            return
        size = os.path.getsize(local)
        # An S3 stream's failed part upload fails its close, which then never completes the upload:
        # the object appears whole or not at all.
        with self.fs.open_output_stream(final, compression=None) as out, open(local, "rb") as src:
            while chunk := src.read(UPLOAD_CHUNK):
                out.write(chunk)
        if (
            self.fs.get_file_info(final).size != size
        ):  # a local read error cut the upload short: never leave half a file
            self.fs.delete_file(final)
            raise OSError(f"upload of {self.uri(*parts)} was cut short ({size} bytes staged)")

    def write_json(self, obj, *parts: str) -> None:
        """``obj`` as indented JSON, written a batch of its text at a time: a record naming 90,000 inputs
        (run.json) never exists whole as a string, nor as the encoder's pieces (~20 MB, issue 39)."""
        with self.atomic_output(*parts) as out:
            batch: list[str] = []
            size = 0
            for piece in json.JSONEncoder(indent=2, sort_keys=True, default=jsonable).iterencode(obj):
                batch.append(piece)
                size += len(piece)
                if size >= JSON_BATCH:
                    out.write("".join(batch).encode())
                    batch, size = [], 0
            out.write("".join(batch).encode())

    def read_json(self, *parts: str):
        with self.fs.open_input_stream(self.path(*parts), compression=None) as f:
            return json.loads(f.read())

    def write_parquet(self, table: pa.Table, *parts: str) -> None:
        with self.atomic_output(*parts) as out:
            pq.write_table(table, out, compression="zstd")

    def read_parquet(self, *parts: str, columns: list[str] | None = None) -> pa.Table:
        return pq.read_table(self.path(*parts), filesystem=self.fs, columns=columns)


class PartWriter:
    """Stream Arrow batches into one Parquet part, published atomically on close.

    The schema is taken from the first batch; later batches are cast to it.
    Nothing is published when no batch was written.
    """

    def __init__(self, storage: Storage, *parts: str, schema: pa.Schema | None = None):
        self._storage, self._parts = storage, parts
        self._schema = schema
        self._ctx = None
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.published = False

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            self._schema = self._schema or table.schema
            self._ctx = self._storage.atomic_output(*self._parts)
            out = self._ctx.__enter__()
            self._writer = pq.ParquetWriter(out, self._schema, compression="zstd")
        if len(table):
            self._writer.write_table(table.select(self._schema.names).cast(self._schema))
            self.rows += len(table)

    def close(self) -> None:
        if self._writer is not None:
            try:
                _close(self._writer)
            except BaseException as e:
                self.abort(e)
                raise
            self._ctx.__exit__(None, None, None)
            self._writer = None
            self.published = True

    def abort(self, error: BaseException | None = None) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                _close(writer)
            finally:
                error = error or RuntimeError("aborted")
                self._ctx.__exit__(type(error), error, None)


def _close(writer: pq.ParquetWriter) -> None:
    """Close once: a close that fails (disk full) is not retried by the writer's __del__, which would print
    the same error again as a traceback from a garbage-collected object."""
    try:
        writer.close()
    finally:
        writer.is_open = False
