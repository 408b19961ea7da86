"""Property: concurrent transactions produce a history equivalent to a serial order the
isolation level allows.

Hypothesis draws a schedule of 2-5 transactions on a memory table partitioned by ``p``
(blind appends, read-then-appends, deletes, compactions, metadata changes), each reading
one partition (``filter_files``) at its start and committing at a random later point of
the interleaving, under Serializable or WriteSerializable.

The serial order is the order of commit versions. For every committed transaction:

* nothing in the winning commits (between its read version and its commit version) is a
  real conflict for it: no metadata change, no removal of a file it read or removes, and
  no data-changing add in the partition it read -- except, under WriteSerializable, adds
  of blind appends (which serialize after it), and except for commits that Delta runs
  under snapshot isolation: no dataChange=true file action and, under WriteSerializable,
  an operation that does not change data (a compaction; a DELETE that found nothing
  stays WriteSerializable), which serialize anywhere;
* hence, for Serializable: what it read at its read version equals what the table held in
  its partition just before its commit version; for WriteSerializable the same modulo
  blind appends. Both are checked directly, by time travel.

And every rejected transaction had a real conflict by the same rules.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog.txn.commit.commit_errors import DeltaConcurrentModificationError
from deltalog.txn.commit.operations import CreateTable, Delete, Optimize, SetTableProperties, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata, RemoveFile

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)
KINDS = ("blind_append", "read_append", "delete", "compact", "metadata")
PARTITIONS = ("a", "b", "c")


@dataclass
class Txn:
    index: int
    kind: str
    partition: str
    handle: Any = None
    read_version: int = -1
    read: frozenset[str] = frozenset()
    removes: frozenset[str] = frozenset()
    version: int | None = None
    error: BaseException | None = None
    latest_at_failure: int = -1
    adds: list[str] = field(default_factory=list)
    data_change: bool = False  # commits a file action with dataChange=true


@dataclass(frozen=True)
class CommitFacts:
    metadata_changed: bool
    blind_append: bool
    data_adds: dict[str, str]  # path -> partition, dataChange=true adds
    removes: frozenset[str]


def _facts(log: DeltaLog, version: int) -> CommitFacts:
    actions = log.read_commit(version)
    info = next((a for a in actions if hasattr(a, "is_blind_append")), None)
    return CommitFacts(
        metadata_changed=any(isinstance(a, Metadata) for a in actions),
        blind_append=bool(getattr(info, "is_blind_append", False)),
        data_adds={a.path: a.partition_values["p"] or "" for a in actions if isinstance(a, AddFile) and a.data_change},
        removes=frozenset(a.path for a in actions if isinstance(a, RemoveFile)),
    )


def _conflicts(txn: Txn, winner: CommitFacts, level: str) -> bool:
    """Whether ``winner`` is a real conflict for ``txn`` (Delta's rules, restated)."""
    if winner.metadata_changed:
        return True
    if txn.read & winner.removes:
        return True  # it read something that is gone
    if txn.removes & winner.removes:
        return True  # both delete the same file
    if txn.kind in ("blind_append", "metadata"):
        return False  # read nothing
    if not txn.data_change and (level == "Serializable" or txn.kind == "compact"):
        # no dataChange=true file action: Delta commits it under snapshot isolation, so it
        # serializes anywhere -- under WriteSerializable only if the operation does not change
        # data either (OPTIMIZE); a DELETE that found nothing keeps the table's level and
        # conflicts with a non-blind add into the partition it read
        return False
    if level == "WriteSerializable" and winner.blind_append:
        return False  # a blind append may serialize after us
    return any(part == txn.partition for part in winner.data_adds.values())


def _live(log: DeltaLog, version: int, partition: str) -> frozenset[str]:
    return frozenset(f.path for f in log.snapshot(version).files if f.partition_values.get("p") == partition)


def _start(uri: str, txn: Txn) -> None:
    log = DeltaLog.for_table(uri)
    handle = log.start_transaction()
    txn.handle = handle
    txn.read_version = handle.read_version
    if txn.kind in ("read_append", "delete", "compact"):
        files = handle.filter_files([("p", "=", txn.partition)])
        txn.read = frozenset(f.path for f in files)


def _commit(uri: str, txn: Txn) -> None:
    handle = txn.handle
    name = f"p={txn.partition}/t{txn.index}-{uuid.uuid4().hex[:6]}.parquet"
    now = 1_700_000_000_000
    actions: list[Any] = []
    operation: Any
    if txn.kind in ("blind_append", "read_append"):
        actions = [AddFile(name, {"p": txn.partition}, 10, now)]
        operation = Write()
    elif txn.kind == "delete":
        actions = [RemoveFile(p, now, True, partition_values={"p": txn.partition}) for p in sorted(txn.read)]
        operation = Delete(predicate=[f"p = '{txn.partition}'"])
    elif txn.kind == "compact":
        actions = [RemoveFile(p, now, False, partition_values={"p": txn.partition}) for p in sorted(txn.read)]
        if txn.read:
            actions.append(AddFile(name, {"p": txn.partition}, 10 * len(txn.read), now, data_change=False))
        operation = Optimize(predicate=[f"p = '{txn.partition}'"])
    else:
        md = handle.metadata
        handle.update_metadata(dc_replace(md, configuration={**md.configuration, "test.txn": str(txn.index)}))
        operation = SetTableProperties({"test.txn": str(txn.index)})
    txn.removes = frozenset(a.path for a in actions if isinstance(a, RemoveFile))
    txn.adds = [a.path for a in actions if isinstance(a, AddFile)]
    txn.data_change = any(isinstance(a, (AddFile, RemoveFile)) and a.data_change for a in actions)
    try:
        txn.version = handle.commit(actions, operation)
    except DeltaConcurrentModificationError as exc:
        txn.error = exc
        txn.latest_at_failure = DeltaLog.for_table(uri).update().version


def _create(level: str) -> str:
    uri = f"memory://serial-{uuid.uuid4().hex}"
    log = DeltaLog.for_table(uri)
    txn = log.start_transaction()
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            schema_string=SCHEMA,
            partition_columns=("p",),
            configuration={"delta.isolationLevel": level},
        )
    )
    txn.commit([], CreateTable(partition_by=["p"]))
    seed = [AddFile(f"p={p}/seed-{i}.parquet", {"p": p}, 10, 1) for p in PARTITIONS for i in range(2)]
    log.start_transaction().commit(seed, Write())
    return uri


