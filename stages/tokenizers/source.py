"""Read a tokenizer file's bytes, local or ``s3://`` (pyarrow.fs; stages/ never imports pipeline/)."""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from stages.tokenizers.base import TokenizerFileError


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and path of a local path or URI (``s3://``: endpoint and keys from the AWS_* variables)."""
    if "://" in uri:
        return pafs.FileSystem.from_uri(uri)
    return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(uri))


def read_bytes(uri: str, filesystem: pafs.FileSystem | None = None) -> bytes:
    """The whole file; a missing or unreadable one is a one-line TokenizerFileError naming it.

    ``filesystem`` lets a caller that already has one (the run's storage, with its
    S3 endpoint and retries) use it; ``uri`` is then the path inside it, ``s3://`` stripped.
    """
    try:
        fs, path = (filesystem, uri.removeprefix("s3://")) if filesystem is not None else resolve(uri)
        with fs.open_input_file(path) as f:
            return f.read()
    except FileNotFoundError:
        raise TokenizerFileError(f"{uri}: no such tokenizer file") from None
    except (OSError, ValueError) as e:
        raise TokenizerFileError(f"{uri}: cannot read the tokenizer file: {str(e).splitlines()[0]}") from None
