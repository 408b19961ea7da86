"""The Redis commit lock against a real redis-server: commits, fencing, repair, lease,
AUTH, Redis down, and claims whose reply was lost (fault injection on the client)."""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import redis

from deltalog.contrib.redis_lock import RedisCommitLock, RedisLockConfig
from deltalog.logstores.errors import AmbiguousWriteError, FileAlreadyExistsError
from deltalog.txn.commit.locks import (
    CommitOutcomeUnknownError,
    LockTimeoutError,
    LockUnavailableError,
    MissingCommitError,
    UnrecoverableClaimError,
    commit_uri,
)
from tests.locks.plain_store import PlainPutLogStore
from tests.locks.writer_loop import commit_lines, commit_once, read_markers
from tests.servers.redis import RedisServer

PREFIX = "deltalog-test:"


def make_lock(url: str, **params: str) -> RedisCommitLock:
    query = {"lease_ttl": "1s", "acquire_timeout": "30s", "key_prefix": PREFIX, **params}
    joined = "&".join(f"{k}={v}" for k, v in query.items())
    return RedisCommitLock(RedisLockConfig.from_uri(url + ("&" if "?" in url else "?") + joined))


def table(tmp_path: Path) -> str:
    return str(tmp_path / f"t-{uuid.uuid4().hex[:8]}" / "_delta_log")


def temp_files(log_uri: str) -> list[str]:
    temp_dir = os.path.join(log_uri, ".tmp")
    return sorted(os.listdir(temp_dir)) if os.path.isdir(temp_dir) else []


def commit_files(log_uri: str) -> list[str]:
    return sorted(n for n in os.listdir(log_uri) if n.endswith(".json")) if os.path.isdir(log_uri) else []


