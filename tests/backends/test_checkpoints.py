"""Checkpoints on every store: written with no operation the store lacks, retried after a
failure, and reported while they are behind."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow.fs as pafs
import pytest

from deltalog.logstores.base import LogStore
from deltalog.logstores.memory import MemoryLogStore, whole_file_memory_fs
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from tests.backends.conftest import Backend
from tests.conformance.fault_stores import NoRenameObjectStore

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)


def create(log: DeltaLog, interval: int, **config: str) -> None:
    txn = log.start_transaction()
    configuration = {"delta.checkpointInterval": str(interval), **config}
    txn.update_metadata(
        Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",), configuration=configuration)
    )
    txn.commit([], CreateTable(partition_by=["p"]))


def append(log: DeltaLog, name: str) -> int:
    txn = log.start_transaction()
    version: int = txn.commit([AddFile(f"p=a/{name}.parquet", {"p": "a"}, 1, 1)], Write())
    return version


def checkpoint_files(store: LogStore, table: str) -> list[str]:
    return [s.name for s in store.list_from(f"{table}/_delta_log/0") if ".checkpoint." in s.name]


def test_a_checkpoint_built_from_a_previous_checkpoint_needs_no_rename(caplog: pytest.LogCaptureFixture) -> None:
    """On Azure Blob without hierarchical namespace the data filesystem has no Move():
    the checkpoint of version 6, streamed from checkpoint 3, must still be written."""
    store = NoRenameObjectStore()
    table = f"memory://no-rename-{uuid.uuid4().hex[:12]}/t"
    create(DeltaLog.for_table(table, logstore=store), interval=3)
    for i in range(1, 7):
        # a fresh log each time: the snapshot streams its files from the newest checkpoint
        assert append(DeltaLog.for_table(table, logstore=store), f"f{i}") == i
    assert checkpoint_files(store, table) == [
        "00000000000000000003.checkpoint.parquet",
        "00000000000000000006.checkpoint.parquet",
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    prefix = table[len("memory:/") :]
    assert not [k for k in whole_file_memory_fs().store if k.startswith(prefix) and k.endswith(".tmp")]
    fresh = DeltaLog.for_table(table, logstore=store).update()
    assert fresh.checkpoint_version == 6 and fresh.num_files == 6


class _FailingCheckpointsStore(MemoryLogStore):
    """Refuses to open checkpoint files for writing while ``broken``."""

    broken = True

    def filesystem(self) -> pafs.FileSystem:
        owner = self

        class Handler(pafs.FSSpecHandler):
            def open_output_stream(self, path: str, metadata: Any) -> Any:
                if owner.broken and ".checkpoint." in path:
                    raise PermissionError(f"403 Forbidden: writing {path}")
                return super().open_output_stream(path, metadata)

        return pafs.PyFileSystem(Handler(whole_file_memory_fs()))


def _behind_warnings(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.levelno == logging.WARNING and "behind" in r.getMessage()]


def test_a_failed_checkpoint_warns_each_commit_and_the_next_commit_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = _FailingCheckpointsStore()
    table = f"memory://failing-{uuid.uuid4().hex[:12]}/t"
    log = DeltaLog.for_table(table, logstore=store)
    create(log, interval=3)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        for i in (1, 2):
            append(log, f"f{i}")
        assert _behind_warnings(caplog.records) == []
        assert append(log, "f3") == 3  # the checkpoint fails; the commit stands
        assert checkpoint_files(store, table) == []
        first = _behind_warnings(caplog.records)
        assert len(first) == 1 and "3 commits behind" in first[0] and "403 Forbidden" in caplog.text
        caplog.clear()
        assert append(log, "f4") == 4  # not a multiple of 3: retried all the same, fails again
        again = _behind_warnings(caplog.records)
        assert len(again) == 1 and "4 commits behind" in again[0]
        store.broken = False
        caplog.clear()
        assert append(log, "f5") == 5  # retried, and it works
        assert checkpoint_files(store, table) == ["00000000000000000005.checkpoint.parquet"]
        assert _behind_warnings(caplog.records) == []
        append(log, "f6")  # a multiple of the interval, as in Delta
        append(log, "f7")  # 1 behind: nothing to do
        assert checkpoint_files(store, table) == [
            "00000000000000000005.checkpoint.parquet",
            "00000000000000000006.checkpoint.parquet",
        ]
        assert _behind_warnings(caplog.records) == []


def _names(listing: Iterator[Any]) -> list[str]:
    return [s.name for s in listing]


def test_checkpoints_appear_every_interval_on_every_emulator(backend: Backend) -> None:
    """2 * interval + 1 commits: checkpoints at interval and 2 * interval (the second built
    from the first by a fresh log), each named by _last_checkpoint in turn; classic,
    multi-part and V2 with sidecars all work on the emulator's data filesystem."""
    interval = 3
    store = backend.store()
    table = f"{backend.root}/every-interval"
    create(DeltaLog.for_table(table, logstore=store), interval=interval)
    for i in range(1, 2 * interval + 2):
        assert append(DeltaLog.for_table(table, logstore=store), f"f{i}") == i
    assert checkpoint_files(store, table) == [
        f"{interval:020d}.checkpoint.parquet",
        f"{2 * interval:020d}.checkpoint.parquet",
    ]
    hint = json.loads(next(iter(store.read(f"{table}/_delta_log/_last_checkpoint"))))
    assert hint["version"] == 2 * interval
    fresh = DeltaLog.for_table(table, logstore=store).update()
    assert fresh.version == 2 * interval + 1 and fresh.checkpoint_version == 2 * interval
    assert fresh.num_files == 2 * interval + 1
    # multi-part, from the checkpoint at 6
    result = DeltaLog.for_table(table, logstore=store).checkpoint(part_size=3)
    assert len(result.paths) == 3
    assert fresh.num_files == DeltaLog.for_table(table, logstore=store).update().num_files
    # V2 with sidecars, built from the multi-part checkpoint
    v2 = f"{backend.root}/v2"
    create(
        DeltaLog.for_table(v2, logstore=store),
        interval=2,
        **{"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"},
    )
    for i in range(1, 5):
        append(DeltaLog.for_table(v2, logstore=store), f"g{i}")
    names = checkpoint_files(store, v2)
    assert [n[:32] for n in names] == [f"{2:020d}.checkpoint.", f"{4:020d}.checkpoint."], names
    sidecars = _names(store.list_from(f"{v2}/_delta_log/_sidecars/"))
    assert len(sidecars) == 2, sidecars
    assert DeltaLog.for_table(v2, logstore=store).update().num_files == 4
    assert not [n for n in _names(store.list_from(f"{table}/_delta_log/")) if n.endswith(".tmp")]


