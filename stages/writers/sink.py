"""Where closed shard files go: a local folder, or a ``Storage`` root (s3://).

``put(path, name)`` publishes the local file ``path`` under ``name`` and takes
it over (moves or deletes it), so staging never holds more than the shard
being written.  Uploads are atomic (``Storage.upload_file``: nothing appears
under the final key unless the whole file was written; on S3 no temporary
object, so no marker object either) and retried with exponential backoff on
transient errors.
"""

from __future__ import annotations

import logging
import os
import posixpath
import random
import shutil
import time
from collections.abc import Callable
from typing import Protocol

from core.faults import storage_fault

log = logging.getLogger(__name__)

#: Error words of S3 failures that a retry cannot fix (pyarrow reports every S3 error as OSError).
PERMANENT_S3_ERRORS = (
    "ACCESS_DENIED",
    "AccessDenied",
    "NoSuchBucket",
    "NO_SUCH_BUCKET",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
)


class Sink(Protocol):
    def put(self, path: str, name: str) -> None:
        """Publish the local file ``path`` as ``name`` (relative, with ``/``); the file is consumed."""
        ...


class LocalSink:
    """A local folder: files are moved in (renamed atomically when on the same filesystem)."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)

    def put(self, path: str, name: str) -> None:
        dest = os.path.join(self.root, *name.split("/"))
        if os.path.abspath(path) == dest:
            return
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = f"{dest}.tmp{os.getpid()}"
        try:
            os.replace(path, tmp)
        except OSError:  # another filesystem: copy, then drop the staged file
            shutil.copyfile(path, tmp)
            os.remove(path)
        os.replace(tmp, dest)


def is_transient(err: BaseException) -> bool:
    """A failed upload worth retrying: connection and server trouble, not a bad bucket or key, nor a full
    disk, a read-only filesystem or a refused permission (retried six times with backoff, they only
    delayed the error by a minute)."""
    if isinstance(err, (FileNotFoundError, PermissionError, IsADirectoryError)) or storage_fault(err) is not None:
        return False  # the local staged file, or the output's disk: retrying cannot help
    if isinstance(err, (OSError, ConnectionError, TimeoutError)):
        return not any(word in str(err) for word in PERMANENT_S3_ERRORS)
    return False


class StorageSink:
    """Uploads to ``storage`` under ``prefix`` (e.g. ``Storage("s3://b/run"), "shards", "mds", "00003"``).

    ``attempts`` tries per file; the waits between them double from
    ``backoff_s`` (with up to 25% jitter) and are capped at ``max_backoff_s``.
    """

    def __init__(self, storage, *prefix: str, attempts: int = 6, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep):  # fmt: skip
        if attempts < 1:
            raise ValueError("attempts must be >= 1")
        self.storage, self.prefix = storage, prefix
        self.attempts, self.backoff_s, self.max_backoff_s = attempts, backoff_s, max_backoff_s
        self.sleep = sleep
        self.retries = 0  #: transient failures retried so far (for the phase's stats)

    def put(self, path: str, name: str) -> None:
        where = posixpath.join(*self.prefix, name) if self.prefix else name
        for attempt in range(1, self.attempts + 1):
            try:
                self._upload(path, where)
                break
            except Exception as e:
                if attempt == self.attempts or not is_transient(e):
                    raise OSError(f"upload of {self.storage.uri(where)} failed after {attempt} attempt(s): {e}") from e
                wait = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * (1 + random.random() / 4)
                self.retries += 1
                log.warning(
                    "upload of %s failed (attempt %d/%d, retrying in %.1fs): %s",
                    where,
                    attempt,
                    self.attempts,
                    wait,
                    e,
                )
                self.sleep(wait)
        os.remove(path)

    def _upload(self, path: str, where: str) -> None:
        self.storage.upload_file(path, where)  # the closed shard is complete: straight to its key
