"""The dedup index: what a run kept, in the form a later run deduplicates against (``dedup_index/``).

Every run that deduplicates writes, beside its outputs and outside the
deletable ``dedup/`` intermediates:

* ``dedup_index/part-<unit>.parquet`` -- one row per document the part KEPT
  (in the part's order): ``id``, ``text_hash`` (the exact hash, 16 bytes),
  and with MinHash on ``sig`` (the signature), ``mask`` (its host-boilerplate
  positions, num_perm bits) and ``keys`` (its LSH band keys, band order, then
  its content keys of step 2c).  Paragraph hashes are not stored.
* ``dedup_index/settings.json`` -- the settings the index depends on (a later
  run must use the same ones), the run's corpus fingerprint, the parts it
  holds (``parts``) and their documents (``documents``); written last, after
  every part file, so an index without it is not complete.

A later run names the earlier roots in ``dedup.against`` (pipeline/dedup/
earlier.py).  It reads exactly the parts ``settings.json`` lists: a listed
part file that is missing (an incomplete copy of the root) or a settings file
that cannot be read is a one-line config error before the run
(:func:`problems`), and part files holding another number of documents than
listed an error when they are read (:func:`listed_files`).  The index is
never published (pipeline/card/hub.py).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.layout import part_file
from core.storage import Storage, location
from pipeline.config import ConfigError, RunConfig, s3_options
from pipeline.dedup.boilerplate import FOLDER as BOILERPLATE
from pipeline.dedup.content import FOLDER as CONTENT
from pipeline.dedup.context import row_of
from stages.dedup import lsh
from stages.dedup.config import DedupConfig

FOLDER = "dedup_index"
SETTINGS = "settings.json"
FORMAT = 1

#: Settings that must be equal for two runs' signatures, keys and hashes to be comparable
#: (key in settings.json -> the config field it comes from, for the error).
CHECKED = {
    "num_perm": "dedup.minhash.num_perm",
    "bands": "dedup.minhash.bands",
    "rows": "dedup.minhash.rows",
    "ngram": "dedup.minhash.ngram",
    "shingle": "dedup.minhash.shingle",
    "normalize": "dedup.minhash.normalize",
    "seed": "dedup.minhash.seed",
    "scheme": "dedup.minhash.scheme",
    "hash": "dedup.minhash.hash",
    "minhash": "dedup.minhash.enabled",
    "exact_normalize": "dedup.exact.normalize",
}


def settings(dedup: DedupConfig) -> dict:
    """The settings an index is built with (compared key by key between runs)."""
    m = dedup.minhash
    bands, rows = lsh.bands_rows(m)
    return {
        "num_perm": m.num_perm,
        "bands": bands,
        "rows": rows,
        "ngram": m.ngram,
        "shingle": m.shingle,
        "normalize": m.normalize.model_dump(),
        "seed": m.seed,
        "scheme": m.scheme,
        "hash": m.hash,
        "minhash": m.enabled,
        "exact_normalize": dedup.exact.normalize.model_dump(),
        # not compared: how the earlier run decided (for the reader)
        "verify_threshold": m.verify_threshold,
        "identical_threshold": m.boilerplate.identical_threshold,
    }


def write_settings(
    storage: Storage, dedup: DedupConfig, corpus_fingerprint: str, parts: list[str], documents: int
) -> None:
    """The index's settings file, written after every part file (its presence marks the index complete)."""
    storage.write_json(
        {
            "format": FORMAT,
            "settings": settings(dedup),
            "corpus_fingerprint": corpus_fingerprint,
            "parts": parts,
            "documents": documents,
        },
        FOLDER,
        SETTINGS,
    )


