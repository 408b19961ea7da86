"""A Spark write is one Delta transaction from plan to commit (issue 11, writes).

Most tests drive the data source's two driver steps directly -- ``plan_write`` (what
``writer()`` runs) and ``commit_write`` (what the driver-side ``commit`` runs) -- with the
write tasks' files written in-process, and another writer committing in between through
deltalog's Python API: a deterministic interleaving, no Spark session, no sleeps. One
end-to-end Spark write uses the documented hook between plan and commit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark import writes
from deltalog.contrib.spark.errors import (
    DeltaAnalysisError,
    InvalidWriteOptionError,
    ReplaceWhereMismatchError,
    UnknownWriteOptionError,
    WriteOutcomeUnknownError,
)
from deltalog.contrib.spark.files import write_batches
from deltalog.contrib.spark.options import WriteOptions
from deltalog.contrib.spark.writes import WritePlan, commit_write, plan_write
from deltalog.logstores.base import LogStore
from deltalog.logstores.errors import AmbiguousWriteError, TransientStorageError
from deltalog.logstores.local import LocalLogStore
from deltalog.txn.commit.commit_errors import ConcurrentAppendError, MetadataChangedError
from deltalog.txn.commit.operations import SetTableProperties
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import parse_line

LONG_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "p", "type": "long", "nullable": True, "metadata": {}},
        {"name": "x", "type": "long", "nullable": True, "metadata": {}},
    ],
}


def _schema_json(schema: Mapping[str, Any] = LONG_SCHEMA) -> str:
    return json.dumps(schema)


def _plan(path: str, overwrite: bool = False, schema: Mapping[str, Any] = LONG_SCHEMA, **options: str) -> WritePlan:
    return plan_write(WriteOptions.parse({"path": path, **options}, overwrite), _schema_json(schema))


def _task_files(plan: WritePlan, table: pa.Table) -> list[str]:
    """What the write tasks hand to the driver: the action lines of the files they wrote."""
    return write_batches(plan.spec, table.to_batches(), 0)


def _write(path: str, table: pa.Table, overwrite: bool = False, **options: str) -> int | None:
    """A whole write (plan, tasks, commit) by another writer."""
    plan = _plan(path, overwrite, **options)
    return commit_write(plan, _task_files(plan, table))


def _rows(p: list[int], x: list[int]) -> pa.Table:
    return pa.table({"p": pa.array(p, pa.int64()), "x": pa.array(x, pa.int64())})


def _table_rows(path: str) -> list[tuple[Any, ...]]:
    snapshot = DeltaLog.for_table(path).update()
    out: list[tuple[Any, ...]] = []
    for f in snapshot.files:
        data = pq.read_table(os.path.join(path, f.path)).to_pylist()
        for row in data:
            values = {**row, **{k: (int(v) if v is not None else None) for k, v in f.partition_values.items()}}
            out.append((values["p"], values["x"]))
    return sorted(out, key=lambda r: (r[0] is None, r[0] or 0, r[1]))


def _commit_infos(path: str) -> list[dict[str, Any]]:
    log_dir = os.path.join(path, "_delta_log")
    infos = []
    for name in sorted(n for n in os.listdir(log_dir) if n.endswith(".json")):
        with open(os.path.join(log_dir, name), encoding="utf-8") as f:
            for line in f:
                action = json.loads(line)
                if "commitInfo" in action:
                    infos.append(action["commitInfo"])
    return infos


def _set_properties(path: str, **props: str) -> None:
    """Another writer changes table properties (a CHECK constraint, delta.appendOnly)."""
    log = DeltaLog.for_table(path)
    txn = log.start_transaction()
    metadata = txn.snapshot.metadata
    txn.update_metadata(replace(metadata, configuration={**metadata.configuration, **props}))
    txn.commit([], SetTableProperties(properties=props))


def _partitioned_table(path: str, isolation: str | None = None) -> None:
    options = {"partitionBy": "p"}
    if isolation is not None:
        options["delta.isolationLevel"] = isolation
    assert _write(path, _rows([1, 2], [10, 20]), **options) == 0


# -- 1. the transaction opens when the write is planned --------------------------------------


def test_commit_info_read_version_is_the_planned_snapshot(table_path: str) -> None:
    _partitioned_table(table_path, isolation="WriteSerializable")
    plan = _plan(table_path, overwrite=True)
    files = _task_files(plan, _rows([3], [30]))
    _write(table_path, _rows([2], [21]))  # version 1, lands between plan and commit
    # a blind append does not conflict with an overwrite under WriteSerializable (Delta)
    assert commit_write(plan, files) == 2
    assert _commit_infos(table_path)[-1]["readVersion"] == 0


def test_overwrite_removes_the_files_it_read_not_the_latest(table_path: str) -> None:
    """Delta: an overwrite removes the files of its read snapshot; under WriteSerializable a
    concurrent blind append is serialized after it, so its row survives."""
    _partitioned_table(table_path, isolation="WriteSerializable")
    plan = _plan(table_path, overwrite=True)
    files = _task_files(plan, _rows([3], [30]))
    _write(table_path, _rows([1], [11]))
    commit_write(plan, files)
    assert _table_rows(table_path) == [(1, 11), (3, 30)]


# -- 3a. replaceWhere against a concurrent append into the replaced partition ----------------


def test_replace_where_conflicts_with_an_append_to_its_partition_serializable(table_path: str) -> None:
    _partitioned_table(table_path)  # Serializable: Delta's default
    plan = _plan(table_path, overwrite=True, replaceWhere="p = 1")
    files = _task_files(plan, _rows([1], [100]))
    _write(table_path, _rows([1], [11]))  # version 1: a row appended to p=1
    with pytest.raises(ConcurrentAppendError):
        commit_write(plan, files)
    assert _table_rows(table_path) == [(1, 10), (1, 11), (2, 20)]
    assert all(not os.path.exists(os.path.join(table_path, parse_line(f).path)) for f in files)


def test_replace_where_conflicts_with_a_non_blind_write_to_its_partition_write_serializable(
    table_path: str,
) -> None:
    _partitioned_table(table_path, isolation="WriteSerializable")
    plan = _plan(table_path, overwrite=True, replaceWhere="p = 1")
    files = _task_files(plan, _rows([1], [100]))
    # another replaceWhere on p=1 (it read p=1: not a blind append) lands first
    _write(table_path, _rows([1], [11]), overwrite=True, replaceWhere="p = 1")
    with pytest.raises(ConcurrentAppendError):
        commit_write(plan, files)
    assert _table_rows(table_path) == [(1, 11), (2, 20)]


def test_replace_where_keeps_a_concurrent_blind_append_write_serializable(table_path: str) -> None:
    """Under WriteSerializable Delta serializes a blind append after the replaceWhere: the
    appended row must survive (today it is deleted silently)."""
    _partitioned_table(table_path, isolation="WriteSerializable")
    plan = _plan(table_path, overwrite=True, replaceWhere="p = 1")
    files = _task_files(plan, _rows([1], [100]))
    _write(table_path, _rows([1], [11]))
    assert commit_write(plan, files) == 2
    assert _table_rows(table_path) == [(1, 11), (1, 100), (2, 20)]
    assert _commit_infos(table_path)[-1]["readVersion"] == 0


# -- 3b. a schema change against a concurrent metadata change ---------------------------------

WIDE_SCHEMA = {
    "type": "struct",
    "fields": [*LONG_SCHEMA["fields"], {"name": "y", "type": "long", "nullable": True, "metadata": {}}],
}


@pytest.mark.parametrize(
    "props",
    [{"delta.constraints.positive": "x > 0"}, {"delta.appendOnly": "true"}],
    ids=["check-constraint", "append-only"],
)
def test_merge_schema_append_conflicts_with_a_concurrent_metadata_change(
    table_path: str, props: dict[str, str]
) -> None:
    _partitioned_table(table_path)
    plan = _plan(table_path, schema=WIDE_SCHEMA, mergeSchema="true")
    files = _task_files(plan, pa.table({"p": [1], "x": [5], "y": [7]}))
    _set_properties(table_path, **props)
    with pytest.raises(MetadataChangedError):
        commit_write(plan, files)
    config = DeltaLog.for_table(table_path).update().metadata.configuration
    assert all(config.get(k) == v for k, v in props.items())


def test_overwrite_schema_takes_the_writes_partitioning_none_without_partition_by(table_path: str) -> None:
    """Delta's ``ImplicitMetadataOperation``: an ``overwriteSchema`` overwrite defines the
    table's partitioning anew; without ``partitionBy`` the table is no longer partitioned."""
    _partitioned_table(table_path)
    assert _write(table_path, _rows([1], [5]), overwrite=True, overwriteSchema="true", partitionBy="x") == 1
    assert DeltaLog.for_table(table_path).update().metadata.partition_columns == ("x",)
    assert _write(table_path, _rows([2], [6]), overwrite=True, overwriteSchema="true") == 2
    snapshot = DeltaLog.for_table(table_path).update()
    assert snapshot.metadata.partition_columns == ()
    assert [f.partition_values for f in snapshot.files] == [{}]


