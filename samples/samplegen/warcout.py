"""Write captures as Common-Crawl-style WARC files with warcio.

Per capture CC writes three records, each its own gzip member:
  request  (application/http; msgtype=request)
  response (application/http; msgtype=response, WARC-Payload-Digest, WARC-Identified-Payload-Type)
  metadata (application/warc-fields: fetchTimeMs, charset-detected, languages-cld2)
and every file starts with one warcinfo record.  Record ids are UUIDs derived from a
SHA-1 of (file name, sequence number, record type) so files are reproducible.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import gzip
import hashlib
import io
import json
import random
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

USER_AGENT = "CCBot/2.0 (https://commoncrawl.org/faq/)"
LANG_NAMES = {
    "en": ("eng", "ENGLISH"),
    "de": ("deu", "GERMAN"),
    "fr": ("fra", "FRENCH"),
    "es": ("spa", "SPANISH"),
    "ja": ("jpn", "Japanese"),
    "zh": ("zho", "Chinese"),
    "ru": ("rus", "RUSSIAN"),
    "ko": ("kor", "Korean"),
    "tr": ("tur", "TURKISH"),
    "pt": ("por", "PORTUGUESE"),
    "da": ("dan", "DANISH"),
}


@dataclass
class Capture:
    url: str
    kind: str
    body: bytes
    ctype: str | None  # HTTP Content-Type header value (None: header absent)
    payload_type: str  # WARC-Identified-Payload-Type (what the bytes really are)
    server: str = "nginx"  # header profile
    status: int = 200
    reason: str = "OK"
    extra_headers: list = field(default_factory=list)
    warc_extra: dict = field(default_factory=dict)
    content_encoding: str | None = None
    http_length: int | None = None  # HTTP Content-Length when it differs from the stored body (truncation)
    # ground truth
    language: str | None = None
    charset: str | None = None
    charset_declared: dict = field(default_factory=lambda: {"http": None, "meta": None})
    dup_cluster: str | None = None
    dup_variation: list = field(default_factory=list)
    dup_rank: int = 0  # 0 = the cluster's first copy
    pii: list = field(default_factory=list)
    not_pii: list = field(default_factory=list)
    expect: str = "keep"
    source: str | None = None
    notes: str | None = None
    # placement (filled by the planner)
    file_idx: int = -1
    order_key: float = 0.0
    warc_date: dt.datetime | None = None
    record_id: str = ""

    def ground_truth(self, filename: str) -> dict:
        # the HTTP half of charset_declared always mirrors the Content-Type header as written
        http_cs = self.ctype.split("charset=", 1)[1].strip() if self.ctype and "charset=" in self.ctype else None
        self.charset_declared = {"http": http_cs, "meta": self.charset_declared.get("meta")}
        return {
            "id": self.record_id,
            "url": self.url,
            "file": filename,
            "kind": self.kind,
            "language": self.language,
            "charset": self.charset,
            "charset_declared": self.charset_declared,
            "dup_cluster": self.dup_cluster,
            "dup_variation": self.dup_variation,
            "pii": self.pii,
            "not_pii": self.not_pii,
            "expect": self.expect,
            "status": self.status,
            "content_type": self.ctype,
            "identified_payload_type": self.payload_type,
            "source": self.source,
            "notes": self.notes,
        }


def record_uuid(*parts: str) -> str:
    digest = hashlib.sha1("\x1f".join(parts).encode()).digest()
    return f"urn:uuid:{uuid.UUID(bytes=digest[:16], version=4)}"


def warc_date(d: dt.datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def http_date(d: dt.datetime) -> str:
    return email.utils.format_datetime(d.replace(tzinfo=dt.UTC), usegmt=True)


def _server_headers(cap: Capture, date: dt.datetime, rng: random.Random) -> list[tuple[str, str]]:
    body_len = len(cap.body)
    lm = http_date(date - dt.timedelta(days=rng.randint(1, 1500), seconds=rng.randint(0, 86400)))
    etag = f'"{body_len:x}-{rng.getrandbits(48):012x}"'
    h: list[tuple[str, str]] = []
    s = cap.server
    if s == "nginx":
        h += [("Server", rng.choice(["nginx", "nginx/1.24.0", "nginx/1.18.0 (Ubuntu)"])), ("Date", http_date(date))]
    elif s == "apache":
        h += [
            ("Date", http_date(date)),
            ("Server", rng.choice(["Apache", "Apache/2.4.57 (Debian)", "Apache/2.4.41 (Ubuntu)"])),
        ]
    elif s == "cloudflare":
        h += [
            ("Date", http_date(date)),
            ("Server", "cloudflare"),
            ("CF-Ray", f"{rng.getrandbits(64):016x}-{rng.choice(['FRA', 'AMS', 'IAD', 'CDG', 'NRT'])}"),
            ("CF-Cache-Status", rng.choice(["HIT", "DYNAMIC", "MISS"])),
        ]
    elif s == "iis":
        h += [
            ("Cache-Control", "private"),
            ("Server", "Microsoft-IIS/10.0"),
            ("X-AspNet-Version", "4.0.30319"),
            ("X-Powered-By", "ASP.NET"),
            ("Date", http_date(date)),
        ]
    elif s == "python-docs":  # docs.python.org sits behind Fastly
        h += [
            ("Server", "nginx"),
            ("Date", http_date(date)),
            ("Via", "1.1 varnish"),
            ("Age", str(rng.randint(0, 86000))),
            (
                "X-Served-By",
                f"cache-{rng.choice(['fra', 'ams', 'iad'])}-e{rng.randint(10000, 99999)}-{rng.choice(['FRA', 'AMS', 'IAD'])}",
            ),
            ("X-Cache", "HIT"),
            ("Accept-Ranges", "bytes"),
        ]
    elif s == "debian":
        h += [
            ("Date", http_date(date)),
            ("Server", "Apache"),
            ("Accept-Ranges", "bytes"),
            ("X-Content-Type-Options", "nosniff"),
            ("X-Frame-Options", "sameorigin"),
            ("Referrer-Policy", "no-referrer"),
            ("Strict-Transport-Security", "max-age=15552000"),
        ]
    elif s == "apache-httpd":
        h += [("Date", http_date(date)), ("Server", "Apache"), ("Accept-Ranges", "bytes")]
    elif s == "spam":
        h += [
            ("Date", http_date(date)),
            ("Server", rng.choice(["LiteSpeed", "Apache", "nginx", "openresty"])),
            ("X-Powered-By", rng.choice(["PHP/5.6.40", "PHP/7.4.33", "PHP/8.1.2"])),
        ]
    else:
        h += [("Date", http_date(date)), ("Server", s)]
    if (
        cap.status == 200
        and cap.kind != "odd"
        or cap.payload_type.startswith(("image/", "application/pdf", "text/css"))
    ):
        h += [("Last-Modified", lm), ("ETag", etag)]
    if cap.ctype is not None:
        h.append(("Content-Type", cap.ctype))
    if cap.content_encoding:
        h.append(("Content-Encoding", cap.content_encoding))
    elif cap.status == 200 and cap.payload_type.startswith("text/") and body_len > 2000 and rng.random() < 0.5:
        # like CC: the crawler decoded a compressed transfer and says so in X-Crawler-* headers
        h.append(("X-Crawler-Content-Encoding", "gzip"))
        h.append(("X-Crawler-Content-Length", str(len(gzip.compress(cap.body[:200000], compresslevel=6, mtime=0)))))
    if cap.status == 200 and cap.payload_type.startswith("text/") and rng.random() < 0.5:
        h.append(("Vary", "Accept-Encoding"))
    if cap.status == 200 and rng.random() < 0.3:
        h.append(
            (
                "Cache-Control",
                rng.choice(["max-age=3600", "public, max-age=86400", "no-cache", "max-age=600, must-revalidate"]),
            )
        )
    if s in ("cloudflare", "nginx") and cap.status == 200 and rng.random() < 0.3:
        h.append(
            (
                "Set-Cookie",
                f"{rng.choice(['PHPSESSID', 'sessionid', '__cf_bm', 'wp-settings'])}={rng.getrandbits(96):024x}; path=/; HttpOnly; SameSite=Lax",
            )
        )
    h += cap.extra_headers
    h.append(("Content-Length", str(cap.http_length if cap.http_length is not None else body_len)))
    if rng.random() < 0.6:
        h.append(("Connection", rng.choice(["keep-alive", "close"])))
    return h


def _request_headers(url: str, rng: random.Random) -> StatusAndHeaders:
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    headers = [
        ("Host", parts.netloc),
        ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("Accept-Language", "en-US,en;q=0.5"),
        ("User-Agent", USER_AGENT),
        ("Accept-Encoding", "br,gzip"),
        ("Connection", "Keep-Alive"),
    ]
    return StatusAndHeaders(f"GET {path} HTTP/1.1", headers, is_http_request=True)


def _metadata(cap: Capture, rng: random.Random) -> bytes:
    lines = [f"fetchTimeMs: {rng.randint(8, 2400)}"]
    if cap.payload_type in ("text/html", "application/xhtml+xml") and cap.body and cap.status == 200:
        if cap.charset:
            lines.append(f"charset-detected: {cap.charset.upper().replace('SHIFT_JIS', 'Shift_JIS')}")
        if cap.language:
            code3, name = LANG_NAMES[cap.language]
            covered = round(rng.uniform(0.8, 0.99), 2)
            langs = [
                {
                    "code": cap.language,
                    "code-iso-639-3": code3,
                    "text-covered": covered,
                    "score": float(rng.randint(600, 1100)),
                    "name": name,
                }
            ]
            if cap.language != "en" and rng.random() < 0.5:
                langs.append(
                    {
                        "code": "en",
                        "code-iso-639-3": "eng",
                        "text-covered": round(1 - covered - 0.01, 2),
                        "score": float(rng.randint(300, 900)),
                        "name": "ENGLISH",
                    }
                )
            lines.append(
                "languages-cld2: "
                + json.dumps(
                    {"reliable": True, "text-bytes": max(1, len(cap.body) // 3), "languages": langs},
                    separators=(",", ":"),
                )
            )
    return ("\r\n".join(lines) + "\r\n").encode()


def ip_for(host: str) -> str:
    h = hashlib.md5(host.encode()).digest()
    net = ["192.0.2", "198.51.100", "203.0.113"][h[0] % 3]  # documentation ranges: never real hosts
    return f"{net}.{1 + h[1] % 254}"


def warcinfo_payload(filename: str, snapshot: str) -> bytes:
    fields = [
        ("isPartOf", snapshot),
        ("publisher", "curate-pipeline sample generator (imitates Common Crawl; not a Common Crawl file)"),
        ("description", "Sample WARC for tests: real Debian documentation pages mixed with generated web pages"),
        ("operator", "curate-pipeline developers"),
        ("hostname", "sample-generator"),
        ("software", "samples/make_samples.py with warcio"),
        ("robots", "checked via crawler-commons (simulated)"),
        ("format", "WARC File Format 1.0"),
        ("conformsTo", "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf"),
    ]
    return "".join(f"{k}: {v}\r\n" for k, v in fields).encode()


def write_warc(path: str, filename: str, snapshot: str, start: dt.datetime, caps: list[Capture], seed: int) -> dict:
    """Write one WARC file; caps must already carry warc_date and record_id. Returns record counts."""
    rng = random.Random(seed)
    counts = {"warcinfo": 0, "request": 0, "response": 0, "metadata": 0}
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True, warc_version="1.0")
        # like CC: only responses carry a WARC-Payload-Digest
        w.NO_PAYLOAD_DIGEST_TYPES = ("warcinfo", "revisit", "request", "metadata")
        info_id = f"<{record_uuid(filename, 'warcinfo')}>"
        payload = warcinfo_payload(filename, snapshot)
        rec = w.create_warc_record(
            "",
            "warcinfo",
            payload=io.BytesIO(payload),
            length=len(payload),
            warc_content_type="application/warc-fields",
            warc_headers_dict={
                "WARC-Type": "warcinfo",
                "WARC-Date": warc_date(start),
                "WARC-Record-ID": info_id,
                "WARC-Filename": filename,
            },
        )
        w.write_record(rec)
        counts["warcinfo"] += 1
        for seq, cap in enumerate(caps):
            host = urlsplit(cap.url).hostname or ""
            ip = ip_for(host)
            date = warc_date(cap.warc_date)
            resp_id = f"<{cap.record_id}>"
            req_id = f"<{record_uuid(filename, str(seq), 'request')}>"
            meta_id = f"<{record_uuid(filename, str(seq), 'metadata')}>"
            req = w.create_warc_record(
                cap.url,
                "request",
                http_headers=_request_headers(cap.url, rng),
                warc_headers_dict={
                    "WARC-Type": "request",
                    "WARC-Date": date,
                    "WARC-Record-ID": req_id,
                    "WARC-Warcinfo-ID": info_id,
                    "WARC-Concurrent-To": resp_id,
                    "WARC-IP-Address": ip,
                },
            )
            w.write_record(req)
            http = StatusAndHeaders(
                f"{cap.status} {cap.reason}", _server_headers(cap, cap.warc_date, rng), protocol="HTTP/1.1"
            )
            wh = {
                "WARC-Type": "response",
                "WARC-Date": date,
                "WARC-Record-ID": resp_id,
                "WARC-Warcinfo-ID": info_id,
                "WARC-Concurrent-To": req_id,
                "WARC-IP-Address": ip,
            }
            wh.update(cap.warc_extra)
            wh["WARC-Identified-Payload-Type"] = cap.payload_type
            resp = w.create_warc_record(
                cap.url,
                "response",
                payload=io.BytesIO(cap.body),
                length=len(cap.body),
                http_headers=http,
                warc_headers_dict=wh,
            )
            w.write_record(resp)
            meta = _metadata(cap, rng)
            mrec = w.create_warc_record(
                cap.url,
                "metadata",
                payload=io.BytesIO(meta),
                length=len(meta),
                warc_content_type="application/warc-fields",
                warc_headers_dict={
                    "WARC-Type": "metadata",
                    "WARC-Date": date,
                    "WARC-Record-ID": meta_id,
                    "WARC-Warcinfo-ID": info_id,
                    "WARC-Concurrent-To": resp_id,
                },
            )
            w.write_record(mrec)
            counts["request"] += 1
            counts["response"] += 1
            counts["metadata"] += 1
    return counts
