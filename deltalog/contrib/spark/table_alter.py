"""``DeltaTable``'s ALTER TABLE methods: Spark types in, one metadata-only commit each,
through :mod:`deltalog.txn.commands.alter` (which holds the rules and Delta's operation
names and parameters)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.schemas import to_model
from deltalog.txn.commands import alter
from deltalog.txn.protocol.column_identifiers import quote_if_needed
from deltalog.txn.protocol.schema import StructField

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["AlterTableMethods"]

#: Delta's session conf letting SYNC IDENTITY move a high-water mark back
_ALLOW_LOWERING_SYNC_IDENTITY = "spark.databricks.delta.identityColumn.allowSyncIdentityToLowerHighWaterMark.enabled"


def _field(spark_field: Any) -> StructField:
    """A pyspark ``StructField`` (or its ``jsonValue()``) as the schema model's field."""
    value = spark_field.jsonValue() if hasattr(spark_field, "jsonValue") else dict(spark_field)
    return to_model({"type": "struct", "fields": [value]}).fields[0]


class AlterTableMethods:
    """Mixed into :class:`~deltalog.contrib.spark.tables.DeltaTable` (which sets ``_log``,
    ``_spark``, ``_path`` and ``_reader``)."""

    _log: DeltaLog
    _spark: SparkSession
    _path: str
    _reader: Callable[[], dict[str, str]]

    def addColumn(self, colName: str, dataType: Any, nullable: bool = True, comment: str | None = None) -> None:
        """``ALTER TABLE ADD COLUMNS (colName dataType [COMMENT comment])``; a dotted
        ``colName`` (``address.zip``) adds a field to a struct column."""
        from pyspark.sql.types import DataType, _parse_datatype_string
        from pyspark.sql.types import StructField as SparkField

        dtype = dataType if isinstance(dataType, DataType) else _parse_datatype_string(dataType)
        meta = {"comment": comment} if comment else {}
        self.addColumns([SparkField(colName, dtype, nullable, meta)])

    def addColumns(self, cols: Any) -> None:
        """``ALTER TABLE ADD COLUMNS``: a pyspark ``StructType`` or a list of ``StructField``."""
        fields: Iterable[Any] = cols.fields if hasattr(cols, "fields") else cols
        alter.add_columns(self._log, [_field(f) for f in fields])

    def renameColumn(self, existing: str, newName: str) -> None:
        """``ALTER TABLE RENAME COLUMN existing TO newName`` (needs column mapping)."""
        alter.rename_column(self._log, existing, newName)

    def dropColumn(self, colName: str, ifExists: bool = False) -> None:
        """``ALTER TABLE DROP COLUMN [IF EXISTS] colName`` (needs column mapping)."""
        alter.drop_columns(self._log, [colName], if_exists=ifExists)

    def dropColumns(self, colNames: Iterable[str], ifExists: bool = False) -> None:
        """``ALTER TABLE DROP COLUMNS [IF EXISTS] (colNames)`` (needs column mapping)."""
        alter.drop_columns(self._log, list(colNames), if_exists=ifExists)

    def changeColumnComment(self, colName: str, comment: str | None) -> None:
        """``ALTER TABLE CHANGE COLUMN colName COMMENT comment`` (``None`` removes it)."""
        alter.change_column_comment(self._log, colName, comment)

    def setProperties(self, properties: Mapping[str, str]) -> None:
        """``ALTER TABLE SET TBLPROPERTIES``; ``{'delta.columnMapping.mode': 'name'}``
        enables column mapping (and upgrades the protocol), as Delta does;
        ``{'delta.columnMapping.mode': 'none'}`` turns it off by rewriting every file with the
        logical names in Spark tasks (unless ``spark.databricks.delta.columnMapping.allowRemoval``
        is ``false``). A new CHECK constraint (``delta.constraints.<name>``) is first checked
        against the table's rows, as Delta's ``ADD CONSTRAINT``: a row breaking it raises
        :class:`~deltalog.contrib.spark.constraints.ConstraintViolationError`.
        ``{'delta.enableRowTracking': 'true'}`` gives the existing files row ids first, in
        ``ROW TRACKING BACKFILL`` commits of at most ``spark.databricks.delta.backfill.maxNumFiles``
        files (22000), as Delta does. Keys are validated as Delta's ``validateConfigurations``
        (``delta.appendonly`` is ``delta.appendOnly``; an unknown ``delta.*`` key is refused,
        :class:`~deltalog.txn.protocol.properties.UnknownPropertyError`, unless the session's
        ``spark.databricks.delta.allowArbitraryProperties.enabled`` is true)."""
        from deltalog.contrib.spark.maintenance import (
            arbitrary_properties_allowed,
            backfill_limits,
            retention_compatibility_enforced,
        )
        from deltalog.txn.protocol.properties import TableProperties, validate_table_properties

        allow_arbitrary = arbitrary_properties_allowed(self._spark)
        enforce_retention = retention_compatibility_enforced(self._spark)
        values = validate_table_properties(
            {str(k): str(v) for k, v in properties.items()},
            allow_arbitrary=allow_arbitrary,
            enforce_retention_compatibility=enforce_retention,
        )
        alter.set_table_properties(
            self._log,
            values,
            self._check_rows,
            **self._column_mapping_removal(),
            # the conf is read (and checked) only when a backfill runs
            row_tracking_backfill=backfill_limits(self._spark) if TableProperties(values).enable_row_tracking else None,
            allow_arbitrary_properties=allow_arbitrary,
            enforce_retention_compatibility=enforce_retention,
        )

    def _column_mapping_removal(self) -> dict[str, Any]:
        """How SET/UNSET of ``delta.columnMapping.mode`` may turn column mapping off here."""
        from deltalog.contrib.spark.maintenance import SparkColumnMappingRemover, column_mapping_removal_allowed

        return {
            "allow_column_mapping_removal": column_mapping_removal_allowed(self._spark),
            "remove_column_mapping": SparkColumnMappingRemover(self._spark),
        }

    def addFeatureSupport(self, featureName: str) -> None:
        """delta-spark's ``addFeatureSupport``: ``ALTER TABLE SET TBLPROPERTIES
        ('delta.feature.<featureName>' = 'supported')``. The feature joins the protocol, which
        moves to table features (writer 7; reader 3 for a reader-writer feature) when it is
        not there yet; an unknown name is refused and nothing is committed."""
        from deltalog.contrib.spark.api_arguments import check_type
        from deltalog.txn.protocol.properties import FEATURE_PROPERTY_PREFIX

        check_type(featureName, str, "featureName")
        key = {f"{FEATURE_PROPERTY_PREFIX}{featureName}": "supported"}
        alter.set_table_properties(self._log, key, recorded=key)

    def _check_rows(self, snapshot: Snapshot, constraints: Mapping[str, str]) -> None:
        from deltalog.contrib.spark.constraints import check_new_constraints
        from deltalog.contrib.spark.native import read_table
        from deltalog.contrib.spark.time_travel import without_retention_check

        # an empty table too: Delta analyzes the expression (a non-boolean one, an unknown column is refused)
        # the transaction's own snapshot, not a user's time travel: never refused for its age
        options = without_retention_check(self._reader())
        rows = read_table(self._spark, self._path, versionAsOf=str(snapshot.version), **options)
        check_new_constraints(rows, constraints, self._log.table_uri)

    def syncIdentity(self, column: str) -> None:
        """``ALTER TABLE ... ALTER COLUMN column SYNC IDENTITY``: move the identity column's
        high-water mark to the largest value the table holds (smallest for a negative step),
        rounded onto its start and step, so generated values never repeat explicitly inserted
        ones (:func:`deltalog.txn.commands.sync_identity.sync_identity`). One Spark job
        aggregates the column over the snapshot the transaction read. As in Delta, the mark
        never moves back unless the session sets ``spark.databricks.delta.identityColumn.
        allowSyncIdentityToLowerHighWaterMark.enabled`` to ``true``."""
        from pyspark.sql import functions as F

        from deltalog.contrib.spark.native import read_table
        from deltalog.contrib.spark.time_travel import without_retention_check
        from deltalog.txn.commands.sync_identity import sync_identity

        def extreme(snapshot: Snapshot, files: Sequence[AddFile], name: str, largest: bool) -> int | None:
            options = without_retention_check(self._reader())  # the transaction's own snapshot
            rows = read_table(self._spark, self._path, versionAsOf=str(snapshot.version), **options)
            value = rows.agg((F.max if largest else F.min)(F.col(quote_if_needed(name)))).collect()[0][0]
            return None if value is None else int(value)

        lowering = str(self._spark.conf.get(_ALLOW_LOWERING_SYNC_IDENTITY, "false")).strip().lower() == "true"
        sync_identity(self._log, column, extreme, allow_lowering=lowering)

    def unsetProperties(self, keys: Iterable[str], ifExists: bool = True) -> None:
        """``ALTER TABLE UNSET TBLPROPERTIES [IF EXISTS]``; unsetting
        ``delta.columnMapping.mode`` turns column mapping off as ``setProperties`` does."""
        alter.unset_table_properties(self._log, list(keys), if_exists=ifExists, **self._column_mapping_removal())
