"""The conflict matrix, ported from Delta Spark's OptimisticTransactionSuite and
OptimisticTransactionLegacyTests, run under both table isolation levels.

Each case: set the table up, let a transaction read, commit a concurrent transaction,
then commit the first one and assert the exact outcome (no conflict, or the error type,
winning version and partition hint).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from deltalog.txn.commit.commit_errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    DeltaConcurrentModificationError,
    MetadataChangedError,
    ProtocolChangedError,
)
from deltalog.txn.commit.operations import ManualUpdate, Truncate
from deltalog.txn.commit.transaction import OptimisticTransaction
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)

SER = "Serializable"
WSER = "WriteSerializable"


def schema(*columns: str, type_: str = "integer") -> str:
    return json.dumps(
        {
            "type": "struct",
            "fields": [{"name": c, "type": type_, "nullable": True, "metadata": {}} for c in columns],
        }
    )


def add(path: str, **partition: str | None) -> AddFile:
    return AddFile(path, dict(partition), 1, 1, data_change=True)


def remove(path: str, data_change: bool = True, **partition: str | None) -> RemoveFile:
    return RemoveFile(path, deletion_timestamp=4, data_change=data_change, partition_values=dict(partition) or None)


def rearrange_add(path: str, **partition: str | None) -> AddFile:
    return AddFile(path, dict(partition), 1, 1, data_change=False)


def meta_x(level: str, partitioned: bool = True) -> Metadata:
    return Metadata(
        id="table-1",
        schema_string=schema("x", "v"),
        partition_columns=("x",) if partitioned else (),
        configuration={"delta.isolationLevel": level},
    )


def meta_xy(level: str) -> Metadata:
    return Metadata(
        id="table-2",
        schema_string=schema("x", "y", "v"),
        partition_columns=("x", "y"),
        configuration={"delta.isolationLevel": level},
    )


Reads = Sequence[Callable[[OptimisticTransaction], object]]


@dataclass
class Case:
    name: str
    setup: Callable[[str], Sequence[Action]]
    reads: Reads
    concurrent: Sequence[Action]
    actions: Sequence[Action]
    # expected error type per isolation level (None: no conflict)
    expected: dict[str, type[DeltaConcurrentModificationError] | None]
    partition_hint: str | None = None
    concurrent_ops: Sequence[Sequence[Action]] = field(default_factory=list)


def both(
    error: type[DeltaConcurrentModificationError] | None,
) -> dict[str, type[DeltaConcurrentModificationError] | None]:
    return {SER: error, WSER: error}


CASES = [
    # --- OptimisticTransactionSuite ---------------------------------------------------
    Case("append / append", lambda lvl: [meta_x(lvl, False)], [], [add("a")], [add("b")], both(None)),
    Case(
        "disjoint txns",
        lambda lvl: [meta_x(lvl, False)],
        [lambda t: t.txn_version("t1")],
        [SetTransaction("t2", 0, 1234)],
        [],
        both(None),
    ),
    Case(
        "disjoint delete / read",
        lambda lvl: [meta_x(lvl), add("a", x="1"), add("b", x="2")],
        [lambda t: t.filter_files([("x", "=", 2)])],
        [remove("a", x="1")],
        [],
        both(None),
    ),
    Case(
        "disjoint add / read",
        lambda lvl: [meta_x(lvl)],
        [lambda t: t.filter_files([("x", "=", 1)])],
        [add("b", x="2")],
        [],
        both(None),
    ),
    Case(
        "add / read + no write",
        lambda lvl: [meta_x(lvl)],
        [lambda t: t.filter_files([("x", "=", 1)])],
        [add("a", x="1")],
        [],
        both(None),
    ),
    Case(
        "delete / delete",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [lambda t: t.metadata],
        [remove("a")],
        [remove("a")],
        both(ConcurrentDeleteDeleteError),
    ),
    Case(
        "add / read + write",
        lambda lvl: [meta_x(lvl)],
        [lambda t: t.filter_files([("x", "=", 1)])],
        [add("a", x="1")],
        [add("b", x="1")],
        # Under WriteSerializable the concurrent blind append may be ordered first.
        {SER: ConcurrentAppendError, WSER: None},
        partition_hint="[x=1]",
    ),
    Case(
        "add in part=2 / read from part=1,2 and write to part=1",
        lambda lvl: [meta_x(lvl)],
        [lambda t: t.filter_files([("x", "in", [1, 2])])],
        [add("a", x="2")],
        [add("b", x="1")],
        {SER: ConcurrentAppendError, WSER: None},
        partition_hint="[x=2]",
    ),
    Case(
        "delete / read",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [lambda t: t.filter_files()],
        [remove("a")],
        [add("b")],
        both(ConcurrentDeleteReadError),
    ),
    Case(
        "schema change",
        lambda lvl: [meta_x(lvl, False)],
        [lambda t: t.metadata],
        [Metadata(id="table-1", schema_string=schema("foo"))],
        [],
        both(MetadataChangedError),
    ),
    Case(
        "conflicting txns",
        lambda lvl: [meta_x(lvl, False)],
        [lambda t: t.txn_version("t1")],
        [SetTransaction("t1", 0, 1234)],
        [],
        both(ConcurrentTransactionError),
    ),
    Case(
        "upgrade / upgrade",
        lambda lvl: [meta_x(lvl, False)],
        [lambda t: t.metadata],
        [Protocol(1, 3)],
        [Protocol(1, 3)],
        both(ProtocolChangedError),
    ),
    Case(
        "taint whole table",
        lambda lvl: [meta_x(lvl), add("a", x="2")],
        [lambda t: t.filter_files([("x", "=", 1)]), lambda t: t.read_whole_table()],
        [add("b", x="3")],
        [add("c", x="4")],
        {SER: ConcurrentAppendError, WSER: None},
    ),
    Case(
        "taint whole table + concurrent remove",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [lambda t: t.read_whole_table()],
        [remove("a")],
        [add("b")],
        both(ConcurrentDeleteReadError),
    ),
    # --- OptimisticTransactionLegacyTests -------------------------------------------------
    Case(
        "block append against metadata change",
        lambda lvl: [meta_x(lvl, False)],
        [],
        [Metadata(id="table-1", schema_string=schema("x", "v", "w"), configuration={"delta.isolationLevel": SER})],
        [add("a")],
        both(MetadataChangedError),
    ),
    Case(
        "block read+append against append",
        lambda lvl: [meta_x(lvl, False)],
        [lambda t: t.filter_files()],
        [add("a")],
        [add("b")],
        {SER: ConcurrentAppendError, WSER: None},
    ),
    Case(
        "allow blind-append against any data change",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [],
        [remove("a"), add("c")],
        [add("b")],
        both(None),
    ),
    Case(
        "allow concurrent commit on disjoint partitions",
        lambda lvl: [meta_x(lvl), add("a", x="1")],
        [lambda t: t.filter_files([("x", "=", 1)])],
        [add("b", x="2")],
        [remove("a", x="1"), add("c", x="1")],
        both(None),
    ),
    Case(
        "block concurrent commit when read partition was appended to by concurrent write",
        lambda lvl: [meta_x(lvl), add("a", x="1")],
        [lambda t: t.filter_files([("x", "=", 1)])],
        [add("b", x="1")],
        [remove("a", x="1"), add("c", x="1")],
        {SER: ConcurrentAppendError, WSER: None},
        partition_hint="[x=1]",
    ),
    Case(
        "block concurrent commit on full table scan",
        lambda lvl: [meta_x(lvl), add("a", x="1")],
        [lambda t: t.filter_files([("x", "=", 1)]), lambda t: t.filter_files()],
        [add("b", x="2")],
        [remove("a", x="1"), add("c", x="1")],
        {SER: ConcurrentAppendError, WSER: None},
    ),
    Case(
        "allow concurrent commit on disjoint nested partitions",
        lambda lvl: [meta_xy(lvl), add("a", x="1", y="1")],
        [lambda t: t.filter_files([("x", "=", 1), ("y", "=", 1)])],
        [add("b", x="1", y="2")],
        [remove("a", x="1", y="1"), add("c", x="1", y="1")],
        both(None),
    ),
    Case(
        "block concurrent commit on same nested partition",
        lambda lvl: [meta_xy(lvl), add("a", x="1", y="1")],
        [lambda t: t.filter_files([("x", "=", 1), ("y", "=", 1)])],
        [add("b", x="1", y="1")],
        [remove("a", x="1", y="1"), add("c", x="1", y="1")],
        {SER: ConcurrentAppendError, WSER: None},
        partition_hint="[x=1, y=1]",
    ),
    Case(
        "non-blind concurrent write into a read partition conflicts under both levels",
        lambda lvl: [meta_x(lvl), add("a", x="1"), add("z", x="1")],
        [lambda t: t.filter_files([("x", "=", 1)])],
        # the concurrent writer read and rewrote: not a blind append
        [],
        [remove("a", x="1"), add("c", x="1")],
        both(ConcurrentAppendError),
        partition_hint="[x=1]",
        concurrent_ops=[[remove("z", x="1"), add("y", x="1")]],
    ),
    Case(
        "block commit with concurrent removes on same file",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [],
        [remove("a")],
        [remove("a")],
        both(ConcurrentDeleteDeleteError),
    ),
    Case(
        "no data change: allow data rearrange when new files concurrently added",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [lambda t: t.filter_files()],
        [add("b")],
        [remove("a", data_change=False), rearrange_add("a2")],
        both(None),
    ),
    Case(
        "no data change: block data rearrange when concurrently delete removes same file",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [lambda t: t.filter_files()],
        [remove("a")],
        [remove("a", data_change=False), rearrange_add("a2")],
        both(ConcurrentDeleteReadError),
    ),
    Case(
        "compaction vs append in the compacted partition",
        lambda lvl: [meta_x(lvl), add("a", x="1"), add("b", x="1")],
        [lambda t: t.filter_files([("x", "=", 1)])],
        [add("n", x="1")],
        [remove("a", data_change=False, x="1"), remove("b", data_change=False, x="1"), rearrange_add("ab", x="1")],
        both(None),
    ),
    Case(
        "readWholeTable should block concurrent delete",
        lambda lvl: [meta_x(lvl, False), add("a")],
        [lambda t: t.read_whole_table()],
        [remove("a")],
        [],
        both(ConcurrentDeleteReadError),
    ),
    Case(
        "allow concurrent set-txns with different app ids",
        lambda lvl: [meta_x(lvl, False)],
        [lambda t: t.txn_version("t1")],
        [SetTransaction("t2", 1, 1)],
        [SetTransaction("t1", 1, 1)],
        both(None),
    ),
    Case(
        "block concurrent set-txns with the same app id",
        lambda lvl: [meta_x(lvl, False)],
        [lambda t: t.txn_version("t1")],
        [SetTransaction("t1", 1, 1)],
        [SetTransaction("t1", 1, 1)],
        both(ConcurrentTransactionError),
    ),
]


def _run(case: Case, level: str) -> tuple[OptimisticTransaction, BaseException | None, int]:
    uri = f"memory://conflicts-{uuid.uuid4().hex}"
    log = DeltaLog.for_table(uri)
    log.start_transaction().commit(list(case.setup(level)), ManualUpdate())
    txn = log.start_transaction()
    for read in case.reads:
        read(txn)
    other = DeltaLog.for_table(uri)
    winning_version = -1
    for ops in (*case.concurrent_ops, case.concurrent):
        if not ops and case.concurrent_ops:
            continue
        concurrent = other.start_transaction()
        if case.concurrent_ops and ops is not case.concurrent:
            concurrent.filter_files()
        winning_version = concurrent.commit(list(ops), ManualUpdate())
    try:
        txn.commit(list(case.actions), ManualUpdate())
    except DeltaConcurrentModificationError as exc:
        return txn, exc, winning_version
    return txn, None, winning_version


@pytest.mark.parametrize("level", [SER, WSER])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conflict_matrix(case: Case, level: str) -> None:
    txn, error, winning_version = _run(case, level)
    expected = case.expected[level]
    if expected is None:
        assert error is None, f"{case.name} under {level}: unexpected {error!r}"
        assert txn.committed_version == winning_version + 1
        return
    assert error is not None, f"{case.name} under {level}: expected {expected.__name__}, committed"
    assert type(error) is expected, f"{case.name}: expected {expected.__name__}, got {error!r}"
    assert error.winning_version == winning_version
    assert f"version {winning_version}" in str(error)
    if case.partition_hint is not None:
        assert error.partition == case.partition_hint
        assert case.partition_hint in str(error)
    # nothing was written for the losing transaction
    log = DeltaLog.for_table(txn.delta_log.table_uri)
    assert log.update().version == winning_version


def test_conflict_error_names_the_winning_operation() -> None:
    case = next(c for c in CASES if c.name == "delete / read")
    _, error, _ = _run(case, SER)
    assert isinstance(error, ConcurrentDeleteReadError)
    assert error.winning_operation == "Manual Update"
    assert "(Manual Update)" in str(error)
    assert "a was read by this transaction and removed concurrently" in str(error)


# --- Delta's OptimisticTransactionSuite `check(...)` table, run as Delta's harness runs it:
# each setup action in its own commit, the concurrent commit and the tested one as TRUNCATE.
# Expected: (error, winning version, partition hint) as Delta's test asserts, or None.

ExpectedOutcome = tuple[type[DeltaConcurrentModificationError], int, str | None] | None


@dataclass
class SuiteCheck:
    name: str
    reads: Reads
    concurrent: Sequence[Action]
    actions: Sequence[Action]
    expected: ExpectedOutcome
    setup: Sequence[Action] | None = None


def _part_x() -> Metadata:
    return Metadata(schema_string=schema("x", "v"), partition_columns=("x",))


_SUPPORTED = Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "domainMetadata"))

SUITE_CHECKS = [
    SuiteCheck("append / append", [lambda t: t.metadata], [add("a")], [add("b")], None),
    SuiteCheck(
        "disjoint delete / read",
        [lambda t: t.filter_files([("x", "=", 1)])],
        [RemoveFile("a", 4)],
        [],
        None,
        setup=[_part_x(), add("a", x="2")],
    ),
    SuiteCheck(
        "delete / delete", [], [RemoveFile("a", 4)], [RemoveFile("a", 5)], (ConcurrentDeleteDeleteError, 2, None)
    ),
    SuiteCheck(
        "add / read + write",
        [lambda t: t.filter_files([("x", "=", 1)])],
        [add("a", x="1")],
        [add("b", x="1")],
        (ConcurrentAppendError, 1, "[x=1]"),
        setup=[_part_x()],
    ),
    SuiteCheck(
        "delete / read: the hint names the partition of the file read",
        [lambda t: t.filter_files([("x", "=", 1)])],
        [RemoveFile("a", 4)],  # no partition values in the winner's remove
        [],
        (ConcurrentDeleteReadError, 2, "[x=1]"),
        setup=[_part_x(), add("a", x="1")],
    ),
    SuiteCheck(
        "upgrade / upgrade: an unchanged protocol action still conflicts",
        [lambda t: t.metadata],
        [_SUPPORTED],
        [_SUPPORTED],
        (ProtocolChangedError, 2, None),
    ),
    SuiteCheck(
        "taint whole table + concurrent remove",
        [lambda t: t.read_whole_table()],
        [RemoveFile("a", 4)],
        [add("b")],
        (ConcurrentDeleteReadError, 2, None),
        setup=[Metadata(schema_string=schema("x")), add("a")],
    ),
]


@pytest.mark.parametrize("case", SUITE_CHECKS, ids=[c.name for c in SUITE_CHECKS])
def test_delta_suite_checks(case: SuiteCheck) -> None:
    log = DeltaLog.for_table(f"memory://suite-{uuid.uuid4().hex}")
    for action in case.setup if case.setup is not None else [Metadata(schema_string=schema("id")), _SUPPORTED]:
        log.start_transaction().commit([action], ManualUpdate())
    txn = log.start_transaction()
    for read in case.reads:
        read(txn)
    log.start_transaction().commit(list(case.concurrent), Truncate())
    if case.expected is None:
        assert txn.commit(list(case.actions), Truncate()) == log.update().version
        return
    error, version, partition = case.expected
    with pytest.raises(error) as caught:
        txn.commit(list(case.actions), Truncate())
    assert (caught.value.winning_version, caught.value.winning_operation, caught.value.partition) == (
        version,
        "TRUNCATE",
        partition,
    )


def _partitioned_log(*columns: str, level: str = SER) -> DeltaLog:
    log = DeltaLog.for_table(f"memory://hints-{uuid.uuid4().hex}")
    metadata = Metadata(
        schema_string=schema(*columns, "v"),
        partition_columns=columns,
        configuration={"delta.isolationLevel": level},
    )
    log.start_transaction().commit([metadata], ManualUpdate())
    return log


def test_partition_hint_follows_the_partition_schema() -> None:
    """Delta's getPrettyPartitionMessage: the read partition columns in schema order, a null
    value spelled ``null``; for delete-delete, the partition of this transaction's remove."""
    log = _partitioned_log("x", "y")
    txn = log.start_transaction()
    txn.filter_files([("x", "=", 1)])
    log.start_transaction().commit([AddFile("n", {"y": None, "x": "1"}, 1, 1)], ManualUpdate())
    with pytest.raises(ConcurrentAppendError) as appended:
        txn.commit([add("m", x="1", y="3")], ManualUpdate())
    assert appended.value.partition == "[x=1, y=null]"

    log.start_transaction().commit([add("b", x="2", y="2")], ManualUpdate())
    txn = log.start_transaction()
    log.start_transaction().commit([RemoveFile("b", 4, partition_values={})], ManualUpdate())
    with pytest.raises(ConcurrentDeleteDeleteError) as deleted:
        txn.commit([remove("b", x="2", y="2")], ManualUpdate())
    assert deleted.value.partition == "[x=2, y=2]"


