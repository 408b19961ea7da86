"""``commitInfo.operationParameters`` as Delta Spark writes them: its ``jsonEncodedValues``
written raw (``JsonMapSerializer``), so a boolean or number parameter is a JSON boolean or
number, a list or map a JSON string holding its JSON, an ``Option`` Delta maps directly a
JSON ``null`` (Delta's ``DeltaOperations``; the encodings below are from Delta's own logs)."""

from __future__ import annotations

import json
import uuid

from deltalog.txn.commit.operations import (
    CreateTable,
    Optimize,
    Restore,
    RowTrackingBackfill,
    StreamingUpdate,
    UnsetTableProperties,
    VacuumStart,
)
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "v", "type": "long", "nullable": True, "metadata": {}}]})


def test_optimize_writes_booleans_raw() -> None:
    # Delta 3.2: "operationParameters":{"predicate":"[]","zOrderBy":"[\"id\"]","clusterBy":"[]","auto":false}
    params = Optimize(z_order_by=["id"]).parameters
    assert json.dumps(params, separators=(",", ":")) == (
        '{"predicate":"[]","zOrderBy":"[\\"id\\"]","clusterBy":"[]","auto":false}'
    )


def test_restore_writes_the_version_raw_and_the_missing_timestamp_as_null() -> None:
    # Delta: "operation":"RESTORE","operationParameters":{"version":1,"timestamp":null}
    assert Restore(version=1).parameters == {"version": 1, "timestamp": None}
    assert Restore(timestamp="2024-01-01 00:00:00").parameters == {"version": None, "timestamp": "2024-01-01 00:00:00"}


def test_create_table_writes_a_missing_description_as_null() -> None:
    # Delta 3.x's log, byte for byte
    assert json.dumps(CreateTable(partition_by=["part1"]).parameters, separators=(",", ":")) == (
        '{"partitionBy":"[\\"part1\\"]","clusterBy":"[]","description":null,"isManaged":"false","properties":"{}"}'
    )


def test_vacuum_unset_and_string_encoded_numbers() -> None:
    assert VacuumStart(specified_retention_millis=0).parameters == {
        "retentionCheckEnabled": True,
        "specifiedRetentionMillis": 0,
        "defaultRetentionMillis": 604800000,
    }
    assert "specifiedRetentionMillis" not in VacuumStart().parameters  # Delta's .map: absent when unset
    assert UnsetTableProperties(keys=["k"]).parameters == {"properties": '["k"]', "ifExists": True}
    # Delta turns these into strings itself (epochId.toString, JsonUtils.toJson(batchId))
    assert StreamingUpdate(query_id="q", epoch_id=3).parameters["epochId"] == "3"
    assert RowTrackingBackfill(batch_id=2).parameters == {"batchId": "2"}


def test_the_commit_file_holds_the_raw_values() -> None:
    log = DeltaLog.for_table(f"memory://params-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA))
    txn.commit([], CreateTable())
    log.start_transaction().commit([], Restore(version=0))
    info = log.read_commit(1)[0]
    assert info.operation_parameters == {"version": 0, "timestamp": None}  # type: ignore[union-attr]
    assert log.read_commit(0)[0].operation_parameters["description"] is None  # type: ignore[union-attr]
