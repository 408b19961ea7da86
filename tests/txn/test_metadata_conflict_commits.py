"""Concurrent feature enablement through the engine (Delta's
``attemptToResolveMetadataConflicts``), interleaved deterministically: a transaction reads,
another enables a feature and commits, then the first commits."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import replace

import pytest

from deltalog.txn.commit.commit_errors import ConcurrentAppendError, MetadataChangedError, ProtocolChangedError
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


def test_a_deletion_vector_delete_racing_row_tracking_enablement_keeps_the_backfilled_ids() -> None:
    """FeatureEnablementConcurrencySuite "Enable row tracking feature" with a DELETE through
    deletion vectors: the file it re-adds with its new deletion vector carries the ids the
    enablement gave it, so its rows keep their row ids and none is shared."""
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    log = new_table(**{"delta.enableDeletionVectors": "true"})
    log.start_transaction().commit([add("a", 3), add("b", 2)], Write())
    txn = log.start_transaction()
    (a,) = [f for f in txn.filter_files() if f.path == "a"]
    set_properties(log, **{"delta.enableRowTracking": "true"})
    backfilled = {f.path: (f.base_row_id, f.default_row_commit_version) for f in log.update().files}
    dv = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 1, 1)
    marked = replace(a, deletion_vector=dv, stats=json.dumps({"numRecords": 3, "tightBounds": False}))
    txn.commit([a.remove(1), marked], Write(mode="Overwrite"))
    files = {f.path: (f.base_row_id, f.default_row_commit_version) for f in log.update().files}
    assert files == backfilled and files["a"][0] is not None
    assert sorted(base for base, _ in files.values()) == [0, 3]  # a: ids 0-2, b: ids 3-4


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


# -- Delta's IdentityColumnConflictSuite (checkNoMetadataUpdates / attemptToResolveMetadataConflicts) --

_IDENTITY = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": True}
_IDENTITY_SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": _IDENTITY},
            {"name": "value", "type": "integer", "nullable": True, "metadata": {}},
        ],
    }
)


def _opened(log: DeltaLog, kind: str) -> Callable[[], int]:
    """Open the suite's transaction ``kind`` on ``log`` (it reads now); returns its commit."""
    txn = log.start_transaction()
    assert txn.metadata is not None
    metadata = txn.metadata
    if kind == "generatedId":  # INSERT (value): identity values, an identity-only metadata update
        txn.update_identity_high_water_marks({"id": [1]})
        return lambda: txn.commit([add(f"g-{uuid.uuid4().hex}")], Write())
    if kind == "syncIdentity":  # ALTER COLUMN id SYNC IDENTITY: reads the table, moves the mark
        txn.read_whole_table()
        txn.update_identity_high_water_marks({"id": [5]})
        return lambda: txn.commit([], ManualUpdate())
    if kind == "noMetadataUpdate":  # INSERT with explicit ids: a blind append
        return lambda: txn.commit([add(f"n-{uuid.uuid4().hex}")], Write())
    if kind == "rowTrackingEnablement":  # SET TBLPROPERTIES (delta.enableRowTracking = true)
        config = {**metadata.configuration, "delta.enableRowTracking": "true"}
    else:  # otherMetadataUpdate: ADD COLUMN value2
        schema = json.loads(metadata.schema_string)
        schema["fields"].append({"name": "value2", "type": "string", "nullable": True, "metadata": {}})
        metadata = replace(metadata, schema_string=json.dumps(schema))
        config = dict(metadata.configuration)
    txn.update_metadata(replace(metadata, configuration=config))
    return lambda: txn.commit([], ManualUpdate())