@st.composite
def schedules(draw: Any) -> tuple[str, list[Txn], list[int]]:
    n = draw(st.integers(min_value=2, max_value=5))
    txns = [Txn(i, draw(st.sampled_from(KINDS)), draw(st.sampled_from(PARTITIONS))) for i in range(n)]
    order = draw(st.permutations([i for i in range(n) for _ in (0, 1)]))
    level = draw(st.sampled_from(["Serializable", "WriteSerializable"]))
    return level, txns, list(order)


def _check(uri: str, level: str, txns: list[Txn]) -> None:
    log = DeltaLog.for_table(uri)
    facts = {v: _facts(log, v) for v in log.list_commit_versions(0)}
    committed = sorted((t for t in txns if t.version is not None), key=lambda t: t.version or 0)
    assert sorted(t.version or 0 for t in committed) == list(range(2, 2 + len(committed)))
    for t in committed:
        assert t.version is not None
        winners = range(t.read_version + 1, t.version)
        real = [v for v in winners if _conflicts(t, facts[v], level)]
        assert not real, f"txn {t.index} ({t.kind}) committed over conflicting versions {real}"
        if t.kind in ("read_append", "delete") and t.data_change:
            before = _live(log, t.version - 1, t.partition)
            if level == "WriteSerializable":
                before -= {p for v in winners if facts[v].blind_append for p in facts[v].data_adds}
            assert before == t.read, (
                f"txn {t.index} ({t.kind}) read {sorted(t.read)}, serial order says {sorted(before)}"
            )
        if t.removes:  # what it removes was still there: nothing is removed twice
            assert t.removes <= frozenset(f.path for f in log.snapshot(t.version - 1).files)
    for t in txns:
        if t.error is None:
            continue
        winners = range(t.read_version + 1, t.latest_at_failure + 1)
        assert any(_conflicts(t, facts[v], level) for v in winners), (
            f"txn {t.index} ({t.kind}) was rejected ({type(t.error).__name__}) without a real conflict"
        )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_interleavings_are_equivalent_to_a_serial_order(schedule: tuple[str, list[Txn], list[int]]) -> None:
    level, txns, order = schedule
    uri = _create(level)
    started: set[int] = set()
    for index in order:
        txn = txns[index]
        if index not in started:
            started.add(index)
            _start(uri, txn)
        else:
            _commit(uri, txn)
    _check(uri, level, txns)
