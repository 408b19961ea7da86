"""choose_commit_lock follows the table in docs/locks.md: every row, every override, every refusal."""

from __future__ import annotations

import pytest

from deltalog.contrib.redis_lock import RedisCommitLock
from deltalog.logstores.base import MutualExclusion, StoreSemantics
from deltalog.logstores.memory import MemoryLogStore
from deltalog.txn.commit.locks import (
    CommitLock,
    CommitLockConfigError,
    InProcessCommitLock,
    NoCommitLock,
    UnsafeCommitLockError,
    choose_commit_lock,
    describe_default_lock,
    register_lock_scheme,
)


def store_with(mutex: MutualExclusion, partial: bool) -> MemoryLogStore:
    class Declared(MemoryLogStore):
        name = f"declared-{mutex.name.lower()}-{'partial' if partial else 'atomic'}"
        default_semantics = StoreSemantics(mutex, partial_write_visible=partial)

    return Declared()


EXCLUSIVE = [MutualExclusion.CONDITIONAL_WRITE, MutualExclusion.ATOMIC_RENAME]


@pytest.mark.parametrize("mutex", EXCLUSIVE)
@pytest.mark.parametrize("auto", [None, "auto", "AUTO", " auto "])
def test_exclusive_atomic_store_defaults_to_no_lock(mutex: MutualExclusion, auto: str | None) -> None:
    assert type(choose_commit_lock(store_with(mutex, False), auto)) is NoCommitLock


@pytest.mark.parametrize("mutex", EXCLUSIVE)
def test_exclusive_atomic_store_allows_every_override(mutex: MutualExclusion) -> None:
    store = store_with(mutex, False)
    assert type(choose_commit_lock(store, "none")) is NoCommitLock
    assert type(choose_commit_lock(store, "in-process")) is InProcessCommitLock
    assert type(choose_commit_lock(store, "redis://127.0.0.1:1/0")) is RedisCommitLock
    assert type(choose_commit_lock(store, "rediss://127.0.0.1:1/0")) is RedisCommitLock


@pytest.mark.parametrize("mutex", EXCLUSIVE)
def test_partial_writes_visible_defaults_to_in_process(mutex: MutualExclusion) -> None:
    store = store_with(mutex, True)
    assert type(choose_commit_lock(store)) is InProcessCommitLock
    assert type(choose_commit_lock(store, "in-process")) is InProcessCommitLock
    assert type(choose_commit_lock(store, "redis://127.0.0.1:1/0")) is RedisCommitLock


@pytest.mark.parametrize("mutex", EXCLUSIVE)
def test_partial_writes_visible_refuses_none(mutex: MutualExclusion) -> None:
    with pytest.raises(UnsafeCommitLockError, match="shows partial writes"):
        choose_commit_lock(store_with(mutex, True), "none")
    with pytest.raises(UnsafeCommitLockError):
        choose_commit_lock(store_with(mutex, True), NoCommitLock())


@pytest.mark.parametrize("partial", [False, True])
def test_no_mutual_exclusion_auto_is_an_error_naming_both_safe_choices(partial: bool) -> None:
    store = store_with(MutualExclusion.NONE, partial)
    with pytest.raises(UnsafeCommitLockError) as info:
        choose_commit_lock(store)
    message = str(info.value)
    assert 'lock="redis://' in message
    assert 'lock="in-process" with single_writer=True' in message
    assert store.name in message


@pytest.mark.parametrize("partial", [False, True])
def test_no_mutual_exclusion_refuses_none_and_plain_in_process(partial: bool) -> None:
    store = store_with(MutualExclusion.NONE, partial)
    with pytest.raises(UnsafeCommitLockError, match="no mutual exclusion"):
        choose_commit_lock(store, "none")
    with pytest.raises(UnsafeCommitLockError, match="no mutual exclusion"):
        choose_commit_lock(store, NoCommitLock(), single_writer=True)
    with pytest.raises(UnsafeCommitLockError, match="single_writer=True"):
        choose_commit_lock(store, "in-process")
    with pytest.raises(UnsafeCommitLockError, match="single_writer=True"):
        choose_commit_lock(store, InProcessCommitLock())


@pytest.mark.parametrize("partial", [False, True])
def test_no_mutual_exclusion_allows_redis_and_single_writer_in_process(partial: bool) -> None:
    store = store_with(MutualExclusion.NONE, partial)
    assert type(choose_commit_lock(store, "redis://127.0.0.1:1/0")) is RedisCommitLock
    chosen = choose_commit_lock(store, "in-process", single_writer=True)
    assert isinstance(chosen, InProcessCommitLock) and chosen.single_writer
    assert isinstance(choose_commit_lock(store, single_writer=True), InProcessCommitLock)
    ready = InProcessCommitLock(single_writer=True)
    assert choose_commit_lock(store, ready) is ready


def test_a_ready_lock_is_returned_as_is() -> None:
    store = store_with(MutualExclusion.CONDITIONAL_WRITE, False)
    ready = NoCommitLock()
    assert choose_commit_lock(store, ready) is ready


def test_unknown_settings_are_config_errors_that_hide_uri_secrets() -> None:
    store = store_with(MutualExclusion.CONDITIONAL_WRITE, False)
    with pytest.raises(CommitLockConfigError, match="unknown commit lock 'zookeeper'"):
        choose_commit_lock(store, "zookeeper")
    with pytest.raises(CommitLockConfigError) as info:
        choose_commit_lock(store, "etcd://user:hunter22@host/x")
    assert "hunter22" not in str(info.value)
    assert "redis" in str(info.value)
    with pytest.raises(CommitLockConfigError):
        choose_commit_lock(store, 42)  # type: ignore[arg-type]


def test_registered_scheme_builds_a_lock_with_the_store_options() -> None:
    seen: dict[str, object] = {}

    class Custom(NoCommitLock):
        name = "custom"

    def factory(uri: str, options: object) -> CommitLock:
        seen["uri"], seen["options"] = uri, options
        return Custom()

    register_lock_scheme("testlock", factory)
    store = store_with(MutualExclusion.CONDITIONAL_WRITE, False)
    assert isinstance(choose_commit_lock(store, "testlock://x"), Custom)
    assert seen["uri"] == "testlock://x" and seen["options"] is store.options


def test_redis_lock_takes_settings_from_the_store_options() -> None:
    class Opted(MemoryLogStore):
        default_semantics = StoreSemantics(MutualExclusion.NONE, partial_write_visible=False)

    store = Opted({"deltalog.lock.redis.lease_ttl": "3s", "REDIS_PASSWORD": "pw-from-options"})
    lock = choose_commit_lock(store, "redis://127.0.0.1:7777/2")
    assert isinstance(lock, RedisCommitLock)
    assert lock.config.lease_ttl == 3.0 and lock.config.db == 2
    assert lock.config.password == "pw-from-options"
    assert "pw-from-options" not in repr(lock)


def test_describe_default_lock_for_deltalog_stores() -> None:
    sem = StoreSemantics
    assert describe_default_lock(sem(MutualExclusion.CONDITIONAL_WRITE, False)).startswith("none")
    assert describe_default_lock(sem(MutualExclusion.ATOMIC_RENAME, True)).startswith("in-process")
    text = describe_default_lock(sem(MutualExclusion.NONE, False))
    assert text.startswith("required") and "redis://" in text and "single_writer" in text
