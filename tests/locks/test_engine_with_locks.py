"""The transaction engine committing through the commit locks: the unsafe default on a
store without mutual exclusion is refused before anything is written, and real writer
processes commit through Redis to a plain-put local store and to S3 without conditional
puts (moto), every commit present exactly once."""

from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deltalog.txn.commit.locks import UnsafeCommitLockError
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from tests.locks.test_redis_lock import PREFIX
from tests.servers.process import ServerProcess
from tests.servers.redis import RedisServer
from tests.servers.s3 import s3_options, start_moto

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "v", "type": "long", "nullable": True, "metadata": {}}]})
PLAIN = "tests.locks.plain_store:PlainPutLogStore"
S3_PLAIN = "s3-no-conditional-put"


def _open(uri: str, options: dict[str, str], logstore: str) -> DeltaLog:
    return DeltaLog.for_table(uri, options, logstore=logstore)


def _create(uri: str, options: dict[str, str], logstore: str) -> int:
    txn = _open(uri, options, logstore).start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA))
    return int(txn.commit([], CreateTable()))


def _appender(uri: str, options: dict[str, str], logstore: str, worker: int, commits: int) -> list[tuple[int, str]]:
    log = _open(uri, options, logstore)
    done = []
    for i in range(commits):
        path = f"w{worker}-{i}.parquet"
        done.append((int(log.start_transaction().commit([AddFile(path, {}, 1, 1)], Write())), path))
    return done


def _check(uri: str, options: dict[str, str], logstore: str, acknowledged: list[tuple[int, str]]) -> None:
    log = _open(uri, options, logstore)
    latest = len(acknowledged)
    assert log.update().version == latest
    assert log.list_commit_versions(0) == list(range(latest + 1))
    adds: Counter[str] = Counter()
    where: dict[str, int] = {}
    for version in range(1, latest + 1):
        for line in log.store.read(log.commit_uri(version)):
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] += 1
                where[action["add"]["path"]] = version
    assert set(adds.values()) == {1}
    assert where == {path: version for version, path in acknowledged}
    assert sorted(f.path for f in log.update().files) == sorted(p for _, p in acknowledged)


def _run(uri: str, options: dict[str, str], logstore: str, workers: int, commits: int) -> list[tuple[int, str]]:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        results = pool.starmap(_appender, [(uri, options, logstore, w, commits) for w in range(workers)])
    return [item for chunk in results for item in chunk]


def test_engine_refuses_auto_on_a_store_without_mutual_exclusion(tmp_path: Path) -> None:
    uri = str(tmp_path / "table")
    with pytest.raises(UnsafeCommitLockError, match="redis://"):
        _create(uri, {}, PLAIN)
    log_dir = os.path.join(uri, "_delta_log")
    assert not os.path.isdir(log_dir) or not [n for n in os.listdir(log_dir) if n.endswith(".json")]
    # The single-writer opt-in through the storage options is accepted.
    assert _create(uri, {"deltalog.singleWriter": "true"}, PLAIN) == 0


def test_processes_commit_through_the_engine_and_redis_on_a_plain_put_store(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    uri = str(tmp_path / "table")
    options = {"deltalog.commitLock": f"{redis_server.url}?lease_ttl=2s&key_prefix={PREFIX}"}
    assert _create(uri, options, PLAIN) == 0
    acknowledged = _run(uri, options, PLAIN, workers=3, commits=10)
    _check(uri, options, PLAIN, acknowledged)


@pytest.fixture(scope="module")
def moto() -> Iterator[ServerProcess]:
    log_dir = tempfile.mkdtemp(prefix="deltalog-moto-locks-")
    server = start_moto(log_dir)
    try:
        yield server
    finally:
        server.stop()


def test_processes_commit_through_redis_to_s3_without_conditional_puts(
    redis_server: RedisServer, moto: ServerProcess
) -> None:
    import boto3

    options = s3_options(moto.url)
    bucket = f"locks-{uuid.uuid4().hex[:12]}"
    client: Any = boto3.client(
        "s3",
        endpoint_url=moto.url,
        region_name=options["AWS_REGION"],
        aws_access_key_id=options["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=options["AWS_SECRET_ACCESS_KEY"],
    )
    client.create_bucket(Bucket=bucket)
    options["deltalog.commitLock"] = f"{redis_server.url}?lease_ttl=2s&key_prefix={PREFIX}"
    uri = f"s3://{bucket}/table"
    assert _create(uri, options, S3_PLAIN) == 0
    acknowledged = _run(uri, options, S3_PLAIN, workers=2, commits=8)
    _check(uri, options, S3_PLAIN, acknowledged)
    leftovers = client.list_objects_v2(Bucket=bucket, Prefix="table/_delta_log/.tmp/").get("KeyCount", 0)
    assert leftovers == 0
