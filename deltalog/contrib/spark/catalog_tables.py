"""Delta tables by name: where ``DeltaTable.forName`` finds a table's location.

As Delta's ``DeltaTable.forName`` (``getDeltaTableFromSessionCatalog``):

- a table of Spark's session catalog (``t``, ``db.t``, ``spark_catalog.db.t``) whose provider
  is ``delta`` -- the entry a Hive metastore or AWS Glue holds for a table Delta Spark,
  Databricks or EMR registered -- or ``deltalog`` (``CREATE TABLE ... USING deltalog
  LOCATION ...``) is the table at the entry's location;
- ``delta.`/abs/path``` (``deltalog.`...``` too) is the table at that path;
- anything else is not a Delta table (``DELTA_MISSING_DELTA_TABLE``).

Only the catalog entry's location and qualified name (``spark_catalog.db.t``, the ``name``
``DESCRIBE DETAIL`` shows, as Delta's ``CatalogTable.qualifiedName``) are used: the table's
schema, properties and history are the log's, as in Delta. A name in another catalog (a
three-part name not starting with ``spark_catalog``) is refused by name: deltalog reads no
catalog plugin's tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from deltalog.contrib.spark.errors import DeltaAnalysisError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DELTA_PROVIDERS", "CatalogTableRef", "convert_target", "is_absolute", "name_parts", "table_location"]

#: the providers of a catalog entry that is a Delta table
DELTA_PROVIDERS = frozenset({"delta", "deltalog"})
_SESSION_CATALOG = "spark_catalog"


class CatalogTableRef(NamedTuple):
    """Where a name's Delta table is, and the catalog's qualified name of its entry (None for
    ``delta.`/path```, which names no entry)."""

    location: str
    qualified_name: str | None


def table_location(spark: SparkSession, name: str) -> CatalogTableRef:
    """The Delta table ``name`` names (see the module docstring); raises
    :class:`DeltaAnalysisError` (``DELTA_MISSING_DELTA_TABLE``) when it names none."""
    parts = name_parts(spark, name)
    if len(parts) == 2 and parts[0].lower() in DELTA_PROVIDERS and is_absolute(parts[1]):
        return CatalogTableRef(parts[1], None)
    if len(parts) == 3:
        if parts[0].lower() != _SESSION_CATALOG:
            raise DeltaAnalysisError(
                f"DELTA_MISSING_DELTA_TABLE: {name} is in the catalog {parts[0]!r}; deltalog resolves names of "
                "Spark's session catalog only: use DeltaTable.forPath with the table's location"
            )
        parts = parts[1:]
    found = _session_catalog_table(spark, parts)
    if found is None:
        raise DeltaAnalysisError(f"DELTA_MISSING_DELTA_TABLE: {name} is not a Delta table.")
    return found


def convert_target(spark: SparkSession, identifier: str) -> tuple[str, str]:
    """``(provider, path)`` of the directory CONVERT TO DELTA's ``identifier`` names, as Delta's
    ``ConvertToDeltaCommand`` reads it: ``parquet.`/path``` is a Parquet directory,
    ``delta.`/path``` a Delta table (``deltalog.`/path``` too; ``delta`` is returned); another
    provider is refused (``DELTA_CONVERT_NON_PARQUET_TABLE``), as is a path without one
    (``DELTA_MISSING_PROVIDER_FOR_CONVERT``). deltalog's addition: text Spark cannot parse as
    a name, such as a bare ``/path``, is a Parquet directory. A catalog table's name is
    refused (deltalog converts directories), unless the catalog's entry is a Delta table."""
    try:
        parts = name_parts(spark, identifier)
    except DeltaAnalysisError:
        return "parquet", identifier
    if len(parts) == 2 and is_absolute(parts[1]):
        provider = parts[0].lower()
        if provider == "parquet" or provider in DELTA_PROVIDERS:
            return ("parquet" if provider == "parquet" else "delta"), parts[1]
        raise DeltaAnalysisError(
            "DELTA_CONVERT_NON_PARQUET_TABLE: CONVERT TO DELTA only supports parquet tables, but you are trying to "
            f"convert a {parts[0]} source: {identifier}"
        )
    if len(parts) == 1 and is_absolute(parts[0]):
        raise DeltaAnalysisError(
            "DELTA_MISSING_PROVIDER_FOR_CONVERT: CONVERT TO DELTA only supports parquet tables. Please rewrite your "
            f"target as parquet.`{parts[0]}` if it's a parquet directory."
        )
    found = _session_catalog_table(spark, parts[1:] if len(parts) == 3 else parts)
    if found is not None:
        return "delta", found.location
    raise DeltaAnalysisError(
        f"CONVERT TO DELTA of the catalog table {identifier} is not supported: deltalog converts Parquet "
        "directories by path; convert its location as parquet.`<location>`"
    )


def name_parts(spark: SparkSession, name: str) -> list[str]:
    """``name`` split as Spark's parser splits a multi-part identifier (backquotes kept apart)."""
    from pyspark.errors import ParseException

    session: Any = spark._jsparkSession
    try:
        seq = session.sessionState().sqlParser().parseMultipartIdentifier(name)
    except ParseException as exc:
        raise DeltaAnalysisError(f"DELTA_MISSING_DELTA_TABLE: {name!r} is not a table name ({exc})") from None
    return [str(seq.apply(i)) for i in range(seq.length())]


def is_absolute(path: str) -> bool:
    """Hadoop's ``Path.isAbsolute``: a URI with a scheme, or a path from the root."""
    return path.startswith("/") or "://" in path or path.startswith("file:/")


def _session_catalog_table(spark: SparkSession, parts: list[str]) -> CatalogTableRef | None:
    """The session catalog's table ``[db.]table`` when its provider is a Delta one, else
    None (no such table, a view, another provider)."""
    if len(parts) not in (1, 2):
        return None
    session: Any = spark._jsparkSession
    jvm: Any = spark._jvm
    database = jvm.scala.Some(parts[0]) if len(parts) == 2 else jvm.scala.Option.empty()
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(parts[-1], database)
    catalog = session.sessionState().catalog()
    if catalog.isTempView(ident) or not catalog.tableExists(ident):
        return None
    table = catalog.getTableMetadata(ident)
    provider = table.provider()
    if not provider.isDefined() or str(provider.get()).lower() not in DELTA_PROVIDERS:
        return None
    return CatalogTableRef(str(table.location().toString()), str(table.qualifiedName()))
