"""CHECK constraints, column invariants and NOT NULL columns for the Spark writers.

The transaction engine refuses a commit that adds data to a table with constraints unless
the writer evaluated them (:meth:`OptimisticTransaction.mark_constraints_checked`).

- Every write task (data source writes, streaming, and the files the table API writes)
  evaluates the table's constraints on its rows with the txn layer's pyarrow evaluator
  (:func:`deltalog.txn.protocol.constraints.check_constraints`) before writing them: a violating
  job fails, its files are deleted and nothing is committed. The driver parses the
  constraints when it plans the write (:func:`plan_constraints`), so one outside the
  evaluator's SQL subset refuses a data-source write before any task runs.
- The table API (``delete``/``update``/``merge``) has the rows as a DataFrame: for a
  constraint outside the subset it evaluates the constraints with Spark SQL in the driver
  instead (:func:`check_dataframe`). Its errors are raised as
  :class:`ConstraintViolationError` (a subclass of the txn layer's), also when a task
  found the violation.

A row satisfies a constraint when its expression is ``true``; ``false`` and ``NULL`` are
violations, as in Delta.

NOT NULL columns (non-nullable fields of the table's schema, nested struct fields too:
:func:`deltalog.txn.protocol.constraints.not_null_constraints`) are checked by the same task check
on every write path, always with the pyarrow evaluator; a violation raises
:class:`NotNullConstraintViolationError` naming the column, with Delta's message
("NOT NULL constraint violated for column: <name>.").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaSparkError
from deltalog.txn.protocol import constraints as core
from deltalog.txn.protocol.constraints import (
    NOT_NULL_MESSAGE,
    Constraint,
    char_varchar_constraints,
    not_null_constraints,
    table_constraints,
)
from deltalog.txn.protocol.properties import InvalidPropertyError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.txn.protocol.actions import Metadata

__all__ = [
    "ConstraintViolationError",
    "NotNullConstraintViolationError",
    "UncheckableConstraintsError",
    "check_dataframe",
    "check_new_constraints",
    "plan_constraints",
    "raise_task_violation",
    "task_checker",
]

CDC_TYPE_COLUMN = "_change_type"
_MARKER = "ConstraintViolationError: "


class ConstraintViolationError(core.ConstraintViolationError, DeltaSparkError):
    """Rows to be written break a CHECK constraint or a column invariant; nothing was
    committed. ``str(error)`` names the constraint and the rows."""

    def __init__(self, message: str, constraint: Constraint | None = None, violations: int | None = None) -> None:
        self.constraint = constraint  # type: ignore[assignment]
        self.violations = violations  # type: ignore[assignment]
        self.row_index = -1
        self.values: dict[str, Any] = {}
        Exception.__init__(self, message)


class NotNullConstraintViolationError(ConstraintViolationError, core.NotNullConstraintViolationError):
    """Rows to be written hold NULL in a NOT NULL column (``column`` names it); nothing was
    committed."""

    def __init__(self, message: str, column: str) -> None:
        super().__init__(message, core.Constraint(core.NOT_NULL, f"{column} IS NOT NULL", "not_null", column))
        self.column = column
        self.values = {column: None}


class UncheckableConstraintsError(DeltaSparkError):
    """The table's constraints changed during the write, or cannot be evaluated here."""


def plan_constraints(metadata: Metadata, where: str, *, spark_fallback: bool = False) -> tuple[Constraint, ...]:
    """The constraints the write tasks check: the table's CHECK constraints and invariants
    (none when they are checked with Spark SQL instead), then its NOT NULL columns and the
    lengths of its char/varchar columns.

    Parses every constraint now, so an expression outside the evaluator's SQL subset is
    refused before anything is written, unless ``spark_fallback`` (the table API, which
    then checks the CHECK constraints and invariants with :func:`check_dataframe`)."""
    not_null = (*not_null_constraints(metadata), *char_varchar_constraints(metadata))
    constraints = tuple(table_constraints(metadata))
    if not constraints:
        return not_null
    try:
        compiled = core.compile_constraints(metadata)  # the table's: a collated comparison is refused
    except core.UnsupportedConstraintError as exc:
        if spark_fallback:
            return not_null
        raise UncheckableConstraintsError(
            f"the table at {where} has a constraint the deltalog data source cannot evaluate ({exc}); "
            "nothing was written. Write through the table API (DeltaTable.merge(...).whenNotMatchedInsertAll(), "
            "which checks constraints with Spark SQL), or drop or rewrite the constraint."
        ) from None
    _refuse_unknown_columns(compiled, metadata, where)
    return constraints + not_null


def _refuse_unknown_columns(compiled: Sequence[core.CompiledConstraint], metadata: Metadata, where: str) -> None:
    """A constraint naming a column the schema lacks (an ``overwriteSchema`` that dropped it)
    could not be checked: refused before anything is written, as Delta's
    ``Constraints.validateCheckConstraints`` (``DELTA_INVALID_CHECK_CONSTRAINT_REFERENCES``)."""
    from deltalog.txn.protocol.schema import parse_schema

    schema = parse_schema(metadata.schema_string)
    for c in compiled:
        for path in c.columns:
            if not _has_column(schema, path):
                raise UncheckableConstraintsError(
                    f"DELTA_INVALID_CHECK_CONSTRAINT_REFERENCES: the constraint {c.constraint.name} "
                    f"({c.constraint.expression}) of the table at {where} names {'.'.join(path)}, which the "
                    "table's schema does not have; nothing was written. Keep the column, or drop the "
                    "constraint first (DeltaTable.unsetProperties)."
                )


