"""4 processes x 25 blind appends through the transaction engine on each real server."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter

import pytest

from deltalog.txn.commit.locks.errors import UnsafeCommitLockError
from deltalog.txn.delta_log import DeltaLog
from tests.backends.conftest import Backend
from tests.backends.engine_worker import append, create_table
from tests.servers.redis import RedisServer

WORKERS, COMMITS = 4, 25


def contend(uri: str, options: dict[str, str], logstore: str | None = None, lock: str | None = None) -> None:
    assert create_table(uri, options, logstore, lock) == 0
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WORKERS) as pool:
        results = pool.starmap(append, [(uri, options, w, COMMITS, logstore, lock) for w in range(WORKERS)])
    acknowledged = [item for result in results for item in result]
    total = WORKERS * COMMITS

    log = DeltaLog.for_table(uri, options, logstore=logstore)
    snapshot = log.update()
    assert snapshot.version == total
    assert log.list_commit_versions(0) == list(range(total + 1))
    versions = Counter(v for v, _ in acknowledged)
    assert sorted(versions) == list(range(1, total + 1)) and set(versions.values()) == {1}
    for version, path in acknowledged:
        lines = [json.loads(line) for line in log.store.read(log.commit_uri(version))]
        assert [a["add"]["path"] for a in lines if "add" in a] == [path]
    assert snapshot.num_files == total
    assert len({f.path for f in snapshot.files}) == total


@pytest.mark.slow
def test_4_processes_x_25_blind_appends(backend: Backend) -> None:
    contend(f"{backend.root}/table", backend.options())


@pytest.mark.slow
def test_plain_put_store_with_the_redis_lock(s3: Backend, redis_server: RedisServer) -> None:
    contend(f"{s3.root}/table", s3.options(), logstore="s3-no-conditional-put", lock=redis_server.short_lease_url)


def test_plain_put_store_without_a_lock_is_refused(s3: Backend) -> None:
    uri = f"{s3.root}/table"
    with pytest.raises(UnsafeCommitLockError) as info:
        create_table(uri, s3.options(), logstore="s3-no-conditional-put")
    assert "redis://" in str(info.value)
    assert not DeltaLog.for_table(uri, s3.options(), logstore="s3-no-conditional-put").table_exists()
