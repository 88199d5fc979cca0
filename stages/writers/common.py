"""What the writers share: the record of one published shard file."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from stages.tokenize import list_lengths  # noqa: F401  (re-exported for the writers)


@dataclass(frozen=True)
class ShardFile:
    """One shard file as published: for the manifest."""

    name: str  #: path relative to the writer's folder, e.g. ``shard.00000.mds.zstd``
    bytes: int
    sha256: str
    samples: int
    tokens: int  #: token ids stored (padding included)

    def to_dict(self) -> dict:
        return asdict(self)