def test_overwrite_schema_dropping_a_column_a_constraint_names_is_refused_when_planned(table_path: str) -> None:
    """Delta's ``Constraints.validateCheckConstraints``: the table's CHECK constraints must
    resolve against the schema a write commits; refused before any file is written."""
    from deltalog.contrib.spark.constraints import UncheckableConstraintsError

    _partitioned_table(table_path)
    _set_properties(table_path, **{"delta.constraints.x_positive": "x > 0"})
    only_p = {"type": "struct", "fields": [LONG_SCHEMA["fields"][0]]}
    with pytest.raises(UncheckableConstraintsError, match=r"INVALID_CHECK_CONSTRAINT_REFERENCES.*x_positive.*names x,"):
        _plan(table_path, True, only_p, overwriteSchema="true")


# -- 3c. an append planned before a concurrent overwriteSchema --------------------------------


def test_append_planned_before_an_overwrite_schema_fails(table_path: str) -> None:
    _partitioned_table(table_path)
    plan = _plan(table_path)
    files = _task_files(plan, _rows([1], [5]))
    string_x = {
        "type": "struct",
        "fields": [LONG_SCHEMA["fields"][0], {"name": "x", "type": "string", "nullable": True, "metadata": {}}],
    }
    other = _plan(table_path, overwrite=True, schema=string_x, overwriteSchema="true")
    commit_write(other, _task_files(other, pa.table({"p": pa.array([1], pa.int64()), "x": ["a"]})))
    with pytest.raises(MetadataChangedError):
        commit_write(plan, files)
    snapshot = DeltaLog.for_table(table_path).update()
    assert snapshot.version == 1
    assert all(pq.read_schema(os.path.join(table_path, f.path)).field("x").type == pa.string() for f in snapshot.files)


# -- 4. a commit of unknown outcome keeps its data files --------------------------------------


class _LandsThenUnreadable(LocalLogStore):
    """Fault injection: commit 1 lands but its answer is lost, and reading it back fails too
    (until ``healed``)."""

    healed = False

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        super().write(path, lines, overwrite)
        if path.endswith(f"{1:020d}.json") and not self.healed:
            raise AmbiguousWriteError(path, TimeoutError("the response was lost"))

    def read(self, path: str) -> Iterator[str]:
        if path.endswith(f"{1:020d}.json") and not self.healed:
            raise TransientStorageError(f"GET {path}: 503 Slow Down (retries exhausted)")
        return super().read(path)


def _use_store(monkeypatch: pytest.MonkeyPatch, module: Any, store: LogStore) -> None:
    monkeypatch.setattr(module, "open_log", lambda path, *_: DeltaLog.for_table(path, logstore=store))


