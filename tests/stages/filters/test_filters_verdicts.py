"""benchmarks/filters_verdicts.py (the verdict-equality claim of the filters' speed-up) keeps running: its core
on a few documents against its default reference revision, each side in its own process as the benchmark runs
them.  A change of how a column is stored once made it crash there (issue 42.11)."""

from __future__ import annotations

import subprocess

import pyarrow as pa
import pytest

from benchmarks import filters_verdicts as fv
from tests.conftest import REPO

#: Documents the deliberate changes (fv.CHANGES) touch, one C4's new default would (not run here), one none touches.
PLANTED = {
    "bracket": "The river rose in the night and the valley was flooded (see above.)\n" * 3 + "Done here we are now.",
    "bracketed-ellipsis": "The mayor spoke and then he went on and on (and so on...)\n" * 3 + "Done here we are now.",
    "vertical-tab": "alpha\x0bbeta gamma.\ndelta\x0bepsilon.\n" * 4,
    "plain": "The mayor said the school will open on Monday. The engineers inspect the bridge.\n" * 6,
}


def _has_revision(ref: str) -> bool:
    found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{ref}^{{commit}}"], capture_output=True)
    return found.returncode == 0


def test_the_removed_by_column_reads_in_both_storages():
    as_map = pa.array([[("too_few_words", 2), ("no_terminal_punct", 1)]], pa.map_(pa.string(), pa.int32()))
    as_structs = pa.array([[{"rule": "no_terminal_punct", "lines": 1}, {"rule": "too_few_words", "lines": 2}]])
    assert (
        fv.removed_by(as_map.to_pylist()[0])
        == fv.removed_by(as_structs.to_pylist()[0])
        == [["no_terminal_punct", 1], ["too_few_words", 2]]
    )
    assert fv.removed_by(None) is None


@pytest.mark.skipif(not _has_revision(fv.BEFORE), reason=f"the reference revision {fv.BEFORE} is not in this clone")
def test_the_benchmark_runs_against_its_reference_revision_and_explains_every_difference(tmp_path):
    planted = fv.table(list(PLANTED), list(PLANTED.values()), ["en"] * len(PLANTED), "planted")
    corpus = pa.concat_tables([planted, fv.fuzz_docs(60)])
    before, after = fv.against(corpus, fv.BEFORE, probes=True, tmp=tmp_path)
    ids = set(corpus.column("id").to_pylist())
    assert set(before) == set(after) == ids
    diffs = fv.compare(before, after)
    assert fv.unexplained(corpus, diffs) == []
    changed = {(doc, key) for doc, key, *_ in diffs}
    assert ("vertical-tab", "probe:fineweb:new_line_ratio") in changed  # the deliberate changes show ...
    assert ("bracketed-ellipsis", "c4") in changed
    assert not any(doc in ("plain", "bracket") for doc, _ in changed)  # ... and only they (C4 as the revision had it)
    assert sum(fv.explained(corpus, diffs)) == len(diffs)
    report = fv.summary(corpus, after, diffs, fv.BEFORE)
    assert "0 are unexplained" in report
