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
