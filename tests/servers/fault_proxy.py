"""The fault-injecting HTTP proxy, with connection resets.

:class:`FaultProxy` is the proxy of ``tests/backends/faultproxy.py`` (forward to a real
server on 127.0.0.1 unless a :class:`Fault` matches: ``status``, ``drop``,
``lose_answer``, ``error_after``) plus two kinds that end the TCP connection with a
**reset** (RST, ``SO_LINGER`` 0) instead of an orderly close:

* ``reset``: reset without forwarding (the request never reached the server);
* ``reset_after``: forward (the request takes effect), then reset instead of answering.

Any other kind (``observe``) forwards normally and only runs ``on_hit``. Unlike the base
proxy, a HEAD answer keeps the server's ``Content-Length``.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import replace
from typing import Any

from tests.backends.faultproxy import Fault
from tests.backends.faultproxy import FaultProxy as _BaseProxy

__all__ = ["KINDS", "Fault", "FaultProxy"]

KINDS = ("status", "drop", "lose_answer", "error_after", "reset", "reset_after")
_AS_BASE = {"reset": "drop", "reset_after": "lose_answer"}


class FaultProxy(_BaseProxy):
    """A forwarding proxy with faults, including connection resets."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self._local = threading.local()
        proxy = self
        base: Any = self._server.RequestHandlerClass

        class Handler(base):  # type: ignore[misc]
            def _hang_up(self) -> None:
                if not getattr(proxy._local, "reset", False):
                    super()._hang_up()
                    return
                proxy._local.reset = False
                self.close_connection = True
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()  # with linger 0: RST, not FIN
                except OSError:
                    pass

            def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                if self.command != "HEAD":
                    super()._answer(status, data, headers)
                    return
                # A HEAD answer has no body but the object's real Content-Length, which
                # clients use as the size (pyarrow reads a 0-byte file otherwise).
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in ("connection", "keep-alive", "transfer-encoding"):
                        self.send_header(key, value)
                if not any(k.lower() == "content-length" for k in headers):
                    self.send_header("Content-Length", "0")
                self.end_headers()

            def finish(self) -> None:
                try:
                    super().finish()
                except OSError:
                    pass

        self._server.RequestHandlerClass = Handler

    def _take_fault(self, method: str, path: str) -> Fault | None:
        fault = super()._take_fault(method, path)
        self._local.reset = fault is not None and fault.kind in _AS_BASE
        if fault is not None and fault.kind in _AS_BASE:
            return replace(fault, kind=_AS_BASE[fault.kind])
        return fault

    def injected(self) -> int:
        """How many requests a fault was applied to so far."""
        with self._lock:
            return sum(f.hits for f in self.faults)
