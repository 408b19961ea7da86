"""Version checksum files (``N.crc``): reading, writing, and validating a loaded snapshot."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from deltalog.logstores.errors import TransientStorageError
from deltalog.logstores.local import LocalLogStore
from deltalog.txn.commit.operations import SetTableProperties, UnsetTableProperties, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log import checksum as checksum_module
from deltalog.txn.log.checksum import (
    VersionChecksum,
    checksum_for_commit,
    read_checksum,
    record_commit_checksum,
    write_checksum,
)
from deltalog.txn.protocol.actions import DomainMetadata, Protocol, SetTransaction
from deltalog.txn.protocol.errors import ChecksumMismatchError
from tests.log.helpers import add, commit, create, metadata, remove


def _crc(table: str, version: int) -> Path:
    return Path(table) / "_delta_log" / f"{version:020d}.crc"


def _table(tmp_path: Path) -> str:
    table = str(tmp_path / "t")
    create(table, files=["a", "b"])
    commit(table, 1, [add("c", size=5), remove("a", size=10), DomainMetadata("app.x", '{"k":1}')])
    return table


def _good_checksum(table: str) -> VersionChecksum:
    snap = DeltaLog.for_table(table).update()
    return checksum_for_commit(snap, [], None, txn_id="t1")


def test_checksum_json_has_the_protocol_fields_and_round_trips(tmp_path: Path) -> None:
    table = _table(tmp_path)
    crc = _good_checksum(table)
    assert (crc.num_files, crc.table_size_bytes) == (2, 15)
    d = crc.to_dict()
    assert {"tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol", "txnId"} <= set(d)
    assert d["domainMetadata"] == [{"domain": "app.x", "configuration": '{"k":1}', "removed": False}]
    assert "inCommitTimestampOpt" not in d
    assert VersionChecksum.from_dict(json.loads(crc.to_json())) == crc


def test_a_matching_crc_validates_and_seeds_the_snapshot(tmp_path: Path) -> None:
    table = _table(tmp_path)
    store = LocalLogStore()
    assert write_checksum(store, f"{table}/_delta_log", 1, _good_checksum(table))
    snap = DeltaLog.for_table(table).update()
    assert snap.checksum is not None and snap.checksum_from_log
    assert snap.num_files == 2  # file counts validated on load of the files


def test_never_overwritten(tmp_path: Path) -> None:
    table = _table(tmp_path)
    store = LocalLogStore()
    crc = _good_checksum(table)
    assert write_checksum(store, f"{table}/_delta_log", 1, crc)
    assert not write_checksum(store, f"{table}/_delta_log", 1, replace(crc, num_files=99))
    assert read_checksum(store, f"{table}/_delta_log", 1) == crc


def test_a_file_count_mismatch_fails_when_files_load(tmp_path: Path) -> None:
    table = _table(tmp_path)
    write_checksum(LocalLogStore(), f"{table}/_delta_log", 1, replace(_good_checksum(table), num_files=3))
    snap = DeltaLog.for_table(table).update()  # metadata and protocol agree
    with pytest.raises(ChecksumMismatchError, match="numFiles: expected 3, computed 2") as info:
        snap.files  # noqa: B018
    assert info.value.version == 1 and set(info.value.mismatches) == {"numFiles"}


def test_a_metadata_or_domain_mismatch_fails_the_load(tmp_path: Path) -> None:
    table = _table(tmp_path)
    good = _good_checksum(table)
    write_checksum(LocalLogStore(), f"{table}/_delta_log", 1, replace(good, metadata=metadata({"x": "1"})))
    with pytest.raises(ChecksumMismatchError, match="metadata"):
        DeltaLog.for_table(table).update()
    _crc(table, 1).unlink()
    write_checksum(LocalLogStore(), f"{table}/_delta_log", 1, replace(good, domain_metadata=()))
    with pytest.raises(ChecksumMismatchError, match="domainMetadata"):
        DeltaLog.for_table(table).update()


@pytest.mark.parametrize(
    "content",
    [
        "",
        "not json",
        '{"numFiles": 1}',  # no tableSizeBytes
        '{"tableSizeBytes": 1e400, "numFiles": 2}',  # a number no integer holds
        "[" * 100_000 + "]" * 100_000,  # nested deeper than a JSON parser recurses
        '{"tableSizeBytes": 15, "numFiles": 2, "setTransactions": [{"appId": "a"}]}',
    ],
)
def test_an_empty_or_unreadable_crc_is_ignored(tmp_path: Path, content: str) -> None:
    """As Delta's ``readChecksum``, which takes any failure to read or parse the file for no
    checksum (``delta.checksum.error.parsing``)."""
    table = _table(tmp_path)
    _crc(table, 1).write_text(content)
    snap = DeltaLog.for_table(table).update()
    assert snap.checksum is None and snap.num_files == 2


def test_a_crc_the_store_fails_to_read_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(tmp_path)
    write_checksum(LocalLogStore(), f"{table}/_delta_log", 1, _good_checksum(table))
    read = LocalLogStore.read

    def failing(self: LocalLogStore, path: str) -> Iterator[str]:
        if path.endswith(".crc"):
            raise TransientStorageError("throttled, retries exhausted")
        return read(self, path)

    monkeypatch.setattr(LocalLogStore, "read", failing)
    snap = DeltaLog.for_table(table).update()
    assert snap.checksum is None and snap.num_files == 2


def test_counts_are_derived_incrementally_or_computed(tmp_path: Path) -> None:
    table = _table(tmp_path)
    log = DeltaLog.for_table(table)
    before = log.update()
    before.checksum = replace(_good_checksum(table), num_files=100, table_size_bytes=1000)  # a seed to derive from
    actions = [add("d", size=7), remove("b", size=10)]
    commit(table, 2, actions)
    after = log.update()
    derived = record_commit_checksum(log.store, log.log_uri, after, actions, before)
    assert derived is not None and (derived.num_files, derived.table_size_bytes) == (100, 997)
    # a dataChange=false re-add of a path the commit does not remove: computed from the files
    readd = [replace(add("c", size=5), data_change=False)]
    assert checksum_for_commit(after, readd, derived).num_files == after.num_files


def test_a_failed_write_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    table = _table(tmp_path)

    class Broken(LocalLogStore):
        def write(self, path: str, lines: object, overwrite: bool = False) -> None:
            raise OSError("disk full")

    assert not write_checksum(Broken(), f"{table}/_delta_log", 1, _good_checksum(table))
    assert "failed to write the checksum" in caplog.text


def test_an_old_delta_checksum_without_metadata_still_checks_the_counts(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _crc(table, 1).write_text('{"tableSizeBytes":15,"numFiles":2,"numMetadata":1,"numProtocol":1,"numTransactions":0}')
    snap = DeltaLog.for_table(table).update()
    assert snap.checksum is not None and snap.num_files == 2
    _crc(table, 1).write_text('{"tableSizeBytes":16,"numFiles":2,"numMetadata":1,"numProtocol":1}')
    with pytest.raises(ChecksumMismatchError, match="tableSizeBytes"):
        DeltaLog.for_table(table).update().files  # noqa: B018


def test_protocol_feature_order_does_not_matter(tmp_path: Path) -> None:
    from deltalog.txn.protocol.actions import Protocol

    table = str(tmp_path / "t")
    commit(table, 0, [Protocol(1, 7, None, ("appendOnly", "invariants")), metadata()])
    snap = DeltaLog.for_table(table).update()
    crc = replace(checksum_for_commit(snap, [], None), protocol=Protocol(1, 7, None, ("invariants", "appendOnly")))
    write_checksum(LocalLogStore(), f"{table}/_delta_log", 0, crc)
    assert DeltaLog.for_table(table).update().checksum_from_log


def _table_with_checkpoint_and_no_crc(tmp_path: Path) -> str:
    """A table whose files are read from a checkpoint and that has no ``.crc`` at all (as
    tables written by delta-rs or by deltalog before checksums)."""
    table = _table(tmp_path)
    DeltaLog.for_table(table).checkpoint()
    for crc in (Path(table) / "_delta_log").glob("*.crc"):
        crc.unlink()
    return table


def test_a_commit_never_loads_the_files_to_write_its_checksum(tmp_path: Path) -> None:
    """Without a previous checksum to derive from, a commit whose snapshot's files are not
    in memory writes no ``.crc`` rather than reading the whole state (a 1M-file table's
    first append in each process would pay a full state load)."""
    table = _table_with_checkpoint_and_no_crc(tmp_path)
    log = DeltaLog.for_table(table)
    before = log.update()
    assert not before.files_loaded and before.checksum is None
    log.start_transaction().commit([add("d", size=7)], Write())
    after = log.snapshot()
    assert after.version == 2 and not before.files_loaded and not after.files_loaded
    assert not _crc(table, 2).exists()


def test_the_checkpoint_restarts_the_checksum_chain(tmp_path: Path) -> None:
    """The checkpoint hook streams every file action anyway: it writes the ``.crc`` the
    commit could not derive, and the commits after it derive theirs from it."""
    table = _table_with_checkpoint_and_no_crc(tmp_path)
    log = DeltaLog.for_table(table)
    txn = log.start_transaction()
    txn.update_metadata(replace(txn.metadata, configuration={"delta.checkpointInterval": "3"}))
    txn.commit([], SetTableProperties({"delta.checkpointInterval": "3"}))
    assert not _crc(table, 2).exists()
    log.start_transaction().commit([add("d", size=7)], Write())  # version 3: a checkpoint is due
    log.start_transaction().commit([add("e", size=9), SetTransaction("app", 1, 1)], Write())
    assert _crc(table, 3).exists() and _crc(table, 4).exists()
    # the checkpoint holds the transactions a fresh reader sees: they start the chain again
    assert _crc_transactions(log, 3) == {} and _crc_transactions(log, 4) == {"app": 1}
    fresh = DeltaLog.for_table(table).update()
    assert fresh.checksum is not None and (fresh.checksum.num_files, fresh.checksum.table_size_bytes) == (
        fresh.num_files,
        fresh.size_in_bytes,
    )


def test_writing_checksums_can_be_turned_off(tmp_path: Path) -> None:
    table = _table(tmp_path)
    log = DeltaLog.for_table(table, {"spark.databricks.delta.writeChecksumFile.enabled": "false"})
    log.start_transaction().commit([add("d", size=7)], Write())
    assert not _crc(table, 2).exists()
    DeltaLog.for_table(table).start_transaction().commit([add("e", size=7)], Write())
    assert _crc(table, 3).exists()


def test_domain_metadata_tracking_in_the_crc_stops_past_the_threshold(tmp_path: Path) -> None:
    """DomainMetadataSuite ``DomainMetadata actions tracking in CRC should stop once threshold
    is crossed``: past ``domainMetadatasInCrc.maxAllowed`` (10) live domains the checksum has
    no ``domainMetadata`` field; the snapshot still has them all and still validates."""
    table = str(tmp_path / "t")
    create(table, files=["a"])
    commit(table, 1, [DomainMetadata(f"app.d{i}", "") for i in range(10)])
    ten = _good_checksum(table)
    assert ten.domain_metadata is not None and len(ten.domain_metadata) == 10
    commit(table, 2, [DomainMetadata("app.d10", "")])
    eleven = _good_checksum(table)
    assert eleven.domain_metadata is None and "domainMetadata" not in eleven.to_dict()
    assert write_checksum(LocalLogStore(), f"{table}/_delta_log", 2, eleven)
    assert len(DeltaLog.for_table(table).update().domain_metadata) == 11


def _engine_table(tmp_path: Path) -> DeltaLog:
    """A table whose every version, 0 included, was committed by the engine (so has its ``.crc``)."""
    log = DeltaLog.for_table(str(tmp_path / "t"))
    txn = log.start_transaction()
    txn.update_metadata(metadata())
    txn.commit([add("a")], Write())
    return log


def _crc_transactions(log: DeltaLog, version: int) -> dict[str, int] | None:
    crc = read_checksum(log.store, log.log_uri, version)
    assert crc is not None
    return None if crc.set_transactions is None else {t.app_id: t.version for t in crc.set_transactions}


def _set_properties(log: DeltaLog, config: dict[str, str]) -> int:
    txn = log.start_transaction()
    txn.update_metadata(replace(txn.metadata, configuration=config))
    return txn.commit([], SetTableProperties(config))


def test_set_transactions_are_tracked_in_the_crc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DeltaIncrementalSetTransactionsSuite: from version 0 on, each commit's checksum holds the
    table's ``setTransactions`` (the newest per app id), as Delta's
    ``setTransactionsInCrc.writeOnCommit``; none past ``setTransactionsInCrc.maxAllowed`` (100).
    A loaded snapshot is checked against them."""
    log = _engine_table(tmp_path)
    table = log.table_uri.removeprefix("file://")
    names = iter(range(10))

    def committed(*txns: SetTransaction) -> dict[str, int] | None:
        return _crc_transactions(log, log.start_transaction().commit([*txns, add(f"f{next(names)}")], Write()))

    assert _crc_transactions(log, 0) == {}
    assert committed(SetTransaction("app-1", 1, 1)) == {"app-1": 1}
    assert committed(SetTransaction("app-1", 3, 2)) == {"app-1": 3}
    assert committed(SetTransaction("app-2", 100, 3)) == {"app-1": 3, "app-2": 100}
    assert committed(SetTransaction("app-1", 100, 4), SetTransaction("app-3", 300, 4)) == {
        "app-1": 100,
        "app-2": 100,
        "app-3": 300,
    }
    assert json.loads(_crc(table, 4).read_text())["setTransactions"][0] == {
        "appId": "app-1",
        "version": 100,
        "lastUpdated": 4,
    }
    crc = read_checksum(log.store, log.log_uri, 4)
    assert crc is not None
    _crc(table, 4).write_text(replace(crc, set_transactions=(SetTransaction("app-1", 99, 4),)).to_json())
    with pytest.raises(ChecksumMismatchError, match="setTransactions"):
        DeltaLog.for_table(table).snapshot(version=4)
    monkeypatch.setattr(checksum_module, "MAX_SET_TRANSACTIONS_IN_CRC", 3)
    assert committed(SetTransaction("app-4", 1, 5)) is None
    monkeypatch.undo()
    assert committed(SetTransaction("app-4", 2, 5)) is None  # no more once a version has none, as Delta


