"""Connected components of the duplicate graph; a component's label is its smallest doc.

Two paths with the same result:

* :func:`local_components`: one process, numpy for small edge sets, scipy's C
  implementation for those that fit comfortably in memory (the usual case: the
  graph has only the duplicates in it).
* :func:`distributed_components`: large-star / small-star (Kiveris et al.,
  "Connected Components in MapReduce and Beyond", SoCC 2014) over Ray Data.
  Each step hash-partitions the edge set by node, so no process ever holds
  more than one partition; rounds repeat until neither step changes an edge,
  and the fixed point links every node straight to its component's minimum.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa

log = logging.getLogger(__name__)

COMPONENT_SCHEMA = pa.schema([("doc", pa.int64()), ("comp", pa.int64())])


#: Up to this many edges, components are found with numpy (hook and compress below): a run with few
#: duplicates (most local runs) does not import scipy (~0.1 s and ~30 MB in the driver); above, scipy's C is faster.
NUMPY_MAX_EDGES = 100_000


def local_components(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, label) for every node that has an edge; label = smallest node of its component."""
    nodes, index = np.unique(np.concatenate((src, dst)), return_inverse=True)
    if len(nodes) == 0:
        return nodes, nodes
    n = len(nodes)
    m = len(src)
    # nodes are sorted, so the smallest index of a component is its smallest node
    smallest = (
        _min_roots(index[:m], index[m:], n) if m <= NUMPY_MAX_EDGES else _scipy_min_roots(index[:m], index[m:], n)
    )
    return nodes, nodes[smallest]


def _min_roots(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Per node 0..n-1, the smallest node of its component: every edge hooks the larger of its two roots
    under the smaller, then pointer jumping flattens the trees, until both ends of every edge share a root
    (a parent is never larger than its node, so a root is its component's minimum)."""
    parent = np.arange(n)
    while True:
        while True:  # compress: each node straight to its root
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
        pu, pv = parent[u], parent[v]
        apart = pu != pv
        if not apart.any():
            return parent
        np.minimum.at(parent, np.maximum(pu, pv)[apart], np.minimum(pu, pv)[apart])


def _scipy_min_roots(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(u), dtype=np.int8), (u, v)), shape=(n, n))
    _, label = connected_components(graph, directed=True, connection="weak")
    smallest = np.full(label.max() + 1, n, dtype=np.int64)
    np.minimum.at(smallest, label, np.arange(n))
    return smallest[label]


# --- large-star / small-star: one step on one partition of the edge set -------------
# Edges are canonical (a, b) with a > b.  Each step receives, for the nodes of its
# partition, every edge it needs, and returns canonical edges plus a per-row
# "changed" flag (1 where the edge was not in the input), whose sum decides convergence.


def _segments(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start index of each run of equal keys in a sorted array, and each row's run number."""
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    run = np.repeat(np.arange(len(starts)), np.diff(np.concatenate((starts, [len(keys)]))))
    return starts, run


def _out(a: np.ndarray, b: np.ndarray, changed: np.ndarray) -> pa.Table:
    return pa.table(
        {"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64()), "changed": pa.array(changed, pa.int8())}
    )


def large_star(u: np.ndarray, v: np.ndarray) -> pa.Table:
    """``u`` -> ``v`` are both directions of the edges at the nodes ``u`` of this partition.

    Every neighbour larger than u is re-linked to m(u), the minimum of u and its neighbours.
    """
    pairs = np.unique(np.stack([u, v], axis=1), axis=0)
    u, v = pairs[:, 0], pairs[:, 1]
    starts, run = _segments(u)
    m = np.minimum(np.minimum.reduceat(v, starts), u[starts])[run]
    larger = v > u
    return _out(v[larger], m[larger], (m[larger] != u[larger]).astype(np.int8))


def small_star(a: np.ndarray, b: np.ndarray) -> pa.Table:
    """``(a, b)``: canonical edges (a > b) grouped by ``a``.

    Node a and all its smaller neighbours are re-linked to the smallest of them.
    """
    pairs = np.unique(np.stack([a, b], axis=1), axis=0)
    a, b = pairs[:, 0], pairs[:, 1]
    starts, run = _segments(a)
    m = np.minimum.reduceat(b, starts)[run]
    # (a, m) existed already; (b, m) for the other smaller neighbours is new
    others = b != m
    out_a = np.concatenate((a[starts], b[others]))
    out_b = np.concatenate((m[starts], m[others]))
    changed = np.concatenate((np.zeros(len(starts), np.int8), np.ones(int(others.sum()), np.int8)))
    return _out(out_a, out_b, changed)


def _partition(node: np.ndarray, partitions: int) -> np.ndarray:
    from stages.dedup.hashing import fmix64

    return (fmix64(node.astype(np.uint64)) % np.uint64(partitions)).astype(np.int64)


def _large_star_map(batch: pa.Table, partitions: int) -> pa.Table:
    a, b = batch.column("a").to_numpy(), batch.column("b").to_numpy()
    u, v = np.concatenate((a, b)), np.concatenate((b, a))
    return pa.table({"u": u, "v": v, "p": _partition(u, partitions)})


def _large_star_reduce(group: pa.Table) -> pa.Table:
    return large_star(group.column("u").to_numpy(), group.column("v").to_numpy())


def _small_star_map(batch: pa.Table, partitions: int) -> pa.Table:
    a = batch.column("a").to_numpy()
    return pa.table({"a": a, "b": batch.column("b").to_numpy(), "p": _partition(a, partitions)})


def _small_star_reduce(group: pa.Table) -> pa.Table:
    return small_star(group.column("a").to_numpy(), group.column("b").to_numpy())


def _step(ds, map_fn, reduce_fn, partitions: int):
    ds = ds.map_batches(map_fn, fn_kwargs={"partitions": partitions}, batch_format="pyarrow")
    ds = ds.groupby("p", num_partitions=partitions).map_groups(reduce_fn, batch_format="pyarrow")
    ds = ds.materialize()
    changed = ds.sum("changed") if ds.count() else 0
    return ds.drop_columns(["changed"]), int(changed or 0)


def distributed_components(edges, partitions: int, max_rounds: int = 64):
    """Ray Dataset of canonical edges ``src > dst`` -> Ray Dataset ``(doc, comp)``.

    Every node of the graph appears once, the component's minimum included
    (with ``comp == doc``).
    """
    ds = edges.map_batches(lambda t: pa.table({"a": t.column("src"), "b": t.column("dst")}), batch_format="pyarrow")
    for rnd in range(1, max_rounds + 1):
        ds, changed_large = _step(ds, _large_star_map, _large_star_reduce, partitions)
        ds, changed_small = _step(ds, _small_star_map, _small_star_reduce, partitions)
        log.info("connected components: round %d, %d + %d edges changed", rnd, changed_large, changed_small)
        if changed_large == 0 and changed_small == 0:
            break
    else:
        raise RuntimeError(f"connected components did not converge in {max_rounds} rounds (components.max_rounds)")
    # At the fixed point every edge is (node, its component's minimum); add the minima themselves.
    return ds.map_batches(_with_roots, batch_format="pyarrow"), rnd


def _with_roots(batch: pa.Table) -> pa.Table:
    a, b = batch.column("a").to_numpy(), batch.column("b").to_numpy()
    roots = np.unique(b)
    return pa.table({"doc": np.concatenate((a, roots)), "comp": np.concatenate((b, roots))}, schema=COMPONENT_SCHEMA)
