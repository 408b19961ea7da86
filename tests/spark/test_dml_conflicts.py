"""DELETE / UPDATE / MERGE against concurrent commits, judged as Delta's ``ConflictChecker``
judges them. The DML transaction is planned, another writer commits, then the DML commits:
a deterministic interleaving, no Spark job (planning the candidate files runs none)."""

from __future__ import annotations

import json
import uuid

import pytest

from deltalog.contrib.spark import DeltaTable
from deltalog.contrib.spark.tablelog import start_transaction
from deltalog.txn.commit.commit_errors import ConcurrentAppendError, ConcurrentDeleteReadError
from deltalog.txn.commit.operations import Delete, ManualUpdate
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Action, AddFile, Metadata


def _add(name: str, low: int, high: int, p: str | None = None) -> AddFile:
    stats = {"numRecords": 10, "minValues": {"id": low}, "maxValues": {"id": high}, "nullCount": {"id": 0}}
    return AddFile(name, {} if p is None else {"p": p}, 1, 1, stats=json.dumps(stats))


def _table(partitioned: bool, *files: AddFile) -> str:
    uri = f"memory://dml-conflicts-{uuid.uuid4().hex}"
    columns = (("p", "string"), ("id", "long")) if partitioned else (("id", "long"), ("x", "long"))
    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns]
    metadata = Metadata(
        id="t",
        schema_string=json.dumps({"type": "struct", "fields": fields}),
        partition_columns=("p",) if partitioned else (),
        configuration={"delta.isolationLevel": "Serializable"},
    )
    DeltaLog.for_table(uri).start_transaction().commit([metadata, *files], ManualUpdate())
    return uri


def _delete_around(uri: str, condition: str, expected: list[str], concurrent: list[Action], alias: str = "") -> int:
    """Plan ``DELETE WHERE condition`` (its candidates must be ``expected``; on the table
    under ``alias`` if given), let another writer commit ``concurrent``, then commit the
    DELETE of the candidates."""
    txn = start_transaction(DeltaLog.for_table(uri))
    table = DeltaTable(None, uri)
    candidates = (table.alias(alias) if alias else table)._candidates(txn, condition)
    assert [f.path for f in candidates] == expected
    DeltaLog.for_table(uri).start_transaction().commit(concurrent, ManualUpdate())
    return txn.commit([f.remove(1) for f in candidates], Delete(predicate=[condition]))


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_a_concurrent_delete_of_a_file_statistics_skipped_is_no_conflict(partitioned: bool) -> None:
    """Delta's ``filterFiles`` records as read only the files data skipping kept: a
    concurrent commit removing a file whose statistics exclude the condition (a DELETE
    that emptied it) changes nothing this DELETE read. A removal of a file it did read is
    a ConcurrentDeleteReadError."""
    p = "a" if partitioned else None
    condition = "p = 'a' AND id = 15" if partitioned else "id = 15"
    uri = _table(partitioned, _add("a1", 0, 9, p), _add("a2", 10, 19, p))
    assert _delete_around(uri, condition, ["a2"], [_add("a1", 0, 9, p).remove(1)]) == 2
    assert DeltaLog.for_table(uri).update().files == []

    uri = _table(partitioned, _add("a1", 0, 9, p), _add("a2", 10, 19, p))
    with pytest.raises(ConcurrentDeleteReadError):
        _delete_around(uri, condition, ["a2"], [_add("a2", 10, 19, p).remove(1)])


def test_a_concurrent_add_into_the_read_partitions_still_conflicts_whatever_its_statistics() -> None:
    """The partition predicate stays recorded: an add into the partition the DELETE read
    conflicts even when its statistics exclude the condition (Delta ignores data
    predicates when checking appends)."""
    uri = _table(True, _add("a1", 0, 9, "a"), _add("a2", 10, 19, "a"))
    with pytest.raises(ConcurrentAppendError):
        _delete_around(uri, "p = 'a' AND id = 15", ["a2"], [_add("a3", 100, 200, "a")])
    assert _delete_around(uri, "p = 'a' AND id = 15", ["a2"], [_add("b1", 15, 15, "b")]) == 3


def test_replace_where_on_data_columns_reads_only_the_files_statistics_keep(table_path: str) -> None:
    """``replaceWhere`` on data columns is a DELETE of the rows it selects (Delta's
    ``filterFiles(condition)``): a file whose statistics exclude the predicate is not read,
    so a concurrent removal of it is no conflict, and its rows are not rewritten."""
    from deltalog.contrib.spark.writes import commit_write
    from tests.spark.test_write_transaction import _plan, _rows, _table_rows, _task_files, _write

    _write(table_path, _rows([1, 1], [1, 5]))  # file 1: x in [1, 5]
    _write(table_path, _rows([1, 1], [20, 30]))  # file 2: x in [20, 30]
    low = next(f for f in DeltaLog.for_table(table_path).update().files if f.num_records() and "20" not in f.stats)
    plan = _plan(table_path, overwrite=True, replaceWhere="x >= 15")
    files = _task_files(plan, _rows([1], [25]))
    DeltaLog.for_table(table_path).start_transaction().commit([low.remove(1)], Delete(predicate=["x < 10"]))
    assert commit_write(plan, files) == 3
    assert _table_rows(table_path) == [(1, 25)]


