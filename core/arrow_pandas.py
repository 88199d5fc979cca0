"""pandas is imported when something uses it, not when pyarrow wonders whether it might.

pyarrow imports pandas (~54 MB and ~0.5 s of CPU a process, measured) the first time it asks whether an
argument is a pandas object, which it does on nearly every call given Python data: ``pa.array(list)``,
``pa.table(dict)``, ``pa.chunked_array``...  The pipeline never hands pyarrow a pandas object, so the
driver and every worker paid for a library they did not use.  Ray Data does use pandas: it imports it
itself, and then pyarrow must know it is there.

:func:`defer_pandas` answers pyarrow's first question with "no pandas" (its lazy shim then stops asking)
and, when pandas is imported later by anyone, tells pyarrow's shim at once (which also imports pandas for
real when it is asked for explicitly, e.g. ``to_pandas``).  What stays off for the process: the C++
converter's pandas scalars (``pd.NA``, ``pd.NaT`` inside plain Python lists are not taken for nulls), which
it looks up once a process; the pipeline builds arrays from Arrow, numpy and Python values only, and runs
Ray Data with ``batch_format="pyarrow"``.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


class _Unavailable(importlib.abc.MetaPathFinder):
    """pandas cannot be imported while this is first on ``sys.meta_path``."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise ModuleNotFoundError("pandas deferred", name="pandas")
        return None


class _TellPyarrow(importlib.abc.MetaPathFinder):
    """When pandas is imported, pyarrow's shim is brought up to date right after pandas has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "pandas":
            return None
        sys.meta_path.remove(self)  # once; the real finders find pandas
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _sync_pyarrow()

        spec.loader.exec_module = exec_module  # this spec's own loader instance (pandas/__init__.py)
        return spec


def _sync_pyarrow() -> None:
    import pyarrow

    pyarrow.lib._pandas_api.compat  # noqa: B018 -- an explicit use: the shim imports pandas (now there) and says so


def defer_pandas() -> None:
    """Keep pyarrow from importing pandas on its own in this process (idempotent; a no-op once pandas is in)."""
    if "pandas" in sys.modules or any(isinstance(f, _TellPyarrow) for f in sys.meta_path):
        return
    import pyarrow

    blocker = _Unavailable()
    sys.meta_path.insert(0, blocker)
    try:
        pyarrow.lib._pandas_api.have_pandas  # noqa: B018 -- the Python-side shim's first (and, for its checks, last) try
        pyarrow.array([None])  # the C++ converter's: it asks once a process
    finally:
        sys.meta_path.remove(blocker)
    sys.meta_path.insert(0, _TellPyarrow())
