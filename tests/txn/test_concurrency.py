"""Concurrent writers through the transaction engine.

Real processes on the local store (each process its own DeltaLog, racing on the
store's put-if-absent), and threads on the memory store (which is per process by
design, so several writers on it can only be threads of one process).
Every acknowledged commit must be present exactly once and versions must be contiguous.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import uuid
from collections import Counter
from pathlib import Path

from deltalog.txn.commit.operations import CreateTable, Delete, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata, RemoveFile

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)


def _create(uri: str) -> None:
    txn = DeltaLog.for_table(uri).start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",)))
    txn.commit([], CreateTable(partition_by=["p"]))


def _appender(uri: str, worker: int, commits: int) -> list[tuple[int, str]]:
    log = DeltaLog.for_table(uri)
    acknowledged = []
    for i in range(commits):
        path = f"p=w{worker}/w{worker}-{i}.parquet"
        version = log.start_transaction().commit([AddFile(path, {"p": f"w{worker}"}, 1, 1)], Write())
        acknowledged.append((version, path))
    return acknowledged


def _append_and_delete_own_partition(uri: str, worker: int, rounds: int) -> list[tuple[int, str]]:
    """Each round: append a file to the worker's partition, then delete the oldest one
    of that partition after reading only that partition."""
    log = DeltaLog.for_table(uri)
    acknowledged = []
    part = f"w{worker}"
    for i in range(rounds):
        path = f"p={part}/{part}-{i}.parquet"
        v = log.start_transaction().commit([AddFile(path, {"p": part}, 1, 1)], Write())
        acknowledged.append((v, "add " + path))
        if i % 2 == 1:
            txn = log.start_transaction()
            files = sorted(txn.filter_files([("p", "=", part)]), key=lambda f: f.path)
            victim = files[0]
            v = txn.commit([victim.remove(1_700_000_000_000)], Delete(predicate=[f"p = '{part}'"]))
            acknowledged.append((v, "remove " + victim.path))
    return acknowledged


def _check_log(uri: str, expected_versions: int) -> list[list[dict[str, object]]]:
    log = DeltaLog.for_table(uri)
    snapshot = log.update()
    assert snapshot.version == expected_versions
    assert log.list_commit_versions(0) == list(range(expected_versions + 1))
    return [[json.loads(line) for line in log.store.read(log.commit_uri(v))] for v in range(expected_versions + 1)]


def test_8_processes_x_50_blind_appends_on_the_local_store(tmp_path: Path) -> None:
    uri = str(tmp_path / "table")
    _create(uri)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        results = pool.starmap(_appender, [(uri, w, 50) for w in range(8)])
    acknowledged = [item for result in results for item in result]
    commits = _check_log(uri, 400)
    # every acknowledged commit is present exactly once, at the version it was acknowledged
    versions = Counter(v for v, _ in acknowledged)
    assert sorted(versions) == list(range(1, 401)) and set(versions.values()) == {1}
    for version, path in acknowledged:
        adds = [a["add"]["path"] for a in commits[version] if "add" in a]
        assert adds == [path]
    snapshot = DeltaLog.for_table(uri).update()
    assert snapshot.num_files == 400
    assert len({f.path for f in snapshot.files}) == 400


def test_mixed_appends_and_deletes_on_disjoint_partitions_all_succeed(tmp_path: Path) -> None:
    uri = str(tmp_path / "table")
    _create(uri)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.starmap(_append_and_delete_own_partition, [(uri, w, 12) for w in range(4)])
    acknowledged = [item for result in results for item in result]
    total = len(acknowledged)
    assert total == 4 * (12 + 6)
    _check_log(uri, total)
    snapshot = DeltaLog.for_table(uri).update()
    removed = {what.split(" ", 1)[1] for _, what in acknowledged if what.startswith("remove")}
    added = {what.split(" ", 1)[1] for _, what in acknowledged if what.startswith("add")}
    assert {f.path for f in snapshot.files} == added - removed
    assert len(removed) == 4 * 6


def test_8_threads_x_50_blind_appends_on_the_memory_store() -> None:
    uri = f"memory://concurrency-{uuid.uuid4().hex}"
    _create(uri)
    results: dict[int, list[tuple[int, str]]] = {}

    def run(worker: int) -> None:
        results[worker] = _appender(uri, worker, 50)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    acknowledged = [item for result in results.values() for item in result]
    assert len(acknowledged) == 400
    commits = _check_log(uri, 400)
    assert sorted(v for v, _ in acknowledged) == list(range(1, 401))
    for version, path in acknowledged:
        assert [a["add"]["path"] for a in commits[version] if "add" in a] == [path]


def test_concurrent_deletes_of_one_file_one_wins(tmp_path: Path) -> None:
    uri = str(tmp_path / "table")
    _create(uri)
    log = DeltaLog.for_table(uri)
    log.start_transaction().commit([AddFile("p=a/f.parquet", {"p": "a"}, 1, 1)], Write())
    outcomes: list[str] = []

    def delete() -> None:
        txn = DeltaLog.for_table(uri).start_transaction()
        files = txn.filter_files([("p", "=", "a")])
        barrier.wait()
        try:
            txn.commit([RemoveFile(files[0].path, 1, True)], Delete())
            outcomes.append("ok")
        except Exception as exc:  # the loser must get a typed conflict
            outcomes.append(type(exc).__name__)

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=delete) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ConcurrentDeleteReadError", "ok"]
    assert DeltaLog.for_table(uri).update().version == 2
