"""A small HTTP proxy on 127.0.0.1 that injects faults between a store and its server.

Point a store's endpoint at ``proxy.url`` instead of the server's. Every request is
forwarded unchanged (same Host header, so signatures still match) unless a
:class:`Fault` matches it first. Faults:

* ``status``: answer with an error status without forwarding (throttling, 5xx);
* ``lose_answer``: forward the request (it takes effect) and then close the connection
  without answering -- the client cannot tell whether it landed;
* ``drop``: close the connection without forwarding (same symptom, no effect);
* ``error_after``: forward, then answer with an error status anyway.

The proxy also records every request (method, path) for counting.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP_HEADERS = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
}


@dataclass
class Fault:
    """Applies to the next ``times`` requests that match ``method`` and ``path_contains``."""

    kind: str  # "status" | "lose_answer" | "drop" | "error_after"
    method: str | None = None
    path_contains: str = ""
    times: int = 1
    status: int = 503
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    query_contains: str = ""
    on_hit: Callable[[], None] | None = None
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.hits >= self.times:
            return False
        if self.method is not None and method != self.method:
            return False
        base, _, query = path.partition("?")
        return self.path_contains in base and self.query_contains in query


class FaultProxy:
    """A forwarding proxy with a list of faults; start()/stop() or use as a context manager."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().strip().split(b";")[0], 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _handle(self) -> None:
                body = self._body()
                fault = proxy._take_fault(self.command, self.path)
                with proxy._lock:
                    proxy.requests.append((self.command, self.path))
                if fault is not None and fault.on_hit is not None:
                    fault.on_hit()
                if fault is not None and fault.kind == "drop":
                    self._hang_up()
                    return
                if fault is not None and fault.kind == "status":
                    self._answer(fault.status, fault.body, fault.headers)
                    return
                status, headers, data = proxy._forward(self.command, self.path, self.headers, body)
                if fault is not None and fault.kind == "lose_answer":
                    self._hang_up()
                    return
                if fault is not None and fault.kind == "error_after":
                    self._answer(fault.status, fault.body, fault.headers)
                    return
                self._answer(status, data, headers)

            def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _hang_up(self) -> None:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def withdraw(self, fault: Fault) -> None:
        """Stop applying ``fault`` (its hits so far still count)."""
        with self._lock:
            fault.times = fault.hits

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()

    def count(self, method: str, predicate: Callable[[str], bool] = lambda path: True) -> int:
        with self._lock:
            return sum(1 for m, p in self.requests if m == method and predicate(p))

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.hits += 1
                    return fault
        return None

    def _forward(self, method: str, path: str, headers: object, body: bytes) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=30)
        try:
            items = getattr(headers, "items")()  # noqa: B009 -- email.message.Message
            out = {k: v for k, v in items if k.lower() not in _HOP_HEADERS and k.lower() != "content-length"}
            out["Content-Length"] = str(len(body))
            conn.request(method, path, body=body, headers=out)
            response = conn.getresponse()
            data = response.read()
            return response.status, dict(response.getheaders()), data
        finally:
            conn.close()

    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
