"""Parameters of deduplication."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DedupConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="run phase 2 (deduplication)")
