"""Errors of the transaction engine.

Two families:

- :class:`DeltaConcurrentModificationError`: another writer committed first and this
  transaction cannot be serialized after it (Delta's ``DeltaConcurrentModificationException``
  and its subclasses, same names with ``Error``), plus :class:`CommitFailedError` when the
  attempts ran out. Each names the winning version and operation, and the partition when
  known. Retrying the whole transaction (re-reading the table) is the usual remedy.
- :class:`InvalidTransactionError`: the transaction itself is wrong (committed twice, two
  metadata changes, duplicate files, an append-only violation, bad metadata, ...). Nothing
  was written; fix the caller.
"""

from __future__ import annotations

from typing import ClassVar

from deltalog.txn.protocol.errors import DeltaLogError

__all__ = [
    "AddingDeletionVectorsDisallowedError",
    "AppendOnlyViolationError",
    "CommitFailedError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "ConcurrentWriteError",
    "ConstraintsNotCheckedError",
    "DeltaConcurrentModificationError",
    "DuplicateFileActionError",
    "InvalidMetadataError",
    "InvalidTransactionError",
    "MetadataAlreadyChangedError",
    "MetadataChangedError",
    "MissingMetadataError",
    "ProtocolChangedError",
    "TransactionAlreadyCommittedError",
    "commit_certainly_failed",
]


class DeltaConcurrentModificationError(DeltaLogError):
    """A concurrent commit conflicts with this transaction."""

    conflict: str = "a concurrent transaction"
    advice: str = "Refresh the table and try the operation again."
    #: Delta's error class (its exception's ``getErrorClass``), which starts the message
    delta_error_class: ClassVar[str] = ""
    #: the class has Delta's ``.WITH_PARTITION_HINT`` / ``.WITHOUT_HINT`` sub-classes
    hinted: ClassVar[bool] = False

    def __init__(
        self,
        detail: str,
        *,
        winning_version: int | None = None,
        winning_operation: str | None = None,
        partition: str | None = None,
        table: str | None = None,
    ) -> None:
        self.error_class = self.delta_error_class
        if self.hinted:
            self.error_class += ".WITH_PARTITION_HINT" if partition else ".WITHOUT_HINT"
        parts = [f"{'[' + self.error_class + '] ' if self.error_class else ''}{self.conflict}: {detail}"]
        if winning_version is not None:
            op = f" ({winning_operation})" if winning_operation else ""
            parts.append(f"conflicting commit: version {winning_version}{op}")
        if partition:
            parts.append(f"partition: {partition}")
        if table:
            parts.append(f"table: {table}")
        super().__init__(". ".join(parts) + ". " + self.advice)
        self.detail = detail
        self.winning_version = winning_version
        self.winning_operation = winning_operation
        self.partition = partition
        self.table = table


class ConcurrentWriteError(DeltaConcurrentModificationError):
    """A concurrent transaction wrote data this transaction depends on (generic case)."""

    delta_error_class = "DELTA_CONCURRENT_WRITE"

    conflict = "ConcurrentWriteError: a concurrent transaction has written new data since this one read the table"


class ConcurrentAppendError(DeltaConcurrentModificationError):
    """Files were added to data (partitions) this transaction read."""

    delta_error_class = "DELTA_CONCURRENT_APPEND"
    hinted = True

    conflict = "ConcurrentAppendError: files were added to the data read by this transaction by a concurrent update"
    advice = (
        "Refresh the table and try again; to avoid it, read only the partitions you write "
        "(explicit partition filters), or use WriteSerializable isolation for blind appends."
    )


class ConcurrentDeleteReadError(DeltaConcurrentModificationError):
    """A file this transaction read was removed by a concurrent commit."""

    delta_error_class = "DELTA_CONCURRENT_DELETE_READ"
    hinted = True

    conflict = (
        "ConcurrentDeleteReadError: "
        "this transaction attempted to read one or more files that were deleted by a concurrent update"
    )


class ConcurrentDeleteDeleteError(DeltaConcurrentModificationError):
    """A file this transaction removes was removed by a concurrent commit too."""

    delta_error_class = "DELTA_CONCURRENT_DELETE_DELETE"
    hinted = True

    conflict = (
        "ConcurrentDeleteDeleteError: "
        "this transaction attempted to delete one or more files that were deleted by a concurrent update"
    )


