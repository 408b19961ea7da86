"""OPTIMIZE's ``where`` predicates as Delta's ``OptimizeTableCommand`` reads them.

Each ``where`` of ``DeltaOptimizeBuilder`` adds a predicate, and the predicates are ANDed.
Each may name partition columns only (Delta's ``verifyPartitionPredicates``:
``DELTA_NON_PARTITION_COLUMN_REFERENCE``). A predicate naming no column (``1 = 0``,
``1 = 1``) is a constant, which Delta's ``filesForScan`` folds: false or NULL selects no
file, true every file. The others are partition filters for the engine's OPTIMIZE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.predicates import parse_partition_predicate
from deltalog.contrib.spark.replace_where import compiled_predicate, refuse_data_columns
from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.partition_filters import PartitionFilter

__all__ = ["OptimizeWhere", "optimize_where"]


@dataclass(frozen=True)
class OptimizeWhere:
    """The files OPTIMIZE considers: those ``filters`` select (None: every file), or none at
    all when ``is_false`` (a constant predicate that is false or NULL)."""

    filters: list[PartitionFilter] | None
    is_false: bool = False


def optimize_where(predicates: Sequence[str], metadata: Metadata) -> OptimizeWhere:
    """OPTIMIZE's ``where`` ``predicates`` (ANDed) on a table of ``metadata``; raises
    :class:`DeltaAnalysisError` for a predicate naming a data column or one deltalog cannot read."""
    filters: list[PartitionFilter] = []
    is_false = False
    for text in predicates:
        refuse_data_columns(text, metadata, "OPTIMIZE selects whole partitions")
        try:
            filters.extend(parse_partition_predicate(text))
        except DeltaAnalysisError:
            value = _constant(text)
            if value is None:
                raise
            is_false = is_false or not value
    return OptimizeWhere(filters or None, is_false)


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
