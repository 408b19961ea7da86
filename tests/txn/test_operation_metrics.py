"""Each commit's ``operationMetrics`` carry exactly the names Delta's operation declares
(``DeltaOperations.Operation.operationMetrics``, ``transformMetrics``)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from deltalog.txn.commit.operations import (
    CreateTable,
    Delete,
    ManualUpdate,
    Operation,
    StreamingUpdate,
    Truncate,
    Write,
)
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Action, AddFile, Metadata

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)


def _table() -> DeltaLog:
    log = DeltaLog.for_table(f"memory://metrics-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",)))
    txn.commit([], CreateTable(partition_by=["p"]))
    return log


def _add(path: str, rows: int = 3, size: int = 10) -> AddFile:
    return AddFile(path, {"p": "a"}, size, 1, stats=json.dumps({"numRecords": rows}))


def _metrics(log: DeltaLog, actions: list[Action], operation: Operation) -> dict[str, Any]:
    version = log.start_transaction().commit(actions, operation)
    lines = [json.loads(line) for line in log.store.read(log.commit_uri(version))]
    info: dict[str, Any] = next(line["commitInfo"] for line in lines if "commitInfo" in line)
    metrics: dict[str, Any] = info.get("operationMetrics", {})
    return metrics


def test_an_append_reports_delta_write_metrics() -> None:
    log = _table()
    metrics = _metrics(log, [_add("a"), _add("b", rows=4)], Write())
    assert metrics == {"numFiles": "2", "numOutputBytes": "20", "numOutputRows": "7"}


def test_an_overwrite_adds_the_removed_files_and_bytes() -> None:
    log = _table()
    log.start_transaction().commit([_add("a")], Write())
    old = log.update().files[0]
    metrics = _metrics(log, [old.remove(1), _add("b")], Write(mode="Overwrite"))
    assert set(metrics) == {"numFiles", "numOutputBytes", "numOutputRows", "numRemovedFiles", "numRemovedBytes"}
    assert metrics["numRemovedFiles"] == "1"


def test_a_replace_where_reports_delta_replace_where_metrics() -> None:
    log = _table()
    log.start_transaction().commit([_add("a")], Write())
    old = log.update().files[0]
    operation = Write(mode="Overwrite", predicate="p = 'a'", user_metrics={"numDeletedRows": "3", "numCopiedRows": "0"})
    metrics = _metrics(log, [old.remove(1), _add("b")], operation)
    assert set(metrics) == {
        "numFiles",
        "numOutputBytes",
        "numOutputRows",
        "numRemovedFiles",
        "numRemovedBytes",
        "numDeletedRows",
        "numCopiedRows",
        "numAddedChangeFiles",
    }


def test_a_dynamic_partition_overwrite_reports_overwrite_metrics() -> None:
    log = _table()
    operation = Write(mode="Overwrite", dynamic_partition_overwrite=True)
    metrics = _metrics(log, [_add("a")], operation)
    assert set(metrics) == {"numFiles", "numOutputBytes", "numOutputRows", "numRemovedFiles", "numRemovedBytes"}


def test_a_delete_never_reports_write_metrics() -> None:
    log = _table()
    log.start_transaction().commit([_add("a")], Write())
    old = log.update().files[0]
    metrics = _metrics(log, [old.remove(1)], Delete(["p = 'a'"], user_metrics={"numDeletedRows": "3"}))
    assert metrics == {
        "numAddedFiles": "0",
        "numRemovedFiles": "1",
        "numAddedBytes": "0",
        "numRemovedBytes": "10",
        "numAddedChangeFiles": "0",
        "numDeletedRows": "3",
    }


def test_a_delete_of_whole_files_without_row_counts_reports_no_row_metrics() -> None:
    """Delta's ``Delete.transformMetrics``: no deleted rows but removed files means the row
    metrics are unknown; ``numDeletedRows``, ``numCopiedRows`` and ``numAddedFiles`` go."""
    log = _table()
    log.start_transaction().commit([_add("a")], Write())
    old = log.update().files[0]
    metrics = _metrics(log, [old.remove(1)], Delete([], user_metrics={"numCopiedRows": "0"}))
    assert set(metrics) == {"numRemovedFiles", "numAddedBytes", "numRemovedBytes", "numAddedChangeFiles"}


def test_streaming_truncate_and_manual_update_keep_their_own_sets() -> None:
    log = _table()
    streaming = _metrics(log, [_add("a")], StreamingUpdate(query_id="q", epoch_id=0))
    assert streaming == {"numAddedFiles": "1", "numRemovedFiles": "0", "numOutputRows": "3", "numOutputBytes": "10"}
    old = log.update().files[0]
    assert _metrics(log, [old.remove(1)], Truncate()) == {"numRemovedFiles": "1"}
    assert _metrics(log, [_add("b")], ManualUpdate()) == {}


def test_a_metric_the_operation_does_not_declare_is_dropped() -> None:
    log = _table()
    metrics = _metrics(log, [_add("a")], Write(user_metrics={"numAddedFiles": "1", "numOutputRows": "3"}))
    assert "numAddedFiles" not in metrics