class MetadataChangedError(DeltaConcurrentModificationError):
    """The table's metadata (schema, properties, partitioning) changed concurrently."""

    delta_error_class = "DELTA_METADATA_CHANGED"

    conflict = "MetadataChangedError: the metadata of the Delta table has been changed by a concurrent update"


class ProtocolChangedError(DeltaConcurrentModificationError):
    """The table's protocol changed concurrently (or two writers created the table)."""

    delta_error_class = "DELTA_PROTOCOL_CHANGED"

    conflict = "ProtocolChangedError: the protocol version of the Delta table has been changed by a concurrent update"


class ConcurrentTransactionError(DeltaConcurrentModificationError):
    """An application transaction id or a metadata domain this transaction uses was
    updated concurrently (e.g. the same streaming query ran twice)."""

    delta_error_class = "DELTA_CONCURRENT_TRANSACTION"

    conflict = (
        "ConcurrentTransactionError: "
        "a concurrent transaction updated the same application transaction or metadata domain"
    )
    advice = "Make sure only one instance of the query or job writes with this application id."


class DropFeatureConflictError(DeltaConcurrentModificationError):
    """A feature drop's protocol downgrade no longer holds after a concurrent commit (it
    used the feature again); Delta's ``DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL``."""

    delta_error_class = "DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL"

    conflict: str = "Cannot drop feature because a concurrent transaction modified the table"
    advice: str = "Please try the operation again."


class CommitFailedError(DeltaConcurrentModificationError):
    """The commit did not succeed within the allowed number of attempts."""

    conflict = "CommitFailedError: the commit did not succeed"
    advice = "Raise max_commit_attempts, reduce contention on the table, or use a commit lock."

    def __init__(
        self,
        detail: str,
        *,
        attempts: int,
        read_version: int,
        last_attempted_version: int,
        elapsed_ms: float,
        table: str | None = None,
        outcome_unknown: bool = False,
    ) -> None:
        super().__init__(
            f"{detail} (attempts: {attempts}, read version: {read_version}, "
            f"last attempted version: {last_attempted_version}, time spent: {elapsed_ms:.0f} ms)"
            + ("; an earlier attempt has an unknown outcome and may still land" if outcome_unknown else ""),
            table=table,
        )
        #: True when an earlier attempt's write had an unknown outcome (it may have landed).
        self.outcome_unknown = outcome_unknown
        self.attempts = attempts
        self.read_version = read_version
        self.last_attempted_version = last_attempted_version
        self.elapsed_ms = elapsed_ms


class InvalidTransactionError(DeltaLogError, ValueError):
    """The transaction is not valid as it stands; nothing was written."""


class TransactionAlreadyCommittedError(InvalidTransactionError):
    """``commit`` was called a second time on one transaction."""


class MetadataAlreadyChangedError(InvalidTransactionError):
    """A second metadata change in one transaction (or a change after data was written)."""


class MissingMetadataError(InvalidTransactionError):
    """The first commit of a table carries no metadata."""


class DuplicateFileActionError(InvalidTransactionError):
    """Two add/remove actions for one logical file, or two protocol/metadata actions."""


class AppendOnlyViolationError(InvalidTransactionError):
    """A ``dataChange=true`` remove on a table with ``delta.appendOnly=true``."""


class _DeletionVectorAddError(InvalidTransactionError):
    """An ``add`` with a deletion vector that the commit refuses; ``message`` names the file
    as ``{path}``."""

    error_class: ClassVar[str] = ""
    message: ClassVar[str] = ""

    def __init__(self, path: str) -> None:
        super().__init__(f"[{self.error_class}] " + self.message.format(path=path))
        self.path = path


class AddingDeletionVectorsDisallowedError(_DeletionVectorAddError):
    """An ``add`` carries a deletion vector on a table that does not allow new ones (Delta's
    ``DELTA_ADDING_DELETION_VECTORS_DISALLOWED``): the protocol lacks ``deletionVectors`` or
    ``delta.enableDeletionVectors`` is not ``true``, and the operation is not an in-place
    metadata update (ROW TRACKING BACKFILL, DROP FEATURE)."""

    error_class = "DELTA_ADDING_DELETION_VECTORS_DISALLOWED"
    message = (
        "The current operation attempted to add a deletion vector ({path}) to a table that does not permit the "
        "creation of new deletion vectors: set 'delta.enableDeletionVectors' to 'true' first (for a CLONE, do not "
        "turn it off in its properties); nothing was written."
    )


