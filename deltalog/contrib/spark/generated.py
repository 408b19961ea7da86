"""Generated, identity and default columns on the Spark write paths.

The write tasks fill and check these columns (:class:`~deltalog.txn.protocol.column_defaults.DefaultExpressions`
in the :class:`~deltalog.contrib.spark.files.WriteSpec`); this module holds the driver's
part: refusing data that gives a ``GENERATED ALWAYS AS IDENTITY`` column before any task
runs (the commit moves the high-water marks the tasks report:
``OptimisticTransaction.update_identity_high_water_marks``). For UPDATE and MERGE, whose
rows are Spark DataFrames, it recomputes generated columns, evaluates column defaults and
generates MERGE's identity values with Spark SQL, and refuses identity-column updates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.column_defaults import CURRENT_DEFAULT
from deltalog.txn.protocol.generated_columns import GENERATION_EXPRESSION, enforces_generated_columns
from deltalog.txn.protocol.identity import (
    TASK_RANGE,
    IdentityColumn,
    IdentityColumnError,
    check_explicit_insert,
    identity_columns,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "check_data_for_default_columns",
    "check_merge_inserts",
    "check_updated_columns",
    "identity_values",
    "insert_default",
    "prepare_merge_assignments",
    "recompute_generated",
]


def check_data_for_default_columns(metadata: Metadata, data_schema: Mapping[str, Any]) -> None:
    """Refuse, before any task runs, data that gives a ``GENERATED ALWAYS AS IDENTITY``
    column."""
    check_explicit_insert(metadata, [str(f["name"]) for f in data_schema.get("fields") or []])


# -- the table API (UPDATE, MERGE): rows built as Spark DataFrames --------------------------


def check_updated_columns(metadata: Metadata, assigned: Iterable[str]) -> None:
    """Refuse an UPDATE or MERGE that assigns an identity column (Delta's
    ``blockIdentityColumnUpdate``)."""
    given = {c.lower() for c in assigned}
    for column in identity_columns(metadata):
        if column.name.lower() in given:
            raise IdentityColumnError(f"the identity column {column.name} cannot be updated")


def check_merge_inserts(metadata: Metadata, inserted: Sequence[Iterable[str]]) -> None:
    """Refuse MERGE insert clauses that give a ``GENERATED ALWAYS`` identity column (the
    ones that leave an identity column out get generated values: :func:`identity_values`)."""
    for clause in inserted:
        check_explicit_insert(metadata, list(clause))


def identity_values(column: IdentityColumn) -> Column:
    """Generated values of an identity column for the rows of a MERGE's insert clauses:
    ``base + step * (partition * TASK_RANGE + row index in the partition)``, each Spark
    partition in its own range as the Python write tasks generate them (Delta interleaves
    by the number of partitions, which its JVM expression knows). The write tasks report the
    largest value written as the high-water mark (``DefaultExpressions.tracked_identity``)."""
    from pyspark.sql import functions as F

    column.check_generable()
    partition = "CAST(spark_partition_id() AS BIGINT)"
    index = f"(monotonically_increasing_id() - shiftleft({partition}, 33))"
    return F.expr(
        f"CAST({column.base} AS BIGINT) + CAST({column.step} AS BIGINT) * ({partition} * {TASK_RANGE} + {index})"
    )


def insert_default(metadata: Metadata, column: str) -> Column:
    """The value a MERGE insert gives a column it does not assign: the column's
    ``CURRENT_DEFAULT`` (evaluated by Spark SQL), else NULL."""
    from pyspark.sql import functions as F

    for f in json.loads(metadata.schema_string).get("fields") or []:
        if str(f["name"]).lower() == column.lower():
            default = (f.get("metadata") or {}).get(CURRENT_DEFAULT)
            if default is not None:
                return F.expr(str(default))
    return F.lit(None)


def recompute_generated(
    df: DataFrame, snapshot: Snapshot, assigned: Iterable[str], kept: Mapping[str, Column] | None = None
) -> DataFrame:
    """``df`` (rows an UPDATE or MERGE writes) with every generated column it did not assign
    recomputed from the row's new values by Spark SQL, as Delta's ``PreprocessTableUpdate``
    does; an assigned one is still checked by the write tasks. ``kept`` decides per row
    instead (a MERGE, whose clauses assign different columns: Delta's
    ``PreprocessTableMerge`` resolves each clause): a generated column named there keeps a
    row's value where its condition holds and is recomputed elsewhere. Nothing on a table
    whose protocol does not enforce generated columns (:func:`enforces_generated_columns`)."""
    from pyspark.sql import functions as F

    metadata = snapshot.metadata
    if not enforces_generated_columns(snapshot.protocol, metadata):
        return df
    given = {c.lower() for c in assigned}
    keep = {c.lower(): cond for c, cond in (kept or {}).items()}
    for f in json.loads(metadata.schema_string).get("fields") or []:
        expression = (f.get("metadata") or {}).get(GENERATION_EXPRESSION)
        name = str(f["name"])
        if expression is None or name.lower() in given or name not in df.columns:
            continue
        value = F.expr(str(expression)).cast(df.schema[name].dataType)
        cond = keep.get(name.lower())
        df = df.withColumn(name, value if cond is None else F.when(cond, F.col(name)).otherwise(value))
    return df


def prepare_merge_assignments(
    metadata: Metadata, updates: Sequence[dict[str, Column]], inserts: Sequence[dict[str, Column]]
) -> tuple[set[str], tuple[str, ...]]:
    """Check a MERGE's clauses (:func:`check_updated_columns`, :func:`check_merge_inserts`),
    give each insert clause the defaults and the generated identity values
    (:func:`identity_values`) of the columns it does not assign (in place). Returns the
    columns some clause assigns (the generated ones among them are checked, the others
    recomputed: :func:`recompute_generated`) and the identity columns given generated values."""
    assigned: set[str] = set()
    for clause in updates:
        check_updated_columns(metadata, clause)
        assigned.update(clause)
    check_merge_inserts(metadata, [list(clause) for clause in inserts])
    generated: list[str] = []
    for clause in inserts:
        assigned.update(clause)
        given = {c.lower() for c in clause}
        for f in json.loads(metadata.schema_string).get("fields") or []:
            name = str(f["name"])
            if CURRENT_DEFAULT in (f.get("metadata") or {}) and name.lower() not in given:
                clause[name] = insert_default(metadata, name)
        for column in identity_columns(metadata):
            if column.name.lower() not in given:
                clause[column.name] = identity_values(column)
                generated.append(column.name)
    return assigned, tuple(dict.fromkeys(generated))