def write_part(storage: Storage, dedup: DedupConfig, unit: str, kept_rows: np.ndarray) -> int:
    """Write the index rows of one part's kept documents (``kept_rows``: sorted row numbers); returns their bytes."""
    name = part_file(unit)
    meta = storage.read_parquet("dedup", "meta", name, columns=["id", "text_hash"])
    take = pa.array(kept_rows, pa.int64())
    cols = {"id": meta.column("id").take(take), "text_hash": meta.column("text_hash").take(take)}
    m = dedup.minhash
    if m.enabled:
        sig = storage.read_parquet("dedup", "signatures", name).column("sig")
        cols["sig"] = sig.take(take)
        cols["mask"] = _masks(storage, name, kept_rows, m.num_perm)
        cols["keys"] = _keys(storage, name, kept_rows)
    table = pa.table(cols)
    storage.write_parquet(table, FOLDER, name)
    return table.nbytes


def _masks(storage: Storage, name: str, rows: np.ndarray, num_perm: int) -> pa.Array:
    width = (num_perm + 7) // 8
    out = np.zeros((len(rows), width), np.uint8)
    if storage.exists(*BOILERPLATE, name):
        listed = storage.read_parquet(*BOILERPLATE, name)
        at = row_of(listed.column("doc").to_numpy())
        raw = listed.column("mask").combine_chunks()
        bits = np.frombuffer(raw.buffers()[1], np.uint8)[raw.offset * width : (raw.offset + len(raw)) * width].reshape(
            -1, width
        )
        pos = np.searchsorted(rows, at)
        hit = (
            (pos < len(rows)) & (rows[np.minimum(pos, len(rows) - 1)] == at) if len(rows) else np.zeros(len(at), bool)
        )
        out[pos[hit]] = bits[hit]
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), len(out), [None, pa.py_buffer(np.ascontiguousarray(out))]
    )


def _keys(storage: Storage, name: str, rows: np.ndarray) -> pa.Array:
    """Each kept row's LSH keys: its band keys in band order, then its content keys (step 2c)."""
    tables = [storage.read_parquet("dedup", "buckets", name, columns=["band", "key", "doc"])]
    if storage.exists(*CONTENT, name):
        tables.append(storage.read_parquet(*CONTENT, name, columns=["band", "key", "doc"]))
    band = np.concatenate([t.column("band").to_numpy() for t in tables])
    key = np.concatenate([t.column("key").to_numpy() for t in tables]).astype(np.uint64)
    row = row_of(np.concatenate([t.column("doc").to_numpy() for t in tables]))
    source = np.concatenate([np.full(len(t), i, np.int8) for i, t in enumerate(tables)])
    lsh_rows = band >= 0  # exact keys (negative bands) are the text hash, stored on its own
    band, key, row, source = band[lsh_rows], key[lsh_rows], row[lsh_rows], source[lsh_rows]
    pos = np.searchsorted(rows, row)
    ok = (
        (pos < len(rows)) & (rows[np.minimum(pos, max(len(rows) - 1, 0))] == row)
        if len(rows)
        else np.zeros(len(row), bool)
    )
    pos, band, key, source = pos[ok], band[ok], key[ok], source[ok]
    order = np.lexsort((band, source, pos))
    counts = np.bincount(pos, minlength=len(rows))
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(key[order], pa.uint64()))


# --- reading earlier runs' indexes -------------------------------------------------------------------


def earlier_storage(config: RunConfig, root: str) -> Storage:
    return Storage(root, s3_options(config))


def _show(value) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)


class UnusableIndex(ConfigError):
    """An earlier run's index cannot be used as it is (incomplete, unreadable)."""


def read_settings(storage: Storage, where: str) -> dict:
    """An earlier index's settings.json, checked to be a settings
    file that lists its parts; else UnusableIndex (one line)."""
    try:
        data = storage.read_json(FOLDER, SETTINGS)
    except (ValueError, UnicodeDecodeError) as e:  # truncated, not JSON, not UTF-8
        raise UnusableIndex(
            f"config error: {where}: {FOLDER}/{SETTINGS} is not valid JSON ({_first_line(e)}): copy the "
            f"earlier run's {FOLDER}/ again, or rerun its dedup phase"
        ) from None
    except OSError as e:
        raise UnusableIndex(f"config error: {where}: cannot read {FOLDER}/{SETTINGS} ({_first_line(e)})") from None
    parts = data.get("parts") if isinstance(data, dict) else None
    if not (
        isinstance(data, dict)
        and isinstance(data.get("settings"), dict)
        and isinstance(parts, list)
        and all(isinstance(p, str) for p in parts)
        and isinstance(data.get("documents"), int)
    ):
        raise UnusableIndex(
            f"config error: {where}: {FOLDER}/{SETTINGS} is not a dedup index's settings file (it needs "
            f"'settings', 'parts' and 'documents'): copy the earlier run's {FOLDER}/ again, or rerun its "
            f"dedup phase"
        )
    return data


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__