def _has_column(schema: Any, path: tuple[str, ...]) -> bool:
    from deltalog.txn.protocol.schema import StructType

    dt = schema
    for name in path:
        if not isinstance(dt, StructType) or name not in dt:
            return False
        dt = dt.field(name).type
    return True


def task_checker(constraints: Sequence[Constraint], time_zone: str | None = None) -> Callable[[Any], None] | None:
    """The check a write task runs on each Arrow table before writing it (None: nothing);
    zone-free timestamp texts read in Spark's session ``time_zone``."""
    if not constraints:
        return None
    compiled = core.compile_constraints(constraints, time_zone)

    def check(table: Any) -> None:
        core.check_constraints(table, compiled)

    return check


def raise_task_violation(error: BaseException) -> None:
    """Re-raise a Spark job failure caused by a task's constraint check as
    :class:`ConstraintViolationError` (:class:`NotNullConstraintViolationError` for a NOT NULL
    column; Spark wraps task errors in its own types)."""
    from pyspark.errors import AnalysisException

    if isinstance(error, AnalysisException):
        return  # a plan Spark refused (its text may quote the check's message): not a row's
    text = str(error)
    at = text.find(_MARKER)
    if at < 0 or "deltalog" not in text:
        return
    message = text[at + len(_MARKER) :]
    if message.startswith(NOT_NULL_MESSAGE):
        column = message[len(NOT_NULL_MESSAGE) :].split(".\n", 1)[0]
        end = message.find(core.NOT_NULL_END)
        message = message[: end + len(core.NOT_NULL_END)] if end >= 0 else message.split("\n\n")[0]
        raise NotNullConstraintViolationError(message.strip(), column) from error
    end = message.find("drop the constraint from the table.")
    message = message[: end + len("drop the constraint from the table.")] if end >= 0 else message.split("\n\n")[0]
    raise ConstraintViolationError(message.strip()) from error


def check_dataframe(df: DataFrame, metadata: Metadata) -> bool:
    """Evaluate the table's constraints over ``df`` with Spark SQL (one Spark job); True
    when there were any. Change-data rows (``_change_type`` set) are not checked."""
    from pyspark.sql import functions as F

    constraints = table_constraints(metadata)
    if not constraints:
        return False
    rows = df
    if CDC_TYPE_COLUMN in df.columns:
        rows = df.filter(F.col(CDC_TYPE_COLUMN).isNull()).drop(CDC_TYPE_COLUMN)
    bad = [~F.coalesce(F.expr(f"({c.expression})").cast("boolean"), F.lit(False)) for c in constraints]
    counts = rows.select(
        F.count(F.lit(1)).alias("total"), *[F.sum(F.when(b, 1).otherwise(0)).alias(f"c{i}") for i, b in enumerate(bad)]
    ).collect()[0]
    for i, c in enumerate(constraints):
        n = counts[f"c{i}"] or 0
        if n:
            what = "CHECK constraint" if c.kind == "check" else "invariant"
            shown = _values_shown(rows.filter(bad[i]))
            raise ConstraintViolationError(
                f"{what} {c.name} ({c.expression}) violated by row with values:{shown}\n({n} of "
                f"{counts['total']} row(s) break it, false or NULL.)\n"
                "Nothing was written: fix the data, or drop the constraint from the table.",
                c,
                int(n),
            )
    return True


def _values_shown(rows: DataFrame) -> str:
    """The first of ``rows`` as Delta's ``DELTA_VIOLATE_CONSTRAINT_WITH_VALUES`` shows values,
    ``\n - column : value`` by column name, each value cast to a string by Spark (a variant as
    its JSON; :func:`~deltalog.txn.protocol.constraints.value_text`: ``null``, ``true``)."""
    from pyspark.sql import functions as F

    names = sorted(rows.columns)
    as_text = [F.col("`" + name.replace("`", "``") + "`").cast("string") for name in names]
    sample = rows.select(*as_text).limit(1).collect()
    return "".join(f"\n - {name} : {core.value_text(value)}" for name, value in zip(names, sample[0])) if sample else ""


def check_new_constraints(rows: DataFrame, constraints: Mapping[str, str], table: str) -> None:
    """Delta's ``ADD CONSTRAINT``: the table's ``rows`` must all satisfy each new CHECK
    constraint ``{name: expression}`` (one Spark job each); a row for which one is false or NULL
    raises :class:`ConstraintViolationError` (Delta's DELTA_NEW_CHECK_CONSTRAINT_VIOLATION)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    named = sorted(constraints.items())
    for name, expression in named:  # Delta's analysis of the filter (DATATYPE_MISMATCH.FILTER_NOT_BOOLEAN)
        if not isinstance(rows.select(F.expr(f"({expression})")).schema[0].dataType, BooleanType):
            raise InvalidPropertyError(
                f"[DELTA_NON_BOOLEAN_CHECK_CONSTRAINT] CHECK constraint '{name}' ({expression}) should be a "
                "boolean expression; nothing was committed"
            )
    for name, expression in named:
        # Delta's count of df.where(NOT expr OR expr IS UNKNOWN): a filter, so a non-deterministic
        # expression is counted as Delta counts it and an aggregate is refused as Delta's is
        broken = ~F.coalesce(F.expr(f"({expression})").cast("boolean"), F.lit(False))
        n = rows.filter(broken).count()
        if n:
            raise ConstraintViolationError(
                f"{n} rows in {table} violate the new CHECK constraint ({expression}) "
                f"(constraint {name}; false or NULL; Delta's DELTA_NEW_CHECK_CONSTRAINT_VIOLATION). The table "
                "was not changed: fix or delete those rows first.",
                Constraint(name, expression, "check"),
                n,
            )
