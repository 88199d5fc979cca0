"""The ``shards:`` section of a run config: tokenization, layout, shuffle, formats."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stages.named_files import NamedFile, tokenizer_file
from stages.pack import LayoutConfig
from stages.shuffle_plan import ShuffleConfig
from stages.tokenize import TokenizeConfig
from stages.writers.mds import MDSConfig
from stages.writers.megatron import MegatronConfig
from stages.writers.webdataset import WebDatasetConfig


class ShardsConfig(BaseModel):
    """Training shards from documents/final (docs/shards.md)."""

    model_config = ConfigDict(extra="forbid")
    #: how the phase runs, not what it writes: out of the fingerprints (pipeline/engine/settings.py)
    run_only: ClassVar[tuple[str, ...]] = ("enabled", "trainer", "local_max_docs")

    enabled: bool = Field(
        True,
        description="run the shards phase (tokenize documents/final, "
        "write the enabled formats: MDS, WebDataset, Megatron)",
    )
    tokenize: TokenizeConfig = Field(
        default_factory=TokenizeConfig, description="the tokenizer and the tokens around each document"
    )
    layout: LayoutConfig = Field(
        default_factory=LayoutConfig, description="one sample per document, or packed sequences"
    )
    shuffle: ShuffleConfig = Field(default_factory=ShuffleConfig, description="the seeded global shuffle")
    mds: MDSConfig = Field(default_factory=MDSConfig, description="MosaicML MDS output")
    webdataset: WebDatasetConfig = Field(default_factory=WebDatasetConfig, description="WebDataset output")
    megatron: MegatronConfig = Field(
        default_factory=MegatronConfig, description="Megatron-LM / NeMo IndexedDataset output (.bin/.idx)"
    )
    trainer: Literal["llm-foundry", "megatron", "webdataset"] | None = Field(
        None,
        description="the trainer that reads the shards: a layout or "
        "formats that do not fit it (LLM Foundry cuts document "
        "samples at max_seq_len = layout.seq_len) is a warning, with "
        "the tokens it would lose (docs/shards.md); null = none named",
    )
    local_max_docs: int = Field(
        20_000,
        ge=0,
        le=10_000_000,
        description="at most this many documents to shard (and at most 256 parts): tokenize and group them "
        "in the driver, without Ray Data's shuffle, whose set-up costs ~3 s (same bytes); 0 = always shuffle on Ray",
    )

    def named_files(self) -> list[NamedFile]:
        """The tokenizer, which must hold every special token the shards use."""
        specials = {
            "tokenize.bos": self.tokenize.bos,
            "tokenize.eos": self.tokenize.eos,
            "layout.pad": self.layout.pad,
        }
        return [NamedFile("tokenize.tokenizer", self.tokenize.tokenizer, tokenizer_file(specials))]

    @model_validator(mode="after")
    def _consistent(self) -> ShardsConfig:
        if self.layout.kind == "packed" and self.tokenize.eos is None:
            raise ValueError("layout.kind packed joins documents with EOS: set tokenize.eos")
        from stages.writers.formats import FORMATS

        if not any(f.config(self).enabled for f in FORMATS):
            raise ValueError(f"enable at least one of {', '.join(f.name for f in FORMATS)}")
        return self
