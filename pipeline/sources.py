"""Named sources: a run's inputs as several sources, each with its own overrides of the per-document settings.

    sources:
      - name: crawl
        inputs: [s3://commoncrawl/crawl-data/CC-MAIN-2024-10/warc.paths.gz]
      - name: code
        inputs: [data/code/*.parquet]
        filters: {c4: {enabled: false}, gopher_quality: {enabled: false}}
        classifiers: {quality: {filter: {threshold: 0.2}}}    # by classifier name

Each input file belongs to exactly one source; its documents carry the source's name in the
``source_name`` column (stages/source_name.py) through every phase.  A source's *effective config* is the
run's config with the source's overrides merged in, section by section and key by key (a mapping merges,
any other value replaces; a list of named entries, like ``classifiers``, takes a mapping
by name); the extracted and final phases build each source's stages from it, and its
units' fingerprints cover it, so a changed override redoes that source's parts only.  Sections that are
about the whole corpus (dedup, decontamination, PII, the shards, the mix) are the run's, for every source.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stages.decontam.config import NAME_RE

if TYPE_CHECKING:
    from pipeline.config import RunConfig
    from pipeline.context import RunContext
    from stages.base import StageSpec

#: The run config's sections a source may override: what decides each document on its own.
OVERRIDABLE = ("warc", "documents", "charset", "extract", "langid", "filters", "quality", "classifiers")
_OVERRIDE = "overrides of the run's `{}:` section for this source's documents (merged key by key)"


class SourceConfig(BaseModel):
    """One named source: its inputs and its overrides of the per-document settings."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        ...,
        pattern=NAME_RE.pattern,
        description="the source's name (letters, digits, _ and -): the "
        "`source_name` column, mix.weights, dedup.keep.source_priority and the card use it",
    )
    inputs: list[str] = Field(
        ...,
        min_length=1,
        description="its input files, globs, folders, s3:// URIs or warc.paths listings "
        "(as the run's `inputs`); a file may belong to one source only",
    )
    warc: dict[str, Any] | None = Field(None, description=_OVERRIDE.format("warc"))
    documents: dict[str, Any] | None = Field(None, description=_OVERRIDE.format("documents"))
    charset: dict[str, Any] | None = Field(None, description=_OVERRIDE.format("charset"))
    extract: dict[str, Any] | None = Field(None, description=_OVERRIDE.format("extract"))
    langid: dict[str, Any] | None = Field(None, description=_OVERRIDE.format("langid"))
    filters: dict[str, Any] | None = Field(None, description=_OVERRIDE.format("filters"))
    quality: dict[str, Any] | None = Field(None, description=_OVERRIDE.format("quality"))
    classifiers: dict[str, dict[str, Any]] | None = Field(
        None,
        description="overrides of the run's classifiers for this source's "
        "documents, by classifier name (a top_fraction "
        "is over the whole corpus: a source may set a threshold instead, not another fraction)",
    )

    def overrides(self) -> dict[str, dict]:
        """The sections it overrides: ``{section: the keys it sets}``."""
        return {s: getattr(self, s) for s in OVERRIDABLE if getattr(self, s)}


def merged(base: Any, over: Any, where: str = "") -> Any:
    """``base`` with ``over`` merged in: mappings key by key, a list of named entries by name (``{name: overrides}``),
    any other value replaced; ValueError for a name the list does not hold."""
    if isinstance(over, dict) and isinstance(base, list) and all(isinstance(e, dict) and "name" in e for e in base):
        names = [e["name"] for e in base]
        unknown = [n for n in over if n not in names]
        if unknown:
            raise ValueError(
                f"{where}: no entry named {unknown[0]!r} to override (the run's: {', '.join(names) or 'none'})"
            )
        return [merged(e, over[e["name"]], f"{where}.{e['name']}") if e["name"] in over else e for e in base]
    if not (isinstance(over, dict) and isinstance(base, dict)):
        return over
    return {**base, **{k: merged(base.get(k), v, f"{where}.{k}".lstrip(".")) for k, v in over.items()}}


def _top_fraction(over: Any) -> bool:
    """Whether an override sets a top fraction anywhere (a decision over the whole corpus, never per source)."""
    if isinstance(over, dict):
        return any((k == "top_fraction" and v is not None) or _top_fraction(v) for k, v in over.items())
    return False


