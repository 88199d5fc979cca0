"""Charset handling for real pages: re-encode and rewrite/strip in-document declarations.

Labels are the WHATWG-ish lower-case names we put in headers and in the ground truth;
each is also a Python codec name, so `bytes.decode(label)` works in tests.
Characters a legacy charset cannot represent become numeric character references
(&#12345;), as real servers/CMSes do when they transcode.
"""

from __future__ import annotations

import re

LABELS = {  # ground-truth label -> spelling used in declarations (varied, like the real web)
    "utf-8": "UTF-8",
    "iso-8859-1": "ISO-8859-1",
    "windows-1252": "windows-1252",
    "iso-8859-9": "ISO-8859-9",
    "shift_jis": "Shift_JIS",
    "euc-jp": "EUC-JP",
    "iso-2022-jp": "ISO-2022-JP",
    "euc-kr": "EUC-KR",
    "gbk": "GBK",
    "gb2312": "gb2312",
    "koi8-r": "KOI8-R",
    "windows-1251": "windows-1251",
}

_XML_DECL = re.compile(r"<\?xml[^>]*\?>\s*", re.I)
_META = re.compile(r"<meta\b[^>]*charset\s*=[^>]*>\s*", re.I)
_CS_VALUE = re.compile(r"(charset\s*=\s*[\"']?)([A-Za-z0-9_.:-]+)", re.I)
_HEAD = re.compile(r"<head\b[^>]*>", re.I)


def strip_declarations(html: str) -> str:
    html = _XML_DECL.sub("", html, count=1)
    return _META.sub("", html)


def set_declaration(html: str, label: str) -> str:
    """Make every in-document declaration say `label` (adds a <meta> if there is none)."""
    spelled = LABELS.get(label, label)
    html = _XML_DECL.sub(lambda m: re.sub(r'encoding="[^"]*"', f'encoding="{spelled}"', m.group(0)), html, count=1)
    if _META.search(html):
        return _META.sub(lambda m: _CS_VALUE.sub(lambda v: v.group(1) + spelled, m.group(0)), html)
    return _HEAD.sub(
        lambda m: m.group(0) + f'\n<meta http-equiv="Content-Type" content="text/html; charset={spelled}">',
        html,
        count=1,
    )


def encode(html: str, label: str) -> bytes:
    return html.encode(label, errors="xmlcharrefreplace")


def meta_declared(html: str) -> str | None:
    """The charset an in-document declaration names (meta first, then the XML declaration)."""
    m = _META.search(html[:4096])
    if m:
        v = _CS_VALUE.search(m.group(0))
        if v:
            return v.group(2)
    m = _XML_DECL.match(html.lstrip())
    if m:
        v = re.search(r'encoding="([^"]*)"', m.group(0))
        if v:
            return v.group(1)
    return None
