"""Payload decoding: header, then <meta>, then detection; bad bytes never raise."""

from __future__ import annotations

import codecs

import pyarrow as pa
import pytest

from stages.base import REASON
from stages.charset import Decoder, DecodeStage

RU = "Съешь же ещё этих мягких французских булок, да выпей чаю. " * 8
JA = "日本語のページです。文字コードの判定を確かめるための長い文章を書きます。" * 8
DE = "Größere Übungen für Schüler: Straße, Maß, Bäume und Flüsse. " * 8
KO = "한국어 문서입니다. 문자 인코딩 판별을 확인하기 위한 긴 문장입니다. " * 8


def page(body: str, meta: str | None = None) -> str:
    m = f'<meta charset="{meta}">' if meta else ""
    return f"<html><head>{m}<title>t</title></head><body><p>{body}</p></body></html>"


@pytest.mark.parametrize(
    "text, encoding, http, meta, source",
    [
        (DE, "utf-8", "utf-8", None, "http"),
        (DE, "cp1252", "iso-8859-1", None, "http"),  # WHATWG: iso-8859-1 means windows-1252
        (RU, "koi8-r", None, "koi8-r", "meta"),
        (JA, "shift_jis", None, None, "detected"),  # declared nowhere
        (JA, "euc-jp", None, None, "detected"),
        (KO, "euc-kr", None, None, "detected"),
        (JA, "shift_jis", "utf-8", None, "detected"),  # wrong header: bytes are not UTF-8
        (RU, "cp1251", "utf-8", "utf-8", "detected"),  # wrong header and meta
    ],
)
def test_decodes_to_the_original_text(text, encoding, http, meta, source):
    payload = page(text, meta).encode(encoding)
    decoded, charset, got_source = Decoder().decode(payload, http)
    assert text in decoded
    assert got_source == source


def test_utf8_bom_wins():
    decoded, charset, source = Decoder().decode(b"\xef\xbb\xbf" + page(DE).encode(), "iso-8859-1")
    assert DE in decoded and not decoded.startswith("\ufeff") and source == "bom"


def test_unknown_declared_label_falls_through():
    decoded, _, source = Decoder().decode(page(DE).encode(), "x-no-such-charset")
    assert DE in decoded and source in ("meta", "detected")


def test_binary_payload_is_rejected_as_binary():
    payload = bytes(range(256)) * 40
    assert Decoder().decode(payload, "utf-8") == (None, None, "binary")


def test_stage_sets_columns_and_reasons():
    batch = pa.table(
        {
            "id": ["a", "b"],
            "payload": pa.array([page(DE).encode("cp1252"), bytes(range(256)) * 10], pa.large_binary()),
            "http_charset": ["windows-1252", None],
        }
    )
    out = DecodeStage()(batch)
    assert "payload" not in out.column_names
    assert out.column("charset").to_pylist() == ["cp1252", None]
    assert out.column(REASON).to_pylist() == [None, "binary_payload"]
    assert DE in out.column("html")[0].as_py()


def test_stage_mixes_fast_utf8_rows_and_slow_rows_in_order():
    ja_sjis = page(JA).encode("shift_jis")
    rows = [
        (page(DE).encode(), "utf-8"),                      # declared UTF-8: Arrow fast path
        (page(RU, "koi8-r").encode("koi8-r"), None),        # meta koi8-r: Python path
        (page(DE).encode(), None),                          # undeclared, valid UTF-8
        (bytes(range(256)) * 20, "utf-8"),                  # binary
        (ja_sjis, "utf-8"),                                 # claims UTF-8, is not: falls back
        (codecs.BOM_UTF8 + page(KO).encode(), None),        # BOM
    ]
    batch = pa.table({"payload": pa.array([r[0] for r in rows], pa.large_binary()), "http_charset": [r[1] for r in rows]})
    out = DecodeStage()(batch)
    html = out.column("html").to_pylist()
    assert DE in html[0] and RU in html[1] and DE in html[2] and html[3] is None and JA in html[4] and KO in html[5]
    assert out.column("charset_source").to_pylist() == ["http", "meta", "valid_utf8", "binary", "detected", "bom"]
    assert out.column("charset").to_pylist() == ["utf-8", "koi8-r", "utf-8", None, "shift_jis", "utf-8"]