def effective_config(config: RunConfig, source: SourceConfig) -> RunConfig:
    """The run's config as ``source``'s documents see it (a RunConfig without sources); ValueError naming the
    source and the field when the merged settings are not valid."""
    from pipeline.config import RunConfig, _describe

    data = config.model_dump(mode="json", exclude={"sources", "mix"})
    data["dedup"]["keep"]["source_priority"] = []  # names sources: a run-wide setting
    for section, over in source.overrides().items():
        if _top_fraction(over):
            raise ValueError(
                f"({source.name}): {section}: a top_fraction is taken over the whole corpus, not per source: "
                "give this source a threshold instead"
            )
        try:
            data[section] = merged(data.get(section), over, section)
        except ValueError as e:
            raise ValueError(f"({source.name}): {e}") from None
    data["inputs"] = list(source.inputs)
    try:
        out = RunConfig.model_validate(data)
    except ValidationError as e:  # the first problem, worded as the run's own (pipeline.config._describe)
        raise ValueError(f"({source.name}): {_describe(e.errors()[0]).removeprefix('config error: ')}") from None
    out._named = source.name
    return out


def check_sources(config: RunConfig) -> list[str]:
    """One line per problem of the named sources: their effective settings, each checked."""
    problems = []
    for i, source in enumerate(config.sources):
        try:
            config.for_source(source.name)
        except ValueError as e:
            problems.append(f"config error: sources[{i}] {e}")
    return problems


def input_sources(config: RunConfig, inputs: list[str]) -> dict[str, str]:
    """The source name of every input file (each source's entries expanded as the run's inputs are), or {}
    without named sources; a ConfigError names a file that two sources claim."""
    if not config.sources:
        return {}
    from pipeline.config import ConfigError, s3_options
    from pipeline.inputs import expand_inputs

    owner: dict[str, str] = {}
    for source in config.sources:
        for uri in expand_inputs(source.inputs, config.inputs_base, s3_options(config)):
            if owner.setdefault(uri, source.name) != source.name:
                raise ConfigError(
                    f"config error: sources: input {uri} is in sources {owner[uri]!r} and {source.name!r}: "
                    "give each file to one source"
                )
    return {uri: owner[uri] for uri in inputs}


def part_sources(ctx: RunContext) -> dict[str, str | None]:
    """The source name of every part (a part keeps the name of its input file's unit), or {} without named sources."""
    if not ctx.config.sources:
        return {}
    first = ctx.phases[0]  # the phase that reads the inputs names each unit's source
    return {u.name: u.params.get("source_name") for u in ctx.units_of(first)}


def overrides_shown(config: RunConfig, sections: tuple[str, ...] | None = None) -> dict[str, dict]:
    """For the plan: each named source and the settings it overrides (those under ``sections``, dotted paths,
    or all), as ``{name: {dotted.key: value}}`` (a source that overrides none of them: ``{}``)."""

    def flat(d: dict, prefix: str) -> dict:
        out = {}
        for k, v in d.items():
            out.update(flat(v, f"{prefix}{k}.") if isinstance(v, dict) and v else {f"{prefix}{k}": v})
        return out

    shown = {}
    for source in config.sources:
        keys = flat({s: o for s, o in source.overrides().items()}, "")
        shown[source.name] = {
            k: v for k, v in keys.items() if sections is None or any(k == s or k.startswith(s + ".") for s in sections)
        }
    return shown


def stages_in_order(lists: list[list[StageSpec]]) -> list[StageSpec]:
    """Several sources' stages as one list for the plan: each stage once (by name), in first-seen order."""
    seen: dict[str, StageSpec] = {}
    for specs in lists:
        for spec in specs:
            seen.setdefault(spec.info().name, spec)
    return list(seen.values())


class StageCache:
    """Stages built once per worker process and shared by the sources whose settings for them are equal
    (three sources with the run's language ID load its model once)."""

    def __init__(self):
        self._built: dict[tuple, Any] = {}

    def build(self, spec: StageSpec):
        settings = spec.config.model_dump_json() if isinstance(spec.config, BaseModel) else repr(spec.config)
        key = (spec.cls, settings, tuple(_arg_key(a) for a in spec.args))
        if key not in self._built:
            self._built[key] = spec.build()
        return self._built[key]

    def stages(self) -> list:
        return list(self._built.values())


def _arg_key(arg: Any) -> Any:
    """A run-time argument as a cache key: its JSON when it has one, else the object itself (an index)."""
    try:
        return json.dumps(arg, sort_keys=True)
    except TypeError:
        return id(arg)