def test_partition_hint_names_logical_columns_under_column_mapping() -> None:
    def field(name: str, column_id: int) -> dict[str, object]:
        mapping = {"delta.columnMapping.id": column_id, "delta.columnMapping.physicalName": f"col-{name}"}
        return {"name": name, "type": "integer", "nullable": True, "metadata": mapping}

    log = DeltaLog.for_table(f"memory://hints-{uuid.uuid4().hex}")
    metadata = Metadata(
        schema_string=json.dumps({"type": "struct", "fields": [field("p", 1), field("v", 2)]}),
        partition_columns=("p",),
        configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
    )
    log.start_transaction().commit([metadata], ManualUpdate())
    txn = log.start_transaction()
    txn.filter_files([("p", "=", 1)])
    log.start_transaction().commit([AddFile("n", {"col-p": "1"}, 1, 1)], ManualUpdate())
    with pytest.raises(ConcurrentAppendError) as appended:
        txn.commit([AddFile("m", {"col-p": "1"}, 1, 1)], ManualUpdate())
    assert appended.value.partition == "[p=1]"


@pytest.mark.parametrize(
    ("level", "winner_reads", "expected"),
    [
        (SER, False, ConcurrentAppendError),
        (WSER, False, None),  # the blind append may be ordered first
        (WSER, True, ConcurrentAppendError),
    ],
)
def test_unpartitioned_delete_without_reads_conflicts_with_appends(
    level: str, winner_reads: bool, expected: type[DeltaConcurrentModificationError] | None
) -> None:
    """Delta's getFirstFileMatchingPartitionPredicates: a transaction that is no blind append
    (it removes a file) on an unpartitioned table conflicts with every candidate append, even
    though it recorded no read."""
    log = DeltaLog.for_table(f"memory://unread-{uuid.uuid4().hex}")
    log.start_transaction().commit([meta_x(level, partitioned=False), add("a")], ManualUpdate())
    txn = log.start_transaction()
    winner = log.start_transaction()
    if winner_reads:
        winner.filter_files()
    winner.commit([add("b")], ManualUpdate())
    if expected is None:
        assert txn.commit([remove("a")], ManualUpdate()) == 2
        return
    with pytest.raises(expected) as caught:
        txn.commit([remove("a")], ManualUpdate())
    assert caught.value.winning_version == 1


