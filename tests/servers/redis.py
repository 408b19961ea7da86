"""A real ``redis-server`` on a free loopback port, for the lock tests.

``start_redis`` starts one (no persistence: ``--save "" --appendonly no``), optionally
with ``--requirepass`` or with TLS only (a throwaway CA made with the ``openssl`` command);
:class:`RedisServer` can stop and start it again on the same port, which is how the tests
simulate a Redis restart that loses every key. The pytest fixtures at the bottom are
imported by ``tests/locks/conftest.py`` (and by anyone else who needs Redis).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.process import ServerProcess, ServerStartError, free_port, start_server

__all__ = ["RedisServer", "redis_auth_server", "redis_server", "redis_tls_server", "start_redis"]


def _ping(port: int, password: str | None, ca_cert: str | None = None) -> bool:
    import redis

    tls: dict[str, Any] = {"ssl": True, "ssl_ca_certs": ca_cert} if ca_cert else {}
    client = redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=1, **tls)
    try:
        return bool(client.ping())
    finally:
        client.close()


class RedisServer:
    """A redis-server process the test controls: ``stop()``, ``start()``, ``restart()``."""

    def __init__(self, log_dir: str, password: str | None = None, port: int | None = None, tls: bool = False) -> None:
        self.log_dir = log_dir
        self.password = password
        self.port = port or free_port()
        self.tls = tls
        self.ca_cert: str | None = None
        self._tls_args: list[str] = []
        self.process: ServerProcess | None = None

    @property
    def url(self) -> str:
        """A lock URI for this server (with the password, if any; with TLS: rediss:// + CA)."""
        auth = f":{self.password}@" if self.password else ""
        if self.tls:
            return f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca_cert}"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def short_lease_url(self) -> str:
        """:attr:`url` with a 2 s lease. The lock makes the first commit to a table on a Redis
        that started less than one lease ago wait out that lease (15 s by default); tests that
        do not test that wait use a short lease, so a fresh server costs them 2 s at most."""
        return f"{self.url}{'&' if '?' in self.url else '?'}lease_ttl=2s"

    def _make_certs(self) -> None:
        """A throwaway CA and a server certificate for 127.0.0.1."""
        directory = os.path.join(self.log_dir, f"tls-{self.port}")
        os.makedirs(directory, exist_ok=True)
        path = {name: os.path.join(directory, name) for name in ("ca.key", "ca.crt", "s.key", "s.csr", "s.crt", "ext")}
        with open(path["ext"], "w") as handle:
            handle.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        steps = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path["ca.key"], "-out", path["ca.crt"]],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path["s.key"], "-out", path["s.csr"]],
            [
                "x509",
                "-req",
                "-in",
                path["s.csr"],
                "-CA",
                path["ca.crt"],
                "-CAkey",
                path["ca.key"],
                "-CAcreateserial",
                "-out",
                path["s.crt"],
                "-extfile",
                path["ext"],
            ],
        ]
        for step, subject in zip(steps, ["/CN=deltalog-test-ca", "/CN=localhost", None]):
            extra = ["-days", "2"] + (["-subj", subject] if subject else [])
            try:
                subprocess.run(["openssl", *step, *extra], check=True, capture_output=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                raise ServerStartError(f"cannot make test TLS certificates with openssl: {exc}") from exc
        self.ca_cert = path["ca.crt"]
        self._tls_args = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", path["s.crt"]]
        self._tls_args += ["--tls-key-file", path["s.key"], "--tls-ca-cert-file", path["ca.crt"]]
        self._tls_args += ["--tls-auth-clients", "no"]

    def start(self) -> RedisServer:
        redis_bin = shutil.which("redis-server")
        if redis_bin is None:
            raise ServerStartError("redis-server is not installed; run scripts/setup.sh (apt redis-server)")
        command = [redis_bin, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        command += ["--protected-mode", "no"]
        if self.tls:
            if not self._tls_args:
                self._make_certs()
            command += self._tls_args
        else:
            command += ["--port", str(self.port)]
        if self.password:
            command += ["--requirepass", self.password]
        self.process = start_server(
            "redis", command, self.port, self.log_dir, ready=lambda: _ping(self.port, self.password, self.ca_cert)
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

        tls: dict[str, Any] = {"ssl": True, "ssl_ca_certs": self.ca_cert} if self.tls else {}
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password, decode_responses=True, **tls)


def start_redis(log_dir: str, password: str | None = None, tls: bool = False) -> RedisServer:
    return RedisServer(log_dir, password, tls=tls).start()


def _session_server(prefix: str, password: str | None = None, tls: bool = False) -> Iterator[RedisServer]:
    log_dir = tempfile.mkdtemp(prefix=prefix)
    server = start_redis(log_dir, password, tls)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(log_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One Redis for the session, without a password."""
    yield from _session_server("deltalog-redis-")


@pytest.fixture(scope="session")
def redis_auth_server() -> Iterator[RedisServer]:
    """One Redis for the session that requires AUTH (password ``s3cret-redis-pw``)."""
    yield from _session_server("deltalog-redis-auth-", password="s3cret-redis-pw")


@pytest.fixture(scope="session")
def redis_tls_server() -> Iterator[RedisServer]:
    """One Redis for the session that speaks TLS only, with a password."""
    yield from _session_server("deltalog-redis-tls-", password="tls-redis-pw", tls=True)
