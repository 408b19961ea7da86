"""Real servers for the cloud LogStores, started once per session and always stopped.

``moto_server``, ``azurite`` and ``fake_gcs`` are session fixtures; a server that cannot
start FAILS the tests that need it (never a skip). ``backend`` is parametrized over the
three and hands each test a fresh bucket/container.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from deltalog.logstores.azure import AzureBlobLogStore
from deltalog.logstores.base import LogStore
from deltalog.logstores.gcs import GcsLogStore
from deltalog.logstores.s3 import S3LogStore
from tests.backends.faultproxy import FaultProxy
from tests.servers.azure import ACCOUNT, azure_options, connection_string, start_azurite
from tests.servers.gcs import gcs_options, start_fake_gcs
from tests.servers.process import ServerProcess
from tests.servers.s3 import s3_options, start_moto

FAST_RETRIES = {"DELTALOG_RETRY_BASE_DELAY": "1ms", "DELTALOG_RETRY_MAX_DELAY": "20ms"}


@pytest.fixture(scope="session")
def server_log_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("server-logs"))


def _serve(start: Callable[[str], ServerProcess], log_dir: str) -> Iterator[ServerProcess]:
    server = start(log_dir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def moto_server(server_log_dir: str) -> Iterator[ServerProcess]:
    yield from _serve(start_moto, server_log_dir)


@pytest.fixture(scope="session")
def azurite(server_log_dir: str) -> Iterator[ServerProcess]:
    yield from _serve(start_azurite, server_log_dir)


@pytest.fixture(scope="session")
def fake_gcs(server_log_dir: str) -> Iterator[ServerProcess]:
    yield from _serve(start_fake_gcs, server_log_dir)


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:16]}"


@dataclass
class Backend:
    """One server, one fresh bucket, and a way to make stores for it."""

    name: str
    server: ServerProcess
    root: str  # URI of a fresh, empty directory: scheme://bucket/t
    bucket: str
    store_class: type[LogStore]
    options_for: Callable[[str], dict[str, str]]

    def options(self, endpoint: str | None = None, **extra: str) -> dict[str, str]:
        return {**self.options_for(endpoint or self.server.url), **FAST_RETRIES, **extra}

    def store(self, endpoint: str | None = None, **extra: str) -> LogStore:
        return self.store_class(self.options(endpoint, **extra))

    def proxy(self) -> FaultProxy:
        return FaultProxy(self.server.url)

    @property
    def secret(self) -> str:
        """The secret among this backend's options (for leak checks)."""
        if self.name == "s3":
            return self.options()["AWS_SECRET_ACCESS_KEY"]
        if self.name == "azure":
            return self.options()["AZURE_STORAGE_ACCOUNT_KEY"]
        return ""


def make_s3(server: ServerProcess) -> Backend:
    bucket = _name("b")
    store = S3LogStore(s3_options(server.url))
    store.client.create_bucket(Bucket=bucket)
    return Backend("s3", server, f"s3://{bucket}/t", bucket, S3LogStore, s3_options)


def make_azure(server: ServerProcess) -> Backend:
    from azure.storage.blob import BlobServiceClient

    container = _name("c")
    BlobServiceClient.from_connection_string(connection_string(server.url)).create_container(container)
    root = f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/t"
    return Backend("azure", server, root, container, AzureBlobLogStore, azure_options)


def make_gcs(server: ServerProcess) -> Backend:
    bucket = _name("g")
    GcsLogStore(gcs_options(server.url)).client.create_bucket(bucket)
    return Backend("gcs", server, f"gs://{bucket}/t", bucket, GcsLogStore, gcs_options)


_MAKERS: dict[str, tuple[str, Callable[[ServerProcess], Backend]]] = {
    "s3": ("moto_server", make_s3),
    "azure": ("azurite", make_azure),
    "gcs": ("fake_gcs", make_gcs),
}


@pytest.fixture(params=sorted(_MAKERS))
def backend(request: pytest.FixtureRequest) -> Backend:
    fixture, make = _MAKERS[request.param]
    return make(request.getfixturevalue(fixture))


@pytest.fixture
def s3(moto_server: ServerProcess) -> Backend:
    return make_s3(moto_server)


@pytest.fixture
def azure(azurite: ServerProcess) -> Backend:
    return make_azure(azurite)


@pytest.fixture
def gcs(fake_gcs: ServerProcess) -> Backend:
    return make_gcs(fake_gcs)


@pytest.fixture
def proxy_for(request: pytest.FixtureRequest) -> Iterator[Callable[[Backend], FaultProxy]]:
    started: list[FaultProxy] = []

    def make(backend: Backend) -> FaultProxy:
        proxy = backend.proxy().start()
        started.append(proxy)
        return proxy

    try:
        yield make
    finally:
        for proxy in started:
            proxy.stop()


def subprocess_env(**extra: str) -> dict[str, Any]:
    """The environment for a child Python that imports this checkout."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


from tests.servers.redis import redis_server  # noqa: E402 -- a fixture, for the Redis-locked store

__all__ = ["Backend", "redis_server", "subprocess_env"]
