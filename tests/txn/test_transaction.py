"""The transaction API: prepare-time rejections, commitInfo, isolation, retries,
ambiguous writes, post-commit hooks and large commits."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any
from unittest.mock import patch

import pytest

from deltalog.logstores.errors import AmbiguousWriteError
from deltalog.logstores.memory import MemoryLogStore
from deltalog.txn.commit.commit_errors import (
    AppendOnlyViolationError,
    CommitFailedError,
    ConcurrentWriteError,
    ConstraintsNotCheckedError,
    DuplicateFileActionError,
    InvalidMetadataError,
    InvalidTransactionError,
    MetadataAlreadyChangedError,
    MissingMetadataError,
    TransactionAlreadyCommittedError,
)
from deltalog.txn.commit.commit_stats import CommitStats
from deltalog.txn.commit.operations import Convert, CreateTable, Delete, ManualUpdate, Optimize, Write
from deltalog.txn.commit.settings import EngineSettings
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import (
    AddFile,
    CommitInfo,
    DeletionVectorDescriptor,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from deltalog.txn.protocol.errors import CorruptLogError
from deltalog.txn.protocol.partition_filters import InvalidPartitionFilterError


def schema(**columns: str) -> str:
    return json.dumps(
        {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns.items()],
        }
    )


def new_log() -> DeltaLog:
    return DeltaLog.for_table(f"memory://txn-{uuid.uuid4().hex}")


def create(log: DeltaLog, partition_columns: tuple[str, ...] = ("p",), **config: str) -> int:
    txn = log.start_transaction()
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            schema_string=schema(p="string", v="long"),
            partition_columns=partition_columns,
            configuration=dict(config),
        )
    )
    return txn.commit([], CreateTable(partition_by=list(partition_columns)))


def add(path: str, p: str | None = "a", size: int = 10) -> AddFile:
    return AddFile(path, {"p": p}, size, 1)


def commit_lines(log: DeltaLog, version: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.store.read(log.commit_uri(version))]


# -- creation and metadata -------------------------------------------------------------------


def test_first_commit_without_metadata_is_refused() -> None:
    log = new_log()
    with pytest.raises(MissingMetadataError, match=r"first commit of the table .* must contain metadata"):
        log.start_transaction().commit([add("f")], Write())
    assert not log.table_exists()


def test_create_table_writes_protocol_metadata_and_commit_info_first() -> None:
    log = new_log()
    assert create(log) == 0
    lines = commit_lines(log, 0)
    assert list(lines[0]) == ["commitInfo"]
    assert [next(iter(line)) for line in lines[1:]] == ["protocol", "metaData"]
    assert lines[1]["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    info = lines[0]["commitInfo"]
    assert info["operation"] == "CREATE TABLE"
    assert info["operationParameters"]["clusterBy"] == "[]"  # Delta 3.2+: always, as partitionBy
    assert "readVersion" not in info
    assert info["isolationLevel"] == "Serializable"
    assert info["engineInfo"].startswith("deltalog/")
    uuid.UUID(info["txnId"])
    assert lines[2]["metaData"]["createdTime"] > 0


def test_metadata_changed_twice_is_refused() -> None:
    log = new_log()
    txn = log.start_transaction()
    meta = Metadata(id="x", schema_string=schema(p="string", v="long"))
    txn.update_metadata(meta)
    with pytest.raises(MetadataAlreadyChangedError, match="more than once"):
        txn.update_metadata(meta)
    with pytest.raises(MetadataAlreadyChangedError):
        txn.commit([meta], ManualUpdate())


def test_two_metadata_or_protocol_actions_are_refused() -> None:
    log = new_log()
    meta = Metadata(id="x", schema_string=schema(p="string", v="long"))
    with pytest.raises(DuplicateFileActionError, match="more than one metadata"):
        log.start_transaction().commit([meta, meta], ManualUpdate())
    with pytest.raises(DuplicateFileActionError, match="more than one protocol"):
        log.start_transaction().commit([meta, Protocol(1, 2), Protocol(1, 3)], ManualUpdate())
    assert not log.table_exists()


@pytest.mark.parametrize(
    ("schema_string", "partitions", "config", "message"),
    [
        # Delta's verifyNewMetadata: checkColumnNameDuplication (SchemaUtilsSuite)
        (schema(a="long", A="long"), (), {}, "DELTA_DUPLICATE_COLUMNS_FOUND: duplicate column names"),
        (
            json.dumps(
                {
                    "type": "struct",
                    "fields": [
                        {
                            "name": "s",
                            "type": {
                                "type": "struct",
                                "fields": [
                                    {"name": "x", "type": "long", "nullable": True, "metadata": {}},
                                    {"name": "X", "type": "long", "nullable": True, "metadata": {}},
                                ],
                            },
                            "nullable": True,
                            "metadata": {},
                        }
                    ],
                }
            ),
            (),
            {},
            r"DELTA_DUPLICATE_COLUMNS_FOUND: duplicate column names .* in s",
        ),
        (schema(a="long", b="long"), ("c",), {}, "partition column 'c' is not in the schema"),
        (
            json.dumps(
                {
                    "type": "struct",
                    "fields": [
                        {"name": "s", "type": {"type": "struct", "fields": []}, "nullable": True, "metadata": {}},
                        {"name": "v", "type": "long", "nullable": True, "metadata": {}},
                    ],
                }
            ),
            ("s",),
            {},
            "DELTA_INVALID_PARTITION_COLUMN_TYPE: Using column 's' of type struct as a partition column",
        ),
        # not orderable (DeltaVariantSuite: "VariantType may not be used as a partition column")
        (schema(v="variant", b="long"), ("v",), {}, "Using column 'v' of type variant as a partition column"),
        (schema(a="long", b="long"), ("a", "a"), {}, "listed twice"),
        (schema(a="long"), ("a",), {}, "at least one data column"),
        (
            schema(a="long", _change_type="string"),
            (),
            {"delta.enableChangeDataFeed": "true"},
            "DELTA_TABLE_ALREADY_CONTAINS_CDC_COLUMNS",
        ),
        ("{not json", (), {}, "not valid JSON"),
        (
            json.dumps(
                {
                    "type": "struct",
                    "fields": [
                        {
                            "name": "m",
                            "type": {
                                "type": "map",
                                "keyType": "string",
                                "valueType": "long",
                                "valueContainsNull": True,
                            },
                            "nullable": True,
                            "metadata": {"__COLLATIONS": {"m.key": "spark.UTF8_LCASE"}},
                        }
                    ],
                }
            ),
            (),
            {},
            "map key",
        ),
        (schema(a="string collate UTF8_LCASE"), (), {}, "unknown data type"),
        (schema(a="long"), (), {"delta.checkpointInterval": "0"}, "checkpointInterval must be a positive"),
        # Delta's assertMetadata (DeltaSuite "columns with commas as partition columns")
        (schema(**{"a b": "long"}), (), {}, "DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES"),
        # a nested one is named by its path, as Delta's explodeNestedFieldNames (SchemaUtilsSuite)
        (
            json.dumps(
                {
                    "type": "struct",
                    "fields": [
                        {
                            "name": "arr",
                            "type": {
                                "type": "array",
                                "elementType": {
                                    "type": "struct",
                                    "fields": [{"name": "b=c", "type": "long", "nullable": True, "metadata": {}}],
                                },
                                "containsNull": True,
                            },
                            "nullable": True,
                            "metadata": {},
                        }
                    ],
                }
            ),
            (),
            {},
            r"column names of your schema: arr\.element\.b=c\.",
        ),
        (schema(**{"by,4": "long", "id": "long"}), ("by,4",), {}, "DELTA_INVALID_PARTITION_COLUMN"),
    ],
)
def test_invalid_metadata_is_refused(
    schema_string: str, partitions: tuple[str, ...], config: dict[str, str], message: str
) -> None:
    log = new_log()
    txn = log.start_transaction()
    with pytest.raises(InvalidMetadataError, match=message):
        txn.update_metadata(
            Metadata(id="x", schema_string=schema_string, partition_columns=partitions, configuration=config)
        )
    assert not log.table_exists()


@pytest.mark.parametrize(
    "key, value",
    [
        ("delta.dataSkippingNumIndexedCols", "-5"),
        ("delta.checkpoint.writeStatsAsJson", "maybe"),
        ("delta.checkpoint.writeStatsAsStruct", "maybe"),
        ("delta.enableExpiredLogCleanup", "maybe"),
        ("delta.checkpointRetentionDuration", "1 month"),
        ("delta.setTransactionRetentionDuration", "bogus"),
        ("delta.targetFileSize", "x"),
    ],
)
def test_every_property_value_a_metadata_brings_is_checked_as_delta_checks_it(key: str, value: str) -> None:
    """Delta's ``DeltaConfigs.validateConfigurations`` (and ``mergeGlobalConfigs``, which
    validates the session's defaults the same way) refuses a value its property's rule refuses
    wherever a table gets it: creation (the table builder, a write creating the table) as well
    as SET TBLPROPERTIES. Before, creation checked only a few properties: a table could be
    created with ``delta.dataSkippingNumIndexedCols=-5`` that no later write could write to,
    or with a bad retention that failed only after the commit had landed."""
    from deltalog.txn.protocol.properties import InvalidPropertyError

    log = new_log()
    txn = log.start_transaction()
    with pytest.raises(InvalidPropertyError, match=key.replace(".", r"\.")):
        txn.update_metadata(Metadata(id="x", schema_string=schema(a="long"), configuration={key: value}))
    assert not log.table_exists()
    # a value another writer left is not checked again when the metadata changes otherwise
    create(log)
    config = {"delta.appendOnly": "false", key: value}
    log.store.write(
        log.commit_uri(1), [json.dumps({"metaData": {**commit_lines(log, 0)[-1]["metaData"], "configuration": config}})]
    )
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={**config, "delta.appendOnly": "true"}))
    assert txn.commit([], ManualUpdate()) == 2


def test_cdf_reserved_names_are_fine_without_cdf() -> None:
    log = new_log()
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id="x", schema_string=schema(a="long", _change_type="string")))
    assert txn.commit([], CreateTable()) == 0


def test_metadata_needing_features_upgrades_the_protocol() -> None:
    log = new_log()
    create(log)
    txn = log.start_transaction()
    old = txn.metadata
    assert old is not None
    from dataclasses import replace

    txn.update_metadata(replace(old, configuration={"delta.enableChangeDataFeed": "true"}))
    version = txn.commit([], ManualUpdate())
    protocol = next(line["protocol"] for line in commit_lines(log, version) if "protocol" in line)
    # as Delta: (1, 2) plus change data feed is no legacy protocol's exact feature set
    expected = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["appendOnly", "changeDataFeed", "invariants"],
    }
    assert protocol == expected
    assert log.update().protocol == Protocol.from_dict(expected)


def test_a_property_change_upgrades_nothing_the_metadata_does_not_use() -> None:
    """Delta's ``upgradeProtocolFromMetadataForExistingTable``: an existing table's protocol
    grows only by the features its new metadata uses, never toward the (1, 2) a new table
    starts at (that would list appendOnly and invariants on a table-features protocol: a
    protocol change that fails every concurrent transaction)."""
    from dataclasses import replace

    for features, expected in (({"delta.feature.v2Checkpoint": "supported"}, None), ({}, None)):
        log = new_log()
        create(log, **features)
        before = log.update().protocol
        txn = log.start_transaction()
        assert txn.metadata is not None
        config = {**txn.metadata.configuration, "delta.logRetentionDuration": "interval 60 days"}
        txn.update_metadata(replace(txn.metadata, configuration=config))
        version = txn.commit([], ManualUpdate())
        assert [line for line in commit_lines(log, version) if "protocol" in line] == (expected or [])
        assert log.update().protocol == before


def test_deletion_vectors_need_table_features() -> None:
    log = new_log()
    create(log, **{"delta.enableDeletionVectors": "true"})
    protocol = log.update().protocol
    assert protocol.min_reader_version == 3 and protocol.min_writer_version == 7
    assert protocol.reader_features == ("deletionVectors",)
    assert protocol.writer_features is not None and "deletionVectors" in protocol.writer_features


def test_a_deletion_vector_needs_num_records_in_the_files_statistics() -> None:
    """Delta's getAssertDeletionVectorWellFormedFunc: an add with a deletion vector must carry
    numRecords (DELTA_DELETION_VECTOR_MISSING_NUM_RECORDS); the table is left as it was."""
    from deltalog.errors import DeletionVectorMissingNumRecordsError, DeletionVectorTightBoundsError
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    log = new_log()
    create(log, **{"delta.enableDeletionVectors": "true"})
    dv = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 36, 2)
    for stats in (None, '{"minValues":{}}'):
        with pytest.raises(DeletionVectorMissingNumRecordsError, match="DELTA_DELETION_VECTOR_MISSING_NUM_RECORDS"):
            log.start_transaction().commit([AddFile("f", {"p": "a"}, 10, 1, stats=stats, deletion_vector=dv)], Write())
    assert log.update().version == 0
    # ... and, in an operation that may add new deletion vectors, tightBounds false
    tight = AddFile("f", {"p": "a"}, 10, 1, stats='{"numRecords":5}', deletion_vector=dv)
    with pytest.raises(DeletionVectorTightBoundsError, match="DELTA_ADDING_DELETION_VECTORS_WITH_TIGHT_BOUNDS"):
        log.start_transaction().commit([tight], Write())
    assert log.start_transaction().commit([tight], ManualUpdate()) == 1  # recommits files as they were
    wide = AddFile("g", {"p": "a"}, 10, 1, stats='{"numRecords":5,"tightBounds":false}', deletion_vector=dv)
    assert log.start_transaction().commit([wide], Write()) == 2


def test_protocol_downgrade_is_refused() -> None:
    log = new_log()
    create(log, **{"delta.enableChangeDataFeed": "true"})
    with pytest.raises(InvalidTransactionError, match="downgrade"):
        log.start_transaction().upgrade_protocol(Protocol(1, 2))


# -- file actions ------------------------------------------------------------------------------


def test_duplicate_file_actions_are_refused() -> None:
    log = new_log()
    create(log)
    with pytest.raises(DuplicateFileActionError, match="more than one add/remove action for the file f"):
        log.start_transaction().commit([add("f"), add("f")], Write())
    with pytest.raises(DuplicateFileActionError):
        log.start_transaction().commit([add("g"), add("g").remove(5)], Write())
    # URI-encoded and raw spellings of one path are one file
    with pytest.raises(DuplicateFileActionError):
        log.start_transaction().commit([add("a%20b"), add("a b")], Write())
    with pytest.raises(DuplicateFileActionError, match="txn action"):
        log.start_transaction().commit([SetTransaction("q", 1), SetTransaction("q", 2)], Write())
    assert log.update().version == 0
    log = new_log()
    create(log, **{"delta.feature.domainMetadata": "supported"})
    with pytest.raises(DuplicateFileActionError, match="domainMetadata"):
        log.start_transaction().commit([DomainMetadata("d", "{}"), DomainMetadata("d", "{}")], Write())
    assert log.update().version == 0


def test_domain_metadata_needs_the_domain_metadata_feature() -> None:
    """DomainMetadataSuite ``Validate the failure when table feature is not enabled``
    (``DELTA_DOMAIN_METADATA_NOT_SUPPORTED``); a commit that adds the feature may carry domains."""
    log = new_log()
    create(log)
    with pytest.raises(InvalidTransactionError, match=r"DELTA_DOMAIN_METADATA_NOT_SUPPORTED.*'d'"):
        log.start_transaction().commit([DomainMetadata("d", "{}")], Write())
    assert log.update().version == 0 and log.update().domain_metadata == {}
    txn = log.start_transaction()
    txn.upgrade_protocol(Protocol(1, 7, None, ("appendOnly", "domainMetadata", "invariants")))
    txn.commit([DomainMetadata("d", "{}")], Write())
    assert list(log.update().domain_metadata) == ["d"]


def test_partition_values_must_match_partition_columns() -> None:
    log = new_log()
    create(log)
    with pytest.raises(
        InvalidTransactionError, match=r"partition values for \['q'\] but the table is partitioned by \['p'\]"
    ):
        log.start_transaction().commit([AddFile("f", {"q": "1"}, 1, 1)], Write())


def test_commit_info_actions_from_callers_are_refused() -> None:
    log = new_log()
    create(log)
    with pytest.raises(InvalidTransactionError, match="do not pass a commitInfo"):
        log.start_transaction().commit([CommitInfo(operation="X")], Write())


def test_append_only_table_refuses_data_changing_removes() -> None:
    log = new_log()
    create(log, **{"delta.appendOnly": "true"})
    log.start_transaction().commit([add("f")], Write())
    with pytest.raises(AppendOnlyViolationError, match=r"delta\.appendOnly=true"):
        log.start_transaction().commit([add("f").remove(5)], Delete())
    # rearranging (dataChange=false) is allowed, as Delta allows OPTIMIZE
    txn = log.start_transaction()
    txn.filter_files()
    version = txn.commit(
        [add("f").remove(5, data_change=False), AddFile("g", {"p": "a"}, 10, 1, data_change=False)], Optimize()
    )
    assert log.update().version == version
    assert log.update().protocol.min_writer_version == 2


def test_second_commit_of_a_transaction_is_refused() -> None:
    log = new_log()
    create(log)
    txn = log.start_transaction()
    txn.commit([add("f")], Write())
    with pytest.raises(TransactionAlreadyCommittedError, match="already committed version 1"):
        txn.commit([add("g")], Write())


def test_commit_if_needed_skips_empty_commits() -> None:
    log = new_log()
    create(log)
    assert log.start_transaction().commit_if_needed([], Write()) is None
    assert log.update().version == 0
    assert log.start_transaction().commit_if_needed([add("f")], Write()) == 1


def test_commit_if_needed_records_an_empty_data_change_under_write_serializable() -> None:
    """Delta's ``commitIfNeeded``: only ``Serializable`` and ``SnapshotIsolation`` may skip an
    empty commit, and an empty commit of a data-changing operation on a ``WriteSerializable``
    table cannot be downgraded to ``SnapshotIsolation``: it is recorded (with its
    commitInfo); one of an operation that changes no data is still skipped."""
    from deltalog.txn.commit.operations import SetTableProperties

    log = new_log()
    create(log, **{"delta.isolationLevel": "WriteSerializable"})
    assert log.start_transaction().commit_if_needed([], Write()) == 1
    assert [type(a).__name__ for a in log.read_commit(1)] == ["CommitInfo"]
    assert log.start_transaction().commit_if_needed([], SetTableProperties({})) is None
    assert log.update().version == 1


def test_commit_if_needed_records_empty_commits_when_delta_says_not_to_skip_them() -> None:
    """Delta's ``spark.databricks.delta.skipRecordingEmptyCommits=false`` (which its
    MergeIntoMetricsBase sets): an empty commit is recorded under ``Serializable`` too, with
    its commitInfo (the metrics of a MERGE that changed no row)."""
    log = new_log()
    create(log)
    settings = EngineSettings.from_options({"spark.databricks.delta.skipRecordingEmptyCommits": "false"})
    assert log.start_transaction(settings=settings).commit_if_needed([], Write()) == 1
    assert [type(a).__name__ for a in log.read_commit(1)] == ["CommitInfo"]
    assert log.start_transaction().commit_if_needed([], Write()) is None


# -- isolation and commitInfo ------------------------------------------------------------------


def test_blind_append_and_isolation_are_recorded() -> None:
    log = new_log()
    create(log)
    log.start_transaction().commit([add("f")], Write())
    info = commit_lines(log, 1)[0]["commitInfo"]
    assert info["isBlindAppend"] is True
    assert info["isolationLevel"] == "Serializable"
    assert info["readVersion"] == 0
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": "[]"}
    assert info["operationMetrics"]["numFiles"] == "1"  # WRITE reports numFiles, not numAddedFiles

    txn = log.start_transaction()
    files = txn.filter_files([("p", "=", "a")])
    txn.commit([files[0].remove(9, data_change=False), AddFile("g", {"p": "a"}, 10, 1, data_change=False)], Optimize())
    info = commit_lines(log, 2)[0]["commitInfo"]
    assert info["isBlindAppend"] is False
    assert info["isolationLevel"] == "SnapshotIsolation"

    txn = log.start_transaction()
    files = txn.filter_files()
    txn.commit([files[0].remove(9)], Delete(predicate=["p = 'a'"]))
    info = commit_lines(log, 3)[0]["commitInfo"]
    assert info["isolationLevel"] == "Serializable"
    assert info["operation"] == "DELETE"
    assert info["operationParameters"]["predicate"] == "[\"p = 'a'\"]"


def test_write_serializable_is_read_from_the_table() -> None:
    log = new_log()
    create(log, **{"delta.isolationLevel": "WriteSerializable"})
    txn = log.start_transaction()
    txn.filter_files()
    txn.commit([add("f")], Write())
    assert commit_lines(log, 1)[0]["commitInfo"]["isolationLevel"] == "WriteSerializable"


def test_user_metadata_engine_info_and_disabled_commit_info() -> None:
    log = new_log()
    create(log)
    settings = EngineSettings(user_metadata="nightly load", engine_info="tests/1.0")
    log.start_transaction(settings=settings).commit([add("f")], Write())
    info = commit_lines(log, 1)[0]["commitInfo"]
    assert info["userMetadata"] == "nightly load"
    assert info["engineInfo"] == "tests/1.0"
    log.start_transaction(settings=EngineSettings(commit_info_enabled=False)).commit([add("g")], Write())
    assert [next(iter(line)) for line in commit_lines(log, 2)] == ["add"]


def test_settings_from_delta_style_options() -> None:
    settings = EngineSettings.from_options(
        {
            "spark.databricks.delta.maxCommitAttempts": "7",
            "deltalog.commitInfo.userMetadata": "u",
            "spark.databricks.delta.history.metricsEnabled": "false",
        }
    )
    assert settings.max_commit_attempts == 7
    assert settings.user_metadata == "u"
    assert settings.operation_metrics_enabled is False
    with pytest.raises(ValueError, match="maxCommitAttempts"):
        EngineSettings.from_options({"deltalog.maxCommitAttempts": "lots"})


def test_partition_filters_are_typed_and_validated() -> None:
    log = DeltaLog.for_table(f"memory://pf-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id="x", schema_string=schema(year="integer", v="long"), partition_columns=("year",)))
    txn.commit(
        [AddFile(f"y{y}", {"year": str(y)}, 1, 1) for y in (9, 10, 2020)] + [AddFile("yn", {"year": None}, 1, 1)],
        Write(),
    )
    t = log.start_transaction()
    assert sorted(f.path for f in t.filter_files([("year", ">", 9)])) == ["y10", "y2020"]
    assert sorted(f.path for f in t.filter_files([("YEAR", "in", [9, "2020"])])) == ["y2020", "y9"]
    assert [f.path for f in t.filter_files([("year", "=", None)])] == ["yn"]
    assert sorted(f.path for f in t.filter_files([("year", "not in", [9])])) == ["y10", "y2020"]
    # SQL: x NOT IN (9, NULL) is never true (null or false), x IN (9, NULL) only for 9
    assert t.filter_files([("year", "not in", [9, None])]) == []
    assert [f.path for f in t.filter_files([("year", "in", [9, None])])] == ["y9"]
    with pytest.raises(InvalidPartitionFilterError, match="Predicate references non-partition column 'v'"):
        t.filter_files([("v", "=", 1)])
    with pytest.raises(InvalidPartitionFilterError, match="unknown operator"):
        t.filter_files([("year", "~", 1)])
    with pytest.raises(InvalidPartitionFilterError, match="cannot compare 'abc'"):
        t.filter_files([("year", "=", "abc")])


def test_a_timestamp_beyond_python_datetimes_in_utc_compares_with_partitions() -> None:
    """``ts != '9999-12-31 23:59:59'`` in a session west of UTC is an instant after every
    datetime Python holds (Spark's timestamps reach further): it is greater than every
    partition value and equal to none; it failed with InvalidPartitionFilterError (native
    reads' ``where``, DELETE, UPDATE)."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    log = DeltaLog.for_table(f"memory://pf-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id="x", schema_string=schema(ts="timestamp", v="long"), partition_columns=("ts",)))
    values = {"early": "0001-01-01T00:00:00.000000Z", "mid": "2024-01-01T00:00:00.000000Z"}
    values["late"] = "9999-12-31T23:59:59.999999Z"
    txn.commit([AddFile(name, {"ts": v}, 1, 1) for name, v in values.items()], Write())
    t = log.start_transaction()
    after = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=ZoneInfo("America/Los_Angeles"))
    before = dt.datetime(1, 1, 1, tzinfo=ZoneInfo("Asia/Kolkata"))

    def paths(op: str, value: object) -> list[str]:
        return sorted(f.path for f in t.filter_files([("ts", op, value)]))

    assert paths("<", after) == paths("!=", after) == paths(">", before) == ["early", "late", "mid"]
    assert paths(">=", after) == paths("=", after) == paths("<=", before) == paths("=", before) == []
    assert paths("in", [after, before]) == []
    assert paths("not in", [after, "2024-01-01T00:00:00Z"]) == ["early", "late"]
    assert paths("<", "9999-12-31T23:59:59-08:00") == ["early", "late", "mid"]


def test_a_fractional_value_compared_with_an_integer_partition_column_is_not_truncated() -> None:
    """Spark compares an integer column with ``1.5`` as a decimal: ``year < 9.5`` holds for 9
    and ``year = 9.5`` for none. The value was truncated to ``9`` (so ``year = 9.5`` matched
    the 9 partition, a replaceWhere of ``p != 1.5`` kept the p=1 rows Delta replaces)."""
    log = DeltaLog.for_table(f"memory://pf-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id="x", schema_string=schema(year="integer", v="long"), partition_columns=("year",)))
    txn.commit([AddFile(f"y{y}", {"year": str(y)}, 1, 1) for y in (-9, 9, 10)], Write())
    t = log.start_transaction()

    def paths(op: str, value: object) -> list[str]:
        return sorted(f.path for f in t.filter_files([("year", op, value)]))

    for value in (Decimal("9.5"), 9.5):
        assert paths("<", value) == ["y-9", "y9"]
        assert paths("=", value) == []
        assert paths("!=", value) == ["y-9", "y10", "y9"]
        assert paths("in", [value, 10]) == ["y10"]
    assert paths(">", Decimal("-9.5")) == ["y-9", "y10", "y9"]
    assert paths("=", Decimal("9.0")) == ["y9"]


# -- the commit loop ------------------------------------------------------------------------------


def test_retry_after_concurrent_appends_lands_at_the_next_version_and_advances_incrementally() -> None:
    log = new_log()
    create(log)
    txn = log.start_transaction()
    other = DeltaLog.for_table(log.table_uri)
    for i in range(3):
        other.start_transaction().commit([add(f"o{i}")], Write())
    stats: list[CommitStats] = []
    reads: list[str] = []
    original_read = log.store.read

    def counting_read(path: str) -> Iterator[str]:
        reads.append(path.rsplit("/", 1)[-1])
        return original_read(path)

    log.store.read = counting_read  # type: ignore[method-assign]
    txn.settings = txn.settings.with_(on_commit_stats=stats.append)
    assert txn.commit([add("mine")], Write()) == 4
    assert stats[0].attempts == 2
    assert stats[0].winning_versions_checked == [1, 2, 3]
    # only the winning commits were read, each once: no replay of the log
    assert sorted(reads) == [f"{v:020d}.json" for v in (1, 2, 3)]
    assert {f.path for f in log.update().files} == {"o0", "o1", "o2", "mine"}
    assert txn.post_commit_snapshot is not None and txn.post_commit_snapshot.version == 4


class _AlwaysTakenStore(MemoryLogStore):
    """Fault injection: every version the engine tries is taken by another writer first."""

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        if not overwrite and path.endswith(".json") and "/_delta_log/" in path:
            version = int(path.rsplit("/", 1)[-1].split(".")[0])
            if version > 0:
                rival = CommitInfo(timestamp=1, operation="WRITE", is_blind_append=True, txn_id="rival")
                super().write(path, [json.dumps({"commitInfo": rival.to_dict()})], False)
        super().write(path, lines, overwrite)


def test_commit_failed_after_max_attempts_names_versions_attempts_and_time() -> None:
    uri = f"memory://taken-{uuid.uuid4().hex}"
    log = DeltaLog.for_table(uri, logstore=_AlwaysTakenStore())
    create(log)
    txn = log.start_transaction(settings=EngineSettings(max_commit_attempts=3, backoff_base_ms=0.1))
    with pytest.raises(CommitFailedError) as info:
        txn.commit([add("f")], Write())
    err = info.value
    assert err.attempts == 3 and err.read_version == 0 and err.last_attempted_version == 4
    assert "attempts: 3" in str(err) and "read version: 0" in str(err) and "time spent" in str(err)


class _LostResponseStore(MemoryLogStore):
    """Fault injection: the first commit write lands but its answer is lost."""

    lost = 0

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        super().write(path, lines, overwrite)
        if path.endswith("00000000000000000001.json") and type(self).lost == 0:
            type(self).lost += 1
            raise AmbiguousWriteError(path, TimeoutError("read timed out"))


def test_ambiguous_write_is_resolved_by_txn_id() -> None:
    log = DeltaLog.for_table(f"memory://amb-{uuid.uuid4().hex}", logstore=_LostResponseStore())
    create(log)
    txn = log.start_transaction()
    assert txn.commit([add("f")], Write()) == 1
    assert txn.commit_stats is not None and txn.commit_stats.resolved_by_txn_id
    assert log.update().version == 1  # landed exactly once, not again at version 2
    assert [f.path for f in log.update().files] == ["f"]


class _LostBeforeLandingStore(MemoryLogStore):
    failures = 0

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        if path.endswith("00000000000000000001.json") and type(self).failures == 0:
            type(self).failures += 1
            raise AmbiguousWriteError(path, ConnectionResetError("reset"))
        super().write(path, lines, overwrite)


def test_ambiguous_write_that_did_not_land_is_retried_at_the_same_version() -> None:
    log = DeltaLog.for_table(f"memory://amb2-{uuid.uuid4().hex}", logstore=_LostBeforeLandingStore())
    create(log)
    assert log.start_transaction().commit([add("f")], Write()) == 1
    assert log.update().version == 1


# -- post-commit ------------------------------------------------------------------------------------


def test_failing_post_commit_hook_is_logged_and_the_commit_stands(caplog: pytest.LogCaptureFixture) -> None:
    log = new_log()
    create(log)
    txn = log.start_transaction()
    seen: list[int] = []

    def broken(delta_log: DeltaLog, version: int, snapshot: Any, actions: Any) -> None:
        raise RuntimeError("hook exploded")

    def recording(delta_log: DeltaLog, version: int, snapshot: Any, actions: Any) -> None:
        seen.append(version)

    txn.register_post_commit_hook(broken)
    txn.register_post_commit_hook(recording)
    with caplog.at_level(logging.ERROR):
        assert txn.commit([add("f")], Write()) == 1
    assert "Error when executing post-commit hook broken for commit 1" in caplog.text
    assert seen == [1]
    assert log.update().version == 1


def test_commit_stats_reach_the_callback_and_the_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    log = new_log()
    create(log)
    got: list[CommitStats] = []
    with caplog.at_level(logging.DEBUG, logger="deltalog.txn.commit.transaction"):
        log.start_transaction(settings=EngineSettings(on_commit_stats=got.append)).commit(
            [add("f", size=100), add("g", size=50)], Write()
        )
    assert got[0].num_adds == 2 and got[0].bytes_added == 150 and got[0].version == 1
    assert got[0].attempts == 1 and got[0].time_total_ms > 0
    assert "commit stats" in caplog.text


def test_symlink_manifest_hook_lists_current_files_per_partition() -> None:
    log = new_log()
    create(log, **{"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    log.start_transaction().commit([add("p=a/1.parquet"), add("p=b/2.parquet", p="b")], Write())
    fs = log.store.filesystem()
    root = log.store.fs_path(log.table_uri + "/_symlink_format_manifest")

    def manifest(part: str) -> list[str]:
        with fs.open_input_stream(f"{root}/{part}/manifest") as f:
            return f.read().decode().split()

    assert manifest("p=a") == [f"{log.table_uri}/p=a/1.parquet"]
    assert manifest("p=b") == [f"{log.table_uri}/p=b/2.parquet"]
    txn = log.start_transaction()
    b = txn.filter_files([("p", "=", "b")])
    txn.commit([b[0].remove(5)], Delete())
    import pyarrow.fs as pafs

    assert fs.get_file_info(f"{root}/p=b/manifest").type == pafs.FileType.NotFound
    assert manifest("p=a") == [f"{log.table_uri}/p=a/1.parquet"]


# -- large commits ------------------------------------------------------------------------------------


def test_commit_large_streams_actions() -> None:
    log = new_log()
    create(log)

    def actions() -> Iterator[AddFile]:
        for i in range(20_000):
            yield add(f"part-{i:05d}.parquet", size=3)

    version = log.start_transaction().commit_large(actions(), Convert(num_files=20_000))
    assert version == 1
    snapshot = log.update()
    assert snapshot.num_files == 20_000 and snapshot.size_in_bytes == 60_000
    assert commit_lines(log, 1)[0]["commitInfo"]["operation"] == "CONVERT"


def test_commit_large_always_checkpoints_as_deltas_update_and_checkpoint() -> None:
    # Delta's commitLarge (CONVERT, RESTORE, CLONE) checkpoints right after its commit,
    # whatever the interval, so no reader replays one huge JSON commit
    log = new_log()
    create(log)
    log.start_transaction().commit([add("a")], Write())
    version = log.start_transaction().commit_large(iter([add(f"f{i}") for i in range(3)]), Convert(num_files=3))
    assert version == 2
    snapshot = DeltaLog.for_table(log.table_uri).update()
    assert snapshot.checkpoint_version == 2 and snapshot.num_files == 4
    off = EngineSettings(post_commit_checkpoint=False)
    DeltaLog.for_table(log.table_uri).start_transaction(settings=off).commit_large(iter([add("g")]), Convert())
    assert DeltaLog.for_table(log.table_uri).update().checkpoint_version == 2


def test_commit_large_refuses_duplicates_and_leaves_no_version() -> None:
    log = new_log()
    create(log)
    with pytest.raises(DuplicateFileActionError):
        log.start_transaction().commit_large(iter([add("a"), add("b"), add("a")]), Convert())
    assert log.update().version == 0
    assert [s.name for s in log.store.list_from(log.commit_uri(1))] == []


def test_one_path_is_added_or_removed_once_whatever_its_deletion_vector() -> None:
    """Delta's checkNoDuplicateActions (OptimisticTransactionSuiteBase "Duplicate action - ..."):
    adds are keyed by path, removes by path, and an add and a remove of one path clash only
    with the same deletion vector (a deletion vector update re-adds the file with a new one)."""
    log = new_log()
    create(log, **{"delta.enableDeletionVectors": "true"})
    log.start_transaction().commit([add("f")], Write())
    dv1, dv2 = (DeletionVectorDescriptor("u", f"ab{n}", 10, 1, 1) for n in (1, 2))
    stats = '{"numRecords": 3, "tightBounds": false}'
    with_dv = [replace(add("f"), deletion_vector=dv, stats=stats) for dv in (dv1, dv2)]
    refused = {
        "add twice, with and without a deletion vector": [add("f"), with_dv[0]],
        "add twice, two deletion vectors": with_dv,
        "remove twice, with and without a deletion vector": [add("f").remove(5), with_dv[0].remove(5)],
        "remove twice, two deletion vectors": [f.remove(5) for f in with_dv],
        "add and remove, one deletion vector": [with_dv[0], with_dv[0].remove(5)],
    }
    for name, actions in refused.items():
        with pytest.raises(DuplicateFileActionError, match="more than one"):
            log.start_transaction().commit(actions, Write())
        assert log.update().version == 1, name
    # a deletion vector update: the file without one removed, re-added with one
    assert log.start_transaction().commit([add("f").remove(5), with_dv[0]], Write()) == 2


def test_repeated_set_transactions_are_committed_once() -> None:
    """Delta's checkForSetTransactionConflictAndDedup (OptimisticTransactionSuite "removes
    duplicate SetTransactions", "has SetTransaction version conflicts"): a txn action repeated
    with the same version is committed once; another version for the app id is refused."""
    log = new_log()
    create(log)
    version = log.start_transaction().commit([SetTransaction("q", 1), SetTransaction("q", 1, 7)], Write())
    assert [a for a in log.read_commit(version) if isinstance(a, SetTransaction)] == [SetTransaction("q", 1)]
    with pytest.raises(DuplicateFileActionError, match="appId q but different versions 1 and 2"):
        log.start_transaction().commit([SetTransaction("q", 1), SetTransaction("q", 2)], Write())
    version = log.start_transaction().commit_large(iter([SetTransaction("r", 3), SetTransaction("r", 3)]), Convert())
    assert [a for a in log.read_commit(version) if isinstance(a, SetTransaction)] == [SetTransaction("r", 3)]


def test_commit_large_conflict_is_a_concurrent_write_error() -> None:
    log = new_log()
    create(log)
    txn = log.start_transaction()
    DeltaLog.for_table(log.table_uri).start_transaction().commit([add("x")], Write())
    with pytest.raises(ConcurrentWriteError, match="conflicting commit: version 1"):
        txn.commit_large(iter([add("y")]), Convert())


def test_commit_large_shares_the_commit_checks_and_writes_in_commit_timestamps() -> None:
    log = new_log()
    create(log, **{"delta.enableInCommitTimestamps": "true"})
    with pytest.raises(DuplicateFileActionError, match="more than one txn action"):
        log.start_transaction().commit_large(iter([SetTransaction("app", 1), SetTransaction("app", 2)]), Convert())
    with pytest.raises(InvalidTransactionError, match="needs commitInfo"):
        log.start_transaction(settings=EngineSettings(commit_info_enabled=False)).commit_large(iter([]), Convert())
    assert log.update().version == 0
    version = log.start_transaction().commit_large(iter([add("a")]), Convert())
    stamp = commit_lines(log, version)[0]["commitInfo"]["inCommitTimestamp"]
    assert stamp > commit_lines(log, 0)[0]["commitInfo"]["inCommitTimestamp"]
    assert log.update().timestamp == stamp


def test_removes_keep_file_metadata() -> None:
    log = new_log()
    create(log)
    log.start_transaction().commit([AddFile("f", {"p": "a"}, 10, 1, stats='{"numRecords":3}')], Write())
    txn = log.start_transaction()
    (f,) = txn.filter_files()
    now = int(time.time() * 1000)
    txn.commit([f.remove(now)], Delete())
    removed = commit_lines(log, 2)[1]["remove"]
    assert removed == {
        "path": "f",
        "deletionTimestamp": now,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": {"p": "a"},
        "size": 10,
        "stats": '{"numRecords":3}',
    }
    tombstones = log.update().tombstones
    assert [t.path for t in tombstones] == ["f"]


def test_remove_of_unknown_type_rejected() -> None:
    log = new_log()
    create(log)
    with pytest.raises(InvalidTransactionError):
        log.start_transaction(isolation_level="SnapshotIsolation")
    with pytest.raises(ValueError, match="unknown isolation level"):
        log.start_transaction(isolation_level="Chaos")


def test_rejected_commit_leaves_the_table_untouched() -> None:
    log = new_log()
    create(log)
    before = [s.name for s in log.store.list_from(log.log_uri + "/0")]
    with pytest.raises(DuplicateFileActionError):
        log.start_transaction().commit([add("f"), add("f")], Write())
    assert [s.name for s in log.store.list_from(log.log_uri + "/0")] == before


def test_remove_file_type_is_recorded_for_tombstones() -> None:
    log = new_log()
    create(log)
    version = log.start_transaction().commit([RemoveFile("ghost", 5, True)], Delete())
    assert version == 1


# -- writer features ------------------------------------------------------------------------------


def test_data_commits_to_a_table_with_constraints_need_the_writer_to_check_them() -> None:
    log = new_log()
    create(log, **{"delta.constraints.positive": "v > 0"})
    assert log.update().protocol.min_writer_version == 3
    from deltalog.txn.commit.commit_errors import ConstraintsNotCheckedError

    with pytest.raises(ConstraintsNotCheckedError, match=r"positive: v > 0.*mark_constraints_checked"):
        log.start_transaction().commit([add("f")], Write())
    assert log.update().version == 0
    txn = log.start_transaction()
    txn.mark_constraints_checked()
    assert txn.commit([add("f")], Write()) == 1
    # removing or rearranging data needs no check
    txn = log.start_transaction()
    (f,) = txn.filter_files()
    txn.commit(
        [f.remove(int(time.time() * 1000), data_change=False), AddFile("g", {"p": "a"}, 10, 1, data_change=False)],
        Optimize(),
    )


def test_column_invariants_count_as_constraints() -> None:
    from deltalog.txn.protocol.constraints import table_constraints

    invariant = json.dumps({"expression": {"expression": "v < 100"}})
    schema_string = json.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": "p", "type": "string", "nullable": True, "metadata": {}},
                {"name": "v", "type": "long", "nullable": True, "metadata": {"delta.invariants": invariant}},
            ],
        }
    )
    meta = Metadata(id="x", schema_string=schema_string, partition_columns=("p",))
    (c,) = table_constraints(meta)
    assert (c.kind, c.column, c.expression) == ("invariant", "v", "v < 100")
    log = new_log()
    txn = log.start_transaction()
    txn.update_metadata(meta)
    from deltalog.txn.commit.commit_errors import ConstraintsNotCheckedError

    with pytest.raises(ConstraintsNotCheckedError, match="invariant on v"):
        txn.commit([add("f")], CreateTable())


def _table_turning_on_in_commit_timestamps() -> tuple[DeltaLog, int]:
    """A table of two commits, then a third that turns in-commit timestamps on (its version)."""
    log = new_log()
    create(log)
    log.start_transaction().commit([add("f")], Write())
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={"delta.enableInCommitTimestamps": "true"}))
    return log, txn.commit([], ManualUpdate())