def missing_parts(storage: Storage, data: dict) -> list[str]:
    """The part files settings.json lists that the index folder does not hold (one listing of the folder)."""
    held = set(storage.list(FOLDER, suffix=".parquet"))
    return [part_file(p) for p in data["parts"] if part_file(p) not in held]


def listed_files(storage: Storage, where: str) -> tuple[list[str], int]:
    """The index's part files as settings.json lists them (sorted) and their documents, checked against the listed
    count (each file's footer is read): an index whose files hold other documents is an UnusableIndex."""
    data = read_settings(storage, where)
    missing = missing_parts(storage, data)
    if missing:
        raise UnusableIndex(_missing_line(where, missing))
    files = sorted(part_file(p) for p in data["parts"])
    docs = sum(pq.ParquetFile(storage.path(FOLDER, n), filesystem=storage.fs).metadata.num_rows for n in files)
    if docs != data["documents"]:
        raise UnusableIndex(
            f"config error: {where}: its part files hold {docs} documents, {FOLDER}/{SETTINGS} lists "
            f"{data['documents']}: the copy is incomplete or was changed; copy it again, or rerun its dedup phase"
        )
    return files, docs


def _missing_line(where: str, missing: list[str]) -> str:
    more = f" (and {len(missing) - 1} more of the parts {SETTINGS} lists)" if len(missing) > 1 else ""
    return (
        f"config error: {where}: its index is incomplete: {FOLDER}/{missing[0]} is missing{more}; copy the earlier "
        f"run's {FOLDER}/ again, or rerun its dedup phase"
    )


def problems(config: RunConfig) -> list[str]:
    """One line per ``dedup.against`` entry whose index is missing,
    incomplete, unreadable or built with other settings."""
    if not config.dedup.enabled or not config.dedup.against:
        return []
    out = []
    mine = settings(config.dedup)
    here = location(config.output.root)
    for i, root in enumerate(config.dedup.against):
        where = f"dedup.against[{i}] ({root})"
        if location(root) == here:  # another spelling of the same place: a relative path, /., a symlink, s3://.../
            out.append(
                f"config error: {where} is this run's own output root ({config.output.root}): name an earlier run's"
            )
            continue
        try:
            storage = earlier_storage(config, root)
            found = storage.exists(FOLDER, SETTINGS)
        except Exception as e:  # noqa: BLE001 -- an unreadable root is reported like a missing index
            found, storage = False, None
            out.append(
                f"config error: {where}: cannot read {FOLDER}/{SETTINGS} "
                f"({str(e).splitlines()[0][:200] if str(e) else type(e).__name__})"
            )
            continue
        if not found:
            out.append(
                f"config error: {where} has no dedup index ({FOLDER}/{SETTINGS}): give the output root of a finished "
                f"run that deduplicated"
            )
            continue
        try:
            data = read_settings(storage, where)
        except UnusableIndex as e:
            out.append(str(e))
            continue
        missing = missing_parts(storage, data)
        if missing:
            out.append(_missing_line(where, missing))
            continue
        theirs = data["settings"]
        for key, field in CHECKED.items():
            if theirs.get(key) != mine[key]:
                out.append(
                    f"config error: {where}: its index was built with {field} = {_show(theirs.get(key))}, this run "
                    f"has {_show(mine[key])}: deduplicating against it needs the same setting"
                )
    return out


def check(config: RunConfig) -> None:
    """Raise one ConfigError listing every :func:`problems` line (none: returns)."""
    lines = problems(config)
    if lines:
        raise ConfigError("\n".join(lines))
