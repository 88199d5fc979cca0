"""The other columns of a document that are published: its id, its source, its metadata and any other string.

``text`` and ``url`` are not the only columns that reach ``documents/final`` and the shards (MDS and
WebDataset samples carry ``id``, and any column ``shards.layout.metadata`` names).  A document dump
brings its own: an id that is an e-mail address, a ``metadata`` object (``carry: all``) whose values
hold phone numbers, cards, addresses at any depth, a file name with an address in it.  The PII
stage redacts them here, after the text and the URL:

- ``id`` and every other string column (``content_type``, a classifier's label, ...: all but the
  exempt ones) are read like text (the same recognizers, views, thresholds and actions); an id
  that changes gets ``#`` and 8 hex digits of the SHA-256 of the row's published id, URL and text,
  so that ids stay distinct (the shuffle and the mix draw by id) without a hash of what was removed;
- ``metadata`` (a JSON object in a string, pipeline/sources: stages/sources/documents.py) is parsed
  and every key and string leaf read, a value with its key in front (``phone: 4158675309``: the key
  is context, and a query-style key names an SSN or a phone number, stages/pii/urls.py
  ``keyed_entity``); a finding in a string is replaced where it is, a number with a finding becomes
  the token (a string); it is written back compactly, its order kept;
- ``source`` (the input file) becomes its published name (stages/pii/names.py: path segments that
  hold a PII candidate masked, whatever the settings: a name is no data to annotate);
- a value too dense to read (``max_candidate_digits``) is ``<MASKED>``.

One RE2 scan over every such column of a batch (concatenated) picks the few values that hold a
candidate or a view trigger; only those become Python strings.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.base import DETAILS, REASON
from stages.pii.config import URL_ORIGINAL_COLUMN
from stages.pii.names import public_name
from stages.pii.redact import Finding, resolve
from stages.pii.urls import KEYED_SCORE, MASK, keyed_entity

ID, SOURCE, METADATA = "id", "source", "metadata"
#: Columns not read here: text and url (read before), the url before redaction (kept raw on purpose:
#: ``keep_original``), the rejection columns (rejected rows are never published), the source's configured name
#: (the mix draws by it), and source and metadata (read their own way, below).
EXEMPT = frozenset({"text", "url", URL_ORIGINAL_COLUMN, REASON, DETAILS, "source_name", SOURCE, METADATA})
# WARC record ids ("urn:uuid:...", as the reader gives them, or in brackets) are the crawler's: never PII, never read
_WARC_ID = r"^<?urn:uuid:[0-9a-fA-F-]{36}>?$"


def string_columns(batch: pa.Table) -> list[str]:
    """The string columns read like text: ``id`` and every other one that is not exempt."""
    return [
        f.name
        for f in batch.schema
        if f.name not in EXEMPT and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
    ]


class FieldRedactor:
    """Redacts a batch's other columns with a PiiStage's recognizers and actions (see the module docstring)."""

    def __init__(self, stage):
        self.stage = stage
        self.keyed = stage.keyed
        self._names: dict[str, str] = {}

    def __call__(self, batch: pa.Table) -> pa.Table:
        if not len(batch):
            return batch
        langs = _Languages(batch)
        if SOURCE in batch.column_names and _strings(batch.column(SOURCE)):
            batch = self._sources(batch)
        if self.stage.pattern is None:  # no pattern entity to look for
            return batch
        columns = string_columns(batch)
        if columns:
            batch = self._strings(batch, columns, langs)
        if METADATA in batch.column_names and _strings(batch.column(METADATA)):
            batch = self._metadata(batch, langs)
        return batch

    # ------------------------------------------------------------ source

    def _sources(self, batch: pa.Table) -> pa.Table:
        col = batch.column(SOURCE)
        unique = pc.unique(col).to_pylist()
        for u in unique:
            if u is not None and u not in self._names:
                self._names[u] = public_name(u)
        if all(u is None or self._names[u] == u for u in unique):
            return batch
        new = pa.array([None if u is None else self._names[u] for u in unique], col.type)
        return _set(batch, SOURCE, pc.take(new, pc.index_in(col, pa.array(unique, col.type))))

    # ------------------------------------------------------------ id and other strings

    def _need(self, arrays: list[pa.Array]) -> np.ndarray:
        """One RE2 scan of the arrays end to end: the values with a candidate or a view trigger."""
        # one array: Arrow compiles the expression once per chunk (~3 ms each with its Unicode classes)
        joined = pa.concat_arrays([a.cast(pa.large_string()) for a in arrays])
        need = pc.fill_null(pc.match_substring_regex(joined, f"{self.stage.pattern.re2}|{self.stage.trigger}"), False)
        return need.to_numpy(zero_copy_only=False)

    def _strings(self, batch: pa.Table, columns: list[str], langs: _Languages) -> pa.Table:
        n = len(batch)
        need = self._need([batch.column(c).combine_chunks() for c in columns])
        if not need.any():
            return batch
        if ID in columns:  # crawler record ids are never read
            at = columns.index(ID)
            warc = pc.fill_null(pc.match_substring_regex(batch.column(ID), _WARC_ID), False).to_numpy(
                zero_copy_only=False
            )
            need[at * n : (at + 1) * n] &= ~warc
        todo = np.flatnonzero(need)
        values = [batch.column(columns[k // n])[int(k % n)].as_py() for k in todo]
        redacted = self._texts(values, [langs[int(k % n)] for k in todo], [columns[k // n] for k in todo])
        for name in columns:
            at = columns.index(name)
            changed = {
                int(k % n): new
                for k, old, new in zip(todo, values, redacted, strict=True)
                if k // n == at and new != old
            }
            if name == ID and changed:
                changed = {row: f"{new}#{_row_hash(batch, row, new)}" for row, new in changed.items()}
            batch = self.stage._replace_values(batch, name, changed)
        return batch

    def _texts(self, values: list[str], langs: list[str | None], counted: list[str]) -> list[str]:
        """Each value read like text and redacted by the entities' actions; too dense: MASK."""
        found, dense = self.stage.detect_apart("fields", values, langs)
        out = list(values)
        for k, findings in found.items():
            out[k], per_entity = self.stage.redactor.apply(values[k], findings)
            for e, c in per_entity.items():
                self.stage._counters[f"fields.found.{e}"] += c
        for k in dense:
            out[k] = MASK
        self.stage._counters["fields.read"] += len(values)
        self.stage._counters["fields.changed"] += sum(a != b for a, b in zip(values, out, strict=True))
        return out

    # ------------------------------------------------------------ metadata

    def _metadata(self, batch: pa.Table, langs: _Languages) -> pa.Table:
        col = batch.column(METADATA)
        # the JSON text as written (stages/sources/documents.py: ensure_ascii off, so only control characters, quotes
        # and backslashes are escaped, and no recognizer matches across those): a value's candidate is the JSON's
        rows = np.flatnonzero(self._need([col.combine_chunks()]))
        if not len(rows):
            return batch
        leaves: list[_Leaf] = []
        boxes = {}
        for row in rows:
            boxes[int(row)] = box = _Box(col[int(row)].as_py())
            _collect(box.value, leaves, int(row), box, "value")
        texts = [leaf.text for leaf in leaves]
        found, dense = self.stage.detect_apart("fields", texts, [langs[leaf.row] for leaf in leaves])
        changed_rows = set()
        for k in reversed(range(len(leaves))):  # values before their keys, children before their parents
            leaf = leaves[k]
            findings = [
                f for f in found.get(k, []) if f.end > leaf.offset
            ]  # a finding in the key is the key's own read
            if not findings and self.keyed and leaf.key is not None:
                entity = keyed_entity(leaf.key, str(leaf.value), self.keyed)
                if entity is not None:
                    findings = [Finding(leaf.offset, len(leaf.text), entity, KEYED_SCORE)]
            new = MASK if k in dense else self._apply(leaf, resolve(findings)) if findings else None
            if new is not None:
                leaf.replace(new)
                changed_rows.add(leaf.row)
        changed = {row: boxes[row].dump() for row in sorted(changed_rows)}
        self.stage._counters["fields.metadata_changed"] += len(changed)
        return self.stage._replace_values(batch, METADATA, changed)

    def _apply(self, leaf: _Leaf, findings: list[Finding]):
        """The leaf's new value: a string with its findings replaced in place, a number replaced whole."""
        for f in findings:
            self.stage._counters[f"fields.found.{f.entity}"] += 1
        if not isinstance(leaf.value, str):  # a number
            token = self.stage.redactor.ops[findings[0].entity](leaf.text[findings[0].start : findings[0].end])
            return None if token == leaf.text[findings[0].start : findings[0].end] else token  # annotate: as it was
        shifted = [
            Finding(max(f.start, leaf.offset) - leaf.offset, f.end - leaf.offset, f.entity, f.score) for f in findings
        ]
        new, _ = self.stage.redactor.apply(leaf.value, shifted)
        return new if new != leaf.value else None