def test_in_commit_timestamps_are_monotonic_and_enablement_is_recorded() -> None:
    log, v = _table_turning_on_in_commit_timestamps()
    config = log.update().metadata.configuration
    assert config["delta.inCommitTimestampEnablementVersion"] == str(v)
    assert int(config["delta.inCommitTimestampEnablementTimestamp"]) > 0
    protocol = log.update().protocol
    assert protocol.writer_features is not None and "inCommitTimestamp" in protocol.writer_features
    stamps = []
    for i in range(5):
        version = log.start_transaction().commit([add(f"g{i}")], Write())
        stamps.append(commit_lines(log, version)[0]["commitInfo"]["inCommitTimestamp"])
    assert stamps == sorted(stamps) and len(set(stamps)) == 5
    assert log.update().timestamp == stamps[-1]
    with pytest.raises(InvalidTransactionError, match="needs commitInfo"):
        log.start_transaction(settings=EngineSettings(commit_info_enabled=False)).commit([add("h")], Write())


@pytest.mark.parametrize(
    ("drop", "error_class"),
    [("commitInfo", "DELTA_MISSING_COMMIT_INFO"), ("inCommitTimestamp", "DELTA_MISSING_COMMIT_TIMESTAMP")],
)
def test_in_commit_timestamp_missing_from_a_commit_is_an_error(drop: str, error_class: str) -> None:
    """Delta's InCommitTimestampSuite: a commit of an ICT table without its commitInfo (or
    without its ``inCommitTimestamp``) fails ``snapshot.timestamp`` with
    DELTA_MISSING_COMMIT_INFO (DELTA_MISSING_COMMIT_TIMESTAMP), naming the version; the
    snapshot's files stay readable. Clock skew never makes the timestamps go back."""
    log = new_log()
    create(log, **{"delta.enableInCommitTimestamps": "true"})
    now = time.time()
    with patch.object(time, "time", return_value=now):
        log.start_transaction().commit([add("f")], ManualUpdate())
    loser = log.start_transaction()
    with patch.object(time, "time", return_value=now - 10):  # the clock goes back
        log.start_transaction().commit([add("g")], ManualUpdate())
        loser.commit([add("h")], ManualUpdate())  # retried after a conflict
    stamps = [commit_lines(log, v)[0]["commitInfo"]["inCommitTimestamp"] for v in range(4)]
    assert stamps == sorted(stamps) and len(set(stamps)) == 4
    lines = commit_lines(log, 3)
    if drop == "commitInfo":
        lines = lines[1:]
    else:
        del lines[0]["commitInfo"]["inCommitTimestamp"]
    log.store.write(log.commit_uri(3), [json.dumps(o) for o in lines], overwrite=True)
    snapshot = DeltaLog.for_table(log.table_uri, logstore=log.store).update()
    assert sorted(f.path for f in snapshot.files) == ["f", "g", "h"]
    with pytest.raises(CorruptLogError, match=f"{error_class}.*inCommitTimestamp.*version 3"):
        _ = snapshot.timestamp


