"""FineWeb-2's per-language config files, mapped onto this pipeline's settings.

FineWeb-2 (Penedo et al. 2025) filters each language with thresholds fitted
for it, published as ``configs/{lang}_{script}.yml`` in
github.com/huggingface/fineweb-2 (Apache-2.0), which its
``fineweb-2-pipeline.py`` passes to DataTrove's filters.  A file maps here as:

====================================  ============================================================
FineWeb-2 key                         our setting (for that language)
====================================  ============================================================
``language_score``                    ``langid.min_score_by_language`` (a GlotLID score there)
``dup_line_frac``                     ``gopher_repetition.dup_line_frac``
``top_n_grams`` / ``dup_n_grams``     ``gopher_repetition.top_n_grams`` / ``dup_n_grams``
``line_punct_thr``                    ``fineweb.line_punct_thr``
``new_line_ratio``                    ``fineweb.new_line_ratio``
``min_avg_word_length`` / ``max_…``   ``gopher_quality.min_avg_word_length`` / ``max_…``
``max_non_alpha_words_ratio``         ``gopher_quality.min_alpha_words_ratio`` (DataTrove's name
                                      for the least share of words with a letter)
``stopwords``                         ``gopher_quality.stop_words`` for the language
====================================  ============================================================

Values are converted where DataTrove reads them differently: a limit DataTrove
skips when it is 0 (``dup_line_frac``, the word-length bounds) and a limit no
document can reach (a fraction above 1, a negative ``line_punct_thr``) turn the
rule off.  What cannot be carried over (an unknown key, an n outside Gopher's
n-grams, stop words that are punctuation, word-length bounds for languages
whose words are not space-separated, a file for a language that lid.176
cannot label) is returned in :attr:`FineWeb2Configs.unmapped` and logged
(:func:`log_unmapped`).

``pipeline=True`` adds the settings the pipeline script fixes for every
language: C4 off, Gopher repetition's paragraph rules and ``dup_line_char_frac``
off (0), FineWeb's short-line rule off (999) and ``char_duplicates_ratio`` 0.1,
two stop words.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from stages.filters import stopwords
from stages.filters.by_language import read_yaml_mapping
from stages.filters.gopher_quality import NO_LENGTH_RULE
from stages.filters.gopher_repetition import DUP_N, TOP_MAX, TOP_N
from stages.filters.labels import NAME_RE, canonical, lid176_code, lid176_to_fineweb2
from stages.named_files import relative_hint

log = logging.getLogger(__name__)
WHAT = "fineweb2_configs"

#: fineweb-2-pipeline.py's settings for every language (the same in each language's run).
PIPELINE_SETTINGS: dict[str, dict[str, Any]] = {
    "gopher_repetition": {"dup_para_frac": None, "dup_para_char_frac": None, "dup_line_char_frac": None},
    "fineweb": {"short_line_thr": None, "char_duplicates_ratio": 0.1},
    "gopher_quality": {"min_stop_words": 2},
    "c4": {"enabled": False},
}


@dataclass(frozen=True)
class Unmapped:
    """A value of a FineWeb-2 file that has no counterpart here, or is changed on the way."""

    file: str
    key: str
    value: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key} = {self.value}: {self.why}"


@dataclass(frozen=True)
class FineWeb2Configs:
    """What a folder of FineWeb-2 config files gives, by language label (lid.176's code where it has one)."""

    folder: str
    files: tuple[str, ...]
    #: label -> the filters' changes for it (a LanguageOverride as data)
    filters: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: label -> least language-ID score (FineWeb-2's ``language_score``)
    min_scores: dict[str, float] = field(default_factory=dict)
    unmapped: tuple[Unmapped, ...] = ()


def read_fineweb2_configs(
    folder: str, languages: list[str] | tuple[str, ...] = (), pipeline: bool = False
) -> FineWeb2Configs:
    """Read ``{lang}_{script}.yml`` files (only ``languages``' if given) and map them.

    Raises ValueError naming the file and key of a value that is not what FineWeb-2 writes.
    """
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(
            f"{WHAT}: {folder!r} is not a folder (give FineWeb-2's configs/ folder, or a copy of some of "
            f"its files){relative_hint(folder)}"
        )
    files = sorted(
        p for p in path.iterdir() if p.is_file() and p.suffix in (".yml", ".yaml") and NAME_RE.fullmatch(p.stem)
    )
    if languages:
        wanted = {canonical(x) for x in languages}
        files = [p for p in files if canonical(p.stem) in wanted]
        missing = wanted - {canonical(p.stem) for p in files}
        if missing:
            raise ValueError(f"{WHAT}: no file for {sorted(missing)} in {folder!r} (fineweb2_languages)")
    if not files:
        raise ValueError(
            f"{WHAT}: no {{lang}}_{{script}}.yml files in {folder!r} (FineWeb-2 names them e.g. rus_Cyrl.yml)"
        )
    filters: dict[str, dict] = {}
    min_scores: dict[str, float] = {}
    unmapped: list[Unmapped] = []
    for file in files:
        label = canonical(file.stem)
        changes, score, notes = map_file(file.name, _load(str(file), file.stat().st_mtime_ns), label)
        if pipeline:  # the file's values win over the script's
            changes = {
                k: {**PIPELINE_SETTINGS.get(k, {}), **changes.get(k, {})} for k in {*PIPELINE_SETTINGS, *changes}
            }
        filters[label] = changes
        if score is not None:
            min_scores[label] = score
        unmapped += notes + _label_notes(file.stem)
    return FineWeb2Configs(str(path), tuple(p.name for p in files), filters, min_scores, tuple(unmapped))


def log_unmapped(configs: FineWeb2Configs) -> None:
    """One warning line for what did not carry over (the list: ``FiltersConfig.fineweb2_unmapped()``)."""
    if configs.unmapped:
        log.warning(
            "%s: %d values of %d files in %s are not carried over as they are, e.g. %s",
            WHAT,
            len(configs.unmapped),
            len(configs.files),
            configs.folder,
            configs.unmapped[0],
        )


@lru_cache(maxsize=4096)
def _load(path: str, mtime_ns: int) -> dict:
    """One file's mapping (cached: the filters and language ID may read the same folder)."""
    return read_yaml_mapping(Path(path), WHAT)


def map_file(name: str, data: dict, label: str) -> tuple[dict, float | None, list[Unmapped]]:
    """(our changes for the language, its language-ID cutoff, what did not carry over) of one file."""
    changes: dict[str, dict[str, Any]] = {}
    notes: list[Unmapped] = []

    def put(filter_name: str, key: str, value: Any) -> None:
        changes.setdefault(filter_name, {})[key] = value

    def note(key: str, value: Any, why: str) -> None:
        notes.append(Unmapped(name, key, _short(value), why))

    score = None
    for key, value in data.items():
        if key == "language_score":
            score = _number(name, key, value, 0, 1)
        elif key == "dup_line_frac":
            put("gopher_repetition", key, _limit(name, key, value, note, zero_is_off=True, most=1))
        elif key in ("top_n_grams", "dup_n_grams"):
            allowed, most = (TOP_N, TOP_MAX) if key == "top_n_grams" else (DUP_N, 1)
            put("gopher_repetition", key, _n_grams(name, key, value, allowed, most, note))
        elif key == "line_punct_thr":
            v = _number(name, key, value, high=1)
            if v < 0:
                note(key, value, "a negative share never removes: the rule is off")
            put("fineweb", key, None if v < 0 else v)
        elif key == "new_line_ratio":
            put("fineweb", key, _limit(name, key, value, note, zero_is_off=False, most=1000))
        elif key in ("min_avg_word_length", "max_avg_word_length"):
            v = _number(name, key, value, 0)
            if label in NO_LENGTH_RULE:
                note(key, value, f"our word-length rule is skipped for {label} (its words are not space-separated)")
            elif key == "min_avg_word_length":
                put("gopher_quality", key, v)  # 0 never removes, as in DataTrove
            else:
                put("gopher_quality", key, _limit(name, key, v, note, zero_is_off=True, most=1000))
        elif key == "max_non_alpha_words_ratio":
            put("gopher_quality", "min_alpha_words_ratio", _number(name, key, value, 0, 1))
        elif key == "stopwords":
            put("gopher_quality", "stop_words", {label: _stop_words(name, value, note)})
        else:
            note(key, value, "no counterpart here")
    return changes, score, notes


def _label_notes(stem: str) -> list[Unmapped]:
    """Where lid.176 will not give a file's language its label (the settings then need GlotLID's labels)."""
    label = canonical(stem)
    if label != stem:
        return []
    code = lid176_code(stem)
    if code is None:
        why = (
            "lid.176 has no label for this language: its settings apply only with a language-ID model that gives "
            f"'{stem}' (GlotLID)"
        )
    else:
        why = (
            f"lid.176 labels this language '{code}' in any script, "
            f"and '{code}' gets {lid176_to_fineweb2()[code]}.yml; "
            f"these settings apply to documents labelled '{stem}' (GlotLID)"
        )
    return [Unmapped(f"{stem}.yml", "(file)", stem, why)]


def _number(name: str, key: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{WHAT}: {name}: {key}: expected a number (got {_short(value)})")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"from {low} to {high}"
            if low is not None and high is not None
            else f"from {low}"
            if low is not None
            else f"up to {high}"
        )
        raise ValueError(f"{WHAT}: {name}: {key}: expected a number {bounds} (got {value})")
    return float(value) if isinstance(value, float) else value


def _limit(name: str, key: str, value: Any, note, zero_is_off: bool, most: float) -> float | None:
    """A threshold: off (None) where DataTrove skips it (0) or where no document can pass it (above ``most``)."""
    v = _number(name, key, value, 0)
    if zero_is_off and v == 0:
        note(key, value, "DataTrove skips a rule whose limit is 0: the rule is off")
        return None
    if v > most:
        note(key, value, f"above {most}, which no document reaches here: the rule is off")
        return None
    return v


def _n_grams(name: str, key: str, value: Any, allowed: range, most: float, note) -> dict[int, float]:
    """FineWeb-2's ``[[n, limit], ...]`` as ``{n: limit}``; a limit above ``most`` (no document reaches it) is off."""
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
        raise ValueError(f"{WHAT}: {name}: {key}: expected a list of [n, limit] pairs (got {_short(value)})")
    out: dict[int, float] = {}
    for n, limit in value:
        if isinstance(n, bool) or not isinstance(n, int):
            raise ValueError(f"{WHAT}: {name}: {key}: n must be a whole number (got {_short(n)})")
        limit = _number(name, f"{key}[{n}]", limit, 0)
        if n not in allowed:
            note(f"{key}[{n}]", limit, f"Gopher's {key} rules are for n = {allowed.start}..{allowed.stop - 1}")
        elif limit > most:
            note(
                f"{key}[{n}]",
                limit,
                f"a share of characters above {most}, which no document reaches: the rule is off for this n",
            )
        else:
            out[n] = limit
    return out


def _stop_words(name: str, value: Any, note) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
        raise ValueError(f"{WHAT}: {name}: stopwords: expected a list of words (got {_short(value)})")
    words = [w for w in value if stopwords.normalise([w])]
    dropped = [w for w in value if w not in words]
    if dropped:
        note("stopwords", dropped, "not words here (punctuation): never matched")
    return words


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
