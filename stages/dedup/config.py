"""Parameters of deduplication (the ``dedup:`` section of a run config).

Defaults and the reasons for them are in docs/dedup.md (measured on the
samples and on the synthetic corpora of benchmarks/dedup_scale.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stages.named_files import ConfigPath


class NormalizeConfig(BaseModel):
    """Text normalization before hashing (whitespace is always collapsed)."""

    model_config = ConfigDict(extra="forbid")

    lowercase: bool = Field(True, description="lowercase the text")
    punctuation: bool = Field(
        True, description="turn Unicode punctuation and symbols into spaces (DataTrove's simplify_text)"
    )
    digits: bool = Field(
        True,
        description="replace every number (digits with . or , separators) by 0, so dates and counters do not count",
    )
    strip_accents: bool = Field(
        False,
        description="NFKD-decompose and drop combining marks (é -> e); costs about a third more normalization time",
    )


class ExactNormalizeConfig(NormalizeConfig):
    """Normalization before the exact hash: by default only whitespace is collapsed."""

    lowercase: bool = Field(False, description="lowercase the text")
    punctuation: bool = Field(False, description="turn Unicode punctuation and symbols into spaces")
    digits: bool = Field(False, description="replace every number by 0")


class ExactConfig(BaseModel):
    """Exact duplicates: same text after a light normalization (and optionally same URL)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="remove exact duplicates (128-bit BLAKE2b of the normalized text)")
    normalize: ExactNormalizeConfig = Field(
        default_factory=ExactNormalizeConfig,
        description="normalization before the exact hash (whitespace is always collapsed)",
    )
    urls: bool = Field(
        False,
        description="also treat documents with the same URL (scheme, "
        "fragment and trailing slash ignored) as duplicates",
    )


