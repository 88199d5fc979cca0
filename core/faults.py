"""Storage errors that no retry fixes: a full disk, an exhausted quota, a read-only filesystem, a refused
permission.

A retry loop meant for network faults (S3 throttling, a dropped connection) must not spin on them, and
a run whose output cannot be written must stop with one line saying why, not fail every unit in turn.
The errno is looked for on the error and its causes, and, where a process boundary (Ray) kept only
the text, in the message.
"""

from __future__ import annotations

import errno
import os

#: errno -> how the fault is named to the user
FAULTS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}
#: Faults only a write meets: whatever the path, the output is what failed.
WRITE_FAULTS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
_MESSAGES = {os.strerror(code).lower(): code for code in FAULTS}  # "no space left on device", ...


def storage_fault(err: BaseException | None) -> int | None:
    """The errno of a storage fault behind ``err`` (its causes and wrappers included), else None."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        code = getattr(err, "errno", None)
        if code in FAULTS:
            return code
        text = str(err).lower()
        found = next((c for words, c in _MESSAGES.items() if words in text), None)
        if found is not None:
            return found
        err = err.__cause__ or err.__context__
    return None


def output_fault(err: BaseException | None, output_path: str) -> int | None:
    """A storage fault of the output: a write-only fault anywhere, or a refused permission on a path under
    ``output_path`` (a refused input file is that unit's problem, not the run's)."""
    code = storage_fault(err)
    if code in WRITE_FAULTS or (code is not None and output_path and output_path in str(err)):
        return code
    return None


def quiet_collected_writer_faults() -> None:
    """Report a storage fault raised by a file writer's ``__del__`` in one log line, not a traceback.

    A writer whose write failed on a full disk is still open; when the unit's error (and the frames
    that hold the writer) is dropped, the garbage collector's ``__del__`` tries to close it again and
    fails the same way.  Python prints that as "Exception ignored in ...", a traceback per writer, after
    the unit already reported the fault in one line.  Other unraisable errors go to the previous hook.
    Idempotent: one hook per process."""
    import logging
    import sys

    previous = sys.unraisablehook
    if getattr(previous, "_curate_quiet", False):
        return

    def hook(unraisable) -> None:
        where = getattr(unraisable.object, "__qualname__", "")
        if where.endswith("__del__") and storage_fault(unraisable.exc_value) is not None:
            logging.getLogger(__name__).debug("%s failed again when collected: %s", where, unraisable.exc_value)
            return
        previous(unraisable)

    hook._curate_quiet = True
    sys.unraisablehook = hook
