"""A fault-injecting HTTP proxy in front of the test S3 server (moto), on 127.0.0.1.

Clients talk to the proxy as to S3; it forwards every request unchanged
(SigV4 signs the Host header, which is kept) unless a rule matches the
request: then it answers ``503 SlowDown`` (S3's throttling answer, which
clients retry).  ``down = True`` drops every connection unanswered, as a
stopped server would.  Used by the shards and fault tests.
"""

from __future__ import annotations

import http.client
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


@dataclass
class Rule:
    method: str  # "PUT", "GET", ... or "*"
    path: str  # a regex searched in the request path
    times: int | None = None  # fail this many matching requests, then pass; None = always
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.method not in ("*", method) or not re.search(self.path, path):
            return False
        if self.times is not None and self.hits >= self.times:
            return False
        self.hits += 1
        return True


@dataclass
class FaultyS3:
    """The proxy's state: its URL, the rules, and counts of what it did."""

    upstream: str
    url: str = ""
    rules: list[Rule] = field(default_factory=list)
    down: bool = False
    failed: int = 0
    forwarded: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, method: str, path: str, times: int | None = None) -> Rule:
        rule = Rule(method, path, times)
        with self.lock:
            self.rules.append(rule)
        return rule

    def heal(self) -> None:
        with self.lock:
            self.rules.clear()
            self.down = False

    def decide(self, method: str, path: str) -> str | None:
        """``"down"`` or ``"fail"`` if this request must fail, else None."""
        with self.lock:
            if self.down or any(r.matches(method, path) for r in self.rules):
                self.failed += 1
                return "down" if self.down else "fail"
            self.forwarded += 1
            return None


def start(upstream: str) -> tuple[FaultyS3, ThreadingHTTPServer]:
    state = FaultyS3(upstream)
    target = urlparse(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _body(self) -> bytes:
            """The request body; an HTTP-chunked one (aws-sdk uploads) is de-chunked and sent with a length."""
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                            pass
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _handle(self):
            body = self._body()
            verdict = state.decide(self.command, self.path)
            if verdict == "down":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if verdict == "fail":
                self.send_response(503)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(SLOW_DOWN)))
                self.end_headers()
                self.wfile.write(SLOW_DOWN)
                return
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "content-length")
            }
            headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            self.send_response(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(k, v)
            # A HEAD answer carries the object's length, not its (empty) body's.
            self.send_header(
                "Content-Length", resp.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
            )
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_port}"
    return state, server
