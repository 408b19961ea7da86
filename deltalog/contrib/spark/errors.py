"""Errors of the PySpark integration."""

from __future__ import annotations

from deltalog.errors import DeltaError
from deltalog.logstores.errors import AmbiguousWriteError
from deltalog.txn.vacuum import VacuumRetentionError

__all__ = [
    "DeltaAnalysisError",
    "DeltaSparkError",
    "InvalidWriteOptionError",
    "MergeCardinalityError",
    "ReplaceWhereMismatchError",
    "SchemaMismatchError",
    "TableAlreadyExistsError",
    "UnknownWriteOptionError",
    "VacuumRetentionError",
    "WriteOutcomeUnknownError",
]


class DeltaSparkError(DeltaError):
    """Base class of the errors raised by ``deltalog.contrib.spark``."""


class InvalidWriteOptionError(DeltaSparkError, ValueError):
    """A write option has a value deltalog cannot use (the message names it and the fix)."""


class UnknownWriteOptionError(InvalidWriteOptionError):
    """A write was given an option deltalog does not know (not a write option, table
    property or storage option); it is refused by name instead of being ignored."""


class ReplaceWhereMismatchError(DeltaSparkError, ValueError):
    """Rows written with ``replaceWhere`` do not all satisfy it (Delta's
    ``DELTA_REPLACE_WHERE_MISMATCH``); nothing was committed."""

    def __init__(self, predicate: str, violations: int, values: dict[str, object]) -> None:
        shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
        super().__init__(
            f"DELTA_REPLACE_WHERE_MISMATCH: written data does not conform to the partial table overwrite "
            f"condition {predicate!r}: {violations} row(s) do not satisfy it (false or NULL), the first has "
            f"{shown}. Filter the DataFrame by the same predicate; nothing was committed."
        )
        self.predicate = predicate
        self.violations = violations
        self.values = values


class SchemaMismatchError(DeltaSparkError, ValueError):
    """The DataFrame's schema does not match the table's; use mergeSchema or overwriteSchema."""


class TableAlreadyExistsError(DeltaSparkError, FileExistsError):
    """``saveMode=errorifexists`` (or ``DeltaTable.create``) found an existing table."""


class DeltaAnalysisError(DeltaSparkError, ValueError):
    """A condition or expression of a table operation cannot be used as given."""


class MergeCardinalityError(DeltaSparkError):
    """A MERGE with update or delete clauses matched one target row with several source
    rows (Delta's ``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``); nothing was
    committed."""

    error_class = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"


class WriteOutcomeUnknownError(DeltaSparkError, AmbiguousWriteError):
    """A commit failed in a way that does not prove it did not land (an ambiguous write, a
    failed read-back): the version may exist, so the written data files were KEPT. Look for
    ``txn_id`` in the table's history before writing again; if it is not there, the kept
    files are orphans that VACUUM removes."""

    def __init__(self, table: str, txn_id: str, num_files: int, cause: BaseException) -> None:
        DeltaError.__init__(
            self,
            f"the outcome of the commit to {table} is unknown ({type(cause).__name__}: {cause}); it may have "
            f"landed, so its {num_files} written file(s) were kept. Look for txnId {txn_id} in the table's "
            "history (DESCRIBE HISTORY / DeltaTable.history()) before running the write again",
        )
        self.path = table
        self.table = table
        self.txn_id = txn_id
        self.num_files = num_files