class _UnknownThenDownStore(MemoryLogStore):
    """Fault injection: the first publish of version 1 has an unknown outcome, then the
    store (or its lock service) is unreachable."""

    calls = 0

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        if path.endswith("00000000000000000001.json"):
            type(self).calls += 1
            if type(self).calls == 1:
                raise AmbiguousWriteError(path, TimeoutError("claim reply lost"))
            raise ConnectionRefusedError("lock service unreachable")
        super().write(path, lines, overwrite)


def test_a_failure_after_an_unresolved_attempt_is_reported_as_unknown_outcome() -> None:
    log = DeltaLog.for_table(f"memory://unknown-{uuid.uuid4().hex}", logstore=_UnknownThenDownStore())
    create(log)
    txn = log.start_transaction(settings=EngineSettings(backoff_base_ms=0.1))
    with pytest.raises(AmbiguousWriteError, match=rf"txnId {txn.txn_id}.*look for this txnId"):
        txn.commit([add("f")], Write())


def test_protocol_properties_upgrade_the_protocol_and_are_not_kept_in_the_configuration(tmp_path: Any) -> None:
    """``delta.minReaderVersion`` / ``delta.minWriterVersion`` / ``delta.feature.<name>``
    ask for a protocol; Delta applies them to the protocol and strips them from the
    metadata (``Protocol.filterProtocolPropsFromTableProps``), on create and on ALTER. A
    feature Delta does not know, or a status other than ``supported``/``enabled``, is refused
    with nothing committed."""
    from deltalog.txn.commands.alter import set_table_properties
    from deltalog.txn.protocol.properties import InvalidPropertyError

    log = DeltaLog.for_table(str(tmp_path / "t"))
    create(log, **{"delta.minReaderVersion": "2", "delta.minWriterVersion": "5", "team": "data"})
    snapshot = log.update()
    assert (snapshot.protocol.min_reader_version, snapshot.protocol.min_writer_version) == (2, 5)
    assert snapshot.metadata.configuration == {"team": "data"}

    set_table_properties(log, {"delta.feature.deletionVectors": "supported", "owner": "ops"})
    snapshot = log.update()
    assert "deletionVectors" in (snapshot.protocol.reader_features or ())
    assert "deletionVectors" in (snapshot.protocol.writer_features or ())
    assert "columnMapping" in (snapshot.protocol.writer_features or ())  # the legacy (2, 5) kept
    assert snapshot.metadata.configuration == {"team": "data", "owner": "ops"}

    for bad in ({"delta.feature.noSuchFeature": "supported"}, {"delta.feature.deletionVectors": "disabled"}):
        with pytest.raises(InvalidPropertyError, match=r"delta\.feature"):
            set_table_properties(log, bad)
    assert log.update().version == snapshot.version


