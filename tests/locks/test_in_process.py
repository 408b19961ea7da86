"""The in-process lock serializes the threads of one process, per table."""

from __future__ import annotations

import gc
import threading
import uuid
from collections.abc import Iterable

from deltalog.logstores.errors import FileAlreadyExistsError
from deltalog.logstores.memory import MemoryLogStore
from deltalog.txn.commit.locks import InProcessCommitLock, NoCommitLock, commit_uri
from deltalog.txn.commit.locks.in_process import _REGISTRY, path_lock


class ObservingStore(MemoryLogStore):
    """Counts writers inside ``write`` at once; sleeps a little to widen any overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.max_inside = 0
        self._count = threading.Lock()
        self.entered = threading.Event()

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        with self._count:
            self.inside += 1
            self.max_inside = max(self.max_inside, self.inside)
        self.entered.set()
        try:
            threading.Event().wait(0.005)
            super().write(path, lines, overwrite)
        finally:
            with self._count:
                self.inside -= 1


def run_writers(lock: object, store: ObservingStore, log_uri: str, threads: int = 8, each: int = 5) -> list[int]:
    won: list[int] = []
    guard = threading.Lock()

    def writer(n: int) -> None:
        for i in range(each):
            while True:
                versions = [
                    int(s.name[:20]) for s in store.list_from(commit_uri(log_uri, 0)) if s.name.endswith(".json")
                ]
                version = max(versions, default=-1) + 1
                try:
                    lock.write_commit(store, log_uri, version, [f'{{"w": "{n}-{i}"}}'])  # type: ignore[attr-defined]
                except FileAlreadyExistsError:
                    continue
                with guard:
                    won.append(version)
                break

    pool = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return won


def test_in_process_lock_serializes_threads_on_one_table() -> None:
    store = ObservingStore()
    log_uri = f"memory://inproc-{uuid.uuid4().hex}/_delta_log"
    won = run_writers(InProcessCommitLock(), store, log_uri)
    assert sorted(won) == list(range(40))
    assert store.max_inside == 1


def test_without_the_lock_threads_do_overlap() -> None:
    # The control: the same workload with no lock has writers inside write() at once,
    # so the assertion above really measures the lock.
    store = ObservingStore()
    log_uri = f"memory://nolock-{uuid.uuid4().hex}/_delta_log"
    won = run_writers(NoCommitLock(), store, log_uri)
    assert sorted(won) == list(range(40))
    assert store.max_inside > 1


def test_tables_do_not_share_a_lock() -> None:
    store = ObservingStore()
    lock = InProcessCommitLock()
    first = f"memory://a-{uuid.uuid4().hex}/_delta_log"
    second = f"memory://b-{uuid.uuid4().hex}/_delta_log"
    held = path_lock(store.resolve_path(first))
    with held.lock:
        # Another table commits while the first table's lock is held (a shared lock
        # would block it forever; the deadline only bounds that failure).
        other = threading.Thread(target=lock.write_commit, args=(store, second, 0, ['{"x": 1}']))
        other.start()
        other.join(60)
        assert not other.is_alive()
        assert list(store.read(commit_uri(second, 0))) == ['{"x": 1}']
        blocked = threading.Thread(target=lock.write_commit, args=(store, first, 0, ['{"x": 2}']))
        blocked.start()
        blocked.join(0.2)
        assert blocked.is_alive()  # waits for the first table's lock
    blocked.join()
    assert list(store.read(commit_uri(first, 0))) == ['{"x": 2}']


def test_in_process_lock_still_reports_a_taken_version() -> None:
    store = MemoryLogStore()
    log_uri = f"memory://taken-{uuid.uuid4().hex}/_delta_log"
    lock = InProcessCommitLock()
    lock.write_commit(store, log_uri, 0, ["a"])
    try:
        lock.write_commit(store, log_uri, 0, ["b"])
    except FileAlreadyExistsError as exc:
        assert exc.path.endswith("00000000000000000000.json")
    else:
        raise AssertionError("a taken version must raise FileAlreadyExistsError")
    assert list(store.read(commit_uri(log_uri, 0))) == ["a"]


def test_registry_is_weak() -> None:
    key = f"memory://weak-{uuid.uuid4().hex}/_delta_log"
    held = path_lock(key)
    assert path_lock(key + "/") is held
    del held
    gc.collect()
    assert key not in _REGISTRY