class DeletionVectorMissingNumRecordsError(_DeletionVectorAddError):
    """An ``add`` carries a deletion vector but no ``numRecords`` in its statistics, which
    the protocol requires of such a file (Delta's ``DELTA_DELETION_VECTOR_MISSING_NUM_RECORDS``):
    readers subtract the vector's cardinality from it to count the live rows."""

    error_class = "DELTA_DELETION_VECTOR_MISSING_NUM_RECORDS"
    message = (
        "The add action for {path} has a deletion vector but its statistics carry no numRecords, which the "
        "protocol requires of a file with a deletion vector; write the file's statistics (at least numRecords) "
        "with it. Nothing was committed."
    )


class DeletionVectorTightBoundsError(_DeletionVectorAddError):
    """An ``add`` of the operation adds a deletion vector but its statistics do not say
    ``tightBounds: false`` (Delta's ``DELTA_ADDING_DELETION_VECTORS_WITH_TIGHT_BOUNDS_DISALLOWED``):
    the bounds still count the deleted rows, so they are no longer tight."""

    error_class = "DELTA_ADDING_DELETION_VECTORS_WITH_TIGHT_BOUNDS_DISALLOWED"
    message = (
        "The add action for {path} adds a deletion vector but its statistics do not set tightBounds to false: "
        "the file's bounds count the rows the deletion vector deletes. Write the statistics with tightBounds "
        "false. Nothing was committed."
    )


class InvalidMetadataError(InvalidTransactionError):
    """New metadata failed verification (duplicate columns, bad partition columns, ...)."""


class NestedNotNullConstraintError(InvalidMetadataError):
    """A schema change puts a NOT NULL inside an array's elements or a map's keys or values,
    which no writer can enforce (Delta's ``DELTA_NESTED_NOT_NULL_CONSTRAINT``, raised by
    ``removeUnenforceableNotNullConstraints``)."""

    error_class = "DELTA_NESTED_NOT_NULL_CONSTRAINT"

    def __init__(self, parent: str, nest_type: str, nested_json: str, setting: str) -> None:
        super().__init__(
            f"[{self.error_class}] The {nest_type} type of the field {parent} contains a NOT NULL constraint. "
            "Delta does not support NOT NULL constraints nested within arrays or maps. To suppress this error "
            f"and silently ignore the specified constraints, set {setting} = true. Parsed {nest_type} type: "
            f"{nested_json}. Nothing was committed."
        )
        self.parent = parent
        self.nest_type = nest_type


class ConstraintsNotCheckedError(InvalidTransactionError):
    """Data files were added to a table with CHECK constraints or column invariants,
    and the writer did not declare that it checked them."""


def commit_certainly_failed(exc: BaseException, may_have_landed: bool = True) -> bool:
    """Whether an error out of :meth:`OptimisticTransaction.commit` proves that no version
    was written: a conflict, or an invalid transaction (both raised before or instead of
    writing ``N.json``), but not a :class:`CommitFailedError` after an attempt of unknown
    outcome. Anything else (an ``AmbiguousWriteError``, a failed read-back, an I/O error)
    means the commit may have landed: its data files must be kept. IcebergCompat's checks
    (:class:`~deltalog.txn.protocol.iceberg_compat.IcebergCompatError`) refuse a commit before
    anything is written too. ``may_have_landed``: the transaction's
    :attr:`~deltalog.txn.commit.transaction.OptimisticTransaction.may_have_landed`; when False
    (nothing was written: a check of the table or the actions refused the commit, e.g. a
    ``RowTrackingError``, or the write-support check of the protocol, in prepare and on each
    winning commit's protocol), any error is a certain failure."""
    from deltalog.txn.protocol.iceberg_compat import IcebergCompatError

    if not may_have_landed:
        return True
    if isinstance(exc, CommitFailedError):
        return not exc.outcome_unknown
    return isinstance(exc, (DeltaConcurrentModificationError, InvalidTransactionError, IcebergCompatError))
