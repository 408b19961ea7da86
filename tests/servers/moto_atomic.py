"""``moto.server`` with S3's write atomicity: run as ``python -m tests.servers.moto_atomic``.

moto checks ``If-None-Match: *`` and then stores the object without a lock, so two
concurrent conditional puts of one key can both succeed (measured: about one round in
20 of 4 racing processes). Real S3 never lets that happen. This launcher is moto's own
``moto.server`` main with one change: writes (PUT, POST, DELETE) go through a lock, so
the check and the store are atomic as on S3, and reads wait for a write under way (an
overwrite is atomic to readers, as on S3). Reads stay concurrent with each other.
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


class _ReadersWriterLock:
    """Many readers or one writer."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False

    def read(self) -> _Held:
        with self._cond:
            self._cond.wait_for(lambda: not self._writing)
            self._readers += 1
        return _Held(self._end_read)

    def write(self) -> _Held:
        with self._cond:
            self._cond.wait_for(lambda: not self._writing and self._readers == 0)
            self._writing = True
        return _Held(self._end_write)

    def _end_read(self) -> None:
        with self._cond:
            self._readers -= 1
            self._cond.notify_all()

    def _end_write(self) -> None:
        with self._cond:
            self._writing = False
            self._cond.notify_all()


class _Held:
    def __init__(self, release: Callable[[], None]) -> None:
        self._release = release

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._release()


class SerializedWrites:
    """WSGI middleware: one write at a time, and no read while it happens (reads in
    parallel otherwise). moto stores an overwritten object's body and its checksum in
    steps, so a GET during the PUT could see one version's body with the other's checksum
    (boto3's ``FlexibleChecksumError``); S3 serves either version whole."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = _ReadersWriterLock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        held = self.lock.write() if environ.get("REQUEST_METHOD") in _WRITES else self.lock.read()
        with held:
            # Materialize the body inside the lock: the request is served while it is built.
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
