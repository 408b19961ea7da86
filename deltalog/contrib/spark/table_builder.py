"""Column definitions for ``DeltaTable.create(spark).addColumn(...)``: generated columns,
identity columns and column defaults, as delta-spark's ``DeltaTableBuilder`` spells them::

    DeltaTable.create(spark).location(uri) \\
        .addColumn("id", "long", generatedAlwaysAs=IdentityGenerator(start=1, step=1)) \\
        .addColumn("ts", "timestamp") \\
        .addColumn("day", "date", generatedAlwaysAs="CAST(ts AS DATE)") \\
        .addColumn("status", "string", default="'new'") \\
        .partitionedBy("day").execute()

``default`` (a Spark SQL expression, stored as ``CURRENT_DEFAULT``) is deltalog's
addition: delta-spark sets defaults with SQL (``DEFAULT`` in ``CREATE TABLE``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.generation_expressions import check_generation_expression_tree
from deltalog.contrib.spark.resolver import Resolver
from deltalog.contrib.spark.schemas import spark_struct
from deltalog.txn.protocol.column_defaults import CURRENT_DEFAULT
from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, parse_expression
from deltalog.txn.protocol.constraints import CHAR_VARCHAR_TYPE_STRING
from deltalog.txn.protocol.generated_columns import GENERATION_EXPRESSION
from deltalog.txn.protocol.identity import ALLOW_EXPLICIT_INSERT, START, STEP

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.txn.delta_log import DeltaLog

__all__ = [
    "FORCE_PROPERTY_LOWER_CASE_CONF",
    "IDENTIFIED",
    "IdentityGenerator",
    "builder_location",
    "char_varchar_as_string",
    "check_builder_partitioning",
    "column_metadata",
    "creation_step",
    "in_session_catalog",
    "location_has_files",
    "refuse_creation_step",
    "validate_generated_columns",
]


#: Delta's ``TABLE_BUILDER_FORCE_TABLEPROPERTY_LOWERCASE`` (internal, off by default): the
#: builder's property keys are lower-cased, the older builders' behaviour
FORCE_PROPERTY_LOWER_CASE_CONF = "spark.databricks.delta.deltaTableBuilder.forceTablePropertyLowerCase.enabled"

_CHAR_VARCHAR_JSON = re.compile(r'"(?:var)?char\(\d+\)"')


@dataclass(frozen=True)
class IdentityGenerator:
    """An identity column's start and step (delta-spark's ``IdentityGenerator``)."""

    start: int = 1
    step: int = 1


def column_metadata(
    name: str,
    type_name: str,
    generated_always_as: str | IdentityGenerator | None = None,
    generated_by_default_as: IdentityGenerator | None = None,
    default: str | None = None,
) -> dict[str, Any]:
    """The field metadata of a column defined with these options (delta-spark's checks:
    one kind of default per column, identity columns are ``long`` with a non-zero step)."""
    chosen = [x for x in (generated_always_as, generated_by_default_as, default) if x is not None]
    if len(chosen) > 1:
        raise DeltaAnalysisError(f"column {name}: give only one of generatedAlwaysAs, generatedByDefaultAs and default")
    if isinstance(generated_always_as, str):
        return {GENERATION_EXPRESSION: generated_always_as}
    identity = generated_always_as if generated_always_as is not None else generated_by_default_as
    if identity is not None:
        if not isinstance(identity, IdentityGenerator):
            raise DeltaAnalysisError(f"column {name}: generatedByDefaultAs takes an IdentityGenerator")
        if type_name != "long":
            raise DeltaAnalysisError(f"column {name}: identity columns must be long (bigint), not {type_name}")
        if identity.step == 0:
            raise DeltaAnalysisError(f"column {name}: an identity column's step cannot be 0")
        return {START: identity.start, STEP: identity.step, ALLOW_EXPLICIT_INSERT: generated_always_as is None}
    if default is not None:
        try:
            parse_expression(default)
        except UnsupportedConstraintError as exc:
            raise DeltaAnalysisError(f"column {name}: cannot use the default {default!r}: {exc}") from None
        return {CURRENT_DEFAULT: default}
    return {}


def char_varchar_as_string(field: dict[str, Any], spark_type: Any) -> dict[str, Any]:
    """A column defined as ``char(n)`` / ``varchar(n)`` (or holding one) as Spark and Delta
    store it: ``string`` in the schema, the declared type in the field's metadata
    (``__CHAR_VARCHAR_TYPE_STRING``, Spark's ``replaceCharVarcharWithStringInSchema``); the
    writes check the length of a top-level one. Delta's type names have no char/varchar."""
    text = json.dumps(field["type"])
    if not _CHAR_VARCHAR_JSON.search(text):
        return field
    metadata = {**(field.get("metadata") or {}), CHAR_VARCHAR_TYPE_STRING: spark_type.simpleString()}
    return {**field, "type": json.loads(_CHAR_VARCHAR_JSON.sub('"string"', text)), "metadata": metadata}


def validate_generated_columns(spark: SparkSession, fields: list[dict[str, Any]]) -> None:
    """Delta's ``GeneratedColumn.validateGeneratedColumns`` (CREATE TABLE): each generation
    expression is analysed by Spark over the table's other, non-generated columns (so it
    cannot name an unknown column or another generated column:
    DELTA_INVALID_GENERATED_COLUMN_REFERENCES), and its type must be the column's, nullability
    aside (DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH); no user-defined function, non-deterministic
    or aggregate expression, nor any other Delta does not allow (:mod:`generation_expressions`);
    first of all, no generated column is a variant (DELTA_UNSUPPORTED_DATA_TYPE_IN_GENERATED_COLUMN).
    Raises :class:`DeltaAnalysisError`."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    generated = [f for f in fields if GENERATION_EXPRESSION in (f.get("metadata") or {})]
    if not generated:
        return
    for f in generated:  # first, as Delta: a variant cannot be compared (<=>) with its expression
        if f.get("type") == "variant":
            raise DeltaAnalysisError(
                "DELTA_UNSUPPORTED_DATA_TYPE_IN_GENERATED_COLUMN: VARIANT cannot be the result of a generated column "
                f"(generated column {f['name']}); generate a column of another type, e.g. with variant_get"
            )
    others = [f for f in fields if f not in generated]
    rows = spark.createDataFrame([], spark_struct({"fields": others}))
    for f in generated:
        expression = str(f["metadata"][GENERATION_EXPRESSION])
        try:
            selected = rows.select(F.expr(expression).alias("g"))
            got = selected.schema["g"].dataType
        except AnalysisException as exc:
            raise DeltaAnalysisError(
                f"DELTA_INVALID_GENERATED_COLUMN_REFERENCES: the expression {expression} of the generated column "
                f"{f['name']} may only read the table's other, non-generated columns "
                f"{[o['name'] for o in others]}: {exc.getMessage()}"
            ) from None
        check_generation_expression_tree(spark, f["name"], selected._jdf.queryExecution().analyzed())
        declared = spark_struct({"fields": [f]}).fields[0].dataType
        if not _same_type_ignoring_nullability(got.jsonValue(), declared.jsonValue()):
            raise DeltaAnalysisError(
                f"DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH: the expression {expression} of the generated "
                f"column {f['name']} is {got.simpleString().upper()}, the column is "
                f"{declared.simpleString().upper()}; cast the expression to the column's type"
            )


def _same_type_ignoring_nullability(a: Any, b: Any) -> bool:
    """Spark's ``DataType.equalsIgnoreNullability`` on two types' JSON values."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - {"nullable", "containsNull", "valueContainsNull", "metadata"}
        return all(_same_type_ignoring_nullability(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_type_ignoring_nullability(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def builder_location(spark: SparkSession, name: str | None, location: str | None) -> tuple[str, str]:
    """The location a builder creates its table at, from ``tableName`` and ``location`` as
    Delta's ``DeltaTableBuilder.execute`` reads them: ``delta.`/path``` names the path (a
    different ``location`` is ``DELTA_CREATE_TABLE_IDENTIFIER_LOCATION_MISMATCH``), another
    provider's path is not a table name; neither given is
    ``DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION``. A catalog name needs a location:
    deltalog's tables are path-based. Returns the location and how the table is identified
    (:data:`IDENTIFIED`). Raises :class:`DeltaAnalysisError`."""
    from deltalog.contrib.spark.catalog_tables import DELTA_PROVIDERS, is_absolute, name_parts

    if name is None and location is None:
        raise DeltaAnalysisError(
            "DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION: Table name or location has to be specified."
        )
    parts = name_parts(spark, name) if name is not None else []
    if len(parts) == 2 and is_absolute(parts[1]):
        if parts[0].lower() not in DELTA_PROVIDERS:
            raise DeltaAnalysisError(
                f"{name} is not a valid name for a Delta table: the schema `{parts[0]}` cannot be found"
            )
        if location is not None and location != parts[1]:
            raise DeltaAnalysisError(
                "DELTA_CREATE_TABLE_IDENTIFIER_LOCATION_MISMATCH: Creating path-based Delta table with a different "
                f"location isn't supported. Identifier: {name}, Location: {location}"
            )
        return parts[1], "path"
    if location is None:
        raise DeltaAnalysisError("deltalog tables are path-based: call .location(uri) before execute()")
    if name is None:
        return location, "path"
    return location, "catalog" if in_session_catalog(spark, name) else "name"


#: how a builder's table is identified: by its ``path`` (``location`` only, or
#: ``delta.`/path```), by a ``name`` Spark's catalog does not have, or by a ``catalog`` table's
IDENTIFIED = ("path", "name", "catalog")


def in_session_catalog(spark: SparkSession, name: str) -> bool:
    """Whether Spark's catalog has a table ``name`` (Delta's ``existingTableOpt``)."""
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # a name Spark cannot resolve names no table
        return False


def creation_step(identified: str, mode: str, exists: bool, has_files: bool) -> str:
    """What a builder's ``execute`` does, as Delta's ``CreateTableExec`` /
    ``AtomicReplaceTableExec`` and ``CreateDeltaTableCommand`` decide it: ``create``,
    ``replace``, ``return`` (the table there, unchanged), ``verify`` (check the definition
    against the table there, commit nothing), or refuse: ``exists``, ``missing`` (nothing to
    replace), ``not-empty`` (files that are not a table), ``absent`` (a catalog table whose
    location has no table). ``exists``: a table is at the location; ``has_files``: anything
    is (a path-based table "exists" then, Delta's ``DeltaCatalog.tableExists``)."""
    if identified == "catalog":  # the catalog has the table: it exists, whatever the path holds
        if mode in ("create", "createIfNotExists"):
            return "exists" if mode == "create" else "return"
        return "replace" if exists else "absent"
    if mode == "replace":
        return "replace" if identified == "path" and exists else "missing"
    if identified == "path" and has_files and mode in ("create", "createIfNotExists"):
        return "exists" if mode == "create" else "return"
    if exists:
        return "verify"
    return "not-empty" if has_files else "create"


def refuse_creation_step(step: str, uri: str, exists: bool) -> None:
    """Raise the error of a refusing :func:`creation_step` (nothing for ``create`` or
    ``replace``): :class:`TableAlreadyExistsError`, :class:`TableNotFoundError`
    (``DELTA_CANNOT_REPLACE_MISSING_TABLE``) or :class:`DeltaAnalysisError`."""
    from deltalog.contrib.spark.errors import TableAlreadyExistsError
    from deltalog.txn.protocol.errors import TableNotFoundError

    if step == "exists":
        raise TableAlreadyExistsError(
            f"a Delta table already exists at {uri}"
            if exists
            else f"{uri} already exists and is not empty (it is not a Delta table); create the table at an empty "
            "location, or convert the Parquet files with convertToDelta"
        )
    if step == "missing":
        raise TableNotFoundError(
            uri,
            "DELTA_CANNOT_REPLACE_MISSING_TABLE: it cannot be replaced as it does not exist; use "
            "DeltaTable.createOrReplace to create it",
        )
    if step == "not-empty":
        raise DeltaAnalysisError(
            f"DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION: Cannot create table. The associated location ({uri}) is "
            "not empty and also not a Delta table; create it at an empty location, or convert the files first"
        )
    if step == "absent":
        raise DeltaAnalysisError(
            f"DELTA_METADATA_ABSENT_EXISTING_CATALOG_TABLE: the catalog has the table, but {uri} holds no Delta "
            "table (its transaction log was removed); drop the catalog entry, or restore the log"
        )


def check_builder_partitioning(
    fields: list[dict[str, Any]], partitions: list[str], cluster_by: list[str], resolver: Resolver
) -> list[str]:
    """Delta's checks of CREATE TABLE's partitioning (``DeltaCatalog.createDeltaTable``): not
    both partitioned and clustered (``DELTA_CLUSTER_BY_WITH_PARTITIONED_BY``), no identity
    column as a partition column (``DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED``). Returns
    the partition columns spelled as the schema spells them, found by the session's
    ``resolver`` (Spark's CREATE TABLE normalizes them so: ``FOO`` partitions by ``foo``)."""
    if partitions and cluster_by:
        raise DeltaAnalysisError(
            "DELTA_CLUSTER_BY_WITH_PARTITIONED_BY: Clustering and partitioning cannot both be specified. Please "
            "remove partitionedBy if you want to create a Delta table with clustering."
        )
    identity = {str(f["name"]).lower() for f in fields if START in (f.get("metadata") or {})}
    for column in partitions:
        if column.lower() in identity:
            raise DeltaAnalysisError(
                f"DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED: PARTITIONED BY IDENTITY column {column} is not "
                "supported."
            )
    names = [str(f["name"]) for f in fields]
    return [resolver.find(column, names) or column for column in partitions]


def refuse_clustering_feature_property(properties: Mapping[str, str]) -> None:
    """Delta's ``validateExistingTableFeatureProperties``: CREATE TABLE does not take
    ``delta.feature.clustering`` as a property (``clusterBy`` adds the feature)."""
    if any(k.lower() == "delta.feature.clustering" for k in properties):
        raise DeltaAnalysisError(
            "DELTA_CREATE_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED: Cannot enable clustering table feature "
            "using TBLPROPERTIES. Use clusterBy(...) to create a Delta table with clustering."
        )


def location_has_files(delta_log: DeltaLog) -> bool:
    """Whether the table's directory holds anything (Delta's ``DeltaCatalog.tableExists`` of a
    path: it exists and lists non-empty)."""
    import pyarrow.fs as pafs

    fs = delta_log.store.filesystem()
    root = delta_log.store.fs_path(delta_log.table_uri).rstrip("/")
    selector = pafs.FileSelector(root, recursive=False, allow_not_found=True)
    try:
        return bool(fs.get_file_info(selector))
    except NotADirectoryError:
        return True
