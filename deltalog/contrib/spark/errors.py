"""Errors of the PySpark integration."""

from __future__ import annotations

from deltalog.errors import DeltaError
from deltalog.logstores.errors import AmbiguousWriteError
from deltalog.txn.commands.vacuum import VacuumRetentionError
from deltalog.txn.protocol.errors import SchemaMismatchError as ProtocolSchemaMismatchError
from deltalog.txn.protocol.errors import VersionNotFoundError

__all__ = [
    "CastOverflowError",
    "DeltaAnalysisError",
    "DeltaSourceChangedDataError",
    "DeltaSourceDataLossError",
    "DeltaSourceIgnoreChangesError",
    "DeltaSourceIgnoreDeleteError",
    "DeltaSourceMetadataEvolutionError",
    "DeltaSourceSchemaChangedError",
    "DeltaSourceSchemaEvolutionBlockedError",
    "DeltaSourceSchemaLogError",
    "DeltaSourceTableChangedError",
    "DeltaSparkError",
    "InvalidWriteOptionError",
    "MergeCardinalityError",
    "MergeMaterializeSourceFailedError",
    "NativeWriteUnsupportedError",
    "ReplaceWhereMismatchError",
    "SchemaMismatchError",
    "StreamWriteNullTypeError",
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


class SchemaMismatchError(DeltaSparkError, ProtocolSchemaMismatchError):
    """The DataFrame's schema does not match the table's; use mergeSchema or overwriteSchema."""


class TableAlreadyExistsError(DeltaSparkError, FileExistsError):
    """``saveMode=errorifexists`` (or ``DeltaTable.create``) found an existing table."""


class DeltaAnalysisError(DeltaSparkError, ValueError):
    """A condition or expression of a table operation cannot be used as given."""


class MergeCardinalityError(DeltaSparkError):
    """A MERGE that is not insert-only matched one target row with several source rows
    (Delta's ``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``); nothing was
    committed."""

    error_class = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"


class MergeMaterializeSourceFailedError(DeltaSparkError):
    """A MERGE lost the blocks of its materialized source (an executor gone) in every one of
    its ``spark.databricks.delta.merge.materializeSource.maxAttempts`` attempts (Delta's
    ``DELTA_MERGE_MATERIALIZE_SOURCE_FAILED_REPEATEDLY``); nothing was committed."""

    error_class = "DELTA_MERGE_MATERIALIZE_SOURCE_FAILED_REPEATEDLY"

    def __init__(self, attempts: int) -> None:
        self.attempts = attempts
        super().__init__(
            f"{self.error_class}: Keeping the source of the MERGE statement materialized has failed repeatedly "
            f"({attempts} attempts lost its blocks); nothing was committed. Run the MERGE again on a cluster that "
            "keeps its executors, raise spark.databricks.delta.merge.materializeSource.maxAttempts, or store the "
            "materialized source with more replicas (spark.databricks.delta.merge.materializeSource.rddStorageLevel)"
        )


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


class DeltaSourceChangedDataError(DeltaSparkError):
    """A streaming read met a commit that removed data (``remove`` with ``dataChange=true``),
    which an append-only stream cannot express; the stream stops before that commit."""

    def __init__(self, message: str, table: str, version: int, example: str) -> None:
        super().__init__(message)
        self.table = table
        self.version = version
        self.example = example


class DeltaSourceIgnoreDeleteError(DeltaSourceChangedDataError):
    """Delta's ``DELTA_SOURCE_IGNORE_DELETE``: a commit only deleted data (no ``add``)."""

    def __init__(self, table: str, version: int, removed_file: str) -> None:
        super().__init__(
            f"DELTA_SOURCE_IGNORE_DELETE: Detected deleted data (for example {removed_file}) from streaming source "
            f"at version {version}. This is currently not supported. If you'd like to ignore deletes, set the option "
            f"'ignoreDeletes' to 'true' (or 'skipChangeCommits' to skip every commit that removes data). "
            f"The source table can be found at path {table}.",
            table,
            version,
            removed_file,
        )


class DeltaSourceIgnoreChangesError(DeltaSourceChangedDataError):
    """Delta's ``DELTA_SOURCE_TABLE_IGNORE_CHANGES``: a commit rewrote data (removes and adds:
    UPDATE, MERGE, DELETE of part of a file, overwrite)."""

    def __init__(self, table: str, version: int, change: str) -> None:
        super().__init__(
            f"DELTA_SOURCE_TABLE_IGNORE_CHANGES: Detected a data update (for example {change}) in the source table "
            f"at version {version}. This is currently not supported. If this is going to happen regularly and you "
            f"are okay to skip changes, set the option 'skipChangeCommits' to 'true'. If you would like the data "
            f"update to be reflected, please restart this query with a fresh checkpoint directory. The source table "
            f"can be found at path {table}.",
            table,
            version,
            change,
        )


class DeltaSourceDataLossError(DeltaSparkError, VersionNotFoundError):
    """Delta's ``DELTA_MISSING_FILES_UNEXPECTED_VERSION``: the commit a stream must read next
    was deleted by log cleanup (``delta.logRetentionDuration``), so its changes are lost to
    the stream. ``failOnDataLoss=false`` goes on from the earliest commit left instead."""

    def __init__(self, table: str, expected: int, earliest: int) -> None:
        VersionNotFoundError.__init__(
            self,
            f"DELTA_MISSING_FILES_UNEXPECTED_VERSION: Delta stream cannot resume from version {expected}; "
            f"transaction log starts at {earliest}. Log files may have been deleted by log retention. Restart the "
            "stream with a new checkpoint location and consider increasing delta.logRetentionDuration. To skip "
            f'missing data instead, set .option("failOnDataLoss", "false"). The source table is at {table}.',
            version=expected,
            earliest=earliest,
        )
        self.table = table
        self.expected = expected


class DeltaSourceTrailingCommitMissingError(DeltaSparkError):
    """Delta's ``DELTA_STREAMING_TRAILING_COMMIT_MISSING``: a commit a micro-batch was planned
    to read (by ``latestOffset``) is gone from the log when the batch is read, so the batch
    would silently miss its rows. Raised whatever ``failOnDataLoss`` says, as Delta's
    ``streaming.trailingCommitValidation`` (on by default)."""

    def __init__(self, table: str, expected: int, seen: int) -> None:
        super().__init__(
            f"DELTA_STREAMING_TRAILING_COMMIT_MISSING: Delta stream detected commits up to version {expected} but "
            f"files after version {seen} are missing from the transaction log of {table}. A commit file was deleted "
            "(or is not visible yet) after the batch was planned: restore it, or restart the query with a new "
            "checkpoint location"
        )
        self.table = table
        self.expected = expected
        self.seen = seen


class DeltaSourceTableChangedError(DeltaSparkError):
    """Delta's ``DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE``: the table's id is not the
    one the stream's offsets were taken from (the table was deleted and re-created)."""

    def __init__(self, table: str, new_id: str, old_id: str) -> None:
        super().__init__(
            f"DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE: the Delta table's id has changed: the streaming query "
            f"was reading from an unexpected Delta table at {table} (id = '{new_id}'). It used to read from another "
            f"Delta table (id = '{old_id}') according to checkpoint. This may happen when you changed the code to "
            "read from a new table or you deleted and re-created a table. Please revert your change or delete your "
            "streaming query checkpoint to restart from scratch."
        )
        self.table = table
        self.new_id = new_id
        self.old_id = old_id


class DeltaSourceSchemaChangedError(DeltaSparkError):
    """Delta's ``DELTA_SCHEMA_CHANGED_WITH_VERSION`` (``..._WITH_STARTING_OPTIONS`` for a stream
    given ``startingVersion``/``startingTimestamp``): the table's schema (or partition columns)
    changed in a version the stream reads; restart the query to read with the new schema."""

    def __init__(
        self,
        table: str,
        version: int,
        read_schema: str,
        data_schema: str,
        hint: str | None = None,
        starting_options: bool = False,
    ) -> None:
        advice = (
            "Please try restarting the query. If this issue repeats across query restarts without making progress, "
            "you have made an incompatible schema change and need to start your query from scratch using a new "
            "checkpoint directory."
        )
        error_class = "DELTA_SCHEMA_CHANGED_WITH_VERSION"
        if starting_options:  # Delta's includeStartingVersionOrTimestampMessage
            error_class = "DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS"
            advice += (
                " If the issue persists after changing to a new checkpoint directory, you may need to change the "
                "existing 'startingVersion' or 'startingTimestamp' option to start from a version newer than "
                f"{version} with a new checkpoint directory."
            )
        super().__init__(
            f"{error_class}: Detected schema change in version {version} of {table}: "
            f"streaming source schema: {read_schema}; data file schema: {data_schema}. " + (hint or advice)
        )
        self.table = table
        self.version = version


class DeltaSourceMetadataEvolutionError(DeltaSparkError):
    """Delta's ``DELTA_STREAMING_METADATA_EVOLUTION``: with ``schemaTrackingLocation``, the
    stream met a commit that changed the table's schema, table configuration or protocol; the
    batch before it is done and the new metadata is in the schema log. Restart the query (a new
    ``readStream...load()``) to go on with it."""

    def __init__(self, table: str, version: int, schema: str, configuration: str, protocol: str) -> None:
        super().__init__(
            f"DELTA_STREAMING_METADATA_EVOLUTION: The schema, table configuration or protocol of your Delta table "
            f"{table} has changed during streaming (version {version}). The schema or metadata tracking log has been "
            "updated. Please restart the stream (load the table again) to continue processing using the updated "
            f"metadata. Updated schema: {schema}. Updated table configurations: {configuration}. Updated table "
            f"protocol: {protocol}"
        )
        self.table = table
        self.version = version


class DeltaSourceSchemaEvolutionBlockedError(DeltaSparkError):
    """Delta's ``DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION``: the schema
    log's latest entry renames, drops or widens columns of the one before, and no reader
    option or Delta SQL conf (of the session, or given as a reader option) unblocks that kind
    of change. ``hints`` is the schema log's
    :class:`~deltalog.contrib.spark.schema_log.UnblockHint`."""

    def __init__(
        self, change: str, details: str, previous: int, current: int, hints: tuple[str, str, str, str, str]
    ) -> None:
        change_options, stream_options, change_confs, stream_confs, all_confs = hints
        super().__init__(
            "DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION: We've detected one or more non-additive "
            f"schema change(s) ({change}) between Delta version {previous} and {current} in the Delta streaming "
            f"source.\nChanges:\n{details}\nPlease check if you want to manually propagate the schema change(s) to "
            f"the sink table before we proceed with stream processing using the finalized schema at version "
            f"{current}.\nOnce you have fixed the schema of the sink table or have decided there is no need to fix, "
            "you can set the following configuration(s) to unblock the non-additive schema change(s) and continue "
            "stream processing.\n\nUsing dataframe reader option(s):\nTo unblock for this particular stream just for "
            f"this series of schema change(s):\n{change_options}\nTo unblock for this particular stream:\n"
            f"{stream_options}\n\nUsing SQL configuration(s) (in the session before the stream's load, or as "
            "reader options):\nTo unblock for this particular stream just for this series of schema change(s):\n"
            f"{change_confs}\nTo unblock for this particular stream:\n{stream_confs}\nTo unblock for all "
            f"streams:\n{all_confs}\n"
        )
        self.change = change
        self.previous_version = previous
        self.version = current


class DeltaSourceSchemaLogError(DeltaSparkError):
    """The streaming source's schema log (``schemaTrackingLocation``) cannot be used: another
    table's (``DELTA_STREAMING_SCHEMA_LOG_INCOMPATIBLE_DELTA_TABLE_ID``), an unreadable entry
    (``DELTA_STREAMING_SCHEMA_LOG_DESERIALIZE_FAILED``), or another stream wrote the entry this
    one meant to (``DELTA_STREAMING_SCHEMA_LOCATION_CONFLICT``). The message names the class."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class


class NativeReadUnsupportedError(DeltaAnalysisError):
    """The native read path (``read_table(..., native=True)``) cannot read this table
    correctly; the message names the reason. Without ``native=True`` such a read falls back
    to the Python data source."""


class NativeWriteUnsupportedError(DeltaAnalysisError):
    """The native write path (``write_table(..., native=True)``) cannot write these rows to
    this table; the message names the reason. Without ``native=True`` such a write goes
    through Python write tasks instead."""


class VariantShreddingDisabledError(DeltaSparkError):
    """Delta's ``DELTA_SHREDDING_TABLE_PROPERTY_DISABLED``: the session forces Spark's
    Parquet writer to shred variants (``spark.sql.variant.forceShreddingSchemaForTest``) but
    the table does not set ``delta.enableVariantShredding``; nothing was written."""

    error_class = "DELTA_SHREDDING_TABLE_PROPERTY_DISABLED"

    def __init__(self, table: str) -> None:
        super().__init__(
            f"DELTA_SHREDDING_TABLE_PROPERTY_DISABLED: attempted to write shredded Variants to {table} but the "
            "table does not support shredded writes. Consider setting the table property "
            "delta.enableVariantShredding to true, or unset spark.sql.variant.forceShreddingSchemaForTest."
        )
        self.table = table


class StreamWriteNullTypeError(DeltaAnalysisError):
    """Delta's ``DELTA_NULL_SCHEMA_IN_STREAMING_WRITE``: a streaming write whose data has a
    column of type ``void`` (NullType, at any depth), or into a table with a generated ``void``
    column; refused when the query starts, nothing written. Cast the column in the query."""

    error_class = "DELTA_NULL_SCHEMA_IN_STREAMING_WRITE"

    def __init__(self, table: str, column: str) -> None:
        super().__init__(
            f"DELTA_NULL_SCHEMA_IN_STREAMING_WRITE: Delta doesn't accept NullTypes in the schema for streaming "
            f"writes: column {column} of the write to {table} is void; cast it to a type (CAST(NULL AS INT))"
        )
        self.table = table
        self.column = column


class CastOverflowError(DeltaSparkError, ArithmeticError):
    """A value of a streamed batch does not fit the table column's type it is cast to (Spark's
    ``CAST_OVERFLOW_IN_TABLE_INSERT`` under ANSI store assignment): the batch commits nothing."""