def test_commits_publish_once_and_a_taken_version_is_refused(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as lock:
        lock.write_commit(store, log_uri, 0, commit_lines("a"))
        lock.write_commit(store, log_uri, 1, commit_lines("b"))
        with pytest.raises(FileAlreadyExistsError):
            lock.write_commit(store, log_uri, 1, commit_lines("c"))
        claim = lock.claim_of(store, log_uri, 1)
        assert claim is not None and claim["complete"] == "true" and claim["tempPath"].startswith(".tmp/")
    assert read_markers(store, log_uri) == {0: ["a"], 1: ["b"]}
    assert temp_files(log_uri) == []  # published temp files are removed
    client: Any = redis_server.client()
    key = lock._table(store, log_uri).entry_key(1)
    assert client.hget(key, "complete") == "true" and 0 < client.ttl(key) <= 86400  # complete entries expire


def test_version_after_a_missing_one_is_refused(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as lock:
        lock.write_commit(store, log_uri, 0, commit_lines("a"))
        with pytest.raises(MissingCommitError, match="version 4 does not exist"):
            lock.write_commit(store, log_uri, 5, commit_lines("b"))
    assert commit_files(log_uri) == ["00000000000000000000.json"]
    assert temp_files(log_uri) == []


class FailingPublishStore(PlainPutLogStore):
    """Fault injection: every write of a commit file fails (a claimant that never publishes)."""

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        if "/.tmp/" not in path:
            raise OSError("injected: the PUT of the commit file failed")
        super().write(path, lines, overwrite)


@pytest.mark.parametrize("how", ["recover", "next-commit"])
def test_claimed_but_missing_version_is_repaired_from_the_temp_file(
    redis_server: RedisServer, tmp_path: Path, how: str
) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as lock, make_lock(redis_server.url) as other:
        lock.write_commit(store, log_uri, 0, commit_lines("a"))
        with pytest.raises(AmbiguousWriteError):
            lock.write_commit(FailingPublishStore(), log_uri, 1, commit_lines("claimed"))
        assert commit_files(log_uri) == ["00000000000000000000.json"]
        assert len(temp_files(log_uri)) == 1
        assert other.claim_of(store, log_uri, 1)["complete"] == "false"  # type: ignore[index]
        # The version is taken even though its file is missing.
        with pytest.raises(FileAlreadyExistsError):
            other.write_commit(store, log_uri, 1, commit_lines("late"))
        if how == "recover":
            other.recover(store, log_uri)
            assert commit_once(other, store, log_uri, "b") == 2
        else:
            other.write_commit(store, log_uri, 2, commit_lines("b"))
        assert other.claim_of(store, log_uri, 1)["complete"] == "true"  # type: ignore[index]
        other.recover(store, log_uri)  # idempotent
    assert read_markers(store, log_uri) == {0: ["a"], 1: ["claimed"], 2: ["b"]}
    assert len(temp_files(log_uri)) == 1  # the failed claimant's: repairers never delete it


def test_lease_renewal_keeps_a_slow_holders_lease(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    client: Any = redis_server.client()
    with make_lock(redis_server.url, lease_ttl="300ms") as lock:
        with lock.lease(store, log_uri) as held:
            taken = time.monotonic()
            # Renewals come every lease_ttl / 3: after six the lease has outlived two TTLs.
            assert held.wait_renewed(6, timeout=30), "the lease was lost or never renewed"
            assert time.monotonic() - taken > 2 * 0.3
            assert client.get(held.table.lease_key) == held.token
            assert not held.lost.is_set()
        assert client.get(held.table.lease_key) is None  # released
        # Control: without the renewal thread the same lease expires.
        with lock.lease(store, log_uri) as held, _expirations(client, lock.config.db) as expired:
            held.stop()
            assert 0 < client.pttl(held.table.lease_key) <= 300
            assert expired(held.table.lease_key, timeout=30)
            assert client.get(held.table.lease_key) is None


@contextmanager
def _expirations(client: Any, db: int) -> Iterator[Callable[[str, float], bool]]:
    """``expired(key, timeout)``: wait for Redis to announce that ``key`` expired (a
    keyspace notification, switched on for the block)."""
    before = client.config_get("notify-keyspace-events")["notify-keyspace-events"]
    client.config_set("notify-keyspace-events", "Ex")
    pubsub = client.pubsub()
    pubsub.subscribe(f"__keyevent@{db}__:expired")

    def expired(key: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
            if message is not None and message["data"] == key:
                return True
        return False

    try:
        yield expired
    finally:
        pubsub.close()
        client.config_set("notify-keyspace-events", before)


def test_a_held_lease_makes_other_writers_wait_then_time_out(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as lock, make_lock(redis_server.url, acquire_timeout="500ms") as other:
        with lock.lease(store, log_uri):
            with pytest.raises(LockTimeoutError, match=f"held by [^ ]+:{os.getpid()}"):
                other.write_commit(store, log_uri, 0, commit_lines("x"))
        other.write_commit(store, log_uri, 0, commit_lines("y"))
    assert read_markers(store, log_uri) == {0: ["y"]}


def test_lost_lease_is_noticed(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    client: Any = redis_server.client()
    with make_lock(redis_server.url, lease_ttl="300ms") as lock, lock.lease(store, log_uri) as held:
        client.delete(held.table.lease_key)
        assert held.lost.wait(30)


def test_redis_down_gives_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    server = RedisServer(str(tmp_path / "redis-logs"), password="pw-never-shown").start()
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    try:
        with make_lock(server.url, connect_timeout="1s") as lock:
            lock.write_commit(store, log_uri, 0, commit_lines("a"))
            server.stop()
            for attempt in (
                partial(lock.write_commit, store, log_uri, 1, commit_lines("b")),
                partial(lock.recover, store, log_uri),
            ):
                with pytest.raises(LockUnavailableError) as info:
                    attempt()
                assert f"127.0.0.1:{server.port}" in str(info.value)
                assert "pw-never-shown" not in str(info.value) and "pw-never-shown" not in repr(lock)
    finally:
        server.stop()
    assert commit_files(log_uri) == ["00000000000000000000.json"]
    assert temp_files(log_uri) == []


def test_auth_in_the_uri_or_in_options(redis_auth_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    password = redis_auth_server.password
    assert password
    with make_lock(redis_auth_server.url) as lock:  # redis://:password@host
        lock.write_commit(store, log_uri, 0, commit_lines("a"))
        assert password not in repr(lock)
    bare = f"redis://127.0.0.1:{redis_auth_server.port}/0?key_prefix={PREFIX}&lease_ttl=1s"
    with RedisCommitLock(RedisLockConfig.from_uri(bare, {"deltalog.lock.redis.password": password})) as lock:
        lock.write_commit(store, log_uri, 1, commit_lines("b"))
    named = f"redis://default:{password}@127.0.0.1:{redis_auth_server.port}/0"
    with make_lock(named) as lock:  # ACL user "default"
        lock.write_commit(store, log_uri, 2, commit_lines("c"))
    for wrong in (
        f"redis://:wrong-password@127.0.0.1:{redis_auth_server.port}/0",
        f"redis://127.0.0.1:{redis_auth_server.port}/0",
    ):
        with make_lock(wrong) as lock, pytest.raises(LockUnavailableError) as info:
            lock.write_commit(store, log_uri, 3, commit_lines("d"))
        assert "wrong-password" not in str(info.value) and password not in str(info.value)
    assert read_markers(store, log_uri) == {0: ["a"], 1: ["b"], 2: ["c"]}
    assert temp_files(log_uri) == []


class LostReplyClient:
    """Fault injection around the real client: the claim script runs (or not) and then
    the connection "fails"; later reads may fail too."""

    def __init__(self, real: Any, claim_lands: bool, readback_fails: bool) -> None:
        self.real, self.claim_lands, self.readback_fails = real, claim_lands, readback_fails
        self.armed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def hgetall(self, key: str) -> Any:
        if self.armed and self.readback_fails:
            raise redis.ConnectionError("injected: connection reset")
        return self.real.hgetall(key)


def inject_lost_claim_reply(lock: RedisCommitLock, claim_lands: bool, readback_fails: bool) -> LostReplyClient:
    scripts = lock._scripts()
    real_claim = scripts["claim"]
    fake = LostReplyClient(lock._client(), claim_lands, readback_fails)

    def claim(**kwargs: Any) -> Any:
        if fake.claim_lands:
            real_claim(**kwargs)
        fake.armed = True
        raise redis.ConnectionError("injected: connection reset before the reply")

    scripts["claim"] = claim
    lock._client_obj = fake
    return fake


def test_claim_whose_reply_was_lost_is_read_back_and_published(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as setup:
        setup.write_commit(store, log_uri, 0, commit_lines("a"))
    lock = make_lock(redis_server.url)
    inject_lost_claim_reply(lock, claim_lands=True, readback_fails=False)
    lock.write_commit(store, log_uri, 1, commit_lines("b"))  # token equality: the claim is ours
    assert read_markers(store, log_uri) == {0: ["a"], 1: ["b"]}
    assert temp_files(log_uri) == []


def test_claim_that_did_not_land_publishes_nothing(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    lock = make_lock(redis_server.url)
    lock.write_commit(store, log_uri, 0, commit_lines("a"))
    inject_lost_claim_reply(lock, claim_lands=False, readback_fails=False)
    with pytest.raises(LockUnavailableError, match="did not land; nothing was published"):
        lock.write_commit(store, log_uri, 1, commit_lines("b"))
    assert commit_files(log_uri) == ["00000000000000000000.json"]
    assert temp_files(log_uri) == []


@pytest.mark.parametrize("landed", [True, False])
def test_unknown_claim_outcome_is_ambiguous_then_resolved_on_the_next_attempt(
    redis_server: RedisServer, tmp_path: Path, landed: bool
) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    lock = make_lock(redis_server.url)
    lock.write_commit(store, log_uri, 0, commit_lines("a"))
    fake = inject_lost_claim_reply(lock, claim_lands=landed, readback_fails=True)
    with pytest.raises(CommitOutcomeUnknownError) as info:
        lock.write_commit(store, log_uri, 1, commit_lines("b"))
    assert isinstance(info.value, AmbiguousWriteError) and isinstance(info.value, LockUnavailableError)
    assert info.value.path == commit_uri(log_uri, 1)
    assert commit_files(log_uri) == ["00000000000000000000.json"]
    assert len(temp_files(log_uri)) == 1  # kept: a claim may point at it
    fake.readback_fails = False  # Redis is back
    lock.recover(store, log_uri)  # what the engine does before reading the commit back
    expected = {0: ["a"], 1: ["b"]} if landed else {0: ["a"]}
    assert read_markers(store, log_uri) == expected
    assert temp_files(log_uri) == []
    assert lock._pending == {}


def test_recreated_table_needs_forget(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as lock:
        lock.write_commit(store, log_uri, 0, commit_lines("old"))
        os.remove(commit_uri(log_uri, 0))  # the table is deleted...
        with pytest.raises(MissingCommitError, match="forget"):
            lock.write_commit(store, log_uri, 0, commit_lines("new"))  # ...and created again
        assert lock.forget(store, log_uri) >= 2
        lock.write_commit(store, log_uri, 0, commit_lines("new"))
    assert read_markers(store, log_uri) == {0: ["new"]}


def test_commit_file_written_around_the_lock_is_not_taken_for_ours(redis_server: RedisServer, tmp_path: Path) -> None:
    class Sneaky(PlainPutLogStore):
        """Fault injection: a writer that ignores the lock writes N.json just before us."""

        def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
            if "/.tmp/" not in path and not os.path.exists(path):
                PlainPutLogStore.write(self, path, [json.dumps({"commitInfo": {"marker": "rogue"}})])
            super().write(path, lines, overwrite)

    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as lock:
        lock.write_commit(store, log_uri, 0, commit_lines("a"))
        with pytest.raises(FileAlreadyExistsError):
            lock.write_commit(Sneaky(), log_uri, 1, commit_lines("b"))
        assert lock.claim_of(store, log_uri, 1)["complete"] == "true"  # type: ignore[index]
        lock.write_commit(store, log_uri, 2, commit_lines("c"))
    assert read_markers(store, log_uri) == {0: ["a"], 1: ["rogue"], 2: ["c"]}
    assert temp_files(log_uri) == []


def test_a_generator_of_many_lines_is_streamed_through_the_temp_file(redis_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    lines = (json.dumps({"add": {"path": f"part-{i}.parquet"}}) for i in range(20_000))
    with make_lock(redis_server.url) as lock:
        lock.write_commit(store, log_uri, 0, lines)
    written = list(store.read(commit_uri(log_uri, 0)))
    assert len(written) == 20_000 and written[-1] == json.dumps({"add": {"path": "part-19999.parquet"}})
    assert temp_files(log_uri) == []


def test_claim_without_temp_file_or_commit_is_unrecoverable_until_an_operator_clears_it(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_server.url) as lock:
        lock.write_commit(store, log_uri, 0, commit_lines("a"))
        with pytest.raises(AmbiguousWriteError):
            lock.write_commit(FailingPublishStore(), log_uri, 1, commit_lines("lost"))
        for name in temp_files(log_uri):
            os.remove(os.path.join(log_uri, ".tmp", name))  # someone cleaned .tmp too eagerly
        with pytest.raises(UnrecoverableClaimError) as info:
            lock.recover(store, log_uri)
        key = str(info.value).split("delete the Redis key '")[1].split("'")[0]
        client: Any = redis_server.client()
        assert client.hget(key, "complete") == "false"
        client.delete(key)  # the documented operator step
        assert commit_once(lock, store, log_uri, "b") == 1
    assert read_markers(store, log_uri) == {0: ["a"], 1: ["b"]}


def test_first_claim_after_redis_lost_its_data_waits_one_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer(str(tmp_path / "redis-logs")).start()
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    caplog.set_level(logging.INFO, logger="deltalog.contrib.redis_lock")
    try:
        with make_lock(server.url) as lock:
            lock.write_commit(store, log_uri, 0, commit_lines("a"))  # fresh Redis: waits
            assert "waiting" in caplog.text
            caplog.clear()
            lock.write_commit(store, log_uri, 1, commit_lines("b"))  # Redis knows the table now
            assert "waiting" not in caplog.text
            server.restart()  # every key lost
            lock.write_commit(store, log_uri, 2, commit_lines("c"))
            assert "has no record of" in caplog.text and "waiting" in caplog.text
    finally:
        server.stop()
    assert read_markers(store, log_uri) == {0: ["a"], 1: ["b"], 2: ["c"]}


def test_tls_with_a_ca_bundle(redis_tls_server: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    with make_lock(redis_tls_server.url) as lock:  # rediss://:pw@host/0?ssl_ca_certs=...
        assert lock.config.tls
        lock.write_commit(store, log_uri, 0, commit_lines("a"))
    untrusted = redis_tls_server.url.split("?")[0]  # the system CAs do not know the test CA
    plain = untrusted.replace("rediss://", "redis://")  # no TLS at all
    for uri in (untrusted, plain):
        with make_lock(uri, connect_timeout="2s", socket_timeout="2s") as lock:
            with pytest.raises(LockUnavailableError) as info:
                lock.write_commit(store, log_uri, 1, commit_lines("b"))
            assert "tls-redis-pw" not in str(info.value)
    assert read_markers(store, log_uri) == {0: ["a"]}
    assert temp_files(log_uri) == []
