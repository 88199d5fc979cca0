"""Shared fixtures: WARC files written by warcio (a third-party writer), an S3
server (moto, threaded, loopback only) and a local Ray runtime."""

from __future__ import annotations

import io
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Ray workers inherit the environment at ray.init(), which may come before the
# S3 fixture: set the test server's credentials for the whole session up front.
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ.pop("AWS_ENDPOINT_URL", None)
SAMPLES = REPO / "samples"


@dataclass
class Page:
    """One HTTP response to put in a test WARC."""

    url: str
    body: bytes
    content_type: str | None = "text/html; charset=utf-8"
    status: str = "200 OK"
    headers: list = field(default_factory=list)
    record_type: str = "response"
    identified_type: str | None = None


def html(title: str, *paragraphs: str) -> str:
    ps = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!doctype html><html><head><title>{title}</title></head>"
        f"<body><article><h1>{title}</h1>{ps}</article></body></html>"
    )


def write_warc(path: Path, pages: list[Page], gzip: bool = True, with_requests: bool = False) -> Path:
    """Write pages as a WARC with warcio; record ids are deterministic."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=gzip)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "tests"}))
        for i, p in enumerate(pages):
            rid = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{path.name}/{i}')}>"
            if with_requests:
                req = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.com")], is_http_request=True)
                w.write_record(w.create_warc_record(p.url, "request", http_headers=req))
            if p.record_type == "response":
                hdrs = list(p.headers)
                if p.content_type:
                    hdrs.append(("Content-Type", p.content_type))
                http = StatusAndHeaders(p.status, hdrs, protocol="HTTP/1.1")
                warc_headers = {"WARC-Record-ID": rid}
                if p.identified_type:
                    warc_headers["WARC-Identified-Payload-Type"] = p.identified_type
                rec = w.create_warc_record(
                    p.url, "response", payload=io.BytesIO(p.body), http_headers=http, warc_headers_dict=warc_headers
                )
            else:
                rec = w.create_warc_record(
                    p.url, p.record_type, payload=io.BytesIO(p.body), warc_content_type="text/plain"
                )
            w.write_record(rec)
    return path


@pytest.fixture
def warc_factory(tmp_path):
    def make(name: str, pages: list[Page], **kw) -> Path:
        return write_warc(tmp_path / name, pages, **kw)

    return make


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (random port); yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    port = server._server.server_port
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(scope="session")
def ray_local():
    """One embedded Ray for the whole test session (starting Ray costs seconds)."""
    import ray

    from pipeline.distribute import init_ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    init_ray()  # as a run does it (the dedup API used by tests does not start Ray; Ray Data is set up when used)
    yield ray
    ray.shutdown()