@pytest.mark.parametrize(
    ("current", "winner", "error"),
    [
        ("generatedId", "generatedId", MetadataChangedError),
        ("generatedId", "noMetadataUpdate", None),
        ("generatedId", "rowTrackingEnablement", MetadataChangedError),
        ("syncIdentity", "noMetadataUpdate", ConcurrentAppendError),
        ("syncIdentity", "generatedId", MetadataChangedError),
        ("noMetadataUpdate", "generatedId", None),
        ("noMetadataUpdate", "syncIdentity", None),
        ("noMetadataUpdate", "rowTrackingEnablement", None),
        ("noMetadataUpdate", "otherMetadataUpdate", MetadataChangedError),
        ("rowTrackingEnablement", "noMetadataUpdate", None),
        ("rowTrackingEnablement", "rowTrackingEnablement", MetadataChangedError),
        ("otherMetadataUpdate", "syncIdentity", MetadataChangedError),
    ],
)
def test_identity_high_water_mark_conflicts_as_identity_column_conflict_suite(
    current: str, winner: str, error: type[Exception] | None
) -> None:
    """Representative cells of Delta's IdentityColumnConflictSuite matrix (an empty table with
    an identity column and ``rowTracking`` supported, row tracking off, Serializable): an
    identity-only or row-tracking-enablement metadata update fails only a transaction that
    changes the metadata too; SYNC IDENTITY (a metadata change that read the table) also
    fails on a concurrent append."""
    log = DeltaLog.for_table(f"memory://identity-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    config = {"delta.enableRowTracking": "false", "delta.feature.rowTracking": "supported"}
    txn.update_metadata(Metadata(schema_string=_IDENTITY_SCHEMA, configuration=config))
    txn.commit([], CreateTable())
    commit = _opened(log, current)
    _opened(log, winner)()
    if error is None:
        assert commit() == 2  # after the winner
    else:
        with pytest.raises(error):
            commit()


@pytest.mark.parametrize(
    ("enabled", "disabled", "loser_props", "error"),
    [
        # FeatureEnablementConcurrencySuite "Disable ... feature - withUnset": a DELETE fails
        ({"delta.enableDeletionVectors": "true"}, {"delta.enableDeletionVectors": None}, None, MetadataChangedError),
        ({"delta.checkpointPolicy": "v2"}, {"delta.checkpointPolicy": "classic"}, None, MetadataChangedError),
        ({}, {"delta.enableInCommitTimestamps": "true", "delta.checkpointInterval": "20"}, None, MetadataChangedError),
        # "ICT enablement aborted by concurrent DV enablement": both change the protocol
        ({}, {"delta.enableDeletionVectors": "true"}, {"delta.enableInCommitTimestamps": "true"}, ProtocolChangedError),
        # "metadata-changing loser fails with DELTA_METADATA_CHANGED"
        ({}, {"delta.enableInCommitTimestamps": "true"}, {"delta.checkpointInterval": "20"}, MetadataChangedError),
    ],
)
def test_feature_enablement_conflicts_as_feature_enablement_concurrency_suite(
    enabled: dict[str, str],
    disabled: dict[str, str | None],
    loser_props: dict[str, str] | None,
    error: type[Exception],
) -> None:
    """Cases of Delta's FeatureEnablementConcurrencySuite the enablement allow-list does not
    resolve: a winner disabling or unsetting a feature, or enabling one together with another
    property, fails a DELETE; a loser that changes the protocol or the metadata itself fails."""
    log = new_table(**enabled)
    log.start_transaction().commit([add("a")], Write())
    loser = log.start_transaction()
    if loser_props is None:  # a DELETE
        (a,) = loser.filter_files()
        actions: list[AddFile | RemoveFile] = [a.remove(1)]
    else:  # ALTER TABLE SET TBLPROPERTIES
        assert loser.metadata is not None
        loser.update_metadata(replace(loser.metadata, configuration={**loser.metadata.configuration, **loser_props}))
        actions = []
    winner = log.start_transaction()
    assert winner.metadata is not None
    config = {**winner.metadata.configuration, **disabled}
    winner.update_metadata(replace(winner.metadata, configuration={k: v for k, v in config.items() if v is not None}))
    winner.commit([], ManualUpdate())
    with pytest.raises(error):
        loser.commit(actions, ManualUpdate())


def test_an_identity_only_update_on_a_row_tracking_table_keeps_its_tag_and_fails_no_writer() -> None:
    """IdentityColumnConflictSuite's "noMetadataUpdate vs generatedId" on a table with row
    tracking enabled: the winner's ``commitInfo.tags`` hold both ``delta.identity.schemaUpdate``
    and ``delta.rowTracking.preserved`` (the second must not replace the first), so the
    concurrent append commits."""
    log = DeltaLog.for_table(f"memory://identity-rt-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=_IDENTITY_SCHEMA, configuration={"delta.enableRowTracking": "true"}))
    txn.commit([], CreateTable())
    commit = _opened(log, "noMetadataUpdate")
    won = log.start_transaction()
    won.update_identity_high_water_marks({"id": [1]})
    version = won.commit([add("g")], Write())
    tags = commit_info(log, version)["tags"]
    assert tags == {"delta.identity.schemaUpdate": "true", "delta.rowTracking.preserved": "true"}
    assert commit() == version + 1


def test_enabling_row_tracking_alone_is_tagged_row_tracking_enablement_only() -> None:
    """Delta's ``AlterTableSetPropertiesDeltaCommand`` tags a SET TBLPROPERTIES of
    ``delta.enableRowTracking = true`` alone ``rowTrackingEnablementOnly`` (what Delta's
    ``checkNoMetadataUpdates`` resolves concurrent writers with); not with another property."""
    from deltalog.txn.commands.alter import set_table_properties

    log = new_table()
    version = set_table_properties(log, {"delta.enableRowTracking": "true"})
    assert commit_info(log, version)["tags"] == {
        "rowTrackingEnablementOnly": "true",
        "delta.rowTracking.preserved": "true",
    }
    log = new_table()
    version = set_table_properties(log, {"delta.enableRowTracking": "true", "delta.appendOnly": "false"})
    assert "rowTrackingEnablementOnly" not in commit_info(log, version)["tags"]  # type: ignore[operator]


def test_conflict_errors_carry_deltas_error_class() -> None:
    """Delta's conflict exceptions have an error class (``getErrorClass``) their message
    starts with: OptimizeConflictSuite looks for ``DELTA_CONCURRENT_DELETE_READ`` in it,
    FeatureEnablementConcurrencySuite compares ``DELTA_METADATA_CHANGED``; the hinted ones
    (append, delete-read, delete-delete) say whether a partition is named."""
    from deltalog.txn.commit.commit_errors import ConcurrentDeleteReadError, DropFeatureConflictError

    log = new_table()
    log.start_transaction().commit([add("a")], Write())
    txn = log.start_transaction()
    (a,) = txn.filter_files()
    log.start_transaction().commit([a.remove(1)], ManualUpdate())
    with pytest.raises(ConcurrentDeleteReadError) as read:
        txn.commit([add("b")], Write())
    assert read.value.error_class == "DELTA_CONCURRENT_DELETE_READ.WITHOUT_HINT"
    assert str(read.value).startswith("[DELTA_CONCURRENT_DELETE_READ.WITHOUT_HINT] ")
    txn = log.start_transaction()
    txn.filter_files()
    set_properties(log, **{"delta.logRetentionDuration": "interval 2 days"})
    with pytest.raises(MetadataChangedError) as changed:
        txn.commit([add("c")], Write())
    assert changed.value.error_class == "DELTA_METADATA_CHANGED"
    hinted = ConcurrentAppendError("x", partition="[p=1]")
    assert (hinted.error_class, ProtocolChangedError("x").error_class) == (
        "DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT",
        "DELTA_PROTOCOL_CHANGED",
    )
    assert DropFeatureConflictError("x").error_class == "DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL"
