"""pandas (~54 MB, ~0.5 s a process) is imported when something uses it, not because pyarrow checked
whether a list might be a DataFrame; and once something does import it, pyarrow takes DataFrames again.
Each case runs in a fresh interpreter: the point is what a process imports."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_pipeline_code_builds_arrow_data_without_importing_pandas():
    got = _run("""
import json, sys
import numpy as np
import pipeline  # what every driver and worker imports first
import pyarrow as pa
import pyarrow.compute as pc
t = pa.table({"id": ["a", "b"], "n": [1, 2]})
t = pa.Table.from_pylist([{"x": 1}, {"x": None}]).append_column("y", pa.array(np.arange(2)))
pc.sum(pa.chunked_array([[1, 2], [3]])); pa.record_batch({"z": [b"1"]}); pa.scalar(3)
print(json.dumps({"pandas": "pandas" in sys.modules, "rows": t.num_rows}))
""")
    assert got == {"pandas": False, "rows": 2}


def test_pyarrow_takes_dataframes_once_pandas_is_imported():
    got = _run("""
import json
import pipeline
import pyarrow as pa
pa.array([1])  # pyarrow's checks answered "no pandas"
import pandas as pd  # as Ray Data does
df = pd.DataFrame({"x": [1, 2], "s": ["a", None]})
t = pa.table(df)
print(json.dumps({"rows": t.num_rows, "series": str(pa.array(pd.Series([1.5])).type),
                  "back": t.to_pandas().shape[0], "nulls": t.column("s").null_count}))
""")
    assert got == {"rows": 2, "series": "double", "back": 2, "nulls": 1}


def test_to_pandas_imports_pandas_when_asked():
    got = _run("""
import json, sys
import pipeline
import pyarrow as pa
frame = pa.table({"x": [1, 2, 3]}).to_pandas()
print(json.dumps({"rows": len(frame), "pandas": "pandas" in sys.modules}))
""")
    assert got == {"rows": 3, "pandas": True}


def test_ray_data_is_set_up_when_first_used():
    """Starting Ray does not import Ray Data (~1 s, ~64 MB with pandas); ray_data() does, set up for the run."""
    got = _run("""
import json, sys
import pipeline.distribute as d
d._SHUFFLE = "hash"  # what init_ray records from ray.shuffle
before = "ray.data" in sys.modules
rd = d.ray_data()
ctx = rd.DataContext.get_current()
print(json.dumps({"before": before, "strategy": ctx.shuffle_strategy.name, "bars": ctx.enable_progress_bars}))
""")
    assert got == {"before": False, "strategy": "HASH_SHUFFLE", "bars": False}
