"""Delta's metadata-only DELETE and UPDATE (``DeleteCommand`` / ``UpdateCommand`` case 2):
a deterministic condition that names only partition columns, or no column at all
(``DeltaTableUtils.isPredicatePartitionColumnsOnly``: ``p % 2 = 0``, ``p = 'a' OR p = 'b'``,
``CURRENT_DATE > day``, ``1 = 1``), holds for every row of a file or for none, so the files
are chosen from their partition values and no data file is read to find the rows.

The SQL-text fast path (:func:`~deltalog.contrib.spark.predicates.parse_partition_predicate`)
prunes the simple conditions without Spark; any other such condition is evaluated here by
Spark over one row per file holding its typed partition values, as Delta's
``DeltaLog.filterFileList`` does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from deltalog.contrib.spark import schemas
from deltalog.contrib.spark.logical_schema import logical_struct
from deltalog.contrib.spark.partitioning import partition_value, typed_partition_value
from deltalog.txn.protocol.column_mapping import physical_partition_names
from deltalog.txn.protocol.schema import parse_schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["condition_references", "files_matching", "has_subquery", "names_partition_columns_only"]

_FILE_INDEX = "__deltalog_file_index"


def condition_references(rows: DataFrame, condition: Column) -> tuple[bool, list[str]]:
    """Whether ``condition``, resolved over ``rows`` (the table's columns, no row), is
    deterministic, and the names of the columns it references."""
    resolved = rows.select(condition)._jdf.queryExecution().analyzed().expressions().head()
    references = resolved.references().toSeq()
    return bool(resolved.deterministic()), [str(references.apply(i).name()) for i in range(references.size())]


def has_subquery(rows: DataFrame, condition: Column) -> bool:
    """Whether ``condition``, resolved over ``rows`` (no row), holds a subquery."""
    resolved = rows.select(condition)._jdf.queryExecution().analyzed().expressions().head()
    jvm = rows.sparkSession._jvm
    assert jvm is not None  # a classic session: the table API runs Spark jobs from the driver
    return bool(jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery(resolved))


def names_partition_columns_only(rows: DataFrame, condition: Column, partition_columns: Sequence[str]) -> bool:
    """Whether ``condition``, resolved over ``rows`` (the table's columns, no row), is
    deterministic and names no column but the ``partition_columns`` (perhaps none)."""
    deterministic, names = condition_references(rows, condition)
    partitions = {c.lower() for c in partition_columns}
    return deterministic and all(n.lower() in partitions for n in names)


def files_matching(
    spark: SparkSession, snapshot: Snapshot, files: Sequence[AddFile], condition: Column, alias: str | None
) -> list[AddFile]:
    """The ``files`` whose partition values satisfy ``condition`` (true, not null), decided
    by one Spark job over one row per file (the table's partition columns, typed; the table
    ``alias`` the condition may name them through)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    if not files:
        return []
    metadata = snapshot.metadata
    columns = list(metadata.partition_columns)
    logical = logical_struct(metadata.schema_string)
    types = schemas.top_level_types(json.loads(metadata.schema_string))
    keys = physical_partition_names(parse_schema(metadata.schema_string), metadata.partition_columns)
    rows = [
        (i, *(typed_partition_value(partition_value(f.partition_values, keys[c]), types[c]) for c in columns))
        for i, f in enumerate(files)
    ]
    schema = StructType([StructField(_FILE_INDEX, LongType()), *(logical[c] for c in columns)])
    frame = spark.createDataFrame(rows, schema)
    frame = frame.alias(alias) if alias else frame
    hits = frame.filter(F.coalesce(condition, F.lit(False))).select(_FILE_INDEX).collect()
    return [files[int(r[0])] for r in sorted(hits)]