class BoilerplateConfig(BaseModel):
    """Host boilerplate: text that many pages of one site share (a disclaimer, a bio, a notice) makes no duplicates."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True,
        description="when a pair is verified (and a removed document "
        "against the kept one), leave out the signature positions "
        "whose minimum comes from text that min_docs or more documents of the same host share",
    )
    min_docs: int = Field(
        4,
        ge=2,
        le=1_000_000,
        description="a signature value (at one position) is host boilerplate when this many documents of the host, "
        "exact copies counted once, have it",
    )
    identical_threshold: float = Field(
        0.7,
        gt=0.0,
        le=1.0,
        description="a pair whose full signatures agree on at least this share is a duplicate even when "
        "what it shares is host boilerplate (copies of one page on its own site)",
    )
    max_host_docs: int = Field(
        50_000,
        ge=100,
        le=100_000_000,
        description="a host with more documents is split by document hash into groups of about this many to "
        "count shared values: bounds the memory of one task",
    )
    content_candidates: bool = Field(
        True,
        description="with verify: signature, also band a second MinHash "
        "of every document with at least content_min_share "
        "boilerplate positions, over its shingles without the host "
        "boilerplate, into the same LSH buckets (candidates checked "
        "as the others): finds copies whose full-text Jaccard the blocks around them keep below the threshold",
    )
    content_min_share: float = Field(
        0.1,
        gt=0.0,
        le=1.0,
        description="share of a document's signature positions that must be host boilerplate for it to "
        "get content candidates (smaller blocks barely lower the Jaccard of copies)",
    )


class MinHashConfig(BaseModel):
    """Near duplicates: MinHash signatures and LSH banding."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="remove near duplicates (MinHash-LSH)")
    normalize: NormalizeConfig = Field(default_factory=NormalizeConfig, description="normalization before shingling")
    shingle: Literal["word", "char"] = Field(
        "word", description="shingles of words or of characters (char suits text without spaces: zh, ja, th)"
    )
    ngram: int = Field(5, ge=1, le=64, description="shingle length in words or characters")
    num_perm: int = Field(128, ge=2, le=1024, description="number of hash permutations (signature length)")
    seed: int = Field(1, ge=0, le=2**32 - 1, description="seed of the permutations (datasketch's MinHash seed)")
    scheme: Literal["affine32", "affine64", "legacy"] = Field(
        "affine32",
        description="datasketch permutation scheme: affine32 (32-bit, its "
        "default), affine64 (64-bit), legacy (datasketch < 2.0)",
    )
    hash: Literal["poly", "sha1"] = Field(
        "poly",
        description="shingle hash: poly (vectorized; datasketch gives the same "
        "signature with hashfunc=stages.dedup.minhash.poly_hash32/64) "
        "or sha1 (datasketch's default hashfunc, bit-identical, about 5x slower)",
    )
    threshold: float = Field(
        0.5,
        gt=0.0,
        lt=1.0,
        description="target Jaccard similarity; bands x rows are chosen "
        "for it by datasketch's optimal-parameter routine",
    )
    false_positive_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="weight of false positives when choosing bands x rows"
    )
    false_negative_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="weight of false negatives when choosing bands x rows"
    )
    bands: int | None = Field(None, ge=1, le=1024, description="override: number of LSH bands (with rows)")
    rows: int | None = Field(None, ge=1, le=1024, description="override: signature values per band (with bands)")
    verify: Literal["off", "signature", "exact"] = Field(
        "signature",
        description="check every candidate pair (member vs bucket minimum) "
        "and drop it below verify_threshold: signature = "
        "agreement of the two signatures without host boilerplate "
        "(a join of the edges with dedup/signatures/), exact = "
        "Jaccard of the shingle sets (bucket rows then carry the "
        "shingle hashes: ~100x shuffle volume for 300-word documents)",
    )
    verify_threshold: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="similarity a verified candidate pair must reach (chance bucket matches are far below it)",
    )
    verify_kept: bool = Field(
        True,
        description="with verify on, also check every removed document "
        "against the document kept in its stead (signatures, "
        "same rule and threshold), so that a cluster cannot chain documents that are not copies of the kept one",
    )
    boilerplate: BoilerplateConfig = Field(
        default_factory=BoilerplateConfig, description="host boilerplate left out of the signature checks"
    )

    @model_validator(mode="after")
    def _bands_rows(self) -> MinHashConfig:
        if (self.bands is None) != (self.rows is None):
            raise ValueError("set both bands and rows, or neither")
        if self.bands is not None and self.bands * self.rows > self.num_perm:
            raise ValueError(f"bands x rows = {self.bands * self.rows} exceeds num_perm = {self.num_perm}")
        return self


class ComponentsConfig(BaseModel):
    """Connected components of the duplicate graph."""

    model_config = ConfigDict(extra="forbid")

    local_max_edges: int = Field(
        20_000_000,
        ge=0,
        le=2_000_000_000,
        description="at most this many edges: one process (numpy, scipy above "
        "100,000); more: distributed large-star/small-star on Ray Data",
    )
    max_rounds: int = Field(
        64, ge=1, le=10_000, description="large-star/small-star rounds before giving up with an error"
    )


class KeepConfig(BaseModel):
    """Which document of a duplicate cluster stays."""

    model_config = ConfigDict(extra="forbid")

    score_column: str = Field(
        "quality_score",
        description="when the documents have this column, keep the "
        "highest score (ties: smallest id); else the smallest id",
    )
    source_priority: list[str] = Field(
        default_factory=list,
        description="named sources (docs/mix.md), most trusted first: a cluster keeps its copy from the "
        "first source listed, then by the score and id rules; unlisted sources rank after the listed ones, equal",
    )


