"""CHECK constraints and column invariants for the Spark writers.

The transaction engine refuses a commit that adds data to a table with constraints unless
the writer evaluated them (:meth:`OptimisticTransaction.mark_constraints_checked`).

- The table API (``delete``/``update``/``merge``) has the rows to write as a DataFrame, so
  :func:`check_dataframe` evaluates every constraint with Spark SQL in one job before any
  file is written: a violation raises :class:`ConstraintViolationError` and nothing is
  written or committed.
- The data source (``df.write.format("deltalog")``, streaming) only sees Arrow batches in
  its tasks. When the txn layer provides the pyarrow evaluator
  ``deltalog.txn.constraints.check_constraints(arrow_table, constraints)``, each task runs
  it on its rows before writing them (:func:`task_checker`); without it a write to a
  constrained table is refused before any task runs (:func:`require_checkable`).

A row satisfies a constraint when its expression is ``true``; ``false`` and ``NULL`` are
violations, as in Delta.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaSparkError
from deltalog.txn.constraints import Constraint, table_constraints

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.txn.actions import Metadata

__all__ = [
    "ConstraintViolationError",
    "UncheckableConstraintsError",
    "check_dataframe",
    "require_checkable",
    "task_checker",
]

CDC_TYPE_COLUMN = "_change_type"


class ConstraintViolationError(DeltaSparkError, ValueError):
    """Rows to be written break a CHECK constraint or a column invariant; nothing was committed."""


class UncheckableConstraintsError(DeltaSparkError):
    """The table has constraints this writer cannot evaluate, so the write is refused."""


def _describe(constraints: Sequence[Constraint]) -> str:
    return "; ".join(f"{c.name}: {c.expression}" for c in constraints)


def check_dataframe(df: DataFrame, metadata: Metadata) -> bool:
    """Evaluate the table's constraints over ``df`` (one Spark job); True when there were any.

    Change-data rows (``_change_type`` set: pre-images, deletes) are not checked: they are
    not rows of the table. Raises :class:`ConstraintViolationError` naming the first
    constraint violated, how many rows break it and one of them.
    """
    from pyspark.sql import functions as F

    constraints = table_constraints(metadata)
    if not constraints:
        return False
    rows = df
    if CDC_TYPE_COLUMN in df.columns:
        rows = df.filter(F.col(CDC_TYPE_COLUMN).isNull()).drop(CDC_TYPE_COLUMN)
    bad = [~F.coalesce(F.expr(f"({c.expression})").cast("boolean"), F.lit(False)) for c in constraints]
    counts = rows.select(*[F.sum(F.when(b, 1).otherwise(0)).alias(f"c{i}") for i, b in enumerate(bad)]).collect()[0]
    for i, c in enumerate(constraints):
        n = counts[f"c{i}"] or 0
        if n:
            sample = rows.filter(bad[i]).limit(1).collect()
            shown = sample[0].asDict() if sample else {}
            raise ConstraintViolationError(
                f"{n} row(s) violate the {c.kind} constraint {c.name} ({c.expression}), e.g. {shown}; "
                "nothing was written. Fix the data, or drop the constraint from the table."
            )
    return True


def _evaluator() -> Callable[[Any, Sequence[Constraint]], Any] | None:
    import deltalog.txn.constraints as core

    found = getattr(core, "check_constraints", None)
    return found if callable(found) else None


def require_checkable(metadata: Metadata, where: str) -> tuple[Constraint, ...]:
    """The constraints a data-source write must check in its tasks; refuses the write
    (before anything is written) when there are some and no task-side evaluator exists."""
    constraints = tuple(table_constraints(metadata))
    if constraints and _evaluator() is None:
        raise UncheckableConstraintsError(
            f"the table at {where} has constraints ({_describe(constraints)}) and the deltalog data source "
            "cannot evaluate them in its write tasks in this version, so the write was refused and nothing "
            "was written. Write through the table API instead (DeltaTable.forPath(spark, path).merge(df, ...)"
            ".whenNotMatchedInsertAll().execute() checks constraints with Spark SQL), or drop the constraint."
        )
    return constraints


def task_checker(constraints: Sequence[Constraint]) -> Callable[[Any], None] | None:
    """A function a write task calls on each Arrow table before writing it (None: nothing to check)."""
    if not constraints:
        return None
    evaluate = _evaluator()
    if evaluate is None:  # planned with an evaluator, run without one: never write unchecked rows
        raise UncheckableConstraintsError(
            f"this executor's deltalog cannot evaluate the table's constraints ({_describe(constraints)}); "
            "install the same deltalog version on the driver and the executors"
        )

    def check(table: Any) -> None:
        evaluate(table, list(constraints))

    return check
