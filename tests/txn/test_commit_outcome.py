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
