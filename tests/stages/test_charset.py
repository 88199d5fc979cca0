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
    assert DE in decoded and source in ("meta", "detected", "valid_utf8")


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
        (page(DE).encode(), "utf-8"),  # declared UTF-8: Arrow fast path
        (page(RU, "koi8-r").encode("koi8-r"), None),  # meta koi8-r: Python path
        (page(DE).encode(), None),  # undeclared, valid UTF-8
        (bytes(range(256)) * 20, "utf-8"),  # binary
        (ja_sjis, "utf-8"),  # claims UTF-8, is not: falls back
        (codecs.BOM_UTF8 + page(KO).encode(), None),  # BOM
    ]
    batch = pa.table(
        {"payload": pa.array([r[0] for r in rows], pa.large_binary()), "http_charset": [r[1] for r in rows]}
    )
    out = DecodeStage()(batch)
    html = out.column("html").to_pylist()
    assert DE in html[0] and RU in html[1] and DE in html[2] and html[3] is None and JA in html[4] and KO in html[5]
    assert out.column("charset_source").to_pylist() == ["http", "meta", "valid_utf8", "binary", "detected", "bom"]
    assert out.column("charset").to_pylist() == ["utf-8", "koi8-r", "utf-8", None, "shift_jis", "utf-8"]


def test_stage_does_not_copy_the_utf8_pages():
    """UTF-8 rows come out as slices of the payloads (a cast only validates), even with a legacy page among them:
    putting rows back in order with a take would copy every page of the batch."""
    big = page(DE * 2000).encode()
    payloads = [big] * 100 + [page(DE).encode("cp1252")] + [big] * 100 + [bytes(range(256)) * 20]
    batch = pa.table(
        {
            "payload": pa.array(payloads, pa.large_binary()),
            "http_charset": ["utf-8"] * 100 + ["windows-1252"] + [None] * 101,
        }
    )
    before = pa.total_allocated_bytes()
    out = DecodeStage()(batch)
    assert pa.total_allocated_bytes() - before < len(big) * 10  # the 200 big pages, ~40 MB, were not copied
    html = out.column("html").to_pylist()
    assert html[0] == html[101] == big.decode() and DE in html[100] and html[201] is None
    assert out.column("charset_source").to_pylist() == ["http"] * 100 + ["http"] + ["valid_utf8"] * 100 + ["binary"]


# ------------------------------------------------------------------------------------------
# hostile labels and bytes (issue 13)


@pytest.mark.parametrize(
    "label",
    [
        "undefined",
        "utf-8\x00",
        "\x00",
        "utf-7",
        "unicode_escape",
        "raw_unicode_escape",
        "rot13",
        "hex",
        "base64",
        "idna",
        "punycode",
        "x-user-defined",
        "replacement",
        "utf-32",
        "a" * 500,
        "utf-8; charset=x",
    ],
)
def test_labels_python_knows_but_browsers_do_not_are_unknown(label):
    payload = page(DE).encode()
    decoded, charset, source = Decoder().decode(payload, label)
    assert DE in decoded and charset == "utf-8"
    out = DecodeStage()(
        pa.table(
            {
                "payload": pa.array([payload, page(DE).encode("cp1252")], pa.large_binary()),
                "http_charset": [label, label],
            }
        )
    )
    assert out.column(REASON).to_pylist() == [None, None]
    assert DE in out.column("html")[0].as_py() and DE in out.column("html")[1].as_py()


@pytest.mark.parametrize(
    "label, payload",
    [("utf-7", b"<html><body><p>+2D3cAA- lone</p></body></html>"), ("unicode_escape", b"<p>\\ud800 lone \\udfff</p>")],
)
def test_codecs_that_yield_lone_surrogates_are_never_used(label, payload):
    decoded, charset, _ = Decoder().decode(payload, label)
    assert charset in ("utf-8", "cp1252") and not any(0xD800 <= ord(c) <= 0xDFFF for c in decoded)
    out = DecodeStage()(pa.table({"payload": pa.array([payload], pa.large_binary()), "http_charset": [label]}))
    assert out.num_rows == 1 and out.column(REASON).to_pylist() == [None]