def test_delta_property_keys_are_normalized_or_refused_as_delta_validates_them(tmp_path: Any) -> None:
    """Delta's ``DeltaConfigs.validateConfigurations``: a ``delta.*`` key Delta knows, in any
    case, is stored under its canonical name (so it takes effect); an unknown ``delta.*`` key
    is ``DELTA_UNKNOWN_CONFIGURATION`` with nothing committed, unless arbitrary properties are
    allowed (then kept as given); keys outside ``delta.`` are kept verbatim. UNSET normalizes
    its keys the same way (``normalizeConfigKeys``); CLONE's properties are validated too."""
    from deltalog.txn.commands.alter import set_table_properties, unset_table_properties
    from deltalog.txn.commands.clone import clone
    from deltalog.txn.protocol.properties import UnknownPropertyError

    log = DeltaLog.for_table(str(tmp_path / "t"))
    create(log)
    log.start_transaction().commit([add("f")], Write())
    set_table_properties(log, {"delta.appendonly": "true", "Owner.Team": "Data"})
    assert log.update().metadata.configuration == {"delta.appendOnly": "true", "Owner.Team": "Data"}
    with pytest.raises(AppendOnlyViolationError):
        log.start_transaction().commit([add("f").remove(5)], Delete())
    before = log.update().version
    for bad in ({"delta.fooBar": "1"}, {"DELTA.noSuchThing": "x", "delta.logRetentionDuration": "interval 40 days"}):
        with pytest.raises(UnknownPropertyError, match=r"DELTA_UNKNOWN_CONFIGURATION.*allowArbitraryProperties"):
            set_table_properties(log, bad)
    assert log.update().version == before
    set_table_properties(log, {"delta.fooBar": "1"}, allow_arbitrary_properties=True)
    unset_table_properties(log, ["DELTA.APPENDONLY"], if_exists=False)
    assert log.update().metadata.configuration == {"Owner.Team": "Data", "delta.fooBar": "1"}

    with pytest.raises(UnknownPropertyError, match=r"delta\.nope"):
        clone(log, str(tmp_path / "c0"), version=0, properties={"delta.nope": "1"})
    cloned = clone(log, str(tmp_path / "c1"), version=0, properties={"delta.ENABLECHANGEDATAFEED": "true"})
    assert DeltaLog.for_table(cloned.target_uri).update().properties.enable_change_data_feed

    # a table another writer gave a non-canonical key reads; a CHECK constraint's prefix is
    # matched in any case, as Delta's Constraints.getCheckConstraints (writers must enforce it)
    other = new_log()
    create(other, **{"delta.appendonly": "true", "delta.fooBar": "1", "DELTA.CONSTRAINTS.pos": "v > 0"})
    assert not other.update().properties.append_only
    with pytest.raises(ConstraintsNotCheckedError, match="pos"):
        other.start_transaction().commit([add("g")], Write())


