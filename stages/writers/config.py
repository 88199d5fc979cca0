"""The ``shards:`` section of a run config: tokenization, layout, shuffle, formats."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stages.named_files import NamedFile, tokenizer_json
from stages.pack import LayoutConfig
from stages.shuffle_plan import ShuffleConfig
from stages.tokenize import TokenizeConfig
from stages.writers.mds import MDSConfig
from stages.writers.webdataset import WebDatasetConfig


class ShardsConfig(BaseModel):
    """Training shards from documents/final (docs/shards.md)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="run the shards phase (tokenize documents/final, write MDS and WebDataset)")
    tokenize: TokenizeConfig = Field(default_factory=TokenizeConfig, description="the tokenizer and the tokens around each document")
    layout: LayoutConfig = Field(default_factory=LayoutConfig, description="one sample per document, or packed sequences")
    shuffle: ShuffleConfig = Field(default_factory=ShuffleConfig, description="the seeded global shuffle")
    mds: MDSConfig = Field(default_factory=MDSConfig, description="MosaicML MDS output")
    webdataset: WebDatasetConfig = Field(default_factory=WebDatasetConfig, description="WebDataset output")
    local_max_docs: int = Field(
        20_000, ge=0, le=10_000_000, description="at most this many documents to shard (and at most 256 parts): tokenize and group them "
        "in the driver, without Ray Data's shuffle, whose set-up costs ~3 s (same bytes); 0 = always shuffle on Ray"
    )

    def named_files(self) -> list[NamedFile]:
        """The tokenizer, which must hold every special token the shards use."""
        specials = {"tokenize.bos": self.tokenize.bos, "tokenize.eos": self.tokenize.eos, "layout.pad": self.layout.pad}
        return [NamedFile("tokenize.tokenizer", self.tokenize.tokenizer, tokenizer_json(specials))]

    @model_validator(mode="after")
    def _consistent(self) -> "ShardsConfig":
        if self.layout.kind == "packed" and self.tokenize.eos is None:
            raise ValueError("layout.kind packed joins documents with EOS: set tokenize.eos")
        if not (self.mds.enabled or self.webdataset.enabled):
            raise ValueError("enable at least one of mds and webdataset")
        return self
