"""A real ``redis-server`` on a free loopback port, for the lock tests.

``start_redis`` starts one (no persistence: ``--save "" --appendonly no``), optionally
with ``--requirepass``; :class:`RedisServer` can stop and start it again on the same port,
which is how the tests simulate a Redis restart that loses every key. The pytest fixtures
at the bottom are imported by ``tests/locks/conftest.py`` (and anyone else who needs Redis).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.servers.process import ServerProcess, ServerStartError, free_port, start_server

__all__ = ["RedisServer", "redis_auth_server", "redis_server", "start_redis"]


def _ping(port: int, password: str | None) -> bool:
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=1)
    try:
        return bool(client.ping())
    finally:
        client.close()


class RedisServer:
    """A redis-server process the test controls: ``stop()``, ``start()``, ``restart()``."""

    def __init__(self, log_dir: str, password: str | None = None, port: int | None = None) -> None:
        self.log_dir = log_dir
        self.password = password
        self.port = port or free_port()
        self.process: ServerProcess | None = None

    @property
    def url(self) -> str:
        """A lock URI for this server (with the password, if any)."""
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        redis_bin = shutil.which("redis-server")
        if redis_bin is None:
            raise ServerStartError("redis-server is not installed; run scripts/setup.sh (apt redis-server)")
        command = [
            redis_bin,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
        ]
        if self.password:
            command += ["--requirepass", self.password]
        self.process = start_server(
            "redis", command, self.port, self.log_dir, ready=lambda: _ping(self.port, self.password)
        )
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def restart(self) -> None:
        """Stop and start again on the same port: every key is gone afterwards."""
        self.stop()
        self.start()

    def client(self) -> object:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password, decode_responses=True)


def start_redis(log_dir: str, password: str | None = None) -> RedisServer:
    return RedisServer(log_dir, password).start()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One Redis for the session, without a password."""
    log_dir = tempfile.mkdtemp(prefix="deltalog-redis-")
    server = start_redis(log_dir)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(log_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_auth_server() -> Iterator[RedisServer]:
    """One Redis for the session that requires AUTH (password ``s3cret-redis-pw``)."""
    log_dir = tempfile.mkdtemp(prefix="deltalog-redis-auth-")
    server = start_redis(log_dir, password="s3cret-redis-pw")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(log_dir, ignore_errors=True)
