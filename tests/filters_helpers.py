"""Shared helpers for the filter tests: run one stage on a few texts."""

from __future__ import annotations

import pyarrow as pa


def table(texts, languages=None, urls=None) -> pa.Table:
    n = len(texts)
    return pa.table(
        {
            "id": [f"doc-{i}" for i in range(n)],
            "url": urls or [f"https://example.org/{i}" for i in range(n)],
            "text": pa.array(texts, pa.large_string()),
            "language": languages or ["en"] * n,
        }
    )


def verdicts(stage, texts, languages=None) -> list[tuple[str | None, str | None]]:
    out = stage(table(texts, languages))
    return list(zip(out.column("reason").to_pylist(), out.column("details").to_pylist(), strict=False))


def verdict(stage, text, language="en") -> tuple[str | None, str | None]:
    return verdicts(stage, [text], [language])[0]
