"""OPTIMIZE's ``where`` predicates as Delta's ``OptimizeTableCommand`` reads them.

Each ``where`` of ``DeltaOptimizeBuilder`` adds a predicate, and the predicates are ANDed.
Each may name partition columns only (Delta's ``verifyPartitionPredicates``:
``DELTA_NON_PARTITION_COLUMN_REFERENCE``), and Delta selects the files by any such predicate
(``filesForScan``). A simple one (comparisons, ``IN``, ``IS [NOT] NULL`` ANDed) becomes the
engine's partition filters; one naming no column (``1 = 0``, ``1 = 1``) is a constant, which
Delta folds: false or NULL selects no file, true every file; any other (``OR``, a function
of a partition column, a constant ANDed with a column term) is evaluated by Spark over the
files' partition values, as for a metadata-only DELETE
(:mod:`~deltalog.contrib.spark.partition_conditions`). A non-deterministic predicate
(``rand() < 0.5``) selects nothing out: Delta's ``filesForScan`` leaves it out of the
partition filters, so every file is considered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.predicates import parse_partition_predicate
from deltalog.contrib.spark.replace_where import compiled_predicate, refuse_data_columns, refuse_non_partition_names
from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.partition_filters import PartitionFilter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.contrib.spark.resolver import Resolver
    from deltalog.txn.commands.optimize import FileSelector
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["OptimizeWhere", "file_selector", "optimize_where"]

_WHY = "OPTIMIZE selects whole partitions"


@dataclass(frozen=True)
class OptimizeWhere:
    """The files OPTIMIZE considers: those ``filters`` select (None: every file) and the Spark
    ``conditions`` hold for, or none at all when ``is_false`` (a constant predicate that is
    false or NULL); ``predicate``: the commit's ``predicate`` parameter."""

    filters: list[PartitionFilter] | None
    is_false: bool = False
    conditions: list[str] = field(default_factory=list)
    predicate: list[str] | None = None


def optimize_where(predicates: Sequence[str], metadata: Metadata, spark: SparkSession) -> OptimizeWhere:
    """OPTIMIZE's ``where`` ``predicates`` (ANDed) on a table of ``metadata``; raises
    :class:`DeltaAnalysisError` for a predicate naming a data column (names compared by the
    session's resolver, as Delta's ``verifyPartitionPredicates``)."""
    from deltalog.contrib.spark.resolver import session_resolver
    from deltalog.txn.commands.optimize import describe_filters

    resolver = session_resolver(spark)
    filters: list[PartitionFilter] = []
    conditions: list[str] = []
    is_false = False
    for text in predicates:
        refuse_data_columns(text, metadata, _WHY, resolver)
        try:
            filters.extend(parse_partition_predicate(text))
            continue
        except DeltaAnalysisError:
            value = _constant(text)
        if value is not None:
            is_false = is_false or not value
        elif _partition_condition(spark, metadata, text, resolver):
            conditions.append(text)
    predicate = [*describe_filters(filters), *(f"({c})" for c in conditions)] if conditions else None
    return OptimizeWhere(filters or None, is_false, conditions, predicate)


def _partition_condition(spark: SparkSession, metadata: Metadata, text: str, resolver: Resolver) -> bool:
    """Whether ``text`` is a deterministic condition on partition columns, to evaluate by
    Spark; False for a non-deterministic one (Delta's ``filesForScan`` ignores it). Raises
    Delta's ``DELTA_NON_PARTITION_COLUMN_REFERENCE`` for one naming another column and
    ``DELTA_UNSUPPORTED_SUBQUERY_IN_PARTITION_PREDICATES`` for one holding a subquery."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.logical_schema import logical_struct
    from deltalog.contrib.spark.partition_conditions import condition_references, has_subquery

    rows = spark.createDataFrame([], logical_struct(metadata.schema_string))
    if has_subquery(rows, F.expr(text)):  # Delta's verifyPartitionPredicates
        raise DeltaAnalysisError(
            "DELTA_UNSUPPORTED_SUBQUERY_IN_PARTITION_PREDICATES: Subquery is not supported in partition predicates."
        )
    deterministic, names = condition_references(rows, F.expr(text))
    refuse_non_partition_names(list(names), metadata, _WHY, resolver)
    return deterministic


def file_selector(spark: SparkSession, where: OptimizeWhere) -> FileSelector | None:
    """The engine OPTIMIZE's ``select_files`` for ``where``: no file when it is false, else
    the files whose partition values satisfy all its ``conditions`` (one Spark job); None
    when the partition filters alone select the files."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.partition_conditions import files_matching

    if not (where.is_false or where.conditions):
        return None

    def select(snapshot: Snapshot, files: list[AddFile]) -> list[AddFile]:
        if where.is_false or not files:
            return []
        condition = F.expr(" AND ".join(f"({c})" for c in where.conditions))
        return files_matching(spark, snapshot, files, condition, None)

    return select


def _constant(text: str) -> bool | None:
    """Whether ``text``, a predicate naming no column, holds (a NULL does not); None when it
    names a column or cannot be read."""
    import pyarrow as pa

    from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, column_paths

    try:
        compiled = compiled_predicate(text)
        if column_paths(compiled.expr):
            return None
        return compiled.evaluate(pa.table({"row": [0]}))[0].as_py() is True
    except (UnsupportedConstraintError, ValueError):
        return None
