"""The table's data constraints: ``CHECK`` constraints and column invariants.

A writer that adds data to a table with constraints must make sure every new row
satisfies them (Delta's checkConstraints and invariants writer features). The
transaction engine cannot see the rows, so it refuses a commit that adds data files
(``dataChange=true``) to such a table unless the writer declared it checked them
(:meth:`OptimisticTransaction.mark_constraints_checked`).

- ``CHECK`` constraints: table properties ``delta.constraints.<name> = <SQL expression>``.
- Invariants: a field's metadata ``delta.invariants`` holds
  ``{"expression": {"expression": "<SQL expression>"}}`` (nested fields by their path).
- NOT NULL columns: fields with ``"nullable": false`` (:func:`not_null_constraints`), nested
  struct fields too, as Delta's ``Invariants.getFromSchema`` (not inside arrays or maps). A
  nested one is read as ``parent.field``, NULL when the parent is NULL, so it also requires
  its parents to be non-NULL (Delta's ``Constraints.NotNull``). They are schema, not
  properties: :func:`table_constraints` does not list them, and the engine's
  "constraints checked" guard covers only what it lists.

Writers evaluate them on their Arrow data before writing files with
:func:`check_constraints` (the SQL subset and its semantics are in
:mod:`deltalog.txn.protocol.constraint_sql`). As in Delta's checker (``CheckDeltaInvariant``), a
row violates a constraint when its expression is ``false`` *or* ``NULL``; a column the
data lacks is ``NULL``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from deltalog.errors import DeltaError

if TYPE_CHECKING:
    import pyarrow as pa

from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.collations import has_collated_string
from deltalog.txn.protocol.constraint_sql import (
    Column,
    Expr,
    Unary,
    UnsupportedConstraintError,
    column_paths,
    evaluate,
    parse_expression,
)

__all__ = [
    "CompiledConstraint",
    "Constraint",
    "ConstraintViolationError",
    "MissingNotNullColumnError",
    "NotNullConstraintViolationError",
    "UnsupportedConstraintError",
    "char_varchar_constraints",
    "check_constraints",
    "compile_constraints",
    "not_null_constraints",
    "refuse_missing_not_null_columns",
    "table_constraints",
    "value_text",
]

NOT_NULL = "NOT NULL"
#: Where Spark keeps a char/varchar column's declared type (its Delta type is ``string``).
CHAR_VARCHAR_TYPE_STRING = "__CHAR_VARCHAR_TYPE_STRING"
#: Delta's name for the length check of such a column (``CharVarcharConstraint``).
CHAR_VARCHAR_CHECK = "__CHAR_VARCHAR_STRING_LENGTH_CHECK__"
_CHAR_VARCHAR = re.compile(r"\s*(?:var)?char\s*\(\s*(\d+)\s*\)\s*", re.IGNORECASE)
#: The first words of :class:`NotNullConstraintViolationError` (Delta's
#: ``DELTA_NOT_NULL_CONSTRAINT_VIOLATED`` message).
NOT_NULL_MESSAGE = "NOT NULL constraint violated for column: "
#: ... and its last words.
NOT_NULL_END = "give the column a value in every row, or leave those rows out."


@dataclass(frozen=True)
class Constraint:
    """One constraint: a ``CHECK`` constraint or a column invariant."""

    name: str
    expression: str
    kind: str  # "check", "invariant" or "not_null"
    column: str | None = None


def _fields(data_type: Any, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(data_type, dict) and data_type.get("type") == "struct":
        for f in data_type.get("fields") or []:
            path = f"{prefix}{f.get('name')}"
            yield path, f
            yield from _fields(f.get("type"), path + ".")


def table_constraints(metadata: Metadata) -> list[Constraint]:
    """Every ``CHECK`` constraint and column invariant of the table."""
    found = [Constraint(name, value, "check") for name, value in sorted(metadata.properties.check_constraints.items())]
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError:
        return found
    for path, f in _fields(schema, ""):
        raw = (f.get("metadata") or {}).get("delta.invariants")
        if raw is None:
            continue
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
            expression = parsed["expression"]["expression"]
        except (ValueError, KeyError, TypeError):
            expression = str(raw)
        found.append(Constraint(f"invariant on {path}", str(expression), "invariant", path))
    return found


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def not_null_constraints(metadata: Metadata) -> list[Constraint]:
    """A ``NOT NULL`` constraint (``<column> IS NOT NULL``) for every non-nullable field of
    the table's schema, nested struct fields by their dotted path (as Delta's
    ``Invariants.getFromSchema``: fields inside arrays and maps are not checked)."""
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError:
        return []
    return [
        Constraint(NOT_NULL, ".".join(_quoted(p) for p in parts) + " IS NOT NULL", "not_null", _display(parts))
        for parts, f in _field_paths(schema, ())
        if f.get("nullable", True) is False
    ]


def char_varchar_constraints(metadata: Metadata) -> list[Constraint]:
    """The length check of every top-level ``char(n)`` / ``varchar(n)`` column (a ``string``
    whose metadata keeps the declared type, as Spark and Delta store it): ``c IS NULL OR
    length(c) <= n``, Delta's ``CharVarcharConstraint`` (``char`` is not padded on write)."""
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError:
        return []
    found = []
    for f in schema.get("fields") or []:
        declared = (f.get("metadata") or {}).get(CHAR_VARCHAR_TYPE_STRING)
        match = _CHAR_VARCHAR.fullmatch(declared) if isinstance(declared, str) else None
        if match is not None and f.get("type") == "string":
            q = _quoted(str(f["name"]))
            found.append(
                Constraint(
                    CHAR_VARCHAR_CHECK, f"{q} IS NULL OR length({q}) <= {match.group(1)}", "invariant", f["name"]
                )
            )
    return found