def test_a_commit_of_unknown_outcome_keeps_the_written_files(table_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _partitioned_table(table_path)
    store = _LandsThenUnreadable()
    _use_store(monkeypatch, writes, store)
    plan = _plan(table_path)
    files = _task_files(plan, _rows([1], [5]))
    with pytest.raises(WriteOutcomeUnknownError) as info:
        commit_write(plan, files)
    assert isinstance(info.value, AmbiguousWriteError)  # still what the engine's callers catch
    store.healed = True
    snapshot = DeltaLog.for_table(table_path).update()
    assert snapshot.version == 1  # the commit landed ...
    assert all(os.path.exists(os.path.join(table_path, f.path)) for f in snapshot.files)  # ... with its files
    assert _commit_infos(table_path)[-1]["txnId"] == info.value.txn_id
    assert _table_rows(table_path) == [(1, 5), (1, 10), (2, 20)]


def test_spark_abort_after_a_failed_commit_keeps_files_a_landed_or_unreadable_commit_names(
    table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark calls the writer's ``abort`` when ``commit`` raised: it must not delete what the
    commit may have committed."""
    from deltalog.contrib.spark.source import DeltaCommitMessage, DeltaWriter

    _partitioned_table(table_path)
    store = _LandsThenUnreadable()
    _use_store(monkeypatch, writes, store)
    plan = _plan(table_path)
    files = _task_files(plan, _rows([1], [5]))
    with pytest.raises(WriteOutcomeUnknownError):
        commit_write(plan, files)
    writer = DeltaWriter(plan)
    writer.abort([DeltaCommitMessage(files)])  # the log cannot be read: keep
    store.healed = True
    writer.abort([DeltaCommitMessage(files)])  # version 1 names the files: keep
    assert _table_rows(table_path) == [(1, 5), (1, 10), (2, 20)]
    # a write whose tasks failed (nothing committed them): abort deletes its files
    plan = _plan(table_path)
    files = _task_files(plan, _rows([2], [6]))
    writer = DeltaWriter(plan)
    writer.abort([DeltaCommitMessage(files), None])
    assert _data_files(table_path) == {f.path for f in DeltaLog.for_table(table_path).update().files}


def test_a_rewrite_of_unknown_outcome_keeps_its_files_a_conflict_deletes_them(table_path: str) -> None:
    """``DeltaTable._commit_rewrite`` (DELETE / UPDATE / MERGE) follows the same rule."""
    from deltalog.contrib.spark.tables import DeltaTable
    from deltalog.txn.commit.operations import Delete

    _partitioned_table(table_path)
    table = DeltaTable(None, table_path)  # type: ignore[arg-type]  # no Spark needed to commit

    class _Txn:
        def __init__(self, error: BaseException) -> None:
            self.snapshot = DeltaLog.for_table(table_path).update()
            self.delta_log = DeltaLog.for_table(table_path)
            self.txn_id = "txn-under-test"
            self.error = error
            self.may_have_landed = True  # an attempt was made

        def commit_if_needed(self, actions: Any, operation: Any) -> int:
            raise self.error

    snapshot = DeltaLog.for_table(table_path).update()
    for error, kept in [
        (AmbiguousWriteError("00000000000000000001.json", TimeoutError("lost")), True),
        (ConcurrentAppendError("a file was added", winning_version=1), False),
    ]:
        lines = write_batches(table._write_spec(snapshot), _rows([1], [7]).to_batches(), 0)
        with pytest.raises(WriteOutcomeUnknownError if kept else ConcurrentAppendError):
            table._commit_rewrite(_Txn(error), [], lines, Delete(predicate=[]))
        paths = [os.path.join(table_path, parse_line(line).path) for line in lines]  # type: ignore[union-attr]
        assert all(os.path.exists(p) == kept for p in paths)



def test_a_commit_refused_before_any_attempt_deletes_its_files(tmp_path: Any) -> None:
    """Delta's RowTrackingRemovalSuite "Third party writer enables row tracking without
    disabling suspension property": another engine committed ``delta.enableRowTracking`` and
    ``delta.rowTrackingSuspended`` both true; the next write fails (Delta's
    ``DELTA_ROW_TRACKING_ILLEGAL_PROPERTY_COMBINATION``) before any version is written: no
    unknown outcome, its data files are deleted."""
    from deltalog.txn.protocol.actions import CommitInfo, action_to_line
    from deltalog.txn.protocol.errors import RowTrackingError

    path = str(tmp_path / "t")
    _write(path, _rows([1], [10]), **{"delta.enableRowTracking": "true"})
    log = DeltaLog.for_table(path)
    read = log.update()
    both = {**read.metadata.configuration, "delta.rowTrackingSuspended": "true"}
    lines = [CommitInfo(timestamp=1, operation="MANUAL UPDATE"), replace(read.metadata, configuration=both)]
    log.store.write(log.commit_uri(1), [action_to_line(a) for a in lines])
    before = _data_files(path)
    plan = _plan(path)
    with pytest.raises(RowTrackingError, match="cannot both be true"):
        commit_write(plan, _task_files(plan, _rows([2], [20])))
    assert _data_files(path) == before and log.update().version == 1

# -- 5. dynamic partition overwrite, refused options -------------------------------------------


def test_dynamic_partition_overwrite_replaces_only_the_written_partitions(table_path: str) -> None:
    _partitioned_table(table_path)
    plan = _plan(table_path, overwrite=True, partitionOverwriteMode="dynamic")
    assert plan.dynamic_partition_overwrite
    commit_write(plan, _task_files(plan, _rows([1, 3], [100, 300])))
    assert _table_rows(table_path) == [(1, 100), (2, 20), (3, 300)]
    info = _commit_infos(table_path)[-1]
    assert info["operation"] == "WRITE" and info["operationParameters"]["mode"] == "Overwrite"


def test_dynamic_partition_overwrite_reads_the_partitions_it_replaces(table_path: str) -> None:
    """The replaced partitions are the transaction's read: an append to one of them is a
    conflict (Serializable), an append elsewhere is not and survives."""
    _partitioned_table(table_path)
    plan = _plan(table_path, overwrite=True, partitionOverwriteMode="DYNAMIC")
    files = _task_files(plan, _rows([1], [100]))
    _write(table_path, _rows([2], [21]))
    assert commit_write(plan, files) == 2
    assert _table_rows(table_path) == [(1, 100), (2, 20), (2, 21)]

    plan = _plan(table_path, overwrite=True, partitionOverwriteMode="dynamic")
    files = _task_files(plan, _rows([1], [111]))
    _write(table_path, _rows([1], [12]))
    with pytest.raises(ConcurrentAppendError):
        commit_write(plan, files)


@pytest.mark.parametrize(
    ("isolation", "options", "recorded"),
    [
        (None, {}, False),
        (None, {"spark.databricks.delta.skipRecordingEmptyCommits": "false"}, True),
        ("WriteSerializable", {}, True),
    ],
)
def test_an_empty_append_is_committed_as_delta_commits_if_needed(
    table_path: str, isolation: str | None, options: dict[str, str], recorded: bool
) -> None:
    """Delta's WriteIntoDelta commits with ``commitIfNeeded`` (OptimisticTransactionSuite "Elide
    empty commits when requested"): a write of no rows is skipped unless
    ``skipRecordingEmptyCommits`` is off or the table is WriteSerializable (a WRITE changes
    data, so it cannot downgrade to SnapshotIsolation, which alone may skip it)."""
    _partitioned_table(table_path, isolation)
    assert _write(table_path, _rows([], []), **options) == (1 if recorded else None)
    assert DeltaLog.for_table(table_path).update().version == (1 if recorded else 0)
    assert _table_rows(table_path) == [(1, 10), (2, 20)]


def test_dynamic_partition_overwrite_against_a_concurrent_delete_in_its_partition(table_path: str) -> None:
    """Delta's ``txn.filterFiles(addFiles)`` records the partitions, not the files, as read
    (OptimisticTransactionSuite's testDynamicPartitionOverwrite): a concurrent delete of a file
    the overwrite removes is a delete-delete conflict; one in another partition is none."""
    from deltalog.txn.commit.commit_errors import ConcurrentDeleteDeleteError
    from deltalog.txn.commit.operations import Delete

    _partitioned_table(table_path)
    log = DeltaLog.for_table(table_path)
    plan = _plan(table_path, overwrite=True, partitionOverwriteMode="dynamic")
    files = _task_files(plan, _rows([1], [100]))
    other = next(f for f in log.update().files if f.partition_values["p"] == "2")
    log.start_transaction().commit([other.remove(1)], Delete(predicate=["p = 2"]))
    assert commit_write(plan, files) == 2
    assert _table_rows(table_path) == [(1, 100)]

    plan = _plan(table_path, overwrite=True, partitionOverwriteMode="dynamic")
    files = _task_files(plan, _rows([1], [111]))
    replaced = next(iter(log.update().files))
    log.start_transaction().commit([replaced.remove(1)], Delete(predicate=["p = 1"]))
    with pytest.raises(ConcurrentDeleteDeleteError) as caught:
        commit_write(plan, files)
    assert caught.value.partition == "[p=1]"


def test_dynamic_partition_overwrite_null_partition_and_unpartitioned_table(table_path: str) -> None:
    _partitioned_table(table_path)
    _write(table_path, pa.table({"p": pa.array([None], pa.int64()), "x": pa.array([0], pa.int64())}))
    plan = _plan(table_path, overwrite=True, partitionOverwriteMode="dynamic")
    commit_write(plan, _task_files(plan, pa.table({"p": pa.array([None], pa.int64()), "x": pa.array([9])})))
    assert _table_rows(table_path) == [(1, 10), (2, 20), (None, 9)]


def test_dynamic_mode_on_an_unpartitioned_table_overwrites_it(tmp_path: Any) -> None:
    path = str(tmp_path / "flat")
    _write(path, _rows([1, 2], [10, 20]))
    plan = _plan(path, overwrite=True, partitionOverwriteMode="dynamic")
    assert not plan.dynamic_partition_overwrite  # Delta ignores the mode without partitions
    commit_write(plan, _task_files(plan, _rows([1], [100])))
    assert _table_rows(path) == [(1, 100)]


_DYNAMIC = {"partitionOverwriteMode": "dynamic"}
_SESSION_DYNAMIC = {"spark.sql.sources.partitionOverwriteMode": "DYNAMIC"}
_DPO_OFF = {"spark.databricks.delta.dynamicPartitionOverwrite.enabled": "false"}
_REPLACE_WHERE_AND_DPO = "replaceWhere cannot be used with partitionOverwriteMode=dynamic"
_OVERWRITE_SCHEMA_AND_DPO = "overwriteSchema cannot be used with partitionOverwriteMode=dynamic"
_BAD_MODE = r"DELTA_ILLEGAL_OPTION: Invalid value 'dynamc' for option 'partitionOverwriteMode', must be 'STATIC' or"


@pytest.mark.parametrize(
    ("overwrite", "options", "outcome"),
    [
        # Delta's WriteIntoDelta.useDynamicPartitionOverwriteMode / DeltaOptions.isDynamicPartitionOverwriteMode
        (True, {**_DYNAMIC, "replaceWhere": "p = 1"}, _REPLACE_WHERE_AND_DPO),
        (False, {**_DYNAMIC, "replaceWhere": "p = 1"}, _REPLACE_WHERE_AND_DPO),  # read for an append too
        (True, {**_SESSION_DYNAMIC, "replaceWhere": "p = 1"}, False),  # the session's mode gives way
        (True, {**_DYNAMIC, "overwriteSchema": "true", "partitionBy": "p"}, _OVERWRITE_SCHEMA_AND_DPO),
        (True, {**_SESSION_DYNAMIC, "overwriteSchema": "true", "partitionBy": "p"}, _OVERWRITE_SCHEMA_AND_DPO),
        (True, {**_DYNAMIC, "overwriteSchema": "true"}, False),  # no partitionBy: unpartitioned, mode ignored
        (True, {"partitionOverwriteMode": "dynamc"}, _BAD_MODE),
        (False, {"partitionOverwriteMode": "dynamc"}, _BAD_MODE),
        (True, {**_SESSION_DYNAMIC, "partitionOverwriteMode": "static"}, False),
        (True, _SESSION_DYNAMIC, True),
        # DeltaOptionSuite: spark.databricks.delta.dynamicPartitionOverwrite.enabled=false
        (True, {**_DYNAMIC, **_DPO_OFF}, "DELTA_DYNAMIC_PARTITION_OVERWRITE_DISABLED"),
        (False, {**_SESSION_DYNAMIC, **_DPO_OFF}, "DELTA_DYNAMIC_PARTITION_OVERWRITE_DISABLED"),
        (True, {"partitionOverwriteMode": "dynamc", **_DPO_OFF}, False),
        # useNullIntolerantEqualityWithDPO only with a dynamic partition overwrite
        (True, {"useNullIntolerantEqualityWithDPO": "false"}, "only in Dynamic Partition Overwrite mode"),
        (True, {"useNullIntolerantEqualityWithDPO": "true", "replaceWhere": "p = 1"}, False),
        (False, {"useNullIntolerantEqualityWithDPO": "true"}, False),
        (True, {**_DYNAMIC, "useNullIntolerantEqualityWithDPO": "yes"}, "must be 'true' or 'false'"),
    ],
)
def test_dynamic_partition_overwrite_mode_as_delta_reads_it(
    table_path: str, overwrite: bool, options: dict[str, str], outcome: bool | str
) -> None:
    _partitioned_table(table_path)
    if isinstance(outcome, str):
        with pytest.raises(InvalidWriteOptionError, match=outcome):
            _plan(table_path, overwrite=overwrite, **options)
    else:
        assert _plan(table_path, overwrite=overwrite, **options).dynamic_partition_overwrite is outcome


def test_dynamic_mode_is_not_read_on_an_unpartitioned_table(tmp_path: Any) -> None:
    """As Delta, which reads the mode only for a partitioned table: a bad value is no error there."""
    path = str(tmp_path / "flat")
    _write(path, _rows([1], [10]))
    assert not _plan(path, overwrite=True, partitionOverwriteMode="dynamc").dynamic_partition_overwrite


def test_null_intolerant_dynamic_partition_overwrite_keeps_the_null_partitions(table_path: str) -> None:
    """Delta's ``useNullIntolerantEqualityWithDPO=true``: the written null partition is added
    to, not replaced; the other written partitions are replaced."""
    _partitioned_table(table_path)
    _write(table_path, pa.table({"p": pa.array([None], pa.int64()), "x": pa.array([0], pa.int64())}))
    plan = _plan(table_path, overwrite=True, **_DYNAMIC, useNullIntolerantEqualityWithDPO="true")
    written = pa.table({"p": pa.array([None, 1], pa.int64()), "x": pa.array([9, 100], pa.int64())})
    commit_write(plan, _task_files(plan, written))
    assert _table_rows(table_path) == [(1, 100), (2, 20), (None, 0), (None, 9)]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"txnAppId": "a"}, "MISSING_DATAFRAME_WRITE_OPTIONS"),
        ({"txnVersion": "1"}, "MISSING_DATAFRAME_WRITE_OPTIONS"),
        ({"txnAppId": "a", "txnVersion": "-1"}, "txnVersion.*must be a non-negative integer"),
        ({"txnAppId": "a", "txnVersion": ""}, "txnVersion.*must be a non-negative integer"),
        ({"txnAppId": "a", "txnVersion": "1.5"}, "txnVersion.*must be a non-negative integer"),
    ],
)
def test_idempotent_write_options_are_both_given_and_the_version_is_not_negative(
    options: dict[str, str], error: str
) -> None:
    """Delta's ``DeltaWriteOptions``: ``txnVersion`` is a non-negative integer
    (``DELTA_ILLEGAL_OPTION``), and ``txnAppId`` and ``txnVersion`` come together
    (``DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS.MISSING_DATAFRAME_WRITE_OPTIONS``)."""
    with pytest.raises(InvalidWriteOptionError, match=error):
        WriteOptions.parse({"path": "/t", **options}, False)
    opts = WriteOptions.parse({"path": "/t", "txnAppId": "a", "txnVersion": "0"}, False)
    assert (opts.txn_app_id, opts.txn_version) == ("a", 0)


def test_write_options_unknown_names_are_refused_storage_options_are_kept() -> None:
    with pytest.raises(UnknownWriteOptionError, match="mergeSchemaa, partitionOverwrite"):
        WriteOptions.parse({"path": "/t", "mergeSchemaa": "true", "partitionOverwrite": "dynamic"}, True)
    with pytest.raises(UnknownWriteOptionError, match=r"replaceOn .*not supported.*whole table"):  # Delta 4.3's
        WriteOptions.parse({"path": "/t", "replaceOn": "t.id = s.id"}, True)
    storage = {
        "AWS_REGION": "eu-west-1",
        "aws_endpoint_url": "http://localhost:9000",
        "region": "eu-west-1",
        "AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true",
        "GOOGLE_SERVICE_ACCOUNT": "/key.json",
        "deltalog.commitLock": "none",
        "DELTALOG_RETRY_MAX_ATTEMPTS": "3",
        "spark.delta.logStore.file.impl": "deltalog.logstores.local:LocalLogStore",
        "delta.logStore.s3.impl": "deltalog.logstores.s3:S3LogStore",
        "spark.databricks.delta.maxCommitAttempts": "5",
    }
    opts = WriteOptions.parse({"path": "/t", "partitionOverwriteMode": "Dynamic", **storage}, True)
    assert opts.storage_options == storage
    assert opts.partition_overwrite.is_dynamic()
    assert opts.table_properties == {}


# -- end to end through Spark ------------------------------------------------------------------


def _data_files(path: str) -> set[str]:
    out = set()
    for root, _, names in os.walk(path):
        if "_delta_log" not in root:
            out.update(os.path.relpath(os.path.join(root, n), path) for n in names if n.endswith(".parquet"))
    return out


def test_spark_replace_where_with_a_concurrent_append_between_plan_and_commit(spark: Any, table_path: str) -> None:
    """The write task itself commits another writer's append to p=1: after ``writer()``
    planned the write, before the driver's ``commit()``. Serializable: a conflict, the
    appended row survives and the failed write leaves no file behind."""
    _partitioned_table(table_path)
    marker = table_path + ".appended"

    def append_concurrently(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if not os.path.exists(marker):  # once, even if Spark retried the task
            open(marker, "x").close()
            _write(table_path, _rows([1], [11]))
        yield from batches

    df = spark.createDataFrame([(1, 100)], "p long, x long").coalesce(1)
    df = df.mapInArrow(append_concurrently, "p long, x long")
    with pytest.raises(Exception, match="ConcurrentAppendError"):
        df.write.format("deltalog").mode("overwrite").option("replaceWhere", "p = 1").save(table_path)
    assert _table_rows(table_path) == [(1, 10), (1, 11), (2, 20)]
    assert _data_files(table_path) == {f.path for f in DeltaLog.for_table(table_path).update().files}


def test_spark_dynamic_partition_overwrite_and_an_unknown_option(spark: Any, table_path: str) -> None:
    _partitioned_table(table_path)
    df = spark.createDataFrame([(1, 100), (3, 300)], "p long, x long")
    df.write.format("deltalog").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(table_path)
    assert _table_rows(table_path) == [(1, 100), (2, 20), (3, 300)]
    with pytest.raises(Exception, match=r"UnknownWriteOptionError.*mergeschemaa"):
        df.write.format("deltalog").mode("append").option("mergeSchemaa", "true").save(table_path)
    assert DeltaLog.for_table(table_path).update().version == 1


# -- 8. replaceWhere on data columns ------------------------------------------------------------


def test_replace_where_on_a_data_column_keeps_the_other_rows_of_touched_files(table_path: str) -> None:
    _write(table_path, _rows([1, 1, 2, 3], [10, 15, 20, 5]), partitionBy="p")
    plan = _plan(table_path, overwrite=True, replaceWhere="x >= 15")
    commit_write(plan, _task_files(plan, _rows([1, 2], [16, 25])))
    # (1, 10) shared a file with the replaced (1, 15): kept; p=3 was not touched
    assert _table_rows(table_path) == [(1, 10), (1, 16), (2, 25), (3, 5)]
    snapshot = DeltaLog.for_table(table_path).update()
    assert {f.partition_values["p"] for f in snapshot.files if f.path.startswith("p=3/")} == {"3"}
    info = _commit_infos(table_path)[-1]
    assert info["operationParameters"]["predicate"] == "x >= 15" and info["readVersion"] == 0
    metrics = info["operationMetrics"]
    assert metrics["numDeletedRows"] == "2" and metrics["numCopiedRows"] == "1"


def test_replace_where_on_a_data_column_refuses_rows_outside_it(table_path: str) -> None:
    _write(table_path, _rows([1, 2], [10, 20]), partitionBy="p")
    plan = _plan(table_path, overwrite=True, replaceWhere="x >= 15 AND p = 2")
    with pytest.raises(ReplaceWhereMismatchError, match="DELTA_REPLACE_WHERE_MISMATCH"):
        _task_files(plan, _rows([2, 2], [30, 3]))
    assert _data_files(table_path) == {f.path for f in DeltaLog.for_table(table_path).update().files}
    assert _table_rows(table_path) == [(1, 10), (2, 20)]
    with pytest.raises(DeltaAnalysisError, match=r"UNRESOLVED_COLUMN.*not a column"):  # Delta resolves it first
        _plan(table_path, overwrite=True, replaceWhere="nope > 1")


def test_replace_where_on_partitions_refuses_rows_outside_it_as_delta_does(table_path: str) -> None:
    """Delta raises ``DELTA_REPLACE_WHERE_MISMATCH`` for a partition predicate too."""
    _partitioned_table(table_path)
    plan = _plan(table_path, overwrite=True, replaceWhere="p = 1")
    files = _task_files(plan, _rows([1, 2], [11, 21]))
    with pytest.raises(ReplaceWhereMismatchError, match=r"DELTA_REPLACE_WHERE_MISMATCH.*p='2'"):
        commit_write(plan, files)
    assert _data_files(table_path) == {f.path for f in DeltaLog.for_table(table_path).update().files}
    assert _table_rows(table_path) == [(1, 10), (2, 20)]


def test_replace_where_on_a_data_column_conflicts_and_cleans_up_its_rewrites(table_path: str) -> None:
    _write(table_path, _rows([1, 1], [10, 15]), partitionBy="p")
    plan = _plan(table_path, overwrite=True, replaceWhere="x >= 15")
    files = _task_files(plan, _rows([1], [16]))
    _write(table_path, _rows([1], [17]))  # Serializable: the rewrite read the whole table
    with pytest.raises(ConcurrentAppendError):
        commit_write(plan, files)
    assert _table_rows(table_path) == [(1, 10), (1, 15), (1, 17)]
    assert _data_files(table_path) == {f.path for f in DeltaLog.for_table(table_path).update().files}


def test_a_micro_batch_commits_on_the_latest_snapshot_unless_its_layout_changed(table_path: str) -> None:
    """Streaming: each batch is its own transaction at the batch's commit (Delta's sink);
    files written against the query's planned metadata cannot land under another schema."""
    from deltalog.contrib.spark.writes import StreamingInfo

    _partitioned_table(table_path)
    plan = plan_write(WriteOptions.parse({"path": table_path, "queryId": "q"}, False), _schema_json(), streaming=True)
    _set_properties(table_path, **{"delta.logRetentionDuration": "interval 60 days"})  # not the layout
    assert commit_write(plan, _task_files(plan, _rows([1], [11])), StreamingInfo("q", 0, "Append")) == 2
    string_x = {
        "type": "struct",
        "fields": [LONG_SCHEMA["fields"][0], {"name": "x", "type": "string", "nullable": True, "metadata": {}}],
    }
    other = _plan(table_path, overwrite=True, schema=string_x, overwriteSchema="true")
    commit_write(other, _task_files(other, pa.table({"p": pa.array([1], pa.int64()), "x": ["a"]})))
    files = _task_files(plan, _rows([1], [12]))
    with pytest.raises(MetadataChangedError):
        commit_write(plan, files, StreamingInfo("q", 1, "Append"))
    assert DeltaLog.for_table(table_path).update().version == 3
    assert not any(os.path.exists(os.path.join(table_path, parse_line(f).path)) for f in files)  # type: ignore[union-attr]


def test_replace_where_partition_terms_keep_decimal_literals_exact() -> None:
    """A decimal literal against a ``long`` partition column prunes exactly, as Spark compares
    them: as a double, ``p = 9007199254740993.0`` read only the 9007199254740992 partition and
    replaced nothing where Delta replaces the row."""
    from deltalog.contrib.spark.replace_where import partition_filters
    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.partition_filters import PartitionPredicate

    fields = [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in ("p", "x")]
    metadata = Metadata(
        id="m", schema_string=json.dumps({"type": "struct", "fields": fields}), partition_columns=("p",)
    )
    for predicate, holds in (("x > 0 AND p = 9007199254740993.0", ["9007199254740993"]), ("x > 0 AND p < 1.5", ["1"])):
        predicate_filter = PartitionPredicate(partition_filters(predicate, metadata), {"p": "long"})
        assert [v for v in ("1", "2", "9007199254740993") if predicate_filter.matches({"p": v})] == holds


def test_replace_where_on_data_columns_reads_only_the_partitions_its_terms_select(table_path: str) -> None:
    from deltalog.contrib.spark.replace_where import partition_filters

    _write(table_path, _rows([1, 1, 2], [10, 15, 20]), partitionBy="p")
    metadata = DeltaLog.for_table(table_path).update().metadata
    assert partition_filters("x >= 15 AND p = 1 AND (p IN (1, 2)) AND 3 > p AND p IS NOT NULL", metadata) == [
        ("p", "=", 1),
        ("p", "in", [1, 2]),
        ("p", "<", 3),
        ("p", "!=", None),
    ]
    # terms of other shapes (OR, a string literal for a long column, functions) do not prune
    assert partition_filters("p = 1 OR x > 2", metadata) == []
    assert partition_filters("p = '1' AND abs(p) = 1", metadata) == []
    plan = _plan(table_path, overwrite=True, replaceWhere="x >= 15 AND p = 1")
    files = _task_files(plan, _rows([1], [16]))
    _write(table_path, _rows([2], [21]))  # Serializable, but outside the partition it read
    commit_write(plan, files)
    assert _table_rows(table_path) == [(1, 10), (1, 16), (2, 20), (2, 21)]


def test_spark_write_of_unknown_outcome_keeps_its_files_through_abort(spark: Any, table_path: str) -> None:
    """Through Spark: the driver-side commit lands version 1 but cannot know it (the fault
    store of every process loses the answer and fails the read-back); Spark then calls
    ``abort()`` in another worker, which cannot read the log either: the files stay."""
    _partitioned_table(table_path)
    df = spark.createDataFrame([(1, 5)], "p long, x long")
    with pytest.raises(Exception, match="WriteOutcomeUnknownError"):
        df.write.format("deltalog").mode("append").option("logStore", f"{__name__}._LandsThenUnreadable").save(
            table_path
        )
    assert DeltaLog.for_table(table_path).update().version == 1
    assert _table_rows(table_path) == [(1, 5), (1, 10), (2, 20)]


def test_a_write_from_its_own_table_opens_on_the_snapshot_its_source_read(spark: Any, table_path: str) -> None:
    """Delta runs a write's query inside its transaction: a scan of the same table reads the
    transaction's snapshot and counts as reading the whole table. A ``read_table`` source is
    bound to the snapshot it was made on, so the write opens there: a commit made since is a
    concurrent commit (a conflict, or a blind append kept under WriteSerializable), never
    silently overwritten. (It replaced the latest files with the source's rows: the
    appended rows were lost.)"""
    from deltalog.contrib.spark import DeltaTable, read_table, write_table
    from deltalog.contrib.spark.source_reads import TargetReads, target_reads
    from deltalog.txn.commit.commit_errors import ConcurrentDeleteReadError
    from deltalog.txn.commit.operations import Delete

    def ids() -> list[int]:
        return [r[1] for r in _table_rows(table_path)]

    _partitioned_table(table_path)  # Serializable: (1, 10), (2, 20)
    source = read_table(spark, table_path)
    _write(table_path, _rows([1], [11]))  # lands after the source read the table
    with pytest.raises(ConcurrentAppendError):
        write_table(source.withColumn("x", source.x + 1), table_path, mode="overwrite")
    assert ids() == [10, 11, 20]

    _set_properties(table_path, **{"delta.isolationLevel": "WriteSerializable"})
    source = read_table(spark, table_path)
    _write(table_path, _rows([2], [21]))  # a blind append: kept, ordered after the rewrite
    write_table(source.withColumn("x", source.x + 100), table_path, mode="overwrite")
    assert ids() == [110, 111, 21, 120]
    assert _commit_infos(table_path)[-1]["readVersion"] == 2  # the source's snapshot

    # a MERGE whose source is its own table: the row appended since is not "not matched by
    # source" (it was not there when the source read the table): kept, not deleted
    source = DeltaTable.forPath(spark, table_path).toDF()
    _write(table_path, _rows([2], [22]))
    target = DeltaTable.forPath(spark, table_path)
    (target.alias("t").merge(source.where("x > 100").alias("s"), "t.x = s.x").whenNotMatchedBySourceDelete().execute())
    assert ids() == [110, 111, 22, 120]
    # a format("deltalog") scan reads the latest version (a time travel is no read of it)
    log = DeltaLog.for_table(table_path)
    latest = spark.read.format("deltalog").load(table_path)
    assert target_reads(latest.where("x > 0"), log) == TargetReads(frozenset(), latest=True)
    pinned = spark.read.format("deltalog").option("versionAsOf", 0).load(table_path)
    assert not target_reads(pinned, log).reads_table
    # a concurrent DELETE of a file the source read is a conflict
    source = read_table(spark, table_path)
    appended = next(f for f in log.update().files if json.loads(f.stats or "{}")["minValues"]["x"] == 22)
    log.start_transaction().commit([appended.remove(1)], Delete(predicate=["x = 22"]))
    with pytest.raises(ConcurrentDeleteReadError):
        write_table(source, table_path, mode="overwrite")
    assert ids() == [110, 111, 120]


def test_a_micro_batch_widening_a_type_records_the_version_it_lands_at(tmp_path: Any) -> None:
    """On a ``typeWidening-preview`` table a stream with ``mergeSchema`` plans its widening
    when the query starts; the batch commits later, on the latest snapshot: the type change
    records the version the batch landed at (it recorded the query's start version + 1).
    (delta-rs reads no type widening: not the ``table_path`` fixture.)"""
    table_path = str(tmp_path / "table")
    from deltalog.contrib.spark.writes import StreamingInfo
    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.protocol.actions import Metadata, Protocol
    from deltalog.txn.protocol.type_widening import all_type_changes

    int_x = {"type": "struct", "fields": [LONG_SCHEMA["fields"][0], {**LONG_SCHEMA["fields"][1], "type": "integer"}]}
    txn = DeltaLog.for_table(table_path).start_transaction()
    txn.upgrade_protocol(Protocol(3, 7, ["typeWidening-preview"], ["typeWidening-preview"]))
    txn.update_metadata(Metadata(schema_string=_schema_json(int_x), configuration={"delta.enableTypeWidening": "true"}))
    txn.commit([], CreateTable())
    options = {"path": table_path, "queryId": "q", "mergeSchema": "true"}
    plan = plan_write(WriteOptions.parse(options, False), _schema_json(), streaming=True)  # x: long
    append = _plan(table_path, schema=int_x)
    commit_write(
        append, _task_files(append, pa.table({"p": pa.array([1], pa.int64()), "x": pa.array([1], pa.int32())}))
    )
    assert commit_write(plan, _task_files(plan, _rows([1], [2])), StreamingInfo("q", 0, "Append")) == 2
    changes = all_type_changes(json.loads(DeltaLog.for_table(table_path).update().metadata.schema_string))
    assert changes == [("x", {"fromType": "integer", "toType": "long", "tableVersion": 2})]


@pytest.mark.parametrize(
    ("compression", "extension", "codec"),
    [(None, ".snappy", "SNAPPY"), ("none", "", "UNCOMPRESSED"), ("GZIP", ".gz", "GZIP"), ("zstd", ".zstd", "ZSTD")],
)
def test_compression_option_names_the_files_codec(
    tmp_path: Any, compression: str | None, extension: str, codec: str
) -> None:
    """DeltaOptionSuite "support compression codec ... as write option": the files are written
    with Spark's codec and named with its extension (``.c000.zstd.parquet``)."""
    path = str(tmp_path / "t")
    options = {} if compression is None else {"compression": compression}
    plan = _plan(path, **options)
    commit_write(plan, _task_files(plan, _rows([1], [10])))
    (name,) = [f.path for f in DeltaLog.for_table(path).update().files]
    assert name.endswith(f".c000{extension}.parquet")
    assert pq.ParquetFile(os.path.join(path, name)).metadata.row_group(0).column(0).compression == codec


def test_compression_option_refuses_unknown_and_unwritable_codecs(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(InvalidWriteOptionError, match=r"Codec \[xyz\] is not available"):
        _plan(path, compression="xyz")
    plan = _plan(path, compression="lzo")  # Spark's writer has it, the Python tasks do not
    with pytest.raises(InvalidWriteOptionError, match="cannot write Parquet compressed with lzo"):
        _task_files(plan, _rows([1], [10]))
    assert not os.path.exists(path)


def test_replace_where_compares_a_string_partition_with_a_number_as_spark_casts_it(table_path: str) -> None:
    """Spark compares ``p = 1`` on a string column as ``CAST(p AS BIGINT) = 1``, so Delta's
    replaceWhere replaces the ``'01'`` partition too; compared as text, ``'01'`` was kept."""
    field = {"nullable": True, "metadata": {}}
    fields = [{"name": "p", "type": "string", **field}, {"name": "x", "type": "long", **field}]
    schema = {"type": "struct", "fields": fields}
    first = _plan(table_path, schema=schema, partitionBy="p")
    commit_write(first, _task_files(first, pa.table({"p": ["1", "01", "2"], "x": pa.array([10, 11, 20], pa.int64())})))
    plan = _plan(table_path, overwrite=True, schema=schema, replaceWhere="p = 1")
    commit_write(plan, _task_files(plan, pa.table({"p": ["1"], "x": pa.array([12], pa.int64())})))
    snapshot = DeltaLog.for_table(table_path).update()
    assert sorted(f.partition_values["p"] for f in snapshot.files) == ["1", "2"]
