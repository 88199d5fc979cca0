"""The training mix: how many times each document of documents/final goes into the shards.

Three settings decide it (the ``mix:`` section): target shares of the output tokens per named source
(``weights``), or copies of each source (``epochs``), and rehydration (FineWeb-2's: a document kept by
dedup counts ``weights[cluster size]`` times in its source's pool).  Everything here is pure: numpy and
Arrow in, numbers out; the shards phase runs it (pipeline/mixing.py) in two passes:

1. **tally**: every document's tokens, added up per source in a histogram over a seeded hash of its id
   (:func:`tally`, one part at a time; tallies add up);
2. **plan**: per source, the copies every pool item gets (``whole``) and the hash bins whose items get one
   more (``cut``): the bins are taken in hash order until the source's target tokens are met, the cut put
   at the bin edge nearest the target (:func:`plan_mix`).  The plan knows the tokens it draws exactly (the
   histogram is exact), so the shares are checked before any shard is written;
3. **draw**: each document's copies follow from its id, source and cluster size alone (:func:`draw`), so
   any worker draws any batch the same way, whatever the order and partitioning: the same config gives
   the same bytes.  Copy ``k >= 1`` of a document is a new sample with id ``<id>#<k>``, shuffled on its own.

A pool item is one rehydrated copy of a document (``m`` of them for a weight ``m``); item ``j`` of a
document hashes to ``fmix64(h + j * golden)`` with ``h`` the xxh3 of ``mix:<seed>:<id>``, and its bin is
the top ``BIN_BITS`` bits.  The cut's error is at most half a bin's tokens: about ``1 / 2^21`` of a
source whose documents fill the bins, one document's tokens at most for a small source.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.hashing import fmix64
from stages.base import REASON, set_column
from stages.source_name import SOURCE_NAME

#: The column of a sample's copy number (0: the document's first copy; k >= 1: its id has ``#k``).
COPY = "mix_copy"
#: dedup's cluster size of a kept document (pipeline/dedup/write.py): rehydration reads it.
CLUSTER = "dup_cluster_size"
#: The pool's name when the run names no sources (rehydration alone).
ALL = ""
#: Hash bits of the histogram's bins.
BIN_BITS = 20
BINS = 1 << BIN_BITS
_SHIFT = np.uint64(64 - BIN_BITS)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: FineWeb-2's rehydration weights (github.com/huggingface/fineweb-2,
#: README): smallest cluster size of a range -> copies.
FINEWEB2 = {1: 1, 2: 2, 3: 3, 5: 5, 100: 8, 1000: 1}
#: Epochs of a source past which the run warns and the card lists it under Known limitations: up to ~4 epochs
#: repeated tokens are worth about as much as new ones, past that less and less (Muennighoff et al. 2023,
#: "Scaling Data-Constrained Language Models").
REPEAT_WARNING_EPOCHS = 4


class MixError(ValueError):
    """A mix the documents cannot give (a source with no tokens, shares missed): one line naming the field."""


class RehydrateConfig(BaseModel):
    """FineWeb-2's rehydration: a document dedup kept counts as several, by the size of its duplicate cluster."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        False, description="upsample kept documents by their duplicate cluster size (dup_cluster_size; needs dedup)"
    )
    weights: dict[int, int] = Field(
        default_factory=lambda: dict(FINEWEB2),
        description="smallest cluster size of a range -> copies of its "
        "documents (FineWeb-2's: 1: 1, 2: 2, 3: 3, 5: 5, "
        "100: 8, 1000: 1; a size takes the range of the largest key not above it; very large clusters are often spam)",
    )

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: dict[int, int]) -> dict[int, int]:
        if 1 not in v:
            raise ValueError("needs a weight for cluster size 1 (documents without duplicates), e.g. {1: 1, 2: 2}")
        if len(v) > 64 or any(k < 1 for k in v) or any(not 0 <= w <= 1000 for w in v.values()):
            raise ValueError("at most 64 ranges; sizes from 1, weights from 0 to 1000")
        return dict(sorted(v.items()))

    def copies(self, sizes: np.ndarray) -> np.ndarray:
        """The weight of each cluster size (a missing size, 0 or less, counts as 1: no duplicates)."""
        limits = np.array(list(self.weights), np.int64)
        weights = np.array(list(self.weights.values()), np.int64)
        return weights[np.searchsorted(limits, np.maximum(sizes, 1), side="right") - 1]


