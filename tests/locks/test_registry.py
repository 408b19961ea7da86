"""Lock schemes are found through the entry-point group ``deltalog.commit_locks``, the way
stores are: deltalog's own Redis lock too, which ``txn`` never names."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

from deltalog.contrib.redis_lock import RedisCommitLock
from deltalog.logstores.base import MutualExclusion, StoreSemantics
from deltalog.logstores.memory import MemoryLogStore
from deltalog.txn.commit.locks import CommitLockConfigError, NoCommitLock, choose_commit_lock, lock_schemes, registry

REDIS_FACTORY = "deltalog.contrib.redis_lock:redis_lock_from_uri"


class PlainPut(MemoryLogStore):
    default_semantics = StoreSemantics(MutualExclusion.NONE, partial_write_visible=False)


class Fenced(NoCommitLock):
    name = "fenced"


def fenced_lock(uri: str, options: object) -> Fenced:
    """A factory for the fake ``fenced://`` entry point below."""
    return Fenced()


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    """Replace the installed ``deltalog.commit_locks`` entry points with the returned list."""
    group: list[EntryPoint] = []

    def fake_entry_points(**kwargs: str) -> list[EntryPoint]:
        assert kwargs == {"group": registry.ENTRY_POINT_GROUP}
        return list(group)

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    monkeypatch.setattr(registry, "_REGISTERED", {})  # schemes other tests registered
    registry.refresh()
    yield group
    registry.refresh()


def entry(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=registry.ENTRY_POINT_GROUP)


def test_deltalog_registers_its_redis_lock_as_entry_points() -> None:
    found = {ep.name: ep.value for ep in entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert found.get("redis") == found.get("rediss") == REDIS_FACTORY, (
        f"the entry points of {registry.ENTRY_POINT_GROUP!r} are {found}; reinstall deltalog (pip install -e .)"
    )
    lock = choose_commit_lock(PlainPut(), "redis://127.0.0.1:7777/3")
    assert isinstance(lock, RedisCommitLock) and lock.config.db == 3
    assert {"redis", "rediss"} <= set(lock_schemes())


def test_txn_does_not_name_the_redis_lock() -> None:
    locks = Path(registry.__file__).parent
    for module in locks.glob("*.py"):
        assert "contrib" not in module.read_text(encoding="utf-8"), module.name


def test_redis_resolves_only_through_its_entry_point(installed: list[EntryPoint]) -> None:
    with pytest.raises(CommitLockConfigError, match="no lock scheme is installed"):
        choose_commit_lock(PlainPut(), "redis://127.0.0.1:7777/0")
    installed.append(entry("redis", REDIS_FACTORY))
    registry.refresh()
    assert isinstance(choose_commit_lock(PlainPut(), "REDIS://127.0.0.1:7777/0"), RedisCommitLock)


def test_a_third_party_scheme_is_loaded_from_its_entry_point(installed: list[EntryPoint]) -> None:
    installed.append(entry("Fenced", f"{__name__}:fenced_lock"))
    assert isinstance(choose_commit_lock(PlainPut(), "fenced://host/x"), Fenced)
    assert "fenced" in lock_schemes()


def test_unknown_scheme_lists_the_schemes_found(installed: list[EntryPoint]) -> None:
    installed.extend([entry("redis", REDIS_FACTORY), entry("rediss", REDIS_FACTORY), entry("zk", "pkg.zk:lock")])
    with pytest.raises(CommitLockConfigError) as info:
        choose_commit_lock(PlainPut(), "etcd://user:hunter22@host/x")
    message = str(info.value)
    assert "unknown commit lock 'etcd://...'" in message and "hunter22" not in message
    assert "redis://, rediss://, zk://" in message


def test_a_broken_entry_point_is_a_config_error(installed: list[EntryPoint]) -> None:
    installed.extend([entry("gone", "deltalog_no_such_module:factory"), entry("odd", f"{__name__}:REDIS_FACTORY")])
    with pytest.raises(CommitLockConfigError, match="registered for gone://"):
        choose_commit_lock(PlainPut(), "gone://x")
    with pytest.raises(CommitLockConfigError, match="is not a commit-lock factory"):
        choose_commit_lock(PlainPut(), "odd://x")


def test_the_first_of_two_entry_points_for_one_scheme_wins(
    installed: list[EntryPoint], caplog: pytest.LogCaptureFixture
) -> None:
    installed.extend([entry("fenced", f"{__name__}:fenced_lock"), entry("fenced", REDIS_FACTORY)])
    assert isinstance(choose_commit_lock(PlainPut(), "fenced://x"), Fenced)
    assert "two commit locks are registered for fenced://" in caplog.text
