"""``moto.server`` with S3's write atomicity: run as ``python -m tests.servers.moto_atomic``.

moto checks ``If-None-Match: *`` and then stores the object without a lock, so two
concurrent conditional puts of one key can both succeed (measured: about one round in
20 of 4 racing processes). Real S3 never lets that happen. This launcher is moto's own
``moto.server`` main with one change: writes (PUT, POST, DELETE) go through a lock, so
the check and the store are atomic as on S3. Reads stay concurrent.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

_WRITES = frozenset({"PUT", "POST", "DELETE"})


class SerializedWrites:
    """WSGI middleware: one write at a time, reads in parallel."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in _WRITES:
            return self.app(environ, start_response)  # type: ignore[no-any-return]
        with self.lock:
            # Materialize the body inside the lock: the write happens while it is built.
            return list(self.app(environ, start_response))


def main(argv: list[str] | None = None) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, SerializedWrites(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