class MixConfig(BaseModel):
    """The training mix of the shards (docs/mix.md)."""

    model_config = ConfigDict(extra="forbid")

    weights: dict[str, float] | None = Field(
        None,
        description="target share of the output tokens per named source, e.g. {crawl: 0.7, code: 0.3} (normalized to "
        "sum 1; 0 leaves a source out): sources are subsampled, or repeated whole document by document, to hit it",
    )
    epochs: dict[str, float] | None = Field(
        None, description="or: copies of each named source's tokens (0.5: a half, 2: twice), e.g. {crawl: 1, wiki: 3}"
    )
    tokens: int | None = Field(
        None,
        ge=1,
        le=10**15,
        description="with weights: the output tokens to draw; null = as many as the sources hold "
        "(every source's tokens in documents/final, after rehydration)",
    )
    seed: int = Field(
        0, ge=0, le=2**63 - 1, description="seed of which documents are drawn (another seed: another subsample)"
    )
    max_epochs: float = Field(
        100,
        gt=0,
        le=1000,
        description="the most epochs a source may be drawn (its drawn tokens / its tokens): a mix "
        "asking more is an error before any shard is written (each copy of a document is a sample the shards phase "
        f"holds and writes: tokens 1e12 on 10 documents would be 10^8 copies of each); past {REPEAT_WARNING_EPOCHS} "
        "epochs the run warns and the card says so",
    )
    max_share_error: float = Field(
        0.005,
        gt=0,
        le=1,
        description="the shards phase fails, before writing, when a source's share of the drawn tokens "
        "misses its weight by more (a source of a few large documents cannot be cut finer)",
    )
    rehydrate: RehydrateConfig = Field(
        default_factory=RehydrateConfig, description="FineWeb-2's rehydration by duplicate cluster size"
    )

    @field_validator("weights", "epochs")
    @classmethod
    def _values(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if v is None:
            return v
        if not v or any(not math.isfinite(x) or not 0 <= x <= 1000 for x in v.values()):
            raise ValueError("give each named source a number from 0 to 1000")
        if not any(x > 0 for x in v.values()):
            raise ValueError("at least one source needs more than 0")
        return v

    @model_validator(mode="after")
    def _one_mode(self) -> MixConfig:
        if self.weights is not None and self.epochs is not None:
            raise ValueError("give weights (shares of the output tokens) or epochs (copies per source), not both")
        if self.tokens is not None and self.weights is None:
            raise ValueError("tokens sets the output size of a mix by weights: give weights, or leave tokens out")
        over = {k: v for k, v in (self.epochs or {}).items() if v > self.max_epochs}
        if over:
            name, value = next(iter(over.items()))
            raise ValueError(
                f"epochs.{name}: {value:g} epochs is more than max_epochs ({self.max_epochs:g}): "
                "lower it, or raise max_epochs if the shards phase's workers can hold that many copies"
            )
        return self

    @property
    def draws(self) -> bool:
        """Whether the shards draw documents (a mix by source, or rehydration) instead of taking each once."""
        return self.weights is not None or self.epochs is not None or self.rehydrate.enabled

    @property
    def named(self) -> dict[str, float]:
        """The named sources and their weight or epochs."""
        return dict(self.weights or self.epochs or {})


# ---------------------------------------------------------------- pool items and their hashes


def doc_hashes(ids, seed: int) -> np.ndarray:
    """xxh3-64 of ``mix:<seed>:<id>`` for every id (another hash
    than the shuffle plan's: draw and order are independent)."""
    prefix = f"mix:{seed}:".encode()
    values = ids.to_pylist() if isinstance(ids, (pa.Array, pa.ChunkedArray)) else list(ids)
    return np.fromiter(
        (xxhash.xxh3_64_intdigest(prefix + v.encode("utf-8")) for v in values), np.uint64, count=len(values)
    )


def pool_items(hashes: np.ndarray, multiplicity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(document of each pool item, its hash bin): ``multiplicity[d]`` items per document ``d``."""
    doc = np.repeat(np.arange(len(hashes)), multiplicity)
    j = np.arange(len(doc)) - np.repeat(np.cumsum(multiplicity) - multiplicity, multiplicity)
    return doc, fmix64(hashes[doc] + j.astype(np.uint64) * _GOLDEN) >> _SHIFT


def _sources(batch: pa.Table) -> np.ndarray:
    """Each row's source name (ALL without the column)."""
    if SOURCE_NAME not in batch.column_names:
        return np.full(len(batch), ALL, dtype=object)
    return np.array(pc.fill_null(batch.column(SOURCE_NAME), ALL).to_pylist(), dtype=object)


def multiplicity(batch: pa.Table, config: MixConfig | dict | None) -> np.ndarray:
    """Each document's pool items: its rehydration weight, or 1."""
    rehydrate = _rehydrate(config)
    if rehydrate is None:
        return np.ones(len(batch), np.int64)
    sizes = (
        pc.fill_null(batch.column(CLUSTER), 1).to_numpy(zero_copy_only=False)
        if CLUSTER in batch.column_names
        else np.ones(len(batch))
    )
    return rehydrate.copies(np.asarray(sizes, np.int64))


def _rehydrate(config) -> RehydrateConfig | None:
    if isinstance(config, MixConfig):
        return config.rehydrate if config.rehydrate.enabled else None
    if isinstance(config, dict):  # a plan's weights
        return RehydrateConfig(enabled=True, weights=config)
    return None


# ---------------------------------------------------------------- 1. tally


@dataclass
class Tally:
    """One source's documents and tokens in documents/final, and its pool's tokens per hash bin (adds up)."""

    documents: int = 0
    tokens: int = 0
    pool_documents: int = 0  # pool items: documents counted with their rehydration weight
    pool_tokens: int = 0
    rejected: int = 0  # refused by the tokenizer or without tokens: never drawn
    by_weight: Counter = field(default_factory=Counter)  # rehydration weight -> documents
    hist: np.ndarray = field(default_factory=lambda: np.zeros(BINS, np.float64))

    def add(self, other: Tally) -> Tally:
        return Tally(
            self.documents + other.documents,
            self.tokens + other.tokens,
            self.pool_documents + other.pool_documents,
            self.pool_tokens + other.pool_tokens,
            self.rejected + other.rejected,
            self.by_weight + other.by_weight,
            self.hist + other.hist,
        )

    def to_json(self) -> dict:
        bins = np.flatnonzero(self.hist)
        return {
            "documents": self.documents,
            "tokens": self.tokens,
            "pool_documents": self.pool_documents,
            "pool_tokens": self.pool_tokens,
            "rejected": self.rejected,
            "by_weight": {str(k): v for k, v in self.by_weight.items()},
            "bins": bins.tolist(),
            "bin_tokens": self.hist[bins].astype(np.int64).tolist(),
        }

    @classmethod
    def from_json(cls, data: dict) -> Tally:
        hist = np.zeros(BINS, np.float64)
        hist[np.array(data["bins"], np.int64)] = data["bin_tokens"]
        return cls(
            data["documents"],
            data["tokens"],
            data["pool_documents"],
            data["pool_tokens"],
            data["rejected"],
            Counter({int(k): v for k, v in data["by_weight"].items()}),
            hist,
        )


def tally(batch: pa.Table, tokens: np.ndarray, drawn: np.ndarray, config: MixConfig) -> dict[str, Tally]:
    """Per source, the tallies of a batch: ``tokens`` per document (BOS/EOS included), ``drawn``: documents that
    may be drawn (False: the tokenizer refused it or it has no tokens)."""
    names = _sources(batch)
    mult = multiplicity(batch, config)
    doc, bins = pool_items(doc_hashes(batch.column("id"), config.seed), np.where(drawn, mult, 0))
    tokens = np.asarray(tokens, np.int64)
    out = {}
    for name in sorted(set(names.tolist())):
        mine = names == name
        ok = mine & drawn
        items = mine[doc]
        weights, counts = np.unique(mult[ok], return_counts=True)
        out[name] = Tally(
            int(ok.sum()),
            int(tokens[ok].sum()),
            int(mult[ok].sum()),
            int((tokens * mult)[ok].sum()),
            int((mine & ~drawn).sum()),
            Counter({int(w): int(c) for w, c in zip(weights, counts, strict=False)}),
            np.bincount(bins[items].astype(np.int64), weights=tokens[doc[items]], minlength=BINS),
        )
    return out


def add_tallies(a: dict[str, Tally], b: dict[str, Tally]) -> dict[str, Tally]:
    return {k: a[k].add(b[k]) if k in a and k in b else a.get(k) or b[k] for k in sorted(set(a) | set(b))}


# ---------------------------------------------------------------- 2. plan


@dataclass(frozen=True)
class SourceDraw:
    """What one source gives the shards."""

    name: str
    documents: int
    tokens: int
    pool_documents: int
    pool_tokens: int
    rejected: int
    target_tokens: float
    target_share: float | None  # mix by weights: the share asked for
    whole: int  # copies every pool item gets
    cut: int  # items in hash bins below it get one more
    drawn_tokens: int  # exactly what the draw gives (the histogram is exact)
    by_weight: dict[int, int]  # rehydration weight -> documents

    @property
    def epochs(self) -> float | None:
        return round(self.drawn_tokens / self.tokens, 6) if self.tokens else None


@dataclass(frozen=True)
class MixPlan:
    """Every source's draw, and what decides each document's copies (the seed, the rehydration weights)."""

    seed: int
    mode: str  # weights, epochs or rehydrate
    sources: tuple[SourceDraw, ...]
    rehydrate: dict[int, int] | None = None

    def source(self, name: str) -> SourceDraw | None:
        return next((s for s in self.sources if s.name == name), None)

    @property
    def drawn_tokens(self) -> int:
        return sum(s.drawn_tokens for s in self.sources)

    def shares(self) -> dict[str, float]:
        total = self.drawn_tokens
        return {s.name: s.drawn_tokens / total if total else 0.0 for s in self.sources}

    def share_error(self) -> float:
        """The largest miss of a source's share of the drawn tokens against its weight (0 without weights)."""
        shares = self.shares()
        return max(
            (abs(shares[s.name] - s.target_share) for s in self.sources if s.target_share is not None), default=0.0
        )

    def to_json(self) -> dict:
        return {
            "seed": self.seed,
            "mode": self.mode,
            "rehydrate": {str(k): v for k, v in self.rehydrate.items()} if self.rehydrate else None,
            "sources": [{**asdict(s), "by_weight": {str(k): v for k, v in s.by_weight.items()}} for s in self.sources],
        }

    @classmethod
    def from_json(cls, data: dict) -> MixPlan:
        sources = tuple(
            SourceDraw(**{**s, "by_weight": {int(k): v for k, v in s["by_weight"].items()}}) for s in data["sources"]
        )
        rehydrate = {int(k): v for k, v in data["rehydrate"].items()} if data.get("rehydrate") else None
        return cls(data["seed"], data["mode"], sources, rehydrate)


def plan_mix(tallies: dict[str, Tally], config: MixConfig) -> MixPlan:
    """Each source's draw; MixError when a source with a weight
    has no tokens or the shares miss by more than allowed."""
    named = config.named
    names = sorted(set(tallies) | set(named)) if named else sorted(tallies)
    empty = Tally()
    pool = {n: tallies.get(n, empty).pool_tokens for n in names}
    if config.weights is not None:
        total_weight = sum(config.weights.values())
        out_tokens = config.tokens if config.tokens is not None else sum(pool.values())
        share = {n: config.weights.get(n, 0.0) / total_weight for n in names}
        target = {n: share[n] * out_tokens for n in names}
        mode = "weights"
    else:
        share = {n: None for n in names}
        target = {n: (config.epochs or {}).get(n, 1.0) * pool[n] for n in names}
        mode = "epochs" if config.epochs is not None else "rehydrate"
    draws = []
    for n in names:
        t = tallies.get(n, empty)
        if target[n] > 0 and not t.pool_tokens:
            raise MixError(
                f"mix.{mode}.{n}: source {n!r} has no tokens in documents/final (every document filtered out?): "
                f"set its {mode[:-1]} to 0 or fix its inputs"
            )
        _check_epochs(n, t, target[n], config)  # before the draw is planned: 1e12 tokens of 10 documents never is
        whole, cut, drawn = _cut(t, target[n])
        draws.append(
            SourceDraw(
                n,
                t.documents,
                t.tokens,
                t.pool_documents,
                t.pool_tokens,
                t.rejected,
                round(target[n], 3),
                share[n],
                whole,
                cut,
                drawn,
                dict(sorted(t.by_weight.items())),
            )
        )
    plan = MixPlan(config.seed, mode, tuple(draws), config.rehydrate.weights if config.rehydrate.enabled else None)
    if plan.share_error() > config.max_share_error:
        got = ", ".join(f"{n} {s:.2%} (asked {plan.source(n).target_share:.2%})" for n, s in plan.shares().items())
        raise MixError(
            f"mix.weights: the nearest draw gives {got}, more than mix.max_share_error ({config.max_share_error:.2%}) "
            f"off: a source of few large documents cannot be cut finer; raise max_share_error or add documents"
        )
    return plan


def _check_epochs(name: str, t: Tally, target: float, config: MixConfig) -> None:
    """MixError when drawing ``target`` tokens of a source repeats it more than ``mix.max_epochs`` times."""
    epochs = target / t.tokens if t.tokens else 0.0
    if epochs <= config.max_epochs:
        return
    field = (
        ("mix.tokens" if config.tokens is not None else f"mix.weights.{name}")
        if config.weights is not None
        else f"mix.epochs.{name}"
        if config.epochs is not None
        else "mix.rehydrate.weights"
    )
    raise MixError(
        f"{field}: the mix would repeat source {name or 'all'!r} {epochs:,.1f} times ({target:,.0f} "
        f"tokens of its {t.tokens:,} in documents/final), more than mix.max_epochs "
        f"({config.max_epochs:g}): lower it, add documents, or raise mix.max_epochs if the shards phase's "
        "workers can hold that many copies"
    )


def repeated_sources(plan: MixPlan) -> dict[str, float]:
    """The sources drawn more than REPEAT_WARNING_EPOCHS epochs, and their epochs."""
    return {s.name: s.epochs for s in plan.sources if s.epochs is not None and s.epochs > REPEAT_WARNING_EPOCHS}


def _cut(t: Tally, target: float) -> tuple[int, int, int]:
    """(copies every item gets, bins below which an item gets one more, tokens drawn) nearest ``target``."""
    if not t.pool_tokens or target <= 0:
        return 0, 0, 0
    whole = int(target // t.pool_tokens)
    rest = target - whole * t.pool_tokens
    cum = np.concatenate([[0.0], np.cumsum(t.hist)])
    cut = int(np.argmin(np.abs(cum - rest)))  # the bin edge nearest the target (ties: the lower)
    return whole, cut, whole * t.pool_tokens + int(round(cum[cut]))


# ---------------------------------------------------------------- 3. draw


def copies(batch: pa.Table, plan: MixPlan) -> np.ndarray:
    """How many samples each document of ``batch`` gives (its
    source's whole copies, one more per item under the cut)."""
    names = _sources(batch)
    mult = multiplicity(batch, plan.rehydrate)
    doc, bins = pool_items(doc_hashes(batch.column("id"), plan.seed), mult)
    unknown = set(names.tolist()) - {s.name for s in plan.sources}
    if unknown:  # never drop a source's documents silently
        raise MixError(
            f"mix: documents of source(s) {sorted(unknown)} that the mix plan does not know (a stale plan?)"
        )
    whole = np.zeros(len(batch), np.int64)
    cut = np.zeros(len(batch), np.int64)
    for s in plan.sources:
        mine = names == s.name
        whole[mine], cut[mine] = s.whole, s.cut
    extra = np.bincount(doc[bins.astype(np.int64) < cut[doc]], minlength=len(batch))
    return mult * whole + extra


def draw(batch: pa.Table, plan: MixPlan) -> pa.Table:
    """The batch's samples: each document as many times as :func:`copies` says (a rejected row, ``reason`` set,
    once: it is reported, never drawn), copy ``k >= 1`` with id ``<id>#<k>``; the copy number in ``mix_copy``."""
    n = copies(batch, plan)
    if REASON in batch.column_names:
        n = np.where(pc.is_valid(batch.column(REASON)).to_numpy(zero_copy_only=False), 1, n)
    rows = np.repeat(np.arange(len(batch)), n)
    k = np.arange(len(rows)) - np.repeat(np.cumsum(n) - n, n)
    out = batch.take(pa.array(rows, pa.int64()))
    copy = pa.array(k, pa.int32())
    ids = pc.if_else(
        pc.greater(copy, 0),
        pc.binary_join_element_wise(out.column("id"), pc.cast(copy, pa.string()), "#"),
        out.column("id"),
    )
    return set_column(set_column(out, "id", ids), COPY, copy)


# ---------------------------------------------------------------- what the shards hold


def group_totals(docs: pa.Table) -> dict[str, dict[str, int]]:
    """Per source, what a shard group holds: samples, distinct documents (copy 0) and tokens."""
    if COPY not in docs.column_names or not len(docs):
        return {}
    names = _sources(docs)
    first = docs.column(COPY).to_numpy(zero_copy_only=False) == 0
    tokens = np.asarray(docs.column("num_tokens").to_numpy(zero_copy_only=False), np.int64)
    return {
        n: {
            "samples": int((names == n).sum()),
            "documents": int((first & (names == n)).sum()),
            "tokens": int(tokens[names == n].sum()),
        }
        for n in sorted(set(names.tolist()))
    }


def manifest_section(plan: MixPlan, totals: dict[str, dict[str, int]]) -> dict:
    """The manifest's ``mix``: per source, what documents/final held, what was asked and what the shards hold."""
    written = sum(t.get("tokens", 0) for t in totals.values())
    sources = {}
    for s in plan.sources:
        got = totals.get(s.name, {})
        tokens = got.get("tokens", 0)
        sources[s.name or "(all)"] = {
            "documents": s.documents,
            "tokens": s.tokens,
            "rejected": s.rejected,
            "pool_documents": s.pool_documents,
            "pool_tokens": s.pool_tokens,
            "target_share": s.target_share,
            "target_tokens": s.target_tokens,
            "samples": got.get("samples", 0),
            "documents_drawn": got.get("documents", 0),
            "tokens_drawn": tokens,
            "share": round(tokens / written, 6) if written else None,
            "epochs": round(tokens / s.tokens, 6) if s.tokens else None,
        }
    return {
        "mode": plan.mode,
        "seed": plan.seed,
        "tokens": written,
        "planned_tokens": plan.drawn_tokens,
        "samples": sum(v["samples"] for v in sources.values()),
        "documents_drawn": sum(v["documents_drawn"] for v in sources.values()),
        "share_error": round(plan.share_error(), 6),
        "sources": sources,
        "rehydration": None
        if plan.rehydrate is None
        else {
            "weights": {str(k): v for k, v in plan.rehydrate.items()},
            "documents_by_weight": {
                str(k): v for k, v in sorted(sum((Counter(s.by_weight) for s in plan.sources), Counter()).items())
            },
        },
    }
