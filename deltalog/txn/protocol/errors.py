"""Errors of the Delta log layer (snapshots, checkpoints, time travel, table features).

Every class derives from :class:`DeltaLogError`, itself a :class:`deltalog.errors.DeltaError`.
Messages say what happened, where (the table or file) and what to do about it.
The transaction engine adds its concurrency errors to this module under
``DeltaConcurrentModificationError``.
"""

from __future__ import annotations

from collections.abc import Iterable

from deltalog.errors import DeltaError
from deltalog.txn.protocol.file_names import checksum_file

__all__ = [
    "ChecksumMismatchError",
    "ColumnMappingAndCdcOperationBlockedError",
    "ColumnMappingMetadataAlreadyExistsError",
    "ColumnMappingRequiredError",
    "CorruptLogError",
    "DeltaLogError",
    "FeatureRequiresManualEnablementError",
    "InvalidSchemaChangeError",
    "InvalidSchemaError",
    "InvalidTableStateError",
    "LegacyCalendarRebaseError",
    "NonContiguousVersionsError",
    "RowTrackingError",
    "SchemaMismatchError",
    "ShreddedVariantError",
    "TableNotFoundError",
    "UnsupportedColumnMappingModeChangeError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
]


class DeltaLogError(DeltaError):
    """Base class of the errors of the Delta log layer."""


class TableNotFoundError(DeltaLogError, FileNotFoundError):
    """There is no Delta table at the location (no ``_delta_log`` or no commit in it)."""

    def __init__(self, table_uri: str, detail: str = "") -> None:
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"no Delta table at {table_uri}: its _delta_log holds no commit or checkpoint{extra}. "
            "Check the path, or create the table first."
        )
        self.table_uri = table_uri


class VersionNotFoundError(DeltaLogError):
    """A requested version (or timestamp) is outside what the log can reconstruct."""

    def __init__(
        self,
        message: str,
        *,
        version: int | None = None,
        earliest: int | None = None,
        latest: int | None = None,
    ) -> None:
        super().__init__(message)
        self.version = version
        self.earliest = earliest
        self.latest = latest


class NonContiguousVersionsError(DeltaLogError):
    """Commit files are missing between the checkpoint and the requested version (Delta's
    ``DELTA_VERSIONS_NOT_CONTIGUOUS``)."""

    error_class = "DELTA_VERSIONS_NOT_CONTIGUOUS"

    def __init__(self, log_uri: str, versions: Iterable[int], expected: int) -> None:
        listed = list(versions)
        shown = ", ".join(str(v) for v in listed[:20]) + (" ..." if len(listed) > 20 else "")
        super().__init__(
            f"[{self.error_class}] the Delta log at {log_uri} is not contiguous: expected version {expected} next, "
            f"found versions [{shown}]. A commit file was deleted or not yet visible; "
            "restore the missing file, or read at a version with a complete checkpoint."
        )
        self.log_uri = log_uri
        self.versions = listed
        self.expected = expected


class CorruptLogError(DeltaLogError):
    """A log file (commit, checkpoint, ``_last_checkpoint``, deletion vector) cannot be read."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"corrupt Delta log file {path}: {problem}")
        self.path = path
        self.problem = problem


class LegacyCalendarRebaseError(DeltaLogError):
    """A data file written in Spark's legacy hybrid calendar holds timestamps deltalog cannot
    rebase exactly as Spark does (a region time zone before 1900 without PySpark installed,
    whose rebase table deltalog reads): read the table through Spark's own reader."""

    def __init__(self, path: str, zone: str, detail: str) -> None:
        super().__init__(
            f"the data file {path} was written by Spark in its legacy hybrid calendar (time zone {zone!r}) and "
            f"{detail}; Spark rebases such values with its own rebase table, which deltalog reads from an "
            "installed PySpark. Install pyspark, or read the table with Spark's reader "
            "(read_table(..., native=True))."
        )
        self.path = path
        self.zone = zone


class DataFileNotFoundError(DeltaLogError, FileNotFoundError):
    """A data or deletion-vector file the log references is gone from storage (Delta's
    ``DELTA_FILE_NOT_FOUND_DETAILED``): VACUUM removed it because the version read is older
    than the retention, or it was deleted by hand."""

    error_class = "DELTA_FILE_NOT_FOUND_DETAILED"

    def __init__(self, path: str, kind: str = "data file") -> None:
        super().__init__(
            f"DELTA_FILE_NOT_FOUND_DETAILED: the {kind} {path}, referenced in the transaction log, cannot be "
            "found. VACUUM deletes the files that only versions older than delta.deletedFileRetentionDuration "
            "need, so time travel (or a change feed) to such a version cannot read them: read a later version. "
            "A file deleted by hand rather than with DELETE is lost the same way."
        )
        self.path = path
        self.kind = kind


