"""Step 3: connected components of the edge graph (``dedup/components/``).

Below ``components.local_max_edges`` edges, numpy or scipy finds them in this process
and the members stay in memory for step 4; above it, large-star/small-star
iterates over Ray Data (stages.dedup.components) and only the files remain.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from pipeline.dedup.context import DedupContext
from pipeline.dedup.edges import EdgeSet
from stages.dedup.components import COMPONENT_SCHEMA, distributed_components, local_components


@dataclass(frozen=True)
class Components:
    """Rows ``(doc, comp)``: in ``members`` when found locally, else only in dedup/components/."""

    members: pa.Table | None


def is_local(ctx: DedupContext, edges: EdgeSet) -> bool:
    return edges.rows <= ctx.dedup.components.local_max_edges


def find_components(ctx: DedupContext, edges: EdgeSet) -> tuple[Components, dict]:
    """Step 3; returns the components and its part of the summary."""
    if is_local(ctx, edges):
        e = ctx.read_local(edges.files)
        nodes, labels = local_components(e.column("src").to_numpy(), e.column("dst").to_numpy())
        members = pa.table({"doc": nodes, "comp": labels}, schema=COMPONENT_SCHEMA)
        ctx.storage.write_parquet(members, "dedup", "components", "part-0.parquet")
        return Components(members), {}
    # large-star shuffles every edge in both directions: twice the edges.
    cc, rounds = distributed_components(ctx.read(edges.files), ctx.partitions(2 * edges.rows), ctx.dedup.components.max_rounds)
    cc.write_parquet(ctx.storage.path("dedup", "components"), filesystem=ctx.storage.fs)
    return Components(None), {"components_rounds": rounds}
