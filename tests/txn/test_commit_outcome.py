"""Whether an error out of ``commit`` proves that no version was written
(:func:`commit_certainly_failed`): what a writer needs to know before deleting the data files
its commit would have added."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest

from deltalog.logstores.errors import AmbiguousWriteError, TransientStorageError
from deltalog.logstores.memory import MemoryLogStore
from deltalog.txn.commit.commit_errors import (
    CommitFailedError,
    ConcurrentAppendError,
    DuplicateFileActionError,
    MetadataChangedError,
    commit_certainly_failed,
)
from deltalog.txn.commit.operations import Write
from deltalog.txn.commit.settings import EngineSettings
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Protocol, action_to_line
from deltalog.txn.protocol.errors import UnsupportedFeatureError
from tests.txn.test_transaction import add, create


class _NeverAnsweringStore(MemoryLogStore):
    """Fault injection: every write of version 1 has an unknown outcome and never shows up."""

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        if path.endswith(f"{1:020d}.json"):
            raise AmbiguousWriteError(path, TimeoutError("no answer"))
        super().write(path, lines, overwrite)


def test_giving_up_after_ambiguous_attempts_is_an_unknown_outcome() -> None:
    log = DeltaLog.for_table(f"memory://never-{uuid.uuid4().hex}", logstore=_NeverAnsweringStore())
    create(log)
    txn = log.start_transaction(settings=EngineSettings(max_commit_attempts=2, backoff_base_ms=0.1))
    with pytest.raises(CommitFailedError) as info:
        txn.commit([add("f")], Write())
    assert info.value.outcome_unknown
    assert "may still land" in str(info.value)
    assert not commit_certainly_failed(info.value)


def test_conflicts_and_invalid_transactions_certainly_failed_io_errors_may_have_landed() -> None:
    certain = [
        ConcurrentAppendError("a file was added", winning_version=3),
        MetadataChangedError("schema changed"),
        DuplicateFileActionError("twice"),
        CommitFailedError("the table kept moving", attempts=3, read_version=0, last_attempted_version=4, elapsed_ms=1),
    ]
    unknown = [
        AmbiguousWriteError("x.json", TimeoutError("lost")),
        TransientStorageError("503"),
        OSError("connection reset"),
        KeyboardInterrupt(),
    ]
    assert all(commit_certainly_failed(e) for e in certain)
    assert not any(commit_certainly_failed(e) for e in unknown)


def test_an_error_before_the_first_write_is_a_certain_failure_one_after_an_unknown_attempt_is_not() -> None:
    """A commit refused before any version was written (here a log another engine left with
    ``delta.enableRowTracking`` and ``delta.rowTrackingSuspended`` both true) certainly
    failed whatever the error; once an attempt's outcome stayed unknown, it may have landed."""
    from dataclasses import replace

    from deltalog.txn.protocol.actions import CommitInfo, action_to_line
    from deltalog.txn.protocol.errors import RowTrackingError

    log = DeltaLog.for_table(f"memory://refused-{uuid.uuid4().hex}")
    create(log, **{"delta.enableRowTracking": "true"})
    read = log.update()
    both = {**read.metadata.configuration, "delta.rowTrackingSuspended": "true"}
    metadata = replace(read.metadata, configuration=both)
    lines = [action_to_line(CommitInfo(timestamp=1, operation="X")), action_to_line(metadata)]
    log.store.write(log.commit_uri(1), lines)
    txn = log.start_transaction()
    with pytest.raises(RowTrackingError, match="cannot both be true") as refused:
        txn.commit([add("f")], Write())
    assert not txn.may_have_landed and commit_certainly_failed(refused.value, txn.may_have_landed)
    never = DeltaLog.for_table(f"memory://never-{uuid.uuid4().hex}", logstore=_NeverAnsweringStore())
    create(never)
    txn = never.start_transaction(settings=EngineSettings(max_commit_attempts=2, backoff_base_ms=0.1))
    with pytest.raises(CommitFailedError) as unknown:
        txn.commit([add("f")], Write())
    assert txn.may_have_landed and not commit_certainly_failed(unknown.value, txn.may_have_landed)


def test_a_protocol_this_client_cannot_write_certainly_failed() -> None:
    """The write-support check runs before anything is written (prepare, and on each winning
    commit's protocol): the refusal proves no version landed, so a writer deletes its files
    (EvolvabilitySuite: a table of a newer writer)."""
    store = MemoryLogStore()
    log = DeltaLog.for_table(f"memory://future-{uuid.uuid4().hex}", logstore=store)
    create(log)
    future = Protocol(1, 7, writer_features=("appendOnly", "futureFeature", "invariants"))
    store.write(log.commit_uri(1), [action_to_line(future)])
    txn = DeltaLog.for_table(log.table_uri, logstore=store).start_transaction()
    with pytest.raises(UnsupportedFeatureError) as info:
        txn.commit([add("f")], Write())
    assert not txn.may_have_landed and commit_certainly_failed(info.value, txn.may_have_landed)
    stale = log.start_transaction()  # read version 0; the winner at version 1 needs the feature
    stale.snapshot  # noqa: B018 -- the read version is fixed when the snapshot is taken
    with pytest.raises(UnsupportedFeatureError) as winner:
        stale.commit([add("g")], Write())
    assert not stale.may_have_landed and commit_certainly_failed(winner.value, stale.may_have_landed)
