"""Step 3: connected components of the edge graph (``dedup/components/``).

Below ``components.local_max_edges`` edges, numpy or scipy finds them in one Ray task (never in the driver:
its memory does not depend on the edges); above it, large-star/small-star iterates over Ray Data
(stages.dedup.components).  Either way only the files remain, for step 4.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from core.storage import Storage
from core.tables import read_tables
from pipeline.dedup.context import DedupContext
from pipeline.dedup.edges import EdgeSet
from stages.dedup.components import COMPONENT_SCHEMA, distributed_components, local_components


@dataclass(frozen=True)
class Components:
    """Rows ``(doc, comp)`` in dedup/components/: one file when found in one task (``local``)."""

    local: bool
    rows: int


def is_local(ctx: DedupContext, edges: EdgeSet) -> bool:
    return edges.rows <= ctx.dedup.components.local_max_edges


def find_components(ctx: DedupContext, edges: EdgeSet) -> tuple[Components, dict]:
    """Step 3; returns the components and its part of the summary."""
    if is_local(ctx, edges):
        return Components(True, ctx.in_task(_components_here, ctx.storage, edges.files)), {}
    # large-star shuffles every edge in both directions: twice the edges.
    p = ctx.partitions(2 * edges.rows)
    cc, rounds = distributed_components(ctx.read(edges.files, p), p, ctx.dedup.components.max_rounds)
    cc.write_parquet(ctx.storage.path("dedup", "components"), filesystem=ctx.storage.fs)
    return Components(False, ctx.rows(ctx.files("dedup", "components"))), {"components_rounds": rounds}


def _components_here(storage: Storage, files: list[str]) -> int:
    """The local path, in one task: the members, written as one file; returns their number."""
    e = read_tables(storage, files, columns=["src", "dst"])
    nodes, labels = local_components(e.column("src").to_numpy(), e.column("dst").to_numpy())
    storage.write_parquet(
        pa.table({"doc": nodes, "comp": labels}, schema=COMPONENT_SCHEMA), "dedup", "components", "part-0.parquet"
    )
    return len(nodes)