def test_an_internal_property_cannot_be_set_as_in_delta(tmp_path: Any) -> None:
    """``delta.columnMapping.maxColumnId`` is Delta's one ``userConfigurable = false`` table
    property: ``validateConfigurations`` refuses it in any case, on SET TBLPROPERTIES, CREATE
    and CLONE (``DELTA_CANNOT_MODIFY_TABLE_PROPERTY``), and nothing is committed; column
    mapping itself still advances it."""
    from deltalog.txn.commands.alter import set_table_properties
    from deltalog.txn.commands.clone import clone
    from deltalog.txn.protocol.properties import ReservedPropertyError, validate_table_properties

    log = DeltaLog.for_table(str(tmp_path / "t"))
    create(log)
    set_table_properties(log, {"delta.columnMapping.mode": "name"})
    snapshot = log.update()
    assert snapshot.properties.column_mapping_max_id > 0
    for key in ("delta.columnMapping.maxColumnId", "DELTA.COLUMNMAPPING.MAXCOLUMNID"):
        with pytest.raises(ReservedPropertyError, match=r"DELTA_CANNOT_MODIFY_TABLE_PROPERTY.*maxColumnId"):
            set_table_properties(log, {key: "100", "delta.appendOnly": "true"})
        with pytest.raises(ReservedPropertyError):
            validate_table_properties({key: "1"}, allow_arbitrary=True)
    with pytest.raises(ReservedPropertyError):
        clone(log, str(tmp_path / "c"), version=snapshot.version, properties={"delta.columnMapping.maxColumnId": "9"})
    assert log.update().version == snapshot.version
    assert log.update().metadata.configuration == snapshot.metadata.configuration


