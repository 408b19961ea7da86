"""Every error deltalog raises on purpose, importable from this one module.

All of them derive from :class:`DeltaError`, so callers can catch one class, or import
exactly the one they handle::

    from deltalog.errors import ConcurrentAppendError, TableNotFoundError

Each error is defined next to the layer that raises it (``deltalog.logstores.errors``,
``deltalog.txn.protocol.errors``, ``deltalog.txn.commit.commit_errors``, ``deltalog.txn.commit.locks.errors``,
``deltalog.contrib.spark.errors``, ...) and re-exported here on first use, so importing
this module stays cheap, creates no import cycle, and never imports pyspark (the Spark
errors are importable without it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deltalog.conformance.catalog import UnknownCheckError
    from deltalog.contrib.spark.constraints import UncheckableConstraintsError
    from deltalog.contrib.spark.errors import (
        CastOverflowError,
        DeltaAnalysisError,
        DeltaSourceChangedDataError,
        DeltaSourceDataLossError,
        DeltaSourceIgnoreChangesError,
        DeltaSourceIgnoreDeleteError,
        DeltaSourceMetadataEvolutionError,
        DeltaSourceSchemaChangedError,
        DeltaSourceSchemaEvolutionBlockedError,
        DeltaSourceSchemaLogError,
        DeltaSourceTableChangedError,
        DeltaSourceTrailingCommitMissingError,
        DeltaSparkError,
        InvalidWriteOptionError,
        MergeCardinalityError,
        MergeMaterializeSourceFailedError,
        NativeReadUnsupportedError,
        NativeWriteUnsupportedError,
        ReplaceWhereMismatchError,
        StreamWriteNullTypeError,
        TableAlreadyExistsError,
        UnknownWriteOptionError,
        VariantShreddingDisabledError,
        WriteOutcomeUnknownError,
    )
    from deltalog.durations import InvalidDurationError
    from deltalog.logstores.errors import (
        AmbiguousWriteError,
        FileAlreadyExistsError,
        LogStoreConfigError,
        LogStoreError,
        MissingDependencyError,
        TransientStorageError,
        UnknownLogStoreError,
    )
    from deltalog.txn.commands.clone import (
        CloneReplaceNonEmptyTableError,
        CloneSourceFilesMissingError,
        CloneTargetNotEmptyError,
    )
    from deltalog.txn.commands.column_mapping_removal import InvalidColumnNamesError
    from deltalog.txn.commands.convert import ConvertToDeltaError
    from deltalog.txn.commands.drop_feature import (
        DropFeatureError,
        DropFeatureHistoricalVersionsExistError,
        DropFeatureUnsupportedError,
        DropFeatureWaitForRetentionError,
        FeatureNotPresentError,
        FeatureNotRemovableError,
        FeatureStillInUseError,
    )
    from deltalog.txn.commands.optimize import OptimizeError
    from deltalog.txn.commands.restore import RestoreMissingFilesError, RestoreToLatestVersionError
    from deltalog.txn.commands.vacuum import VacuumRetentionError
    from deltalog.txn.commands.vacuum_listing import VacuumInventoryError
    from deltalog.txn.commands.vacuum_lite import VacuumLiteError
    from deltalog.txn.commit.commit_errors import (
        AddingDeletionVectorsDisallowedError,
        AppendOnlyViolationError,
        CommitFailedError,
        ConcurrentAppendError,
        ConcurrentDeleteDeleteError,
        ConcurrentDeleteReadError,
        ConcurrentTransactionError,
        ConcurrentWriteError,
        ConstraintsNotCheckedError,
        DeletionVectorMissingNumRecordsError,
        DeletionVectorTightBoundsError,
        DeltaConcurrentModificationError,
        DropFeatureConflictError,
        DuplicateFileActionError,
        InvalidMetadataError,
        InvalidTransactionError,
        MetadataAlreadyChangedError,
        MetadataChangedError,
        MissingMetadataError,
        NestedNotNullConstraintError,
        ProtocolChangedError,
        TransactionAlreadyCommittedError,
    )
    from deltalog.txn.commit.locks.errors import (
        CommitLockConfigError,
        CommitLockError,
        CommitOutcomeUnknownError,
        LockLostError,
        LockTimeoutError,
        LockUnavailableError,
        MissingCommitError,
        UnrecoverableClaimError,
        UnsafeCommitLockError,
    )
    from deltalog.txn.log.symlink_manifest import GenerateWithDeletionVectorsError, ManifestWithColumnMappingError
    from deltalog.txn.log.time_travel_retention import TimeTravelBeyondDeletedFileRetentionDurationError
    from deltalog.txn.protocol.clustering import ClusteringColumnsError
    from deltalog.txn.protocol.column_defaults import UnsupportedDefaultExpressionError
    from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError
    from deltalog.txn.protocol.constraints import (
        ConstraintViolationError,
        MissingNotNullColumnError,
        NotNullConstraintViolationError,
    )
    from deltalog.txn.protocol.errors import (
        ChecksumMismatchError,
        ColumnMappingAndCdcOperationBlockedError,
        ColumnMappingMetadataAlreadyExistsError,
        ColumnMappingRequiredError,
        CorruptLogError,
        DataFileNotFoundError,
        DeltaLogError,
        FeatureRequiresManualEnablementError,
        InvalidSchemaChangeError,
        InvalidSchemaError,
        InvalidTableStateError,
        LegacyCalendarRebaseError,
        NonContiguousVersionsError,
        RowTrackingError,
        SchemaMismatchError,
        ShreddedVariantError,
        TableNotFoundError,
        UnsupportedColumnMappingModeChangeError,
        UnsupportedFeatureError,
        VersionNotFoundError,
    )
    from deltalog.txn.protocol.generated_columns import (
        GeneratedColumnConstraintViolationError,
        UnsupportedGenerationExpressionError,
    )
    from deltalog.txn.protocol.iceberg_compat import (
        IcebergCompatError,
        IcebergCompatUnsupportedOperationError,
        IcebergCompatViolationError,
        UniFormIcebergRequiresCompatError,
    )
    from deltalog.txn.protocol.identity import IdentityColumnError
    from deltalog.txn.protocol.partition_filters import InvalidPartitionFilterError
    from deltalog.txn.protocol.properties import (
        InvalidAutoCompactTypeError,
        InvalidPropertyError,
        ReservedPropertyError,
        TablePropertyValidationError,
        UnknownPropertyError,
    )
    from deltalog.txn.protocol.stats_columns import InvalidStatsColumnsError
    from deltalog.txn.protocol.type_widening import UnsupportedTypeChangeError


class DeltaError(Exception):
    """Base class of every error deltalog raises deliberately."""


#: where each re-exported error is defined (module names only: nothing imported yet)
_HOMES: dict[str, str] = {
    # settings
    "InvalidDurationError": "deltalog.durations",
    # storage
    "LogStoreError": "deltalog.logstores.errors",
    "AmbiguousWriteError": "deltalog.logstores.errors",
    "FileAlreadyExistsError": "deltalog.logstores.errors",
    "LogStoreConfigError": "deltalog.logstores.errors",
    "MissingDependencyError": "deltalog.logstores.errors",
    "TransientStorageError": "deltalog.logstores.errors",
    "UnknownLogStoreError": "deltalog.logstores.errors",
    # the log and its tables
    "DeltaLogError": "deltalog.txn.protocol.errors",
    "CorruptLogError": "deltalog.txn.protocol.errors",
    "DataFileNotFoundError": "deltalog.txn.protocol.errors",
    "LegacyCalendarRebaseError": "deltalog.txn.protocol.errors",
    "ShreddedVariantError": "deltalog.txn.protocol.errors",
    "ChecksumMismatchError": "deltalog.txn.protocol.errors",
    "RowTrackingError": "deltalog.txn.protocol.errors",
    "InvalidSchemaError": "deltalog.txn.protocol.errors",
    "InvalidSchemaChangeError": "deltalog.txn.protocol.errors",
    "UnsupportedColumnMappingModeChangeError": "deltalog.txn.protocol.errors",
    "ColumnMappingAndCdcOperationBlockedError": "deltalog.txn.protocol.errors",
    "ColumnMappingMetadataAlreadyExistsError": "deltalog.txn.protocol.errors",
    "ColumnMappingRequiredError": "deltalog.txn.protocol.errors",
    "InvalidTableStateError": "deltalog.txn.protocol.errors",
    "NonContiguousVersionsError": "deltalog.txn.protocol.errors",
    "TableNotFoundError": "deltalog.txn.protocol.errors",
    "UnsupportedFeatureError": "deltalog.txn.protocol.errors",
    "FeatureRequiresManualEnablementError": "deltalog.txn.protocol.errors",
    "VersionNotFoundError": "deltalog.txn.protocol.errors",
    "TimeTravelBeyondDeletedFileRetentionDurationError": "deltalog.txn.log.time_travel_retention",
    "InvalidPropertyError": "deltalog.txn.protocol.properties",
    "InvalidAutoCompactTypeError": "deltalog.txn.protocol.properties",
    "TablePropertyValidationError": "deltalog.txn.protocol.properties",
    "GenerateWithDeletionVectorsError": "deltalog.txn.log.symlink_manifest",
    "ManifestWithColumnMappingError": "deltalog.txn.log.symlink_manifest",
    "UnknownPropertyError": "deltalog.txn.protocol.properties",
    "ReservedPropertyError": "deltalog.txn.protocol.properties",
    "InvalidStatsColumnsError": "deltalog.txn.protocol.stats_columns",
    "InvalidPartitionFilterError": "deltalog.txn.protocol.partition_filters",
    "UnsupportedTypeChangeError": "deltalog.txn.protocol.type_widening",
    "IcebergCompatError": "deltalog.txn.protocol.iceberg_compat",
    "IcebergCompatViolationError": "deltalog.txn.protocol.iceberg_compat",
    "IcebergCompatUnsupportedOperationError": "deltalog.txn.protocol.iceberg_compat",
    "UniFormIcebergRequiresCompatError": "deltalog.txn.protocol.iceberg_compat",
    "ClusteringColumnsError": "deltalog.txn.protocol.clustering",
    "ConstraintViolationError": "deltalog.txn.protocol.constraints",
    "NotNullConstraintViolationError": "deltalog.txn.protocol.constraints",
    "MissingNotNullColumnError": "deltalog.txn.protocol.constraints",
    "UnsupportedConstraintError": "deltalog.txn.protocol.constraint_sql",
    "GeneratedColumnConstraintViolationError": "deltalog.txn.protocol.generated_columns",
    "UnsupportedGenerationExpressionError": "deltalog.txn.protocol.generated_columns",
    "IdentityColumnError": "deltalog.txn.protocol.identity",
    "UnsupportedDefaultExpressionError": "deltalog.txn.protocol.column_defaults",
    # transactions: invalid transactions and commit conflicts
    "InvalidTransactionError": "deltalog.txn.commit.commit_errors",
    "AddingDeletionVectorsDisallowedError": "deltalog.txn.commit.commit_errors",
    "AppendOnlyViolationError": "deltalog.txn.commit.commit_errors",
    "DeletionVectorMissingNumRecordsError": "deltalog.txn.commit.commit_errors",
    "DeletionVectorTightBoundsError": "deltalog.txn.commit.commit_errors",
    "ConstraintsNotCheckedError": "deltalog.txn.commit.commit_errors",
    "DuplicateFileActionError": "deltalog.txn.commit.commit_errors",
    "InvalidMetadataError": "deltalog.txn.commit.commit_errors",
    "MetadataAlreadyChangedError": "deltalog.txn.commit.commit_errors",
    "MissingMetadataError": "deltalog.txn.commit.commit_errors",
    "NestedNotNullConstraintError": "deltalog.txn.commit.commit_errors",
    "TransactionAlreadyCommittedError": "deltalog.txn.commit.commit_errors",
    "DeltaConcurrentModificationError": "deltalog.txn.commit.commit_errors",
    "CommitFailedError": "deltalog.txn.commit.commit_errors",
    "ConcurrentAppendError": "deltalog.txn.commit.commit_errors",
    "ConcurrentDeleteDeleteError": "deltalog.txn.commit.commit_errors",
    "ConcurrentDeleteReadError": "deltalog.txn.commit.commit_errors",
    "ConcurrentTransactionError": "deltalog.txn.commit.commit_errors",
    "ConcurrentWriteError": "deltalog.txn.commit.commit_errors",
    "MetadataChangedError": "deltalog.txn.commit.commit_errors",
    "ProtocolChangedError": "deltalog.txn.commit.commit_errors",
    "DropFeatureConflictError": "deltalog.txn.commit.commit_errors",
    # commit locks
    "CommitLockError": "deltalog.txn.commit.locks.errors",
    "CommitLockConfigError": "deltalog.txn.commit.locks.errors",
    "CommitOutcomeUnknownError": "deltalog.txn.commit.locks.errors",
    "LockLostError": "deltalog.txn.commit.locks.errors",
    "LockTimeoutError": "deltalog.txn.commit.locks.errors",
    "LockUnavailableError": "deltalog.txn.commit.locks.errors",
    "MissingCommitError": "deltalog.txn.commit.locks.errors",
    "UnrecoverableClaimError": "deltalog.txn.commit.locks.errors",
    "UnsafeCommitLockError": "deltalog.txn.commit.locks.errors",
    # maintenance commands
    "ConvertToDeltaError": "deltalog.txn.commands.convert",
    "OptimizeError": "deltalog.txn.commands.optimize",
    "RestoreMissingFilesError": "deltalog.txn.commands.restore",
    "RestoreToLatestVersionError": "deltalog.txn.commands.restore",
    "CloneTargetNotEmptyError": "deltalog.txn.commands.clone",
    "CloneReplaceNonEmptyTableError": "deltalog.txn.commands.clone",
    "CloneSourceFilesMissingError": "deltalog.txn.commands.clone",
    "VacuumRetentionError": "deltalog.txn.commands.vacuum",
    "VacuumInventoryError": "deltalog.txn.commands.vacuum_listing",
    "VacuumLiteError": "deltalog.txn.commands.vacuum_lite",
    "DropFeatureError": "deltalog.txn.commands.drop_feature",
    "DropFeatureHistoricalVersionsExistError": "deltalog.txn.commands.drop_feature",
    "DropFeatureUnsupportedError": "deltalog.txn.commands.drop_feature",
    "DropFeatureWaitForRetentionError": "deltalog.txn.commands.drop_feature",
    "FeatureNotPresentError": "deltalog.txn.commands.drop_feature",
    "FeatureNotRemovableError": "deltalog.txn.commands.drop_feature",
    "FeatureStillInUseError": "deltalog.txn.commands.drop_feature",
    "InvalidColumnNamesError": "deltalog.txn.commands.column_mapping_removal",
    # PySpark integration (no pyspark import)
    "DeltaSparkError": "deltalog.contrib.spark.errors",
    "CastOverflowError": "deltalog.contrib.spark.errors",
    "StreamWriteNullTypeError": "deltalog.contrib.spark.errors",
    "NativeReadUnsupportedError": "deltalog.contrib.spark.errors",
    "VariantShreddingDisabledError": "deltalog.contrib.spark.errors",
    "NativeWriteUnsupportedError": "deltalog.contrib.spark.errors",
    "WriteOutcomeUnknownError": "deltalog.contrib.spark.errors",
    "UnknownWriteOptionError": "deltalog.contrib.spark.errors",
    "ReplaceWhereMismatchError": "deltalog.contrib.spark.errors",
    "DeltaAnalysisError": "deltalog.contrib.spark.errors",
    "InvalidWriteOptionError": "deltalog.contrib.spark.errors",
    "MergeCardinalityError": "deltalog.contrib.spark.errors",
    "MergeMaterializeSourceFailedError": "deltalog.contrib.spark.errors",
    "SchemaMismatchError": "deltalog.txn.protocol.errors",
    "TableAlreadyExistsError": "deltalog.contrib.spark.errors",
    "DeltaSourceChangedDataError": "deltalog.contrib.spark.errors",
    "DeltaSourceDataLossError": "deltalog.contrib.spark.errors",
    "DeltaSourceIgnoreChangesError": "deltalog.contrib.spark.errors",
    "DeltaSourceIgnoreDeleteError": "deltalog.contrib.spark.errors",
    "DeltaSourceMetadataEvolutionError": "deltalog.contrib.spark.errors",
    "DeltaSourceSchemaChangedError": "deltalog.contrib.spark.errors",
    "DeltaSourceSchemaEvolutionBlockedError": "deltalog.contrib.spark.errors",
    "DeltaSourceSchemaLogError": "deltalog.contrib.spark.errors",
    "DeltaSourceTableChangedError": "deltalog.contrib.spark.errors",
    "DeltaSourceTrailingCommitMissingError": "deltalog.contrib.spark.errors",
    "UncheckableConstraintsError": "deltalog.contrib.spark.constraints",
    # conformance kit
    "UnknownCheckError": "deltalog.conformance.catalog",
}

__all__ = [
    "AddingDeletionVectorsDisallowedError",
    "AmbiguousWriteError",
    "AppendOnlyViolationError",
    "CastOverflowError",
    "ChecksumMismatchError",
    "CloneReplaceNonEmptyTableError",
    "CloneSourceFilesMissingError",
    "CloneTargetNotEmptyError",
    "ClusteringColumnsError",
    "ColumnMappingAndCdcOperationBlockedError",
    "ColumnMappingMetadataAlreadyExistsError",
    "ColumnMappingRequiredError",
    "CommitFailedError",
    "CommitLockConfigError",
    "CommitLockError",
    "CommitOutcomeUnknownError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "ConcurrentWriteError",
    "ConstraintViolationError",
    "ConstraintsNotCheckedError",
    "ConvertToDeltaError",
    "CorruptLogError",
    "DataFileNotFoundError",
    "DeletionVectorMissingNumRecordsError",
    "DeletionVectorTightBoundsError",
    "DeltaAnalysisError",
    "DeltaConcurrentModificationError",
    "DeltaError",
    "DeltaLogError",
    "DeltaSourceChangedDataError",
    "DeltaSourceDataLossError",
    "DeltaSourceIgnoreChangesError",
    "DeltaSourceIgnoreDeleteError",
    "DeltaSourceMetadataEvolutionError",
    "DeltaSourceSchemaChangedError",
    "DeltaSourceSchemaEvolutionBlockedError",
    "DeltaSourceSchemaLogError",
    "DeltaSourceTableChangedError",
    "DeltaSourceTrailingCommitMissingError",
    "DeltaSparkError",
    "DropFeatureConflictError",
    "DropFeatureError",
    "DropFeatureHistoricalVersionsExistError",
    "DropFeatureUnsupportedError",
    "DropFeatureWaitForRetentionError",
    "DuplicateFileActionError",
    "FeatureNotPresentError",
    "FeatureNotRemovableError",
    "FeatureRequiresManualEnablementError",
    "FeatureStillInUseError",
    "FileAlreadyExistsError",
    "GenerateWithDeletionVectorsError",
    "GeneratedColumnConstraintViolationError",
    "IcebergCompatError",
    "IcebergCompatUnsupportedOperationError",
    "IcebergCompatViolationError",
    "IdentityColumnError",
    "InvalidAutoCompactTypeError",
    "InvalidColumnNamesError",
    "InvalidDurationError",
    "InvalidMetadataError",
    "InvalidPartitionFilterError",
    "InvalidPropertyError",
    "InvalidSchemaChangeError",
    "InvalidSchemaError",
    "InvalidStatsColumnsError",
    "InvalidTableStateError",
    "InvalidTransactionError",
    "InvalidWriteOptionError",
    "LegacyCalendarRebaseError",
    "LockLostError",
    "LockTimeoutError",
    "LockUnavailableError",
    "LogStoreConfigError",
    "LogStoreError",
    "ManifestWithColumnMappingError",
    "MergeCardinalityError",
    "MergeMaterializeSourceFailedError",
    "MetadataAlreadyChangedError",
    "MetadataChangedError",
    "MissingCommitError",
    "MissingDependencyError",
    "MissingMetadataError",
    "MissingNotNullColumnError",
    "NativeReadUnsupportedError",
    "NativeWriteUnsupportedError",
    "NestedNotNullConstraintError",
    "NonContiguousVersionsError",
    "NotNullConstraintViolationError",
    "OptimizeError",
    "ProtocolChangedError",
    "ReplaceWhereMismatchError",
    "ReservedPropertyError",
    "RestoreMissingFilesError",
    "RestoreToLatestVersionError",
    "RowTrackingError",
    "SchemaMismatchError",
    "ShreddedVariantError",
    "StreamWriteNullTypeError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TablePropertyValidationError",
    "TimeTravelBeyondDeletedFileRetentionDurationError",
    "TransactionAlreadyCommittedError",
    "TransientStorageError",
    "UncheckableConstraintsError",
    "UniFormIcebergRequiresCompatError",
    "UnknownCheckError",
    "UnknownLogStoreError",
    "UnknownPropertyError",
    "UnknownWriteOptionError",
    "UnrecoverableClaimError",
    "UnsafeCommitLockError",
    "UnsupportedColumnMappingModeChangeError",
    "UnsupportedConstraintError",
    "UnsupportedDefaultExpressionError",
    "UnsupportedFeatureError",
    "UnsupportedGenerationExpressionError",
    "UnsupportedTypeChangeError",
    "VacuumInventoryError",
    "VacuumLiteError",
    "VacuumRetentionError",
    "VariantShreddingDisabledError",
    "VersionNotFoundError",
    "WriteOutcomeUnknownError",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'deltalog.errors' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