def test_describe_prints_how_far_checkpoints_are_behind(tmp_path: Any) -> None:
    from tests.conformance.helpers import deltalog
    from tests.log.helpers import add, commit
    from tests.log.helpers import create as create_raw

    table = str(tmp_path / "t")
    create_raw(table, {"delta.checkpointInterval": "3"}, files=["a"])
    text = deltalog("describe", table)
    assert "checkpoint:   no checkpoint yet, 0 commits behind" in text.stdout, text.stdout + text.stderr
    commit(table, 1, [add("b")])
    DeltaLog.for_table(table).checkpoint()
    for version in range(2, 6):  # written raw: no post-commit checkpoint
        commit(table, version, [add(f"f{version}")])
    text = deltalog("describe", table)
    assert text.returncode == 0, text.stderr
    assert "checkpoint:   last checkpoint at 1, 4 commits behind" in text.stdout
    assert "overdue" in text.stdout
    info = json.loads(deltalog("describe", table, "--json").stdout)
    assert info["checkpoint"] == {"version": 1, "commits_behind": 4}
    assert info["checkpoint_version"] == 1


def test_a_checkpoint_another_writer_made_counts(caplog: pytest.LogCaptureFixture) -> None:
    """Writer A's snapshot advances commit by commit and never saw B's checkpoint: A must
    neither warn nor write a checkpoint of its own (it reads _last_checkpoint once)."""
    store = MemoryLogStore()
    table = f"memory://other-writer-{uuid.uuid4().hex[:12]}/t"
    a = DeltaLog.for_table(table, logstore=store)
    create(a, interval=3)
    append(a, "a1")
    append(a, "a2")
    b = DeltaLog.for_table(table, logstore=store)
    assert append(b, "b3") == 3  # B checkpoints version 3
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        assert append(a, "a4") == 4  # A: 4 commits past its last known checkpoint (none)
        assert append(a, "a5") == 5
    assert checkpoint_files(store, table) == ["00000000000000000003.checkpoint.parquet"]
    assert _behind_warnings(caplog.records) == []
    assert a.update().checkpoint_version == 3