@pytest.mark.parametrize("column", ["part", "partitionValues"])
@pytest.mark.parametrize(
    ("concurrent", "expected"),
    [
        (lambda c: add("y", **{c: "0"}), ConcurrentAppendError),
        (lambda c: add("y", **{c: "1"}), None),
        (lambda c: RemoveFile("a", None, partition_values={c: "0"}), ConcurrentDeleteDeleteError),
        (lambda c: RemoveFile("b", None, partition_values={c: "1"}), None),
    ],
    ids=["append same partition", "append other partition", "delete same partition", "delete other partition"],
)
def test_dynamic_partition_overwrite_reads(
    column: str,
    concurrent: Callable[[str], Action],
    expected: type[DeltaConcurrentModificationError] | None,
) -> None:
    """Delta's testDynamicPartitionOverwrite (OptimisticTransactionSuite): filterFiles(newFiles)
    records the partitions as read but not the files, so a concurrent delete of a file the
    overwrite removes is a delete-delete conflict."""
    log = DeltaLog.for_table(f"memory://dpo-{uuid.uuid4().hex}")
    log.start_transaction().commit(
        [Metadata(schema_string=schema(column, "value"), partition_columns=(column,))], ManualUpdate()
    )
    log.start_transaction().commit([add("a", **{column: "0"}), add("b", **{column: "1"})], ManualUpdate())
    new_data = [add("x", **{column: "0"})]
    txn = log.start_transaction()
    replaced = txn.filter_files_in_partitions(new_data)
    assert [f.path for f in replaced] == ["a"]
    log.start_transaction().commit([concurrent(column)], ManualUpdate())
    actions = [*(f.remove(deletion_timestamp=5) for f in replaced), *new_data]
    if expected is None:
        assert txn.commit(actions, ManualUpdate()) == 3
        return
    with pytest.raises(expected) as caught:
        txn.commit(actions, ManualUpdate())
    assert (caught.value.winning_version, caught.value.partition) == (2, f"[{column}=0]")