def _display(parts: tuple[str, ...]) -> str:
    """A column path as Spark prints one (``a.b``; a name holding a dot is quoted)."""
    return ".".join(_quoted(p) if "." in p or "`" in p else p for p in parts)


def _field_paths(data_type: Any, parents: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    if isinstance(data_type, dict) and data_type.get("type") == "struct":
        for f in data_type.get("fields") or []:
            parts = (*parents, str(f.get("name")))
            yield parts, f
            yield from _field_paths(f.get("type"), parts)


def value_text(value: Any) -> str:
    """A value as Delta's ``DELTA_VIOLATE_CONSTRAINT_WITH_VALUES`` lists it: its text,
    ``null`` for NULL, ``true``/``false`` for booleans (strings unquoted)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ConstraintViolationError(DeltaError, ValueError):
    """Rows break a CHECK constraint or a column invariant; nothing should be written."""

    def __init__(
        self, constraint: Constraint, violations: int, total: int, row_index: int, values: dict[str, Any]
    ) -> None:
        self.constraint = constraint
        self.violations = violations
        self.row_index = row_index
        self.values = values
        shown = "\n".join(f" - {k} : {value_text(values[k])}" for k in sorted(values)) or " (no columns)"
        what = "CHECK constraint" if constraint.kind == "check" else "invariant"
        name = constraint.name if constraint.kind == "check" else (constraint.column or constraint.name)
        super().__init__(
            f"{what} {name} ({constraint.expression}) violated by row with values:\n{shown}\n"
            f"({violations} of {total} row(s) break it, false or NULL; that one is row {row_index}.)\n"
            "Nothing was written for these rows: fix the data, or drop the constraint from the table."
        )


class NotNullConstraintViolationError(ConstraintViolationError):
    """Rows to be written hold NULL in a NOT NULL column (Delta's
    ``DELTA_NOT_NULL_CONSTRAINT_VIOLATED``); ``column`` names it (``parent.field`` when
    nested). Nothing should be written."""

    error_class = "DELTA_NOT_NULL_CONSTRAINT_VIOLATED"

    def __init__(self, column: str, violations: int | None = None, total: int | None = None) -> None:
        self.column = column
        self.constraint = Constraint(NOT_NULL, f"{column} IS NOT NULL", "not_null", column)
        self.violations = violations  # type: ignore[assignment]
        self.row_index = -1
        self.values = {column: None}
        counted = f" ({violations} of {total} row(s) are NULL)" if violations is not None else ""
        Exception.__init__(
            self,
            f"{NOT_NULL_MESSAGE}{column}.\nNothing was written{counted}: {NOT_NULL_END}",
        )


class MissingNotNullColumnError(NotNullConstraintViolationError):
    """The data to be written lacks a top-level NOT NULL column the write does not fill
    (Delta's ``DELTA_MISSING_NOT_NULL_COLUMN_VALUE``, raised when the write is planned,
    whatever the rows); ``column`` names it. Nothing was written."""

    error_class = "DELTA_MISSING_NOT_NULL_COLUMN_VALUE"

    def __init__(self, column: str) -> None:
        super().__init__(column)
        Exception.__init__(
            self,
            f"Column {column}, which has a NOT NULL constraint, is missing from the data being written into "
            "the table (DELTA_MISSING_NOT_NULL_COLUMN_VALUE). Nothing was written: give the data the column.",
        )


def refuse_missing_not_null_columns(metadata: Metadata, data_columns: Iterable[str], filled: Iterable[str]) -> None:
    """Raise :class:`MissingNotNullColumnError` when ``data_columns`` (the written data's
    top-level columns) lack a NOT NULL column of the table that the write does not fill
    (``filled``: its default, identity and generated columns), as Delta's
    ``DeltaInvariantCheckerExec`` finds no column to check."""
    given = {c.lower() for c in (*data_columns, *filled)}
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError:
        return
    for f in schema.get("fields") or []:
        if f.get("nullable", True) is False and str(f.get("name")).lower() not in given:
            raise MissingNotNullColumnError(_display((str(f.get("name")),)))


@dataclass(frozen=True)
class CompiledConstraint:
    """A constraint parsed once, ready to evaluate on Arrow data."""

    constraint: Constraint
    expr: Expr = field(repr=False)
    columns: tuple[tuple[str, ...], ...] = ()
    #: Spark's session time zone (``spark.sql.session.timeZone``), in which a zone-free
    #: timestamp text is read where it meets a ``timestamp`` (:data:`constraint_sql.SESSION_ZONE`)
    time_zone: str | None = None

    def evaluate(self, data: pa.Table | pa.RecordBatch) -> pa.ChunkedArray | pa.Array:
        """The expression's value on every row (boolean, nulls where it is NULL)."""
        import pyarrow as pa

        from deltalog.txn.protocol.constraint_sql import SESSION_ZONE
        from deltalog.txn.protocol.time_zones import session_time_zone

        token = SESSION_ZONE.set(session_time_zone(self.time_zone))
        try:
            value = evaluate(self.expr, data, self.constraint.expression)
        finally:
            SESSION_ZONE.reset(token)
        if isinstance(value, pa.Scalar):
            value = pa.repeat(value, data.num_rows)
        if not (pa.types.is_boolean(value.type) or pa.types.is_null(value.type)):
            raise UnsupportedConstraintError(
                self.constraint.expression,
                str(value.type),
                problem=f"it gives values of type {value.type}, not a boolean",
            )
        return value.cast(pa.bool_()) if pa.types.is_null(value.type) else value


ConstraintLike = Union[Constraint, CompiledConstraint, str]  # noqa: UP007 (a runtime alias)


def _compile(c: ConstraintLike, time_zone: str | None) -> CompiledConstraint:
    if isinstance(c, CompiledConstraint):
        return c
    if isinstance(c, str):
        c = Constraint(c, c, "check")
    expr = parse_expression(c.expression)
    return CompiledConstraint(c, expr, tuple(column_paths(expr)), time_zone)


def compile_constraints(
    constraints: Iterable[ConstraintLike] | Metadata, time_zone: str | None = None
) -> list[CompiledConstraint]:
    """Parse every constraint (of a table's ``Metadata``, or given); raises
    :class:`UnsupportedConstraintError` for one outside the SQL subset. Writers call this
    when they plan a write, so an unsupported constraint refuses the write up front.
    ``time_zone``: Spark's session time zone the constraints are evaluated in (None: UTC)."""
    if not isinstance(constraints, Metadata):
        return [_compile(c, time_zone) for c in constraints]
    compiled = [_compile(c, time_zone) for c in table_constraints(constraints)]
    if compiled:
        _refuse_collated_comparisons(compiled, constraints)
    return compiled


def _refuse_collated_comparisons(compiled: Sequence[CompiledConstraint], metadata: Metadata) -> None:
    """Raise :class:`UnsupportedConstraintError` for a constraint that reads a column holding
    a collated string other than in a null test: Delta compares it by its collation, the
    evaluator binary."""
    try:
        fields = json.loads(metadata.schema_string).get("fields") or []
    except ValueError:
        return
    collated = {f["name"].lower() for f in fields if has_collated_string([f])}
    for cc in compiled:
        hit = next((p for p in _compared_paths(cc.expr) if p[0].lower() in collated), None)
        if hit is not None:
            raise UnsupportedConstraintError(
                cc.constraint.expression,
                "collated string",
                problem=f"it compares the collated column {'.'.join(hit)}, which deltalog would compare binary "
                "(Delta compares by the collation)",
            )


def _compared_paths(e: Any) -> list[tuple[str, ...]]:
    """The column paths an expression reads other than in ``IS [NOT] NULL``."""
    if isinstance(e, Unary) and e.op in ("is_null", "is_not_null"):
        return []
    if isinstance(e, Column):
        return [e.path]
    out: list[tuple[str, ...]] = []
    for f in dataclasses.fields(e) if dataclasses.is_dataclass(e) else ():
        value = getattr(e, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            if dataclasses.is_dataclass(item):
                out.extend(_compared_paths(item))
    return out


def row_values(data: pa.Table | pa.RecordBatch, paths: Sequence[tuple[str, ...]], index: int) -> dict[str, Any]:
    """The values of the (nested) columns at ``paths`` in row ``index`` of ``data``, keyed by
    their dotted names, as a violation message lists them (a struct field's own value)."""
    from deltalog.txn.protocol.constraint_sql import column_values

    one = data.slice(index, 1)
    out: dict[str, Any] = {}
    for path in paths:
        value = column_values(one, path)
        out[".".join(path)] = value[0].as_py() if len(value) else None
    return out


def check_constraints(data: pa.Table | pa.RecordBatch, constraints: Iterable[ConstraintLike] | Metadata) -> None:
    """Raise :class:`ConstraintViolationError` when a row of ``data`` violates one of
    ``constraints`` (a row violates a constraint when its expression is ``false`` or
    ``NULL``), naming the constraint, its expression, how many rows break it and the values
    of the columns it reads in the first such row. :class:`UnsupportedConstraintError`
    when an expression is outside the supported SQL subset."""
    import pyarrow.compute as pc

    compiled = compile_constraints(constraints)
    if not compiled or data.num_rows == 0:
        return
    total = data.num_rows
    for cc in compiled:
        ok = pc.fill_null(cc.evaluate(data), False)
        if pc.all(ok).as_py():
            continue
        bad = pc.invert(ok)
        count = int(pc.sum(bad.cast("int64")).as_py() or 0)
        if cc.constraint.kind == "not_null":
            raise NotNullConstraintViolationError(cc.constraint.column or cc.constraint.name, count, total)
        first = int(pc.index(bad, True).as_py())
        raise ConstraintViolationError(cc.constraint, count, total, first, row_values(data, cc.columns, first))
