"""Packing (exact cut points, remainder policies, EOS between documents) and
the global shuffle plan (uniform, deterministic, independent of input order)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from stages.pack import LayoutConfig, Packer, document_samples
from stages.shuffle_plan import ShuffleConfig, group_order, plan
from stages.tokenize import list_array

EOS, PAD = 0, 2


def docs(lengths: list[int], seed: int = 0) -> tuple[list[list[int]], list[str]]:
    """Documents of the given lengths (content ids >= 10) each ending in EOS."""
    rng = np.random.default_rng(seed)
    toks = [list(rng.integers(10, 8000, n - 1)) + [EOS] for n in lengths]
    return [[int(t) for t in d] for d in toks], [f"doc{i}" for i in range(len(lengths))]


def reference(toks: list[list[int]], ids: list[str], seq_len: int, remainder: str) -> list[tuple]:
    """Packing spelled out token by token: (tokens, num_tokens, first_id, first_offset)."""
    stream = [(t, i, off) for d, i in zip(toks, ids, strict=False) for off, t in enumerate(d)]
    out = []
    for s in range(0, len(stream), seq_len):
        piece = stream[s : s + seq_len]
        if len(piece) < seq_len:
            if remainder == "drop":
                break
            real = len(piece)
            tokens = [t for t, _, _ in piece] + ([PAD] * (seq_len - real) if remainder == "pad" else [])
            out.append((tokens, real, piece[0][1], piece[0][2]))
        else:
            out.append(([t for t, _, _ in piece], seq_len, piece[0][1], piece[0][2]))
    return out


def run_packer(toks, ids, seq_len, remainder, batch_sizes) -> tuple[list[tuple], Packer]:
    packer = Packer(seq_len, remainder, PAD, np.uint16)
    tables, i = [], 0
    for size in batch_sizes:
        chunk = toks[i : i + size]
        arr = list_array(np.array([t for d in chunk for t in d], np.uint16), np.array([len(d) for d in chunk]))
        tables.append(packer.add(arr, pa.array(ids[i : i + size])))
        i += size
    tables.append(packer.finish())
    t = pa.concat_tables(tables)
    rows = list(
        zip(
            t.column("tokens").to_pylist(),
            t.column("num_tokens").to_pylist(),
            t.column("first_id").to_pylist(),
            t.column("first_offset").to_pylist(),
            strict=False,
        )
    )
    return rows, packer


def test_exact_cut_points_and_eos_between_documents():
    toks, ids = docs([3, 5, 2, 7])  # 17 tokens
    rows, packer = run_packer(toks, ids, 4, "drop", [4])
    flat = [t for d in toks for t in d]
    assert [r[0] for r in rows] == [flat[0:4], flat[4:8], flat[8:12], flat[12:16]]
    # documents cover positions 0-2, 3-7, 8-9, 10-16; sequences start at 0, 4, 8, 12
    assert [(r[2], r[3]) for r in rows] == [("doc0", 0), ("doc1", 1), ("doc2", 0), ("doc3", 2)]
    # every document ends in EOS: document boundaries inside sequences are EOS tokens
    assert rows[0][0][2] == EOS and rows[1][0][3] == EOS and rows[2][0][1] == EOS
    assert packer.dropped_tokens == 1 and packer.sequences == 4


@pytest.mark.parametrize("remainder", ["drop", "pad", "keep"])
def test_remainder_policies(remainder):
    toks, ids = docs([6, 4])  # 10 tokens, seq_len 4: two full, 2 left
    rows, packer = run_packer(toks, ids, 4, remainder, [1, 1])
    assert rows == reference(toks, ids, 4, remainder)
    last = rows[-1]
    if remainder == "drop":
        assert len(rows) == 2 and packer.dropped_tokens == 2
    elif remainder == "pad":
        assert len(rows) == 3 and last[0][2:] == [PAD, PAD] and last[1] == 2
    else:
        assert len(rows) == 3 and len(last[0]) == 2 and last[1] == 2


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 40), min_size=1, max_size=30),
    seq_len=st.integers(2, 33),
    remainder=st.sampled_from(["drop", "pad", "keep"]),
    cuts=st.lists(st.integers(1, 7), min_size=1, max_size=30),
)
def test_packing_equals_the_token_by_token_reference_for_any_batching(lengths, seq_len, remainder, cuts):
    toks, ids = docs(lengths, seed=len(lengths))
    sizes, left = [], len(toks)
    for c in cuts:
        if left <= 0:
            break
        sizes.append(min(c, left))
        left -= sizes[-1]
    if left > 0:
        sizes.append(left)
    rows, _ = run_packer(toks, ids, seq_len, remainder, sizes)
    assert rows == reference(toks, ids, seq_len, remainder)


def test_pad_needs_a_pad_id():
    with pytest.raises(ValueError, match="pad token"):
        Packer(8, "pad", None, np.uint16)


def test_document_samples_selects_and_fills():
    batch = pa.table(
        {
            "id": ["a", "b"],
            "url": ["https://x/1", None],
            "text": ["t1", "t2"],
            "warc_date": pa.array([0, 86400], pa.timestamp("s", tz="UTC")),
            "tokens": list_array(np.array([5, 0, 6, 0], np.uint16), np.array([2, 2])),
            "num_tokens": pa.array([2, 2], pa.int32()),
            "language": ["en", "de"],
        }
    )
    out = document_samples(batch, LayoutConfig(text=True, metadata=["language", "warc_date"]))
    assert out.column_names == ["tokens", "num_tokens", "id", "url", "text", "language", "warc_date"]
    assert out.column("url").to_pylist() == ["https://x/1", ""]
    assert out.column("warc_date").to_pylist() == ["1970-01-01 00:00:00Z", "1970-01-02 00:00:00Z"]
    with pytest.raises(KeyError, match="'quality'"):
        document_samples(batch, LayoutConfig(metadata=["quality"]))


# -- the shuffle plan --------------------------------------------------------------


IDS = [f"urn:uuid:{i:08x}-part{i % 5}" for i in range(20_000)]


def test_plan_is_deterministic_and_independent_of_input_order():
    g1, k1 = plan(IDS, 7, 16)
    perm = np.random.default_rng(1).permutation(len(IDS))
    g2, k2 = plan([IDS[i] for i in perm], 7, 16)
    assert (g2 == g1[perm]).all() and (k2 == k1[perm]).all()
    g3, k3 = plan(pa.chunked_array([IDS[:5000], IDS[5000:]]), 7, 16)
    assert (g3 == g1).all() and (k3 == k1).all()
    g4, _ = plan(IDS, 8, 16)
    assert (g4 != g1).mean() > 0.9  # another seed, another grouping


def test_plan_is_uniform_over_groups():
    for groups in (1, 3, 16, 1000):
        g, _ = plan(IDS, 0, groups)
        counts = np.bincount(g, minlength=groups)
        assert len(counts) == groups and counts.sum() == len(IDS)
        expected = len(IDS) / groups
        chi2 = ((counts - expected) ** 2 / expected).sum()
        # chi-square with groups-1 degrees of freedom: mean groups-1, sd sqrt(2(groups-1)); 5 sd is far out
        assert chi2 <= groups - 1 + 5 * np.sqrt(2 * max(groups - 1, 1)), (groups, chi2)


def test_every_source_part_is_spread_over_every_group():
    g, _ = plan(IDS, 0, 8)
    part = np.array([i % 5 for i in range(len(IDS))])
    table = np.zeros((5, 8), int)
    np.add.at(table, (part, g), 1)
    assert (table > 0.8 * len(IDS) / 40).all()  # each part's samples reach every group evenly


def test_order_inside_a_group_is_a_seeded_shuffle_not_the_input_order():
    g, k = plan(IDS, 0, 4)
    rows = np.flatnonzero(g == 2)
    order = rows[group_order(k[rows], [IDS[i] for i in rows])]
    assert sorted(order) == list(rows)
    assert abs(np.corrcoef(np.arange(len(order)), order)[0, 1]) < 0.1  # not source order
    # a worker that sees the group's rows in another order writes the same sequence
    shuffled = np.random.default_rng(3).permutation(rows)
    assert (shuffled[group_order(k[shuffled], [IDS[i] for i in shuffled])] == order).all()


def test_repeated_ids_keep_a_total_order():
    keys = np.array([5, 5, 1], np.uint64)
    assert group_order(keys, ["b", "a", "z"]).tolist() == [2, 1, 0]


def test_null_id_is_an_error():
    with pytest.raises(ValueError, match="null"):
        plan(pa.array(["a", None]), 0, 2)


def test_config_bounds():
    with pytest.raises(ValueError):
        ShuffleConfig(groups=0)


@pytest.mark.parametrize(
    "lengths, seq_len, dropped_tokens, dropped_documents",
    [
        ([3, 5, 2, 7], 4, 1, 0),  # the last token of a document whose start is in a sequence
        ([6, 3, 2], 4, 3, 1),  # the tail of one document and the whole of the next
        ([3, 2], 10, 5, 2),  # a seq_len longer than the group: everything
        ([4, 4], 4, 0, 0),
    ],
)
def test_drop_counts_the_tokens_and_the_whole_documents_it_drops(lengths, seq_len, dropped_tokens, dropped_documents):
    toks, ids = docs(lengths)
    _, packer = run_packer(toks, ids, seq_len, "drop", [1] * len(lengths))
    assert (packer.dropped_tokens, packer.dropped_documents) == (dropped_tokens, dropped_documents)