def test_dynamic_partition_overwrite_finds_partitions_by_typed_value() -> None:
    """filterFiles(newFiles) compares partition values as their column's type, null-safely:
    ``01`` is the int partition ``1``; an empty string is the null partition."""
    log = DeltaLog.for_table(f"memory://dpo-typed-{uuid.uuid4().hex}")
    meta = Metadata(schema_string=schema("p", "value"), partition_columns=("p",))
    log.start_transaction().commit([meta], ManualUpdate())
    existing = [add("a", p="01"), add("b", p="2"), add("c", p=None), add("d", p="")]
    log.start_transaction().commit(existing, ManualUpdate())
    txn = log.start_transaction()
    assert sorted(f.path for f in txn.filter_files_in_partitions([add("x", p="1")])) == ["a"]
    txn = log.start_transaction()
    assert sorted(f.path for f in txn.filter_files_in_partitions([add("y", p=None)])) == ["c", "d"]
    txn = log.start_transaction()
    assert sorted(f.path for f in txn.filter_files_in_partitions([add("z", p="2"), add("w", p="")])) == ["b", "c", "d"]


@pytest.mark.parametrize(
    ("domain", "expected"),
    [("app.domain", ConcurrentTransactionError), ("app.other", None), ("delta.rowTracking", None)],
)
def test_domain_metadata_conflicts(domain: str, expected: type[DeltaConcurrentModificationError] | None) -> None:
    """Delta's checkIfDomainMetadataConflict: a domain both commits set fails the transaction,
    except the row tracking domain (its resolution keeps this transaction's action)."""
    log = DeltaLog.for_table(f"memory://domains-{uuid.uuid4().hex}")
    metadata = Metadata(schema_string=schema("id"), configuration={"delta.feature.domainMetadata": "supported"})
    log.start_transaction().commit([metadata], ManualUpdate())
    txn = log.start_transaction()
    winning = "delta.rowTracking" if domain == "delta.rowTracking" else "app.domain"
    log.start_transaction().commit([DomainMetadata(winning, '{"rowIdHighWaterMark":5}')], ManualUpdate())
    ours = DomainMetadata(domain, '{"rowIdHighWaterMark":3}', removed=domain == "delta.rowTracking")
    if expected is None:
        assert txn.commit([ours], ManualUpdate()) == 2
        assert (domain in log.update().domain_metadata) is (domain == "app.other")  # ours kept, as given
        return
    with pytest.raises(expected, match=r"conflicting metadata domain app\.domain"):
        txn.commit([ours], ManualUpdate())
