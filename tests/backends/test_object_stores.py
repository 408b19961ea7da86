"""The S3, Azure Blob and GCS stores against their real servers: the LogStore contract."""

from __future__ import annotations

import threading

import pyarrow.fs as pafs
import pytest

from deltalog.logstores.base import MutualExclusion
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreError
from tests.backends.conftest import Backend

V0 = "00000000000000000000.json"
V1 = "00000000000000000001.json"


def test_write_read_round_trip(backend: Backend) -> None:
    store = backend.store()
    path = f"{backend.root}/_delta_log/{V0}"
    lines = ['{"commitInfo":{"a":1}}', "", '{"add":{"path":"p\\u00fc"}}', "ünïcode ☃ line"]
    store.write(path, lines)
    assert list(store.read(path)) == lines
    assert store.read_bytes(path) == "".join(line + "\n" for line in lines).encode()


def test_empty_file(backend: Backend) -> None:
    store = backend.store()
    path = f"{backend.root}/_delta_log/empty.json"
    store.write(path, [])
    assert list(store.read(path)) == []


def test_put_if_absent_and_overwrite(backend: Backend) -> None:
    store = backend.store()
    path = f"{backend.root}/_delta_log/{V0}"
    store.write(path, ["first"])
    with pytest.raises(FileAlreadyExistsError) as info:
        store.write(path, ["second"])
    assert isinstance(info.value, FileExistsError)
    assert info.value.path == path
    assert list(store.read(path)) == ["first"]
    store.write(path, ["third"], overwrite=True)
    assert list(store.read(path)) == ["third"]


def test_missing_file_is_file_not_found(backend: Backend) -> None:
    store = backend.store()
    with pytest.raises(FileNotFoundError):
        list(store.read(f"{backend.root}/_delta_log/{V1}"))


def test_declared_semantics(backend: Backend) -> None:
    sem = backend.store().semantics
    assert sem.mutual_exclusion is MutualExclusion.CONDITIONAL_WRITE
    assert sem.partial_write_visible is False
    assert backend.store().is_partial_write_visible(f"{backend.root}/_delta_log/{V0}") is False


def test_list_from_is_inclusive_sorted_and_flat(backend: Backend) -> None:
    store = backend.store()
    log = f"{backend.root}/_delta_log"
    names = [f"{v:020d}.json" for v in range(12)] + [
        "00000000000000000010.checkpoint.parquet",
        "_last_checkpoint",
    ]
    for name in names:
        store.write(f"{log}/{name}", [name])
    store.write(f"{log}/_commits/00000000000000000005.uuid.json", ["nested"])
    store.write(f"{backend.root}/_delta_log2/{V0}", ["sibling directory"])
    store.write(f"{backend.root}/_delta_logX", ["sibling file"])

    listed = list(store.list_from(f"{log}/00000000000000000005.json"))
    got = [status.name for status in listed]
    expected = sorted(n for n in names if n >= "00000000000000000005.json")
    assert got == expected
    assert all(status.path == f"{log}/{status.name}" for status in listed)
    assert all(status.size == len(status.name) + 1 for status in listed)
    assert all(status.modification_time > 1_600_000_000_000 for status in listed)

    # a prefix that is not a full name, and the whole directory
    assert [s.name for s in store.list_from(f"{log}/00000000000000000010")] == [
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000010.json",
        "00000000000000000011.json",
        "_last_checkpoint",
    ]
    assert [s.name for s in store.list_from(f"{log}/")] == sorted(names)
    assert list(store.list_from(f"{backend.root}/nowhere/{V0}")) == []


def test_special_names(backend: Backend) -> None:
    store = backend.store()
    directory = f"{backend.root}/k=a b+c%20ü/_delta_log"
    names = ["a b.json", "plus+sign.json", "percent%41.json", "ünï.json", "q?x=1&y.json", "colon:x.json"]
    for name in names:
        store.write(f"{directory}/{name}", [name])
    for name in names:
        assert list(store.read(f"{directory}/{name}")) == [name]
    listed = list(store.list_from(f"{directory}/"))
    assert [s.name for s in listed] == sorted(names, key=lambda n: n.encode())
    assert [s.path for s in listed] == [f"{directory}/{s.name}" for s in listed]


def test_resolve_path_and_delete(backend: Backend) -> None:
    store = backend.store()
    assert store.resolve_path(backend.root + "/") == backend.root
    path = f"{backend.root}/_delta_log/{V0}"
    store.write(path, ["x"])
    store.delete(path)
    with pytest.raises(FileNotFoundError):
        store.read_bytes(path)
    store.delete(path)  # a missing file is not an error


def test_data_filesystem_sees_the_same_objects(backend: Backend) -> None:
    store = backend.store()
    log_path = f"{backend.root}/_delta_log/{V0}"
    store.write(log_path, ["hello"])
    fs = store.filesystem()
    info = fs.get_file_info(store.fs_path(log_path))
    assert info.type == pafs.FileType.File and info.size == 6

    data_path = f"{backend.root}/part=1/file.parquet"
    with fs.open_output_stream(store.fs_path(data_path)) as out:
        out.write(b"PAR1-bytes")
    assert store.read_bytes(data_path) == b"PAR1-bytes"


def test_only_one_of_many_concurrent_writers_wins(backend: Backend) -> None:
    # (The moto fixture serializes writes: stock moto's conditional put has no lock.)
    store = backend.store()
    rounds = 5
    for version in range(rounds):
        path = f"{backend.root}/_delta_log/{version:020d}.json"
        wins: list[int] = []
        losses: list[int] = []
        barrier = threading.Barrier(6)

        def attempt(
            i: int,
            path: str = path,
            wins: list[int] = wins,
            losses: list[int] = losses,
            barrier: threading.Barrier = barrier,
        ) -> None:
            barrier.wait()
            try:
                store.write(path, [f"writer {i}"])
                wins.append(i)
            except FileAlreadyExistsError:
                losses.append(i)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(wins) + len(losses) == 6
        assert len(wins) == 1, wins
        assert next(iter(store.read(path))) in {f"writer {i}" for i in wins}


def test_missing_bucket_is_a_clear_error(backend: Backend) -> None:
    store = backend.store()
    root = backend.root.replace(backend.bucket, backend.bucket + "missing")
    with pytest.raises(LogStoreError) as info:
        store.write(f"{root}/_delta_log/{V0}", ["x"])
    assert "does not exist" in str(info.value)