@pytest.mark.parametrize("condition", ["p = 'a' AND id % 2 = 0", "(id % 2 = 0 OR id = 15) AND p IN ('a')"])
def test_the_partition_terms_of_a_condition_with_other_terms_are_its_read_predicate(condition: str) -> None:
    """Delta's ``filterFiles`` records the top-level ``AND`` terms naming partition columns
    only as the read predicate, whatever the other terms: an add into another partition is
    no conflict; an add into the partition read is."""
    uri = _table(True, _add("a1", 0, 9, "a"), _add("b1", 0, 9, "b"))
    assert _delete_around(uri, condition, ["a1"], [_add("b2", 0, 9, "b")]) == 2
    uri = _table(True, _add("a1", 0, 9, "a"), _add("b1", 0, 9, "b"))
    with pytest.raises(ConcurrentAppendError):
        _delete_around(uri, condition, ["a1"], [_add("a2", 0, 9, "a")])


def test_a_disjunction_of_partition_terms_is_read_as_those_partitions() -> None:
    """``p = 'a' OR (p = 'c' AND id > 5)`` reads partitions ``a`` and ``c``: an add into ``b``
    is no conflict, an add into ``c`` is. (Delta records no partition predicate for it, the
    conjunct naming a data column too, and fails on both: a documented difference, still
    serializable.)"""
    condition = "p = 'a' OR (p = 'c' AND id > 5)"
    files = (_add("a1", 0, 9, "a"), _add("b1", 0, 9, "b"), _add("c1", 0, 9, "c"))
    assert _delete_around(_table(True, *files), condition, ["a1", "c1"], [_add("b2", 0, 9, "b")]) == 2
    with pytest.raises(ConcurrentAppendError):
        _delete_around(_table(True, *files), condition, ["a1", "c1"], [_add("c2", 0, 9, "c")])


@pytest.mark.parametrize(
    "condition",
    [
        "(p = 'a' OR p = 'c') AND id % 2 = 0",
        "id % 2 = 0 AND NOT (p = 'b' OR p IS NULL)",
        "(p = 'a' OR id = 3) AND (p = 'a' OR p = 'c') AND id > 1",
        "((p = 'a' AND id > 1) OR p = 'c') AND (id % 2 = 0 OR p >= 'a')",
    ],
)
def test_a_disjunction_of_partition_terms_inside_a_conjunction_is_read_as_those_partitions(condition: str) -> None:
    """An ``OR`` of partition terms nested in an ``AND`` (or under a ``NOT``) reads only the
    partitions it can select, as Delta's ``filterFiles`` records it: an add into ``b`` is no
    conflict, an add into ``a`` is."""
    files = (_add("a1", 0, 9, "a"), _add("b1", 0, 9, "b"), _add("c1", 0, 9, "c"))
    assert _delete_around(_table(True, *files), condition, ["a1", "c1"], [_add("b2", 0, 9, "b")]) == 2
    with pytest.raises(ConcurrentAppendError):
        _delete_around(_table(True, *files), condition, ["a1", "c1"], [_add("a2", 0, 9, "a")])


def test_partition_terms_qualified_by_the_table_alias_are_its_read_predicate() -> None:
    """``alias("t")``: ``t.p`` names partition column ``p`` (Delta resolves it over the aliased
    table); a condition with other terms was read as the whole table, so an add into ``b``
    conflicted."""
    files = (_add("a1", 0, 9, "a"), _add("b1", 0, 9, "b"), _add("c1", 0, 9, "c"))
    for condition in ("t.p IN ('a', 'c') AND t.id % 2 = 0", "t.p = 'a' OR (t.p = 'c' AND t.id % 2 = 0)"):
        assert _delete_around(_table(True, *files), condition, ["a1", "c1"], [_add("b2", 0, 9, "b")], "t") == 2
        with pytest.raises(ConcurrentAppendError):
            _delete_around(_table(True, *files), condition, ["a1", "c1"], [_add("a2", 0, 9, "a")], "t")


def test_a_negated_partition_term_is_read_as_the_other_partitions() -> None:
    """``NOT (p = 'a')`` reads the partitions other than ``a`` (not the null one, as in SQL):
    an add into ``a`` is no conflict, an add into ``b`` is."""
    condition = "NOT (p = 'a') AND id % 2 = 0"
    files = (_add("a1", 0, 9, "a"), _add("b1", 0, 9, "b"))
    assert _delete_around(_table(True, *files), condition, ["b1"], [_add("a2", 0, 9, "a")]) == 2
    with pytest.raises(ConcurrentAppendError):
        _delete_around(_table(True, *files), condition, ["b1"], [_add("b2", 0, 9, "b")])


def test_replace_where_on_a_disjunction_of_partitions_reads_only_those(table_path: str) -> None:
    """``replaceWhere`` ``p = 1 OR p = 3`` reads partitions 1 and 3 (Delta's ``filterFiles`` of
    the predicate): under Serializable an append into partition 2 is no conflict."""
    from deltalog.contrib.spark.writes import commit_write
    from tests.spark.test_write_transaction import _partitioned_table, _plan, _rows, _table_rows, _task_files, _write

    _partitioned_table(table_path)
    plan = _plan(table_path, overwrite=True, replaceWhere="p = 1 OR p = 3")
    files = _task_files(plan, _rows([1], [100]))
    _write(table_path, _rows([2], [21]))
    assert commit_write(plan, files) == 2
    assert _table_rows(table_path) == [(1, 100), (2, 20), (2, 21)]