class ShreddedVariantError(DeltaLogError):
    """A shredded variant column (``variantShredding``) holds a layout deltalog cannot
    rebuild into the variant binary: one the Parquet VariantShredding spec calls invalid,
    or a ``typed_value`` type it does not list. Nothing is returned for it rather than a
    wrong value; Spark's own Parquet reader may still read the file."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"cannot rebuild the shredded variant {path}: {detail}")
        self.path = path
        self.detail = detail


class InvalidTableStateError(DeltaLogError):
    """The reconstructed state lacks a protocol or metadata, or is otherwise unusable."""


class UnsupportedFeatureError(DeltaLogError):
    """The table needs table features (or protocol versions) this client does not implement:
    Delta's ``DELTA_UNSUPPORTED_FEATURES_FOR_READ`` / ``..._FOR_WRITE`` (``error_class``,
    ``DELTA_INVALID_PROTOCOL_VERSION`` for protocol versions), named first in the message."""

    def __init__(
        self,
        features: Iterable[str],
        *,
        operation: str = "read",
        table: str = "",
        detail: str = "",
        error_class: str | None = None,
    ) -> None:
        names = sorted(set(features))
        where = f" of {table}" if table else ""
        extra = f" {detail}" if detail else ""
        self.error_class = error_class or f"DELTA_UNSUPPORTED_FEATURES_FOR_{operation.upper()}"
        super().__init__(
            f"[{self.error_class}] cannot {operation} the Delta table{where}: it needs table feature(s) "
            f"{', '.join(names)} which deltalog does not support for {operation}s.{extra} "
            "Use a client that supports them, or drop the feature(s) from the table."
        )
        self.features = tuple(names)
        self.operation = operation


class FeatureRequiresManualEnablementError(DeltaLogError, ValueError):
    """A change to an existing table's schema or properties needs a table feature Delta adds
    only when asked by name (Delta's ``DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT``, e.g. a
    ``timestamp_ntz`` column): set ``delta.feature.<name>`` to ``supported`` first."""


class InvalidSchemaError(DeltaLogError, ValueError):
    """A schema string is not valid Spark ``StructType`` JSON, or cannot be mapped."""


class SchemaMismatchError(DeltaLogError, ValueError):
    """Data's schema does not fit the table's (a column of another type, a column the
    table does not have); the message names the column and the fix."""


class InvalidSchemaChangeError(DeltaLogError, ValueError):
    """A schema or column mapping change Delta does not allow (renaming to an existing name,
    dropping a partition column or the last column, an unsupported column mapping mode
    change, an unknown column); nothing was committed."""


class UnsupportedColumnMappingModeChangeError(InvalidSchemaChangeError):
    """A metadata change moves ``delta.columnMapping.mode`` where Delta does not allow it
    (Delta's ``DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE``); nothing was committed."""

    error_class = "DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE"

    def __init__(self, old_mode: str, new_mode: str, hint: str | None = None) -> None:
        super().__init__(
            f"[{self.error_class}] Changing column mapping mode from {old_mode!r} to {new_mode!r} is not supported: "
            + (
                hint
                or "an existing table can only go from 'none' to 'name', or to 'none' by ALTER TABLE SET TBLPROPERTIES "
                "('delta.columnMapping.mode' = 'none') / UNSET TBLPROPERTIES ('delta.columnMapping.mode') (which "
                "rewrite every file; allowed unless spark.databricks.delta.columnMapping.allowRemoval is false) or "
                "DROP FEATURE columnMapping"
            )
            + ". Nothing was committed."
        )
        self.old_mode = old_mode
        self.new_mode = new_mode


class ColumnMappingMetadataAlreadyExistsError(InvalidSchemaChangeError):
    """Column mapping cannot be enabled on a table whose schema already carries column mapping
    field metadata while its mode is ``none`` (left by an old writer's bug; Delta's
    ``DELTA_ENABLING_COLUMN_MAPPING_DISALLOWED_WHEN_COLUMN_MAPPING_METADATA_ALREADY_EXISTS``):
    the ids and physical names there may not match the files. Nothing was committed."""

    error_class = "DELTA_ENABLING_COLUMN_MAPPING_DISALLOWED_WHEN_COLUMN_MAPPING_METADATA_ALREADY_EXISTS"

    def __init__(self, new_mode: str) -> None:
        super().__init__(
            f"[{self.error_class}] Cannot enable column mapping (mode {new_mode!r}): the table's mode is 'none' but "
            "its schema already has column mapping metadata (delta.columnMapping.id / physicalName), which may not "
            "match the data files. Copy the data into a new table with column mapping instead. Nothing was committed."
        )


class ColumnMappingAndCdcOperationBlockedError(InvalidSchemaChangeError):
    """On a table recording the change data feed, a commit that enables column mapping or
    renames or drops a column under it cannot also add or remove files (Delta's
    ``DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION``). Nothing was committed."""

    error_class = "DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION"

    def __init__(self, operation: str) -> None:
        super().__init__(
            f'[{self.error_class}] Operation "{operation}" is not allowed when the table has enabled change data '
            "feed (CDF) and has undergone schema changes using DROP COLUMN or RENAME COLUMN. Change the schema "
            "(ALTER TABLE) in a commit of its own, then write the data. Nothing was committed."
        )
        self.operation = operation


class ColumnMappingRequiredError(InvalidSchemaChangeError):
    """Renaming or dropping a column needs column mapping (``delta.columnMapping.mode`` =
    ``name``): without it, data files find columns by name."""


class RowTrackingError(DeltaLogError):
    """Row ids cannot be assigned or read as PROTOCOL "Row Tracking" requires (a new file
    without ``numRecords``, a hand-made high-water mark, contradictory properties)."""


class ChecksumMismatchError(DeltaLogError):
    """The state rebuilt from the log differs from the version checksum file (``N.crc``)
    written with that version: the log was changed after it was written (Delta's
    ``DELTA_TXN_LOG_FAILED_INTEGRITY``)."""

    def __init__(self, table: str, version: int, mismatches: dict[str, str]) -> None:
        listed = "; ".join(f"{field}: {detail}" for field, detail in mismatches.items())
        super().__init__(
            f"the Delta log of {table} failed its integrity check at version {version}: the state "
            f"rebuilt from the log differs from {checksum_file(version)} ({listed}). A log file was changed "
            "or deleted after the commit; restore it, or delete the .crc file if the change was intended."
        )
        self.table = table
        self.version = version
        self.mismatches = dict(mismatches)