class ParagraphsConfig(BaseModel):
    """Paragraph (or line) deduplication: exact repeats of normalized paragraphs across the corpus (docs/dedup.md)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        False,
        description="remove repeated paragraphs (or lines) from the documents that document dedup kept; a document "
        "left too short goes through the Gopher/C4/FineWeb rules again",
    )
    unit: Literal["paragraph", "line"] = Field(
        "paragraph",
        description="paragraph: the blocks between blank lines, or every "
        "line of a text without a blank line (the extractor "
        "writes one block per line; Dolma's paragraph dedup splits at newlines); line: every line (CCNet)",
    )
    mode: Literal["keep_first", "min_count"] = Field(
        "keep_first",
        description="keep_first: keep the first occurrence (parts by name, then row, then position) "
        "and remove later copies "
        "(Dolma's paragraph dedup); min_count: remove every copy of a paragraph that min_count documents or more "
        "hold, and the later copies of one repeated only inside fewer (CCNet)",
    )
    min_count: int = Field(
        2,
        ge=2,
        le=1_000_000_000,
        description="with mode: min_count, a paragraph this many documents of the corpus "
        "hold is removed everywhere (CCNet: 2, within a shard)",
    )
    min_chars: int = Field(
        30,
        ge=0,
        le=1_000_000,
        description="a paragraph shorter than this (characters, normalized) is never counted nor "
        "removed: headings, dates, 'Read more' stay",
    )
    min_words: int = Field(
        0,
        ge=0,
        le=100_000,
        description="a paragraph with fewer words (normalized, split at spaces) is never counted nor "
        "removed (Dolma's min_words; 0: off, as for text without spaces)",
    )
    normalizer: Literal["curate", "ccnet"] = Field(
        "curate",
        description="curate: `normalize`'s switches, whitespace collapsed (docs/dedup.md says exactly what "
        "it does); ccnet: CCNet's normalize_for_dedup (lower case, each digit to 0, its list of Unicode punctuation "
        "and the control characters deleted, ASCII punctuation and whitespace kept)",
    )
    normalize: NormalizeConfig = Field(
        default_factory=NormalizeConfig,
        description="with normalizer curate, before the 64-bit hash: lower case, each number (digits with . or , "
        "separators) to one 0, Unicode punctuation and symbols to spaces; whitespace is always collapsed",
    )
    top: int = Field(
        20,
        ge=0,
        le=1000,
        description="the most repeated paragraphs listed in the phase summary (hash, count, "
        "first 100 characters, PII-redacted)",
    )


class DedupConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="run the deduped phase (exact, MinHash-LSH and paragraph dedup)")
    exact: ExactConfig = Field(default_factory=ExactConfig, description="exact duplicates")
    minhash: MinHashConfig = Field(default_factory=MinHashConfig, description="near duplicates")
    components: ComponentsConfig = Field(default_factory=ComponentsConfig, description="connected components")
    keep: KeepConfig = Field(default_factory=KeepConfig, description="keep policy")
    paragraphs: ParagraphsConfig = Field(
        default_factory=ParagraphsConfig, description="paragraph and line dedup, after document dedup"
    )
    partition_rows: int = Field(
        2_000_000,
        ge=100,
        le=100_000_000,
        description="target rows per shuffle partition (bucket rows, edges): bounds the memory of one task",
    )
    batch_docs: int = Field(2000, ge=1, le=1_000_000, description="documents per signature batch")
    keep_intermediate: bool = Field(
        True, description="keep dedup/ (signatures, buckets, edges, components) after the run"
    )
    against: list[ConfigPath] = Field(
        default_factory=list,
        max_length=100,
        description="output roots of earlier runs (local or s3://): a "
        "document that duplicates one an earlier run kept "
        "(exactly, or LSH + the signature check) is removed with "
        "reason duplicate_earlier; reads only their dedup_index/ "
        "(docs/dedup.md#against-earlier-runs-dedupagainst-step-2d)",
    )

    @model_validator(mode="after")
    def _paragraphs_need_the_phase(self) -> DedupConfig:
        if self.paragraphs.enabled and not self.enabled:
            raise ValueError(
                "paragraphs.enabled needs the dedup phase: set dedup.enabled: true (document dedup can be "
                "turned off with exact.enabled and minhash.enabled: false)"
            )
        return self

    @model_validator(mode="after")
    def _against_roots(self) -> DedupConfig:
        for i, root in enumerate(self.against):
            if not root.strip():
                raise ValueError(f"dedup.against[{i}] is empty: give the output root of an earlier run")
            if root.rstrip("/") in [r.rstrip("/") for r in self.against[:i]]:
                raise ValueError(f"dedup.against[{i}] ({root}) is listed twice")
        return self
