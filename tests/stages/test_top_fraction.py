"""The two-pass top-fraction cutoffs over parts equal the one-process reference on all documents."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from pipeline.top_fraction import BINS, _histograms, bins_of, boundaries, cutoffs_from
from stages.top_fraction import _languages, _rank_scores, top_fraction_cutoffs


def _two_pass(parts: list[pa.Table], fraction: float) -> dict:
    """The same passes as ScanWorker, without storage."""

    def lang_score(t):
        return _languages(t.column("language")).to_numpy(zero_copy_only=False), _rank_scores(
            t.column("quality_score")
        ).to_numpy()

    hist = []
    for t in parts:
        lang, score = lang_score(t)
        hist.append(_histograms(lang, bins_of(score)))
    bins, kept = boundaries(hist, fraction)
    rows = []
    for t in parts:
        lang, score = lang_score(t)
        want = np.array([bins.get(code, -1) for code in lang])
        for i in np.flatnonzero(bins_of(score) == want):
            rows.append([lang[i], None if np.isinf(score[i]) else float(score[i]), t.column("id")[i].as_py()])
    return cutoffs_from(rows, kept)


docs = st.lists(
    st.tuples(
        st.sampled_from(["en", "de", None]),
        st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 1.00001]), st.floats(0, 1, width=32)),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(docs=docs, fraction=st.sampled_from([0.01, 0.1, 0.3, 0.5, 0.77, 1.0]), cut=st.integers(0, 80))
def test_equals_the_reference_on_all_documents(docs, fraction, cut):
    ids = [f"id-{n:03d}-{i}" for i, (_, _, n) in enumerate(docs)]
    table = pa.table(
        {"id": ids, "language": [d[0] for d in docs], "quality_score": pa.array([d[1] for d in docs], pa.float32())}
    )
    parts = [table.slice(0, cut), table.slice(cut)]
    expected = top_fraction_cutoffs(
        table.column("language"), table.column("quality_score"), table.column("id"), fraction
    )
    assert _two_pass(parts, fraction) == expected


def test_bins_order_like_scores():
    s = np.array([-np.inf, 0.0, 1e-9, 0.5, 1.0, 1.00001])
    b = bins_of(s)
    assert b[0] == 0 and b[1] == 1 and list(b) == sorted(b) and b[-1] == BINS