def test_set_transactions_in_the_crc_continue_across_writers(tmp_path: Path) -> None:
    """A writer whose cached snapshot (files loaded) advanced over another writer's commit
    continues the ``setTransactions`` from that commit's ``.crc``."""
    log = _engine_table(tmp_path)
    other = DeltaLog.for_table(log.table_uri)
    assert other.update().num_files == 1  # files in memory
    log.start_transaction().commit([SetTransaction("a", 1, 1), add("b")], Write())
    version = other.start_transaction().commit([SetTransaction("b", 2, 2), add("c")], Write())
    assert _crc_transactions(other, version) == {"a": 1, "b": 2}


def test_set_transaction_tracking_in_the_crc_stops_once_a_retention_is_set(tmp_path: Path) -> None:
    """DeltaIncrementalSetTransactionsSuite ``...should stop once setTxn retention conf is set``: the
    expired transactions depend on the reader's clock, and a checkpoint leaves them out, so even
    after the retention is unset a writer's cached state may hold one a fresh reader no longer
    sees: the checksums have no ``setTransactions`` from then on (Delta's incremental rule)."""
    log = _engine_table(tmp_path)
    log.start_transaction().commit([SetTransaction("old", 1, 1), add("b")], Write())
    assert _crc_transactions(log, _set_properties(log, {"randomProp": "1"})) == {"old": 1}
    retention = {"delta.setTransactionRetentionDuration": "interval 1 days"}
    assert _crc_transactions(log, _set_properties(log, retention)) is None
    log.checkpoint()  # without the expired "old"
    unset = log.start_transaction()
    unset.update_metadata(replace(unset.metadata, configuration={}))
    version = unset.commit([], UnsetTableProperties(["delta.setTransactionRetentionDuration"]))
    assert _crc_transactions(log, version) is None
    fresh = DeltaLog.for_table(log.table_uri).update()
    assert fresh.version == version and fresh.set_transactions == {}


@pytest.mark.parametrize("policy", ["classic", "v2"])
def test_a_checkpoint_checks_the_counts_against_the_crc(tmp_path: Path, policy: str) -> None:
    """ChecksumSuite ``Checksum validation should happen on checkpoint``: a checkpoint streamed
    without loading the files still checks the file count and table size against the
    version's ``.crc``, and publishes nothing when they differ."""
    table = _table(tmp_path)
    if policy == "v2":
        v2 = {"delta.checkpointPolicy": "v2"}
        commit(table, 2, [Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",)), metadata(v2)])
    log = DeltaLog.for_table(table)
    version = log.start_transaction().commit([add("d", size=7)], Write())
    crc = read_checksum(log.store, log.log_uri, version)
    assert crc is not None
    _crc(table, version).write_text(replace(crc, num_files=crc.num_files + 1).to_json())
    with pytest.raises(ChecksumMismatchError, match="numFiles: expected 4, computed 3"):
        DeltaLog.for_table(table).checkpoint()
    names = {p.name for p in (Path(table) / "_delta_log").iterdir()}
    assert not any("checkpoint" in name for name in names) and "_last_checkpoint" not in names
    assert not list((Path(table) / "_delta_log" / "_sidecars").glob("*.parquet"))