def test_in_commit_timestamp_enablement_names_the_commit_that_landed() -> None:
    """PROTOCOL "In-Commit Timestamps": the enablement version is the commit that turned
    them on and the enablement timestamp is that commit's ``inCommitTimestamp``, also when
    a concurrent append made the transaction retry at a later version (Delta's
    ``ConflictChecker`` re-stamps both)."""
    from dataclasses import replace

    log = new_log()
    create(log)
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={"delta.enableInCommitTimestamps": "true"}))
    log.start_transaction().commit([add("winner")], Write())  # wins version 1
    v = txn.commit([], ManualUpdate())
    config = log.update().metadata.configuration
    ict = commit_lines(log, v)[0]["commitInfo"]["inCommitTimestamp"]
    assert (v, config["delta.inCommitTimestampEnablementVersion"]) == (2, "2")
    assert config["delta.inCommitTimestampEnablementTimestamp"] == str(ict)
    assert log.snapshot(timestamp=ict).version == 2
    # a large commit stamps its enablement with its own timestamp too
    large = log.start_transaction()
    assert large.metadata is not None
    large.update_metadata(replace(large.metadata, configuration={"delta.enableInCommitTimestamps": "false"}))
    large.commit([], ManualUpdate())
    large = log.start_transaction()
    assert large.metadata is not None
    conf = {k: v for k, v in large.metadata.configuration.items() if "inCommitTimestamp" not in k}
    large.update_metadata(replace(large.metadata, configuration={**conf, "delta.enableInCommitTimestamps": "true"}))
    time.sleep(0.002)
    v = large.commit_large(iter([add("big")]), Write())
    config = log.update().metadata.configuration
    ict = commit_lines(log, v)[0]["commitInfo"]["inCommitTimestamp"]
    assert config["delta.inCommitTimestampEnablementVersion"] == str(v)
    assert config["delta.inCommitTimestampEnablementTimestamp"] == str(ict)


