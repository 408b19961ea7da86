"""Commits to S3 (moto_server) through a proxy that injects storage faults.

Throttling (503 SlowDown), 500 InternalError, connection resets before and after the
request reached the server, and lost answers after the PUT landed. Whatever happens,
every acknowledged commit lands exactly once: its txnId is in exactly one version, the
versions are contiguous, and an ambiguous publish is resolved by reading the txnId back,
never by writing the same data again at the next version.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from deltalog.logstores.s3 import S3LogStore
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, CommitInfo, Metadata
from tests.reliability.crash_worker import SCHEMA
from tests.servers.fault_proxy import Fault, FaultProxy
from tests.servers.process import ServerProcess
from tests.servers.s3 import s3_options

FAST = {"DELTALOG_RETRY_BASE_DELAY": "1ms", "DELTALOG_RETRY_MAX_DELAY": "10ms"}
SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
INTERNAL = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error.</Message></Error>"
)
XML = {"Content-Type": "application/xml"}


@pytest.fixture
def table(reliability_moto: ServerProcess) -> str:
    bucket = f"r{uuid.uuid4().hex[:16]}"
    S3LogStore(s3_options(reliability_moto.url)).client.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/t"


@pytest.fixture
def proxy(reliability_moto: ServerProcess) -> Iterator[FaultProxy]:
    running = FaultProxy(reliability_moto.url)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def _log(uri: str, endpoint: str, **extra: str) -> DeltaLog:
    return DeltaLog.for_table(uri, {**s3_options(endpoint), **FAST, **extra})


def _create(uri: str, endpoint: str) -> None:
    txn = _log(uri, endpoint).start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",)))
    txn.commit([], CreateTable(partition_by=["p"]))


def _txn_ids(uri: str, endpoint: str) -> dict[int, str]:
    """txnId of every version, read directly from moto (no proxy)."""
    log = _log(uri, endpoint)
    versions = log.list_commit_versions(0)
    assert versions == list(range(len(versions))), f"versions not contiguous: {versions}"
    out = {}
    for version in versions:
        info = next(a for a in log.read_commit(version) if isinstance(a, CommitInfo))
        assert info.txn_id is not None
        out[version] = info.txn_id
    return out


def _exactly_once(acked: list[tuple[int, str]], ids: dict[int, str]) -> None:
    counts = Counter(ids.values())
    for version, txn_id in acked:
        assert counts[txn_id] == 1, f"txnId {txn_id} is in {counts[txn_id]} versions"
        assert ids[version] == txn_id, f"version {version} holds {ids[version]}, acknowledged {txn_id}"


def _commit(log: DeltaLog, name: str) -> tuple[int, str, Any]:
    txn = log.start_transaction()
    version = txn.commit([AddFile(f"p=a/{name}.parquet", {"p": "a"}, 1, 1)], Write())
    return version, txn.txn_id, txn.commit_stats


def _put(**kw: Any) -> dict[str, Any]:
    """Match the PUT of a commit file (not checkpoints: see the halfway-checkpoint test)."""
    return {"method": "PUT", "path_contains": ".json", **kw}


def _fault_menu(rng: random.Random) -> Fault:
    """One seeded fault on the next commit-file PUT or log read/list."""
    kind = rng.choice(
        ["slowdown", "internal", "internal_after", "reset", "reset_after", "lose_answer", "read_slowdown", "list_reset"]
    )
    times = rng.randint(1, 2)
    if kind == "slowdown":
        return Fault("status", times=times, status=503, body=SLOW_DOWN, headers=XML, **_put())
    if kind == "internal":
        return Fault("status", times=times, status=500, body=INTERNAL, headers=XML, **_put())
    if kind == "internal_after":
        return Fault("error_after", times=1, status=500, body=INTERNAL, headers=XML, **_put())
    if kind == "reset":
        return Fault("reset", times=times, **_put())
    if kind == "reset_after":
        return Fault("reset_after", times=1, **_put())
    if kind == "lose_answer":
        return Fault("lose_answer", times=1, **_put())
    if kind == "read_slowdown":
        return Fault(
            "status", method="GET", path_contains=".json", times=times, status=503, body=SLOW_DOWN, headers=XML
        )
    return Fault("reset", method="GET", query_contains="list-type=2", times=times)


def test_fault_storm_every_commit_lands_exactly_once(
    table: str, proxy: FaultProxy, reliability_moto: ServerProcess, crash_seed: int
) -> None:
    """Two writers, 30 commits each, a seeded fault before every commit. A writer's fault
    that its commit did not meet is withdrawn before the next one, so faults never pile up
    on one request beyond the retry budget (5 attempts; at most 2 x 2 failures)."""
    rng = random.Random(crash_seed)
    _create(table, reliability_moto.url)
    acked: list[tuple[int, str]] = []
    errors: list[BaseException] = []
    faults_lock = threading.Lock()

    def writer(worker: int, seed: int) -> None:
        local = random.Random(seed)
        log = _log(table, proxy.url)
        pending: Fault | None = None
        try:
            for i in range(30):
                with faults_lock:
                    if pending is not None:
                        proxy.withdraw(pending)
                    pending = proxy.add(_fault_menu(local))
                version, txn_id, _ = _commit(log, f"w{worker}-{i}")
                with faults_lock:
                    acked.append((version, txn_id))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w, rng.randrange(2**31))) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"seed {crash_seed}: {errors[0]!r}"
    ids = _txn_ids(table, reliability_moto.url)
    assert len(acked) == 60 and len(ids) == 61, f"seed {crash_seed}"
    _exactly_once(acked, ids)
    injected = proxy.injected()
    print(f"s3 fault storm: seed={crash_seed} faults injected={injected} commits={len(acked)} lost=0")
    assert injected >= 40  # most commits met their fault (read and list faults may go unmet)
    assert DeltaLog.for_table(table, s3_options(reliability_moto.url)).update().num_files == 60


@pytest.mark.parametrize("kind", ["lose_answer", "reset_after", "error_after"])
def test_ambiguous_publish_is_resolved_by_txn_id_not_rewritten(
    table: str, proxy: FaultProxy, reliability_moto: ServerProcess, kind: str
) -> None:
    """The PUT landed, the answer was lost, and the store had no retry left: the engine gets
    AmbiguousWriteError, finds its txnId in N.json and reports N -- no N+1 with the same data."""
    _create(table, reliability_moto.url)
    log = _log(table, proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="1")
    extra: dict[str, Any] = {"status": 500, "body": INTERNAL, "headers": XML} if kind == "error_after" else {}
    fault = proxy.add(Fault(kind, times=1, **_put(path_contains="00000000000000000001.json"), **extra))
    version, txn_id, stats = _commit(log, "once")
    assert fault.hits == 1
    assert version == 1 and stats.resolved_by_txn_id
    ids = _txn_ids(table, reliability_moto.url)
    assert ids == {0: ids[0], 1: txn_id}
    assert proxy.count("PUT", lambda p: "00000000000000000002.json" in p) == 0
    # the next commit goes to 2, normally
    assert _commit(log, "next")[0] == 2


@pytest.mark.parametrize("kind", ["reset", "drop"])
def test_publish_that_never_arrived_is_retried_and_lands_once(
    table: str, proxy: FaultProxy, reliability_moto: ServerProcess, kind: str
) -> None:
    _create(table, reliability_moto.url)
    log = _log(table, proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="1")
    fault = proxy.add(Fault(kind, times=1, **_put(path_contains="00000000000000000001.json")))
    version, txn_id, _stats = _commit(log, "once")
    assert fault.hits == 1 and version == 1
    _exactly_once([(version, txn_id)], _txn_ids(table, reliability_moto.url))


def test_lost_answer_while_another_writer_took_the_version(
    table: str, proxy: FaultProxy, reliability_moto: ServerProcess
) -> None:
    """Our PUT never landed, the answer was lost, and another writer published N meanwhile:
    not ours (txnId differs), so a conflict check and N+1 -- both commits once."""
    _create(table, reliability_moto.url)
    other = _log(table, reliability_moto.url)
    theirs: list[tuple[int, str]] = []
    proxy.add(
        Fault(
            "reset",
            times=1,
            on_hit=lambda: theirs.append(_commit(other, "theirs")[:2]),
            **_put(path_contains="00000000000000000001.json"),
        )
    )
    version, txn_id, _ = _commit(_log(table, proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="1"), "mine")
    assert theirs == [(1, theirs[0][1])] and version == 2
    _exactly_once([theirs[0], (version, txn_id)], _txn_ids(table, reliability_moto.url))


def test_throttling_that_outlasts_the_retries_fails_cleanly(
    table: str, proxy: FaultProxy, reliability_moto: ServerProcess
) -> None:
    _create(table, reliability_moto.url)
    log = _log(table, proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="3")
    proxy.add(Fault("status", times=100, status=503, body=SLOW_DOWN, headers=XML, **_put()))
    from deltalog.errors import DeltaError

    with pytest.raises(DeltaError) as info:
        _commit(log, "never")
    assert "reduce your request rate" in str(info.value).lower() or "attempts" in str(info.value)
    assert list(_txn_ids(table, reliability_moto.url)) == [0]  # nothing landed


def test_a_checkpoint_that_fails_halfway_is_never_published(
    table: str, proxy: FaultProxy, reliability_moto: ServerProcess
) -> None:
    """The post-commit checkpoint of version 20 streams the files of checkpoint 10, and
    every read of checkpoint 10 now fails. The checkpoint must fail as a whole: a
    published 20.checkpoint.parquet holding only protocol and metadata would make every
    reader see an empty table."""
    _create(table, reliability_moto.url)
    direct = _log(table, reliability_moto.url)
    for i in range(10):
        _commit(direct, f"a{i}")  # versions 1..10, checkpoint 10
    writer = _log(table, proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="2")
    for i in range(9):
        _commit(writer, f"b{i}")  # versions 11..19; the writer's files are still unread
    breaking = Fault(
        "status",
        times=10_000,
        status=503,
        body=SLOW_DOWN,
        headers=XML,
        method="GET",
        path_contains="00000000000000000010.checkpoint.parquet",
    )
    # once version 20 is published (the post-commit checkpoint comes next), break the reads

    def break_reads() -> None:
        proxy.add(breaking)

    proxy.add(Fault("observe", method="PUT", path_contains="00000000000000000020.json", on_hit=break_reads))
    assert _commit(writer, "b9")[0] == 20  # the commit stands; its checkpoint hook fails
    proxy.clear()
    fresh = DeltaLog.for_table(table, s3_options(reliability_moto.url)).update()
    assert fresh.version == 20
    assert fresh.num_files == 20, "a half-written checkpoint was published: files are missing"