def test_a_lone_surrogate_never_reaches_arrow():
    from stages.charset import _strings

    arr = _strings(["fine", "bad \ud800 here", None])
    assert arr.to_pylist() == ["fine", "bad \ufffd\ufffd\ufffd here", None]


@pytest.mark.parametrize(
    "encode, http",
    [
        (lambda s: codecs.BOM_UTF16_LE + s.encode("utf-16-le"), None),
        (lambda s: codecs.BOM_UTF16_BE + s.encode("utf-16-be"), None),
        (lambda s: s.encode("utf-16-le"), "utf-16"),  # declared, no BOM
        (lambda s: s.encode("utf-16-le"), None),  # neither: recognised by where its NULs are
        (lambda s: s.encode("utf-16-be"), "iso-8859-1"),  # declared wrong
    ],
    ids=["bom-le", "bom-be", "declared", "sniffed-le", "sniffed-be-wrong-label"],
)
def test_utf16_pages_are_decoded_not_rejected_as_binary(encode, http):
    for text in (DE, JA, RU):
        payload = encode(page(text))
        decoded, charset, source = Decoder().decode(payload, http)
        assert decoded is not None and text in decoded, (charset, source)
        assert charset in ("utf-16-le", "utf-16-be") and source in ("bom", "utf16")
        out = DecodeStage()(pa.table({"payload": pa.array([payload], pa.large_binary()), "http_charset": [http]}))
        assert out.column(REASON).to_pylist() == [None] and text in out.column("html")[0].as_py()


def test_binary_with_nuls_is_still_binary():
    import hashlib

    noise = b"".join(hashlib.sha256(str(i).encode()).digest() for i in range(250))
    assert Decoder().decode(noise, "utf-16")[2] == "binary"
    samples16 = b"".join(
        i.to_bytes(2, "little") for i in range(0, 4000, 3)
    )  # 16-bit data: NULs in every other byte, no markup
    assert Decoder().decode(samples16, None)[2] == "binary"
    assert Decoder().decode(b"\x00" * 8000, None)[2] == "binary"


@pytest.mark.parametrize("text", [DE, RU, JA, KO])
def test_a_legacy_declaration_over_utf8_bytes_is_read_as_utf8(text):
    payload = page(text, "iso-8859-1").encode("utf-8")
    for http in ("iso-8859-1", "windows-1251", "shift_jis", None):
        decoded, charset, source = Decoder().decode(payload, http)
        assert text in decoded and charset == "utf-8" and source == "valid_utf8", (http, charset)
    out = DecodeStage()(pa.table({"payload": pa.array([payload], pa.large_binary()), "http_charset": ["iso-8859-1"]}))
    assert text in out.column("html")[0].as_py() and out.column("charset_source").to_pylist() == ["valid_utf8"]


def test_real_legacy_pages_keep_their_declared_charset():
    decoded, charset, source = Decoder().decode(page(DE).encode("cp1252"), "iso-8859-1")
    assert DE in decoded and charset == "cp1252" and source == "http"
    decoded, charset, source = Decoder().decode(
        page(JA, "iso-2022-jp").encode("iso-2022-jp"), None
    )  # 7-bit: pure ASCII bytes
    assert JA in decoded and charset == "iso2022_jp" and source == "meta"


def test_a_bom_over_bytes_that_are_not_utf8_gets_the_replacement_check():
    mostly_bad = codecs.BOM_UTF8 + bytes(range(0x80, 0x100)) * 40 + b"<p>a</p>"
    assert Decoder().decode(mostly_bad, None)[2] == "undecodable"
    # a BOM in front of a cp1252 page: the other candidates still find it
    decoded, charset, source = Decoder().decode(codecs.BOM_UTF8 + page(DE).encode("cp1252"), "windows-1252")
    assert DE in decoded and charset == "cp1252"
