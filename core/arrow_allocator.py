"""Arrow allocates with the system's malloc in our processes, unless the user chose otherwise.

pyarrow's wheels default to mimalloc, which keeps the pages a unit freed: a worker stayed near its largest
unit's peak for the rest of the run, and a later phase's set-up came on top of it (``return_free_memory``
asks it to give them back, and it gives back little).  glibc's malloc with ``malloc_trim`` gives them back.
Measured on benchmarks/e2e.py's corpus, one core, runs interleaved (mimalloc -> system): the
driver's peak 341-368 -> 214-268 MB PSS, the whole process tree 733-755 -> 609-611 MB, and the run no
slower (wall 27.4-28.1 -> 25.7-27.5 s, five and three runs interleaved); phase 1 can then share its worker
with the later phases (see ``ExtractedPhase``).

Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow is imported: :func:`prefer_system_allocator`
runs before anything imports it (``pipeline/__init__.py``: the driver, and a Ray worker as it unpickles
its first task of the run; Ray itself does not import pyarrow), and Ray's local processes inherit the
choice from the driver's environment.  Set the variable (``mimalloc``, ``jemalloc``) to choose otherwise:
on a cluster, in the environment of ``ray start``.
"""

from __future__ import annotations

import os

ARROW_POOL_VAR = "ARROW_DEFAULT_MEMORY_POOL"


def prefer_system_allocator() -> None:
    """Choose the system allocator for this process and the processes it starts, unless one is chosen."""
    os.environ.setdefault(ARROW_POOL_VAR, "system")
