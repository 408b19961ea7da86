"""Credentials never show: not in ``repr``, logs, exceptions, tracebacks or the CLI's
conformance report.

Each test runs real operations against a real server with a recognizable secret (an S3
secret key, the Azure account key and connection string, a Redis password), with every
logger at DEBUG captured, fails some of them on purpose, and greps everything captured.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deltalog.logstores.s3 import S3LogStore
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from tests.reliability.crash_worker import SCHEMA
from tests.servers.azure import ACCOUNT, ACCOUNT_KEY, connection_string, start_azurite
from tests.servers.fault_proxy import Fault, FaultProxy
from tests.servers.process import ServerProcess, free_port
from tests.servers.redis import RedisServer
from tests.servers.s3 import s3_options

ROOT = Path(__file__).resolve().parents[2]
FAST = {"DELTALOG_RETRY_BASE_DELAY": "1ms", "DELTALOG_RETRY_MAX_DELAY": "5ms", "DELTALOG_RETRY_MAX_ATTEMPTS": "2"}


class Capture:
    """Everything a user could see: log records (all loggers, DEBUG), errors, reprs."""

    def __init__(self, caplog: pytest.LogCaptureFixture, only_ours: bool = False) -> None:
        self.caplog = caplog
        self.only_ours = only_ours
        self.texts: list[str] = []
        caplog.clear()
        caplog.set_level(logging.DEBUG)

    def add(self, *items: object) -> None:
        self.texts += [repr(i) for i in items] + [str(i) for i in items]

    def fails(self, run: Callable[[], object], chain: bool = True) -> BaseException:
        """Run something that must fail; keep its message, repr and (``chain``) the full
        traceback with the chained causes."""
        try:
            run()
        except Exception as exc:
            self.texts += [str(exc), repr(exc)]
            if chain:
                self.texts.append("".join(traceback.format_exception(exc)))
            return exc
        raise AssertionError("the operation was expected to fail")

    def everything(self) -> str:
        formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
        logged = [
            formatter.format(r) for r in self.caplog.records if not self.only_ours or r.name.startswith("deltalog")
        ]
        return "\n".join(self.texts + logged)

    def assert_clean(self, *secrets: str) -> None:
        text = self.everything()
        assert len(text) > 1000, "too little was captured for the check to mean anything"
        for secret in secrets:
            assert secret not in text, f"a secret leaked: {_context(text, secret)}"


def _context(text: str, secret: str) -> str:
    i = text.index(secret)
    return text[max(0, i - 200) : i].replace(secret, "<SECRET>") + "<SECRET>"


def _create_and_commit(log: DeltaLog, commits: int = 2, lock: str | None = None) -> None:
    txn = log.start_transaction(lock=lock)
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",)))
    txn.commit([], CreateTable(partition_by=["p"]))
    for i in range(commits):
        log.start_transaction(lock=lock).commit([AddFile(f"p=a/{i}.parquet", {"p": "a"}, 1, 1)], Write())


# -- S3 ------------------------------------------------------------------------------------


S3_SECRET = "S3SECRET-" + uuid.uuid4().hex  # moto accepts any key pair


def _s3(endpoint: str, **extra: str) -> dict[str, str]:
    return {**s3_options(endpoint), "AWS_SECRET_ACCESS_KEY": S3_SECRET, **FAST, **extra}


@pytest.fixture
def bucket(reliability_moto: ServerProcess) -> str:
    name = f"sec{uuid.uuid4().hex[:12]}"
    S3LogStore(s3_options(reliability_moto.url)).client.create_bucket(Bucket=name)
    return name


def test_s3_secret_never_shows(caplog: pytest.LogCaptureFixture, reliability_moto: ServerProcess, bucket: str) -> None:
    cap = Capture(caplog)
    log = DeltaLog.for_table(f"s3://{bucket}/t", _s3(reliability_moto.url))
    _create_and_commit(log)
    log.checkpoint()
    cap.add(log, log.store, log.store.spec(), log.storage_options, log.update(), log.history())
    cap.add(log.store.describe())
    # failures: a missing bucket, an unreachable endpoint, a service that echoes the key back
    cap.fails(lambda: DeltaLog.for_table("s3://no-such-bucket-here/t", _s3(reliability_moto.url)).update())
    cap.fails(lambda: DeltaLog.for_table(f"s3://{bucket}/t", _s3(f"http://127.0.0.1:{free_port()}")).update())
    cap.assert_clean(S3_SECRET)

    # A service that echoes the key back. A real one never does; the SDK's own DEBUG log
    # and exception (chained as the cause) quote its answer verbatim, so here only what
    # deltalog says -- its messages and its log records -- is checked.
    cap = Capture(caplog, only_ours=True)
    with FaultProxy(reliability_moto.url) as proxy:
        body = (f"<Error><Code>AccessDenied</Code><Message>denied for key {S3_SECRET}</Message></Error>").encode()
        proxy.add(Fault("status", times=100, status=403, body=body, headers={"Content-Type": "application/xml"}))
        cap.fails(lambda: DeltaLog.for_table(f"s3://{bucket}/t", _s3(proxy.url)).update(), chain=False)
        proxy.clear()
        proxy.add(
            Fault(
                "status",
                times=100,
                status=503,
                body=body.replace(b"AccessDenied", b"SlowDown"),
                headers={"Content-Type": "application/xml"},
            )
        )
        cap.fails(lambda: _create_and_commit(DeltaLog.for_table(f"s3://{bucket}/u", _s3(proxy.url))), chain=False)
    cap.assert_clean(S3_SECRET)


# -- Azure ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_azurite(str(tmp_path_factory.mktemp("azurite-logs")))
    try:
        yield server
    finally:
        server.stop()


def test_azure_key_and_connection_string_never_show(caplog: pytest.LogCaptureFixture, azurite: ServerProcess) -> None:
    from azure.storage.blob import BlobServiceClient

    container = f"sec{uuid.uuid4().hex[:12]}"
    conn = connection_string(azurite.url)
    BlobServiceClient.from_connection_string(conn).create_container(container)
    cap = Capture(caplog)
    uri = f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/t"
    by_key = {
        "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT,
        "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
        "AZURE_STORAGE_ENDPOINT": f"{azurite.url}/{ACCOUNT}",
        "ALLOW_HTTP": "true",
        **FAST,
    }
    by_conn = {"AZURE_STORAGE_CONNECTION_STRING": conn, "ALLOW_HTTP": "true", **FAST}
    for options in (by_key, by_conn):
        log = DeltaLog.for_table(uri, options)
        if not log.table_exists():
            _create_and_commit(log)
        else:
            log.start_transaction().commit([AddFile("p=a/x.parquet", {"p": "a"}, 1, 1)], Write())
        cap.add(log, log.store, log.store.spec(), log.storage_options, log.update())
        missing = f"abfss://nosuch{uuid.uuid4().hex[:8]}@{ACCOUNT}.dfs.core.windows.net/t"
        cap.fails(lambda o=options, m=missing: _create_and_commit(DeltaLog.for_table(m, o)))  # type: ignore[misc]
    wrong_key = {**by_key, "AZURE_STORAGE_ACCOUNT_KEY": "V1JPTkcta2V5" * 8}
    cap.fails(lambda: DeltaLog.for_table(uri, wrong_key).update())
    cap.assert_clean(ACCOUNT_KEY, conn, "V1JPTkcta2V5" * 8)


# -- Redis ---------------------------------------------------------------------------------


REDIS_PASSWORD = "redis-pw-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def redis_with_password(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(str(tmp_path_factory.mktemp("redis-logs")), password=REDIS_PASSWORD).start()
    try:
        yield server
    finally:
        server.stop()


def test_redis_password_never_shows(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, redis_with_password: RedisServer
) -> None:
    cap = Capture(caplog)
    lock = redis_with_password.url + "?lease_ttl=1s"  # short: a new table waits one lease
    assert REDIS_PASSWORD in lock
    log = DeltaLog.for_table(str(tmp_path / "t"))
    _create_and_commit(log, lock=lock)
    txn = log.start_transaction(lock=lock)
    cap.add(txn, log, log.update())
    from deltalog.txn.commit.locks.selection import choose_commit_lock

    chosen = choose_commit_lock(log.store, lock)
    cap.add(chosen)
    chosen.close()
    wrong = lock.replace(REDIS_PASSWORD, "wrong-" + REDIS_PASSWORD[::-1]) + "&acquire_timeout=1s"
    cap.fails(
        lambda: (
            DeltaLog.for_table(str(tmp_path / "t"))
            .start_transaction(lock=wrong)
            .commit([AddFile("p=a/w.parquet", {"p": "a"}, 1, 1)], Write())
        )
    )
    down = f"redis://:{REDIS_PASSWORD}@127.0.0.1:{free_port()}/0?connect_timeout=200ms&acquire_timeout=1s"
    cap.fails(
        lambda: (
            DeltaLog.for_table(str(tmp_path / "t"))
            .start_transaction(lock=down)
            .commit([AddFile("p=a/d.parquet", {"p": "a"}, 1, 1)], Write())
        )
    )
    cap.assert_clean(REDIS_PASSWORD, REDIS_PASSWORD[::-1])


# -- the CLI's conformance report ------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "deltalog.cli", *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


@pytest.mark.slow
def test_conformance_report_never_shows_the_s3_secret(reliability_moto: ServerProcess, bucket: str) -> None:
    options: list[str] = []
    for key, value in _s3(reliability_moto.url).items():
        options += ["--storage-option", f"{key}={value}"]
    few = [
        "--check",
        "declared_semantics",
        "--check",
        "roundtrip_unicode",
        "--check",
        "spec_rebuild",
        "--check",
        "data_filesystem",
        "--check",
        "secrets_redacted",
    ]
    runs: list[Any] = [
        # every check's report is checked without the CLI in tests/backends/test_conformance.py
        _cli("conformance", *options, "--json", *few, f"s3://{bucket}/conformance-json"),
        _cli("conformance", *options, "--debug", *few, f"s3://{bucket}/conformance"),
        _cli("conformance", *options, "--debug", *few[:2], f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/c"),
    ]
    text = "\n".join(r.stdout + r.stderr for r in runs)
    assert runs[0].stdout.strip() and runs[1].stdout.strip(), text[-3000:]
    assert bucket in runs[0].stdout and "secrets_redacted" in runs[0].stdout  # the JSON report
    assert runs[2].returncode != 0
    assert S3_SECRET not in text, _context(text, S3_SECRET)
