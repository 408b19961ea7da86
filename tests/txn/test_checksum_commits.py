"""The engine writes ``N.crc`` after every commit, and a failing write never fails it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import replace

import pytest

from deltalog.logstores.memory import MemoryLogStore
from deltalog.txn.commit.operations import CreateTable, ManualUpdate, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.checksum import read_checksum
from deltalog.txn.protocol.actions import AddFile, Metadata

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "n", "type": "long", "nullable": True, "metadata": {}}]})


def add(name: str, size: int) -> AddFile:
    return AddFile(name, {}, size, 1, stats='{"numRecords":1}')


def new_table(**config: str) -> DeltaLog:
    log = DeltaLog.for_table(f"memory://crc-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=SCHEMA, configuration=dict(config)))
    txn.commit([], CreateTable())
    return log


def test_every_commit_writes_its_checksum() -> None:
    log = new_table()
    log.start_transaction().commit([add("a", 10), add("b", 20)], Write())
    txn = log.start_transaction()
    (a,) = [f for f in txn.filter_files() if f.path == "a"]
    v = txn.commit([a.remove(5), add("c", 7)], Write(mode="Overwrite"))
    for version, (files, size) in enumerate([(0, 0), (2, 30), (2, 27)]):
        crc = read_checksum(log.store, log.log_uri, version)
        assert crc is not None, version
        assert (crc.num_files, crc.table_size_bytes, crc.num_metadata, crc.num_protocol) == (files, size, 1, 1)
    crc = read_checksum(log.store, log.log_uri, v)
    assert crc is not None and crc.txn_id == txn.txn_id
    snap = DeltaLog.for_table(log.table_uri, logstore=log.store).update()
    assert crc.metadata == snap.metadata and crc.protocol == snap.protocol and crc.in_commit_timestamp is None
    # a fresh load validates against it, files included
    assert snap.checksum_from_log and snap.num_files == 2


def test_in_commit_timestamps_enabled_by_property_go_into_commits_and_checksums() -> None:
    log = new_table()
    log.start_transaction().commit([add("a", 1)], Write())
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={"delta.enableInCommitTimestamps": "true"}))
    enabled = txn.commit([], ManualUpdate())
    v = log.start_transaction().commit([add("b", 1)], Write())
    snap = log.update()
    assert snap.metadata.configuration["delta.inCommitTimestampEnablementVersion"] == str(enabled)
    assert "inCommitTimestamp" in (snap.protocol.writer_features or ())
    info = json.loads(next(iter(log.store.read(log.commit_uri(v)))))["commitInfo"]
    crc = read_checksum(log.store, log.log_uri, v)
    assert crc is not None and crc.in_commit_timestamp == info["inCommitTimestamp"] == snap.timestamp
    before = read_checksum(log.store, log.log_uri, 1)
    assert before is not None and before.in_commit_timestamp is None


class _NoCrcStore(MemoryLogStore):
    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        if path.endswith(".crc"):
            raise OSError("checksum storage is down")
        super().write(path, lines, overwrite)


def test_a_failed_checksum_write_does_not_fail_the_commit(caplog: pytest.LogCaptureFixture) -> None:
    log = DeltaLog.for_table(f"memory://crc-{uuid.uuid4().hex}", logstore=_NoCrcStore())
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=SCHEMA))
    assert txn.commit([add("a", 3)], CreateTable()) == 0
    assert log.update().num_files == 1
    assert read_checksum(log.store, log.log_uri, 0) is None
    assert "failed to write the checksum" in caplog.text
