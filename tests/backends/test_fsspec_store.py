"""The generic fsspec store: declared and inferred semantics, exclusive create."""

from __future__ import annotations

import multiprocessing
import os
import threading
import uuid

import pyarrow.fs as pafs
import pytest

from deltalog.logstores.base import MutualExclusion
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError
from deltalog.logstores.fsspec_store import FsspecLogStore
from deltalog.logstores.registry import logstore_for


@pytest.fixture(params=["file", "memory"])
def root(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "file":
        return f"fsspec+file://{tmp_path}/table"
    return f"fsspec+memory://deltalog-{uuid.uuid4().hex}/table"


def test_contract_basics(root: str) -> None:
    store = logstore_for(root)
    assert isinstance(store, FsspecLogStore)
    log = f"{root}/_delta_log"
    for v in range(3):
        store.write(f"{log}/{v:020d}.json", [f"v{v}", "ü"])
    with pytest.raises(FileAlreadyExistsError):
        store.write(f"{log}/{1:020d}.json", ["again"])
    assert list(store.read(f"{log}/{1:020d}.json")) == ["v1", "ü"]
    store.write(f"{log}/sub/x.json", ["nested"])
    listed = list(store.list_from(f"{log}/{1:020d}.json"))
    assert [s.path for s in listed] == [f"{log}/{1:020d}.json", f"{log}/{2:020d}.json"]
    assert all(s.size == 6 and s.modification_time > 0 for s in listed)
    assert list(store.list_from(f"{root}/missing/{0:020d}.json")) == []
    with pytest.raises(FileNotFoundError):
        store.read_bytes(f"{log}/{9:020d}.json")
    store.write(f"{log}/{1:020d}.json", ["replaced"], overwrite=True)
    assert list(store.read(f"{log}/{1:020d}.json")) == ["replaced"]
    store.delete(f"{log}/{1:020d}.json")
    store.delete(f"{log}/{1:020d}.json")
    assert store.resolve_path(root + "/") == root


def test_data_filesystem_is_the_same_fsspec_filesystem(root: str) -> None:
    store = logstore_for(root)
    store.write(f"{root}/_delta_log/{0:020d}.json", ["x"])
    fs = store.filesystem()
    assert isinstance(fs, pafs.PyFileSystem)
    with fs.open_output_stream(store.fs_path(f"{root}/part-0.parquet")) as out:
        out.write(b"data")
    assert store.read_bytes(f"{root}/part-0.parquet") == b"data"


def test_inferred_semantics() -> None:
    store = FsspecLogStore()
    file_sem = store.semantics_for("file")
    assert file_sem.mutual_exclusion is MutualExclusion.CONDITIONAL_WRITE and file_sem.partial_write_visible
    mem_sem = store.semantics_for("memory")
    assert mem_sem.mutual_exclusion is MutualExclusion.CONDITIONAL_WRITE and not mem_sem.partial_write_visible
    other = store.semantics_for("ftp")
    assert other.mutual_exclusion is MutualExclusion.NONE and other.partial_write_visible


def test_declared_semantics_win(tmp_path) -> None:
    store = FsspecLogStore({"FSSPEC_MUTUAL_EXCLUSION": "none", "FSSPEC_PARTIAL_WRITE_VISIBLE": "false"})
    root = f"fsspec+file://{tmp_path}"
    store.write(f"{root}/a.json", ["a"])
    assert store.semantics.mutual_exclusion is MutualExclusion.NONE
    assert store.is_partial_write_visible(f"{root}/a.json") is False
    with pytest.raises(FileAlreadyExistsError):  # the check is there, just not atomic
        store.write(f"{root}/a.json", ["b"])
    with pytest.raises(LogStoreConfigError):
        FsspecLogStore({"FSSPEC_MUTUAL_EXCLUSION": "hopefully"})
    with pytest.raises(LogStoreConfigError):
        FsspecLogStore({"FSSPEC_STORAGE_OPTIONS": "[1, 2]"})


def test_atomic_rename_publishes_through_a_temp_file(tmp_path) -> None:
    store = FsspecLogStore({"FSSPEC_MUTUAL_EXCLUSION": "atomic_rename"})
    root = f"fsspec+file://{tmp_path}"
    store.write(f"{root}/a.json", ["a"])
    with pytest.raises(FileAlreadyExistsError):
        store.write(f"{root}/a.json", ["b"])
    assert list(store.read(f"{root}/a.json")) == ["a"]
    assert sorted(os.listdir(tmp_path)) == ["a.json"]  # no temp file left


def test_plain_uri_with_explicit_choice(tmp_path) -> None:
    store = logstore_for(str(tmp_path), logstore="fsspec")
    store.write(f"{tmp_path}/x.json", ["x"])
    assert [s.path for s in store.list_from(f"{tmp_path}/")] == [f"{tmp_path}/x.json"]
    uri = "memory://m-" + uuid.uuid4().hex + "/t"
    mem = logstore_for(uri, logstore="fsspec")
    # Until the store has seen a URI (or FSSPEC_PROTOCOL), it cannot know the protocol
    # and declares the safe NONE.
    assert mem.semantics.mutual_exclusion is MutualExclusion.NONE
    mem.resolve_path(uri)
    assert mem.semantics.mutual_exclusion is MutualExclusion.CONDITIONAL_WRITE
    assert FsspecLogStore({"FSSPEC_PROTOCOL": "file"}).semantics.partial_write_visible


def test_memory_exclusive_create_under_threads() -> None:
    store = FsspecLogStore()
    root = f"fsspec+memory://race-{uuid.uuid4().hex}"
    for version in range(20):
        path = f"{root}/{version:020d}.json"
        wins: list[int] = []
        barrier = threading.Barrier(8)

        def go(i: int, path: str = path, wins: list[int] = wins, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                store.write(path, [str(i)])
                wins.append(i)
            except FileAlreadyExistsError:
                pass

        threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1
        assert list(store.read(path)) == [str(wins[0])]


def _race(root: str, worker: int, versions: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    store = FsspecLogStore()
    won = []
    for version in range(versions):
        try:
            store.write(f"{root}/{version:020d}.json", [f"worker {worker}"])
            won.append(version)
        except FileAlreadyExistsError:
            pass
    queue.put((worker, won))


def test_local_exclusive_create_across_processes(tmp_path) -> None:
    root = f"fsspec+file://{tmp_path}"
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(root, w, 30, queue)) for w in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    won = sorted(v for _, versions in results for v in versions)
    assert won == list(range(30))  # every version exactly once
    store = FsspecLogStore()
    for worker, versions in results:
        for v in versions:
            assert list(store.read(f"{root}/{v:020d}.json")) == [f"worker {worker}"]
