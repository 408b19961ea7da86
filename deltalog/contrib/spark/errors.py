"""Errors of the PySpark integration."""

from __future__ import annotations

from deltalog.errors import DeltaError
from deltalog.txn.vacuum import VacuumRetentionError

__all__ = [
    "DeltaAnalysisError",
    "DeltaSparkError",
    "InvalidWriteOptionError",
    "MergeCardinalityError",
    "SchemaMismatchError",
    "TableAlreadyExistsError",
    "VacuumRetentionError",
]


class DeltaSparkError(DeltaError):
    """Base class of the errors raised by ``deltalog.contrib.spark``."""


class InvalidWriteOptionError(DeltaSparkError, ValueError):
    """A write option has a value deltalog cannot use (the message names it and the fix)."""


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
