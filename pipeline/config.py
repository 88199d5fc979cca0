"""One YAML file describes a run; a typed model validates it.

Each stage owns its parameters (a pydantic model beside the stage); this
module only composes them.  Unknown keys are errors, so a typo never silently
falls back to a default.  A bad value is reported as one line naming the field
and what is allowed.
"""

from __future__ import annotations

import logging
import math
import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from core.storage import S3Options
from pipeline.config_checks import check_config
from pipeline.paths import resolve_paths
from pipeline.plugins import ExportConfig, ReaderConfig, UserStageConfig, check_plugins
from pipeline.sources import SourceConfig, check_sources, effective_config
from stages.charset import CharsetConfig
from stages.classify import ClassifierConfig, check_classifiers
from stages.decontam import DecontamConfig
from stages.dedup.config import DedupConfig
from stages.extract import ExtractConfig
from stages.filters import FiltersConfig
from stages.langid import LangIdConfig
from stages.mix import MixConfig
from stages.named_files import ConfigPath
from stages.pii import PiiConfig
from stages.quality import QualityConfig
from stages.sources.documents import DocumentsConfig
from stages.warc import WarcConfig
from stages.writers.config import ShardsConfig

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A config problem, worded for the user (one line per problem)."""


class StorageConfig(BaseModel):
    """Object-storage settings for ``s3://`` inputs and outputs."""

    model_config = ConfigDict(extra="forbid")

    endpoint_url: str | None = Field(
        None, description="S3-compatible endpoint, e.g. http://127.0.0.1:9000; default AWS_ENDPOINT_URL or AWS"
    )
    region: str | None = Field(None, description="default AWS_DEFAULT_REGION or us-east-1")
    anonymous: bool = Field(False, description="unsigned requests (public buckets such as commoncrawl)")
    max_attempts: int = Field(
        10,
        ge=1,
        le=100,
        description="tries per S3 request before a unit fails: throttling "
        "(503 SlowDown) and dropped connections are retried with exponential backoff (AWS standard "
        "retry strategy; the SDK's default of 3 is too few for a snapshot's millions of requests)",
    )


class RayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: str | None = Field(
        None, description="cluster address; null = embedded local Ray (RAY_ADDRESS also works)"
    )
    num_cpus: int | None = Field(None, ge=1, le=4096, description="CPUs for the embedded local Ray; null = all")
    workers: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="units run at once in the unit-by-unit phases "
        "(extracted, final, ...); null = one per CPU of the cluster",
    )
    metrics: bool = Field(
        False,
        description="embedded local Ray only: start Ray's metrics agent and export the run's progress gauges "
        "(curate_phase_*) on its metrics port; off, a stand-in takes the place of "
        "Ray's dashboard agent (~2.6 CPU-s a run) and the driver neither checks "
        "the dashboard's dependencies nor imports the gauges (~0.9 s, measured). "
        "A cluster exports them whatever this says",
    )
    shuffle: Literal["auto", "sort", "hash"] = Field(
        "auto",
        description="Ray Data's shuffle for dedup, the shards and the card: sort (pull-based; measured 0.35 s vs "
        "3-4 s fixed cost per shuffle, and 3.1 s vs 6.7 s for 4M rows into 16 groups on 2 CPUs, but the driver owns "
        "(blocks) x (partitions) pieces: 444 vs 261 MB at 44 partitions), hash (aggregator actors), or auto: sort "
        "up to 16 partitions, hash beyond",
    )


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: where the output is, not what it holds: out of the fingerprints (pipeline/engine/settings.py)
    run_only: ClassVar[tuple[str, ...]] = ("root",)

    root: ConfigPath = Field(..., description="local folder or s3://bucket/prefix")

    @field_validator("root")
    @classmethod
    def _named(cls, v: str) -> str:
        if not v.strip():
            raise ValueError(
                "is empty: give a folder or s3://bucket/prefix (an empty root would be the working directory)"
            )
        return v

    rejected_text: bool = Field(False, description="also store the text of rejected documents")


class CardConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True,
        description="write the dataset card (README.md at the output root; card/: "
        "stats.json, plots) at the end of the run; `curate report` writes it later",
    )


class RunConfig(BaseModel):
    """A whole run."""

    model_config = ConfigDict(extra="forbid")
    #: where the run's work and output are, not what it writes: out of the fingerprints (pipeline/engine/settings.py)
    run_only: ClassVar[tuple[str, ...]] = ("storage", "ray")

    name: str = "run"
    inputs: list[str] = Field(
        ...,
        min_length=1,
        description="input files (WARC; JSON lines or Parquet documents: told by "
        "their content), globs, folders, s3:// URIs, or warc.paths listings; "
        "with `sources`, leave it out (it is then every source's inputs)",
    )
    inputs_base: str = Field(
        "s3://commoncrawl/", description="prefix for the relative paths inside a Common Crawl warc.paths listing"
    )
    output: OutputConfig
    storage: StorageConfig = Field(default_factory=StorageConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    warc: WarcConfig = Field(default_factory=WarcConfig)
    documents: DocumentsConfig = Field(
        default_factory=DocumentsConfig,
        description="JSON lines and Parquet inputs: where a record's text, id, URL and date are",
    )
    charset: CharsetConfig = Field(default_factory=CharsetConfig)
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    langid: LangIdConfig = Field(default_factory=LangIdConfig)
    filters: FiltersConfig = Field(default_factory=FiltersConfig)
    classifiers: list[ClassifierConfig] = Field(
        default_factory=list,
        description="fastText classifiers: each scores every "
        "document in phase 1 (<name>_score, <name>_label) and may filter after dedup (docs/quality.md)",
    )
    quality: QualityConfig | None = Field(
        None,
        exclude=True,
        description="the earlier form of one classifier: read as the "
        "classifiers entry named quality (write that instead)",
    )
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    pii: PiiConfig = Field(
        default_factory=PiiConfig, description="PII detection and redaction in the final phase (docs/pii.md)"
    )
    shards: ShardsConfig = Field(
        default_factory=ShardsConfig,
        description="training shards: tokenizer, layout, shuffle, MDS, WebDataset (docs/shards.md)",
    )
    card: CardConfig = Field(default_factory=CardConfig, description="the dataset card (docs/card.md)")
    decontam: DecontamConfig = Field(
        default_factory=DecontamConfig,
        description="decontamination against eval sets, first in the final phase (docs/decontam.md)",
    )
    sources: list[SourceConfig] = Field(
        default_factory=list,
        max_length=1000,
        description="named sources instead of one `inputs` "
        "list: [{name, inputs, ...overrides of warc, documents, charset, extract, langid, filters, "
        "classifiers}] (docs/mix.md)",
    )
    mix: MixConfig = Field(
        default_factory=MixConfig,
        description="the training mix: shares or epochs per named source, rehydration (docs/mix.md)",
    )
    stages: list[UserStageConfig] = Field(
        default_factory=list,
        max_length=1000,
        description="stages of your own "
        "module: [{use: module:Class, phase: extracted|final, with: {...}, filter: "
        '{...}}] (the README\'s "Your own components")',
    )
    readers: list[ReaderConfig] = Field(
        default_factory=list,
        max_length=100,
        description="readers of your own module "
        "for the input files their suffixes name: [{use: module:Class, with: {...}}]",
    )
    exports: list[ExportConfig] = Field(
        default_factory=list,
        max_length=100,
        description="copies of a phase's kept "
        "documents under exports/<name>/: [{name, use: jsonl|parquet|module:Class, "
        "phase, columns, with}]",
    )

    #: each named source's effective config, built when first asked for (pipeline/sources.py)
    _by_source: dict = PrivateAttr(default_factory=dict)
    #: in a named source's effective config: that source's name
    _named: str | None = PrivateAttr(None)

    @field_validator("output", mode="before")
    @classmethod
    def _output_shorthand(cls, v: Any) -> Any:
        return {"root": v} if isinstance(v, str) else v

    @field_validator("inputs")
    @classmethod
    def _no_empty_input(cls, v: list[str]) -> list[str]:
        empty = [i for i, entry in enumerate(v) if not entry.strip()]
        if empty:  # an empty entry is the working directory: every file under it would be read
            raise ValueError(f"entry {empty[0]} is empty: give a file, glob, folder or s3:// URI")
        return v

    @model_validator(mode="before")
    @classmethod
    def _inputs_of_sources(cls, v: Any) -> Any:
        """With named sources, ``inputs`` is every source's inputs (what the run expands and reads)."""
        if isinstance(v, dict) and isinstance(v.get("sources"), list) and "inputs" not in v:
            entries = [
                e
                for s in v["sources"]
                if isinstance(s, dict) and isinstance(s.get("inputs"), list)
                for e in s["inputs"]
            ]
            v = {**v, "inputs": list(dict.fromkeys(entries))}
        return v

    @model_validator(mode="after")
    def _sources_and_mix(self) -> RunConfig:
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(
                "sources: two sources have the same name "
                f"({', '.join(sorted({n for n in names if names.count(n) > 1}))}): give each its own"
            )
        if self.sources and self.inputs != list(dict.fromkeys(e for s in self.sources for e in s.inputs)):
            raise ValueError(
                "inputs: with named sources, give each source its inputs (sources[].inputs) and leave `inputs` out"
            )
        mode = "weights" if self.mix.weights is not None else "epochs"
        if self.mix.named and set(self.mix.named) != set(names):
            missing, unknown = sorted(set(names) - set(self.mix.named)), sorted(set(self.mix.named) - set(names))
            raise ValueError(
                f"mix.{mode}: "
                + (
                    f"no {mode[:-1]} for source(s) {', '.join(missing)} (give 0 to leave one out)"
                    if missing
                    else f"{', '.join(unknown)} is not a named source (sources: "
                    f"{', '.join(names) or 'none: name them in `sources`'})"
                )
            )
        unknown = [n for n in self.dedup.keep.source_priority if n not in names]
        if unknown:
            raise ValueError(
                f"dedup.keep.source_priority: {', '.join(unknown)} is not "
                f"a named source (sources: {', '.join(names) or 'none'})"
            )
        if self.mix.draws and not self.shards.enabled:
            raise ValueError("mix: the mix is drawn by the shards phase: set shards.enabled: true or remove the mix")
        if self.mix.rehydrate.enabled and not self.dedup.enabled:
            raise ValueError("mix.rehydrate: needs the duplicate cluster sizes of dedup: set dedup.enabled: true")
        return self

    def model_copy(self, *, update: dict | None = None, deep: bool = False) -> RunConfig:
        out = super().model_copy(update=update, deep=deep)
        out._by_source = {}  # the copy's own sources' configs: the effective configs of the original may differ
        return out

    @property
    def source_name(self) -> str | None:
        """The named source whose effective config this is (pipeline/sources.py), or None for a run's own config."""
        return self._named

    def for_source(self, name: str | None) -> RunConfig:
        """The config a named source's documents see: the run's with
        the source's overrides (itself for None or no sources)."""
        if name is None or not self.sources:
            return self
        if name not in self._by_source:
            source = next((s for s in self.sources if s.name == name), None)
            if source is None:
                raise ConfigError(f"config error: sources: no source named {name!r}")
            self._by_source[name] = effective_config(self, source)
        return self._by_source[name]

    @field_validator("classifiers")
    @classmethod
    def _unique_names(cls, v: list[ClassifierConfig]) -> list[ClassifierConfig]:
        check_classifiers(v)
        return v

    @model_validator(mode="after")
    def _quality_is_a_classifier(self) -> RunConfig:
        """The earlier ``quality:`` section becomes the first
        classifier; dedup's keep policy names a score that exists."""
        legacy = self.quality.as_classifier() if self.quality is not None else None
        if legacy is not None:
            if any(c.name == legacy.name for c in self.classifiers):
                raise ValueError("quality: and a classifiers entry named quality: keep only the classifiers entry")
            log.info("config: the quality: section is read as %s", self.quality.replacement())
            self.classifiers = [legacy, *self.classifiers]
        self.quality = None
        keep = self.dedup.keep.score_column
        scores = [c.score_column for c in self.classifiers]
        scores += [col for s in self.stages if s.phase == "extracted" for col in s.scores()]  # taggers before dedup
        if keep != type(self.dedup.keep)().score_column and keep not in scores:
            raise ValueError(
                f"dedup.keep.score_column: no classifier writes {keep!r} (this run's scores: "
                f"{', '.join(scores) or 'none'}): name one of them, or add the classifier or a tagger "
                "(a stages: entry of phase extracted that declares it in its scores)"
            )
        return self


def s3_options(config: RunConfig) -> S3Options:
    """The object-storage options of a run (for inputs and outputs on s3://)."""
    s = config.storage
    return S3Options(s.endpoint_url, s.region, s.anonymous, s.max_attempts)


def _describe(err: dict) -> str:
    where = ".".join(str(p) for p in err["loc"])
    if not where and err["type"] == "value_error":  # a check across sections names its own fields
        return f"config error: {err['msg'].removeprefix('Value error, ')}"
    where = where or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"config error: {where}: unknown field (check the spelling; see the README's config reference)"
    if err["type"] == "missing":
        return f"config error: {where}: required field is missing"
    got = err.get("input")
    got_txt = f" (got {got!r})" if got is not None and not isinstance(got, (dict, list)) else ""
    msg = err["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's own message
    if not err["loc"] and re.match(r"[a-z_.]+: ", msg):  # a whole-config check names its field itself
        return f"config error: {msg}"
    return f"config error: {where}: {msg}{got_txt}"


def _non_finite(data: Any, path: tuple[str, ...] = ()) -> list[str]:
    """Where the raw config holds inf or nan (YAML's .inf, .nan): never a meaningful count, size or time."""
    if isinstance(data, float) and not math.isfinite(data):
        return [f"config error: {'.'.join(path) or '(top level)'}: must be a finite number (got {data})"]
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    return [p for k, v in items for p in _non_finite(v, (*path, str(k)))]


def parse_config(data: dict) -> RunConfig:
    """The typed config, or a ConfigError with one line per problem.  Every count, size and time is
    bounded by its field (a lower and an upper bound) and finite; what no field can check alone (a boolean
    where a number belongs, a minimum above its maximum, an unknown language label) by pipeline/config_checks.py."""
    problems = _non_finite(data)
    if problems:
        raise ConfigError("\n".join(problems))
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError("\n".join(_describe(err) for err in e.errors())) from None
    problems = check_sources(config)  # each named source's own settings, merged
    if problems:
        raise ConfigError("\n".join(problems))
    problems = check_config(config, data)  # what no field checks alone: booleans as numbers, crossed bounds...
    problems += check_plugins(config)  # the stages, readers and exports of the user's own modules, across entries
    if problems:
        raise ConfigError("\n".join(problems))
    return config


def load_config(path: str | os.PathLike, inputs: list[str] | None = None, output: str | None = None) -> RunConfig:
    """Read a YAML config; ``inputs``/``output`` override the file's values.  Every path it names (but the inputs,
    which keep their names) is made absolute, read from the working directory (pipeline/paths.py)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config error: file not found: {path}")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        raise ConfigError(f"config error: {path} is not a text file (expected UTF-8 YAML)") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"config error: {path} is not valid YAML: {e}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config error: {path}: the top level must be a mapping of fields")
    if inputs:
        data["inputs"] = list(inputs)
    if output is not None:
        data["output"] = {**(data.get("output") if isinstance(data.get("output"), dict) else {}), "root": output}
    config = parse_config(data)
    resolve_paths(config)  # relative paths are read from the working directory: absolute before anything ships
    return config
