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


def test_a_protocol_this_client_cannot_write_certainly_failed() -> None:
    """The write-support check runs before anything is written (prepare, and on each winning
    commit's protocol): the refusal proves no version landed, so a writer deletes its files
    (EvolvabilitySuite: a table of a newer writer)."""
    store = MemoryLogStore()
    log = DeltaLog.for_table(f"memory://future-{uuid.uuid4().hex}", logstore=store)
    create(log)
    future = Protocol(1, 7, writer_features=("appendOnly", "futureFeature", "invariants"))
    store.write(log.commit_uri(1), [action_to_line(future)])
    with pytest.raises(UnsupportedFeatureError) as info:
        DeltaLog.for_table(log.table_uri, logstore=store).start_transaction().commit([add("f")], Write())
    assert commit_certainly_failed(info.value)
    stale = log.start_transaction()  # read version 0; the winner at version 1 needs the feature
    stale.snapshot  # noqa: B018 -- the read version is fixed when the snapshot is taken
    with pytest.raises(UnsupportedFeatureError) as winner:
        stale.commit([add("g")], Write())
    assert commit_certainly_failed(winner.value)
    assert not commit_certainly_failed(UnsupportedFeatureError(["futureFeature"], operation="read"))