class _Leaf:
    """One key or scalar value of a JSON object, the text it is read in (its key in front of a value) and how to
    put a new value back."""

    def __init__(self, row: int, container, slot, key: str | None, value, is_key: bool = False):
        self.row, self.container, self.slot, self.key, self.value, self.is_key = (
            row,
            container,
            slot,
            key,
            value,
            is_key,
        )
        shown = value if is_key else ("" if value is None else str(value))
        self.offset = 0 if is_key or key is None else len(key) + 2
        self.text = shown if self.offset == 0 else f"{key}: {shown}"

    def replace(self, new) -> None:
        if self.is_key:  # a key with PII: the same value under the redacted key (insertion order kept)
            items = list(self.container.items())
            self.container.clear()
            self.container.update((new if k == self.slot else k, v) for k, v in items)
        else:
            self.container[self.slot] = new


def _collect(value, leaves: list[_Leaf], row: int, holder, slot, key: str | None = None) -> None:
    """The leaves of a JSON value (strings and numbers; booleans and nulls hold nothing), parents first."""
    if isinstance(value, dict):
        for k, v in list(value.items()):
            if isinstance(k, str) and k:
                leaves.append(_Leaf(row, value, k, None, k, is_key=True))
            _collect(v, leaves, row, value, k, k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _collect(v, leaves, row, value, i, key)
    elif isinstance(value, str) or isinstance(value, (int, float)) and not isinstance(value, bool):
        leaves.append(_Leaf(row, holder, slot, key, value))


class _Box(dict):
    """One metadata value: its JSON parsed (under ``value``), or, when it is not JSON, the string as it is."""

    def __init__(self, raw: str):
        try:
            super().__init__(value=json.loads(raw))
            self.json = True
        except ValueError:
            super().__init__(value=raw)
            self.json = False

    @property
    def value(self):
        return self["value"]

    def dump(self) -> str:
        if not self.json:
            return self["value"]
        return json.dumps(self["value"], ensure_ascii=False, separators=(",", ":"))


class _Languages:
    """The document language of a few rows (the phone regions and context words of their reading)."""

    def __init__(self, batch: pa.Table):
        self.col = batch.column("language") if "language" in batch.column_names else None

    def __getitem__(self, row: int) -> str | None:
        return None if self.col is None else self.col[row].as_py()


def _row_hash(batch: pa.Table, row: int, new_id: str) -> str:
    """8 hex digits of the row's published id, URL and text: distinct ids stay distinct, nothing removed is hashed."""

    def get(c):
        return batch.column(c)[row].as_py() if c in batch.column_names else None

    blob = json.dumps([new_id, get("url"), get("text")], ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def _strings(col: pa.ChunkedArray) -> bool:
    return pa.types.is_string(col.type) or pa.types.is_large_string(col.type)


def _set(batch: pa.Table, name: str, values) -> pa.Table:
    return batch.set_column(batch.column_names.index(name), name, values)
