"""Concurrent feature enablement through the engine (Delta's
``attemptToResolveMetadataConflicts``), interleaved deterministically: a transaction reads,
another enables a feature and commits, then the first commits."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace

import pytest

from deltalog.txn.commit.commit_errors import MetadataChangedError, ProtocolChangedError
from deltalog.txn.commit.operations import CreateTable, ManualUpdate, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile, action_to_line

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "n", "type": "long", "nullable": True, "metadata": {}}]})


def new_table(**config: str) -> DeltaLog:
    log = DeltaLog.for_table(f"memory://mc-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=SCHEMA, configuration=dict(config)))
    txn.commit([], CreateTable())
    return log


def add(name: str, rows: int = 2) -> AddFile:
    return AddFile(name, {}, 10, 1, stats=json.dumps({"numRecords": rows}))


def set_properties(log: DeltaLog, **props: str) -> int:
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={**txn.metadata.configuration, **props}))
    return txn.commit([], ManualUpdate())


def commit_info(log: DeltaLog, version: int) -> dict[str, object]:
    info: dict[str, object] = json.loads(next(iter(log.store.read(log.commit_uri(version)))))["commitInfo"]
    return info


@pytest.mark.parametrize(
    "props",
    [
        {"delta.enableDeletionVectors": "true"},
        {"delta.checkpointPolicy": "v2"},
        {"delta.enableInCommitTimestamps": "true"},
        {"delta.enableRowTracking": "true"},
    ],
)
def test_a_concurrent_feature_enablement_does_not_fail_a_writer(props: dict[str, str]) -> None:
    log = new_table()
    log.start_transaction().commit([add("a")], Write())
    txn = log.start_transaction()
    txn.filter_files()  # a read-dependent writer, not a blind append
    won = set_properties(log, **props)
    v = txn.commit([add("b")], Write())
    assert v == won + 1
    snap = log.update()
    assert all(snap.metadata.configuration[k] == val for k, val in props.items())
    info = commit_info(log, v)
    if "delta.enableInCommitTimestamps" in props:
        # the retry commits on a table with in-commit timestamps: it must carry one
        assert isinstance(info.get("inCommitTimestamp"), int)
        assert snap.timestamp == info["inCommitTimestamp"]
    if "delta.enableRowTracking" in props:
        (b,) = [f for f in snap.files if f.path == "b"]
        assert b.base_row_id is not None and b.default_row_commit_version == v
        tags = info["tags"]
        assert isinstance(tags, dict) and tags["delta.rowTracking.preserved"] == "false"


def test_disabling_or_other_property_changes_still_conflict() -> None:
    log = new_table(**{"delta.enableDeletionVectors": "true"})
    txn = log.start_transaction()
    txn.filter_files()
    set_properties(log, **{"delta.enableDeletionVectors": "false"})
    with pytest.raises(MetadataChangedError):
        txn.commit([add("b")], Write())
    txn = log.start_transaction()
    set_properties(log, **{"delta.logRetentionDuration": "interval 2 days"})
    with pytest.raises(MetadataChangedError):
        txn.commit([add("c")], Write())


def test_both_changing_metadata_conflicts() -> None:
    log = new_table()
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={"delta.appendOnly": "true"}))
    set_properties(log, **{"delta.enableDeletionVectors": "true"})
    with pytest.raises(MetadataChangedError):
        txn.commit([], ManualUpdate())


def test_a_winner_dropping_a_feature_fails_concurrent_transactions() -> None:
    log = new_table(**{"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"})
    read = log.update()
    assert "deletionVectors" in (read.protocol.writer_features or ())
    txn = log.start_transaction()
    # another engine's DROP FEATURE deletionVectors: the protocol without it
    dropped = Protocol(
        read.protocol.min_reader_version,
        7,
        tuple(f for f in read.protocol.reader_features or () if f != "deletionVectors"),
        tuple(f for f in read.protocol.writer_features or () if f != "deletionVectors"),
    )
    lines = [action_to_line(CommitInfo(timestamp=1, operation="DROP FEATURE")), action_to_line(dropped)]
    log.store.write(log.commit_uri(read.version + 1), lines)
    with pytest.raises(ProtocolChangedError, match="dropped the table feature"):
        txn.commit([add("b")], Write())


def test_a_delete_racing_row_tracking_enablement_carries_the_backfilled_row_ids() -> None:
    log = new_table()
    log.start_transaction().commit([add("a", 3), add("b", 2)], Write())
    txn = log.start_transaction()
    (a,) = [f for f in txn.filter_files() if f.path == "a"]
    won = set_properties(log, **{"delta.enableRowTracking": "true"})  # re-adds a and b with row ids
    backfilled = {f.path: f for f in log.update().files}
    v = txn.commit([a.remove(1)], Write(mode="Overwrite"))
    assert v == won + 1
    (removed,) = [x for x in log.read_commit(v) if not isinstance(x, CommitInfo)]
    assert isinstance(removed, RemoveFile) and removed.base_row_id is not None
    assert (removed.base_row_id, removed.default_row_commit_version) == (
        backfilled["a"].base_row_id,
        backfilled["a"].default_row_commit_version,
    )
    assert [f.path for f in log.update().files] == ["b"]


def test_a_retried_type_change_records_the_version_it_lands_at() -> None:
    """On a ``typeWidening-preview`` table each type change records its ``tableVersion``:
    a commit retried after a concurrent append records the version it committed, as
    Delta's ``updateTypeWideningMetadata`` moves it on each winner (it kept the first
    attempt's version)."""
    from deltalog.txn.protocol.type_widening import all_type_changes, preview_table_version, record_type_changes

    int_schema = {"type": "struct", "fields": [{"name": "n", "type": "integer", "nullable": True, "metadata": {}}]}
    log = DeltaLog.for_table(f"memory://mc-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    preview = ["typeWidening-preview"]
    txn.upgrade_protocol(Protocol(3, 7, reader_features=preview, writer_features=preview))
    metadata = Metadata(schema_string=json.dumps(int_schema), configuration={"delta.enableTypeWidening": "true"})
    txn.update_metadata(metadata)
    txn.commit([], CreateTable())
    widen = log.start_transaction()
    version = preview_table_version(widen.snapshot.protocol, widen.read_version + 1)
    assert version == 1
    long_schema = {"type": "struct", "fields": [{**int_schema["fields"][0], "type": "long"}]}
    widen.update_metadata(
        replace(metadata, schema_string=json.dumps(record_type_changes(long_schema, int_schema, version)))
    )
    log.start_transaction().commit([add("a")], Write(mode="Append"))  # version 1
    assert widen.commit([add("b")], Write(mode="Append")) == 2
    changes = all_type_changes(json.loads(log.update().metadata.schema_string))
    assert changes == [("n", {"fromType": "integer", "toType": "long", "tableVersion": 2})]


def test_a_winner_setting_an_allow_listed_property_to_a_value_it_cannot_parse_is_a_metadata_conflict() -> None:
    """Delta's ``checkConfigurationChangesForConflicts`` (FeatureEnablementConcurrencySuite
    test 6): an allow-listed key whose value its validator refuses (another engine's
    ``delta.checkpointPolicy=unknown-policy``) leaves the conflict unresolved:
    ``MetadataChangedError``, not an error parsing the value."""
    log = new_table(**{"delta.feature.v2Checkpoint": "supported"})
    read = log.update()
    txn = log.start_transaction()
    txn.filter_files()
    bad = replace(
        read.metadata, configuration={**read.metadata.configuration, "delta.checkpointPolicy": "unknown-policy"}
    )
    lines = [action_to_line(CommitInfo(timestamp=1, operation="SET TBLPROPERTIES")), action_to_line(bad)]
    log.store.write(log.commit_uri(read.version + 1), lines)
    with pytest.raises(MetadataChangedError):
        txn.commit([add("b")], Write())