def test_a_metadata_keeping_in_commit_timestamps_on_keeps_their_enablement() -> None:
    """InCommitTimestampSuite "REPLACE retains ICT provenance when last committed metadata is
    from a non-enablement commit" (Delta's ``getUpdatedMetadataWithICTEnablementInfo``): a
    new metadata that keeps in-commit timestamps on but drops
    ``delta.inCommitTimestampEnablementVersion`` / ``...Timestamp`` (a REPLACE, a RESTORE to a
    version that had them on from commit 0) keeps the table's, else every reader takes the
    commits before the enablement for in-commit timestamped ones (Delta then fails with
    DELTA_MISSING_COMMIT_TIMESTAMP)."""
    log, _ = _table_turning_on_in_commit_timestamps()
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(
        replace(txn.metadata, configuration={**txn.metadata.configuration, "delta.checkpointInterval": "20"})
    )
    txn.commit([], ManualUpdate())
    provenance = {k: v for k, v in log.update().metadata.configuration.items() if "Enablement" in k}
    assert provenance["delta.inCommitTimestampEnablementVersion"] == "2"
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={"delta.enableInCommitTimestamps": "true"}))
    txn.commit([], ManualUpdate())
    config = log.update().metadata.configuration
    assert {k: v for k, v in config.items() if "Enablement" in k} == provenance
    assert "delta.checkpointInterval" not in config
