"""Generated columns (PROTOCOL "Generated Columns", Delta's ``GeneratedColumn``).

A column whose field metadata holds ``delta.generationExpression`` is computed from the
other columns of its row. Writers must make every written row satisfy
``(<column> <=> <generation expression>) IS TRUE``: deltalog computes the column when the
data does not have it, and checks it (NULL-safe equality, as Delta's constraint) when the
data does, refusing the rows with :class:`GeneratedColumnConstraintViolationError`.

Expressions are Spark SQL. deltalog evaluates them with its pyarrow SQL subset
(:mod:`~deltalog.txn.protocol.constraint_sql`); an expression outside it is refused by
name when the write is planned (:class:`UnsupportedGenerationExpressionError`), never
written wrong.

Partition columns generated from a timestamp or date column (``date(ts)``,
``CAST(ts AS DATE)``, ``year``/``month``/``day``/``hour(ts)``, ``date_format``, ``trunc``,
``date_trunc``) turn filters on the source column into partition filters
(:func:`derived_partition_terms`, Delta's ``OptimizablePartitionExpression``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import DeltaError
from deltalog.txn.protocol.actions import Metadata, Protocol
from deltalog.txn.protocol.collations import COLLATIONS_KEY
from deltalog.txn.protocol.constraint_sql import (
    Call,
    Cast,
    Column,
    Expr,
    Literal,
    UnsupportedConstraintError,
    column_paths,
    evaluate,
    parse_expression,
)
from deltalog.txn.protocol.constraints import Constraint, ConstraintViolationError, row_values
from deltalog.txn.protocol.partition_filters import OR
from deltalog.txn.protocol.time_zones import session_time_zone, wall_clock_instants

__all__ = [
    "GENERATION_EXPRESSION",
    "FieldExpression",
    "GeneratedColumn",
    "GeneratedColumnConstraintViolationError",
    "PartitionExpression",
    "UnsupportedGenerationExpressionError",
    "check_generated_columns",
    "derived_partition_terms",
    "enforces_generated_columns",
    "field_expressions",
    "fill_generated_columns",
    "generated_column_constraints",
    "generated_columns",
    "partition_expressions",
    "retyped_generated_columns",
]

GENERATION_EXPRESSION = "delta.generationExpression"
#: functions a generation expression may not use: their value is not a function of the row
NONDETERMINISTIC = frozenset({"current_date", "current_timestamp"})


class UnsupportedGenerationExpressionError(DeltaError):
    """A generated column's expression cannot be evaluated by deltalog (outside its SQL
    subset, or not deterministic); the write was refused before anything was written."""

    def __init__(self, column: str, expression: str, reason: str) -> None:
        self.column = column
        self.expression = expression
        super().__init__(
            f"cannot compute the generated column {column} = {expression}: {reason}. Nothing was written; "
            "provide the column's values in the data (they are still checked), or write with Delta Spark"
        )


class GeneratedColumnConstraintViolationError(ConstraintViolationError):
    """Rows give a generated column a value that differs from its generation expression
    (Delta's ``CHECK constraint Generated Column (c <=> expr)``); nothing was written."""


@dataclass(frozen=True)
class GeneratedColumn:
    """A top-level column with a generation expression, parsed."""

    name: str
    expression: str
    type_json: Any  # the column's Delta type (JSON form)
    expr: Expr = field(repr=False, compare=False, default=Literal(None, "null"))

    @property
    def constraint(self) -> Constraint:
        return Constraint("Generated Column", f"{self.name} <=> {self.expression}", "check", self.name)


def _fields(metadata: Metadata) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = json.loads(metadata.schema_string).get("fields") or []
    return fields


@dataclass(frozen=True)
class FieldExpression:
    """A top-level column whose metadata holds a SQL expression, parsed."""

    name: str
    text: str
    #: the column's type as in the schema JSON
    type: Any
    expr: Expr


def field_expressions(
    metadata: Metadata, key: str, error: Callable[[str, str, str], DeltaError]
) -> list[FieldExpression]:
    """The table's top-level columns whose metadata holds ``key`` (a generation or default
    expression), parsed; ``error(column, expression, reason)`` is raised for one that does
    not parse."""
    out: list[FieldExpression] = []
    for f in _fields(metadata):
        text = (f.get("metadata") or {}).get(key)
        if text is None:
            continue
        name = str(f["name"])
        try:
            expr = parse_expression(str(text))
        except UnsupportedConstraintError as exc:
            raise error(name, str(text), exc.problem) from None
        out.append(FieldExpression(name, str(text), f["type"], expr))
    return out


def _functions(expr: Expr) -> set[str]:
    found: set[str] = set()

    def walk(e: Any) -> None:
        if isinstance(e, Call):
            found.add(e.name)
        for child in getattr(e, "__dataclass_fields__", {}):
            value = getattr(e, child)
            for item in value if isinstance(value, tuple) else (value,):
                if hasattr(item, "__dataclass_fields__"):
                    walk(item)

    walk(expr)
    return found


def generated_columns(metadata: Metadata) -> list[GeneratedColumn]:
    """The table's generated columns, parsed; raises
    :class:`UnsupportedGenerationExpressionError` for one deltalog cannot evaluate."""
    out: list[GeneratedColumn] = []
    names = {f["name"].lower() for f in _fields(metadata)}
    for c in field_expressions(metadata, GENERATION_EXPRESSION, UnsupportedGenerationExpressionError):
        bad = sorted(_functions(c.expr) & NONDETERMINISTIC)
        if bad:
            raise UnsupportedGenerationExpressionError(c.name, c.text, f"{bad[0]}() is not deterministic")
        unknown = [".".join(p) for p in column_paths(c.expr) if p[0].lower() not in names]
        if unknown:
            raise UnsupportedGenerationExpressionError(c.name, c.text, f"it names unknown columns {unknown}")
        out.append(GeneratedColumn(c.name, c.text, c.type, c.expr))
    return out


def _read_columns(expression: str) -> set[str] | None:
    """The top-level columns (lower case) an expression reads; None when deltalog's SQL
    subset cannot parse it."""
    try:
        return {p[0].lower() for p in column_paths(parse_expression(expression))}
    except UnsupportedConstraintError:
        return None


def retyped_generated_columns(old: Metadata, new: Metadata) -> list[tuple[str, str, str, str]]:
    """Delta's commit check that a generated column has its expression's type
    (``validateGeneratedColumns``: DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH), as far as it
    can be judged without typing the expression: a generated column of ``new`` that ``old``
    has with the same expression, whose type changed (nullability aside) while every column
    the expression reads kept its type, no longer has its expression's type (a ``mergeSchema``
    write widening the generated column itself). ``(column, expression, old type, new type)``."""
    from deltalog.txn.protocol.schema import data_type_from_json, same_type

    before = {str(f["name"]).lower(): f for f in _fields(old)}
    after = {str(f["name"]).lower(): f for f in _fields(new)}

    def same(name: str) -> bool:
        a, b = before.get(name), after.get(name)
        return a is None or b is None or same_type(data_type_from_json(a["type"]), data_type_from_json(b["type"]))

    out: list[tuple[str, str, str, str]] = []
    for name, f in after.items():
        text = (f.get("metadata") or {}).get(GENERATION_EXPRESSION)
        was = before.get(name)
        if text is None or was is None or (was.get("metadata") or {}).get(GENERATION_EXPRESSION) != text or same(name):
            continue
        read = _read_columns(str(text))
        if read is None or all(same(c) for c in read):
            old_type, new_type = data_type_from_json(was["type"]), data_type_from_json(f["type"])
            out.append((str(f["name"]), str(text), old_type.simple_string(), new_type.simple_string()))
    return out


def enforces_generated_columns(protocol: Protocol | None, metadata: Metadata) -> bool:
    """Delta's ``GeneratedColumn.enforcesGeneratedColumns``: the table has generated columns
    and its protocol supports the ``generatedColumns`` feature (writer version 4+, or the
    feature listed). A table an older writer made (Databricks 8.0's, writer version 2) keeps
    the expressions as mere metadata: its columns are written as given, null when missing.
    ``protocol`` None: a table the write creates, whose protocol will support them."""
    from deltalog.txn.protocol.features import protocol_features

    if GENERATION_EXPRESSION not in metadata.schema_string:
        return False
    return protocol is None or "generatedColumns" in protocol_features(protocol)[1]


def generated_column_constraints(metadata: Metadata) -> list[Constraint]:
    """Each generated column as the CHECK constraint writers must enforce,
    ``Generated Column: <column> <=> <expression>`` (no parsing: for the engine's check
    that a data commit's writer enforced them)."""
    out: list[Constraint] = []
    for f in _fields(metadata):
        text = (f.get("metadata") or {}).get(GENERATION_EXPRESSION)
        if text is not None:
            out.append(Constraint("Generated Column", f"{f['name']} <=> {text}", "check", str(f["name"])))
    return out


def _find(names: Sequence[str], wanted: str) -> int | None:
    lowered = wanted.lower()
    return next((i for i, n in enumerate(names) if n.lower() == lowered), None)


def _arrow_type(type_json: Any) -> pa.DataType:
    from deltalog.txn.protocol.schema import data_type_from_json, to_arrow_type

    return to_arrow_type(data_type_from_json(type_json))


def _compute(
    column: GeneratedColumn, table: pa.Table, target: pa.DataType, time_zone: str | None = None
) -> pa.ChunkedArray | pa.Array:
    try:
        value = evaluate(column.expr, table, column.expression)
    except UnsupportedConstraintError as exc:
        raise UnsupportedGenerationExpressionError(column.name, column.expression, exc.problem) from None
    if isinstance(value, pa.Scalar):
        value = pa.repeat(value, table.num_rows)
    try:
        zoned = pa.types.is_timestamp(target) and target.tz is not None
        return (wall_clock_instants(value, time_zone) if zoned else value).cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UnsupportedGenerationExpressionError(
            column.name, column.expression, f"its value ({value.type}) does not cast to {target} ({exc})"
        ) from None


def check_generated_columns(metadata: Metadata) -> list[GeneratedColumn]:
    """Parse and dry-run every generation expression on an empty batch of the table's
    schema, so a write is refused before any file is written when one cannot be computed."""
    from deltalog.txn.protocol.schema import parse_schema

    columns = generated_columns(metadata)
    if columns:
        empty = parse_schema(metadata.schema_string).to_arrow().empty_table()
        for column in columns:
            _compute(column, empty, _arrow_type(column.type_json))
    return columns


def fill_generated_columns(
    table: pa.Table, columns: Sequence[GeneratedColumn], time_zone: str | None = None
) -> pa.Table:
    """``table`` with every generated column it lacks computed, and every one it has
    checked; raises :class:`GeneratedColumnConstraintViolationError` for a row whose
    value is not ``<=>`` its expression. ``time_zone``: the session's, in which a wall-clock
    value of a ``timestamp`` column is read (Arrow's name,
    :func:`~deltalog.txn.protocol.time_zones.arrow_time_zone`)."""
    for column in columns:
        index = _find(table.column_names, column.name)
        if index is None:
            table = table.append_column(
                pa.field(column.name, _arrow_type(column.type_json)),
                _compute(column, table, _arrow_type(column.type_json), time_zone),
            )
            continue
        given = table.column(index)
        expected = _compute(column, table, given.type, time_zone)
        # a null-typed (void) column has no equal kernel: its values are all null
        equal = pa.nulls(len(given), pa.bool_()) if pa.types.is_null(given.type) else pc.equal(given, expected)
        same = pc.or_kleene(pc.fill_null(equal, False), pc.and_(pc.is_null(given), pc.is_null(expected)))
        if pc.all(same).as_py():
            continue
        bad = pc.invert(same)
        first = int(pc.index(bad, True).as_py())
        count = int(pc.sum(bad.cast(pa.int64())).as_py() or 0)
        read = dict.fromkeys([(column.name,), *column_paths(column.expr)])
        values = row_values(table, list(read), first)
        raise GeneratedColumnConstraintViolationError(column.constraint, count, table.num_rows, first, values)
    return table


# -- partition filters from filters on the source column ---------------------------------

#: how far a session time zone's local time can be from UTC (UTC-12 .. UTC+14), and from a
#: wall-clock value whose zone is unknown on top of that
_ZONE_SPREAD = dt.timedelta(hours=14)
_NAIVE_SPREAD = dt.timedelta(hours=28)
_TEMPORAL = ("timestamp", "timestamp_ntz", "date")
#: the source column types of the shapes that are not temporal (identity: any primitive type)
_SOURCE_TYPES: dict[str, tuple[str, ...]] = {
    "substring": ("string",),
    "identity": (
        *_TEMPORAL,
        "string",
        "boolean",
        "byte",
        "short",
        "integer",
        "long",
        "float",
        "double",
        "binary",
    ),
}
_MONOTONIC = {"date", "to_date", "year", "date_format", "trunc", "date_trunc", "cast"}
#: Delta's DATE_FORMAT_YEAR_MONTH, _YEAR_MONTH_DAY and _YEAR_MONTH_DAY_HOUR
_ORDERED_DATE_FORMATS = ("yyyy-MM", "yyyy-MM-dd", "yyyy-MM-dd-HH")


@dataclass(frozen=True)
class PartitionExpression:
    """A partition column generated from one timestamp/date column by a function whose
    value on a filter's literal bounds the partition values (Delta's
    ``OptimizablePartitionExpression``)."""

    partition_column: str
    source_column: str
    source_type: str  # "timestamp", "timestamp_ntz", "date"; for identity and substring others
    function: str  # date, year, month, day, hour, date_format, trunc, date_trunc, cast, identity, substring
    expr: Expr = field(repr=False, compare=False)
    expression: str = ""

    @property
    def monotonic(self) -> bool:
        """Whether the partition values sort as the source values (ranges derive bounds);
        ``date_format`` only with Delta's ``DateFormatPartitionExpr`` patterns, whose text
        sorts as time (``MM-yyyy`` does not)."""
        if self.function == "date_format":
            pattern = self.expr.args[1] if isinstance(self.expr, Call) else None
            return isinstance(pattern, Literal) and pattern.value in _ORDERED_DATE_FORMATS
        return self.function in _MONOTONIC

    def value(self, source_value: Any) -> Any:
        """The partition value the expression gives ``source_value`` (a Python value of
        the source column's type, naive UTC for ``timestamp``)."""
        arrow = {
            "timestamp": pa.timestamp("us", tz="UTC"),
            "timestamp_ntz": pa.timestamp("us"),
            "date": pa.date32(),
            "string": pa.string(),
        }
        data = pa.table({self.source_column: pa.array([source_value], arrow[self.source_type])})
        result = evaluate(self.expr, data, self.expression)
        return (result if isinstance(result, pa.Scalar) else result[0]).as_py()


def _shape(expr: Expr) -> tuple[str, Column] | None:
    """(function, source column) when ``expr`` is one of the optimizable shapes."""
    if isinstance(expr, Cast) and expr.type_name == "date" and isinstance(expr.operand, Column):
        return "cast", expr.operand
    if isinstance(expr, Column):
        return "identity", expr
    if not isinstance(expr, Call):
        return None
    args = expr.args
    if expr.name in ("substring", "substr") and len(args) == 3 and isinstance(args[0], Column):
        # deltalog evaluates no negative position or length (Delta's SubstringPartitionExpr takes them)
        literal = all(isinstance(a, Literal) and type(a.value) is int and a.value >= 0 for a in args[1:])
        return ("substring", args[0]) if literal else None
    if expr.name in ("date", "to_date", "year", "month", "day", "dayofmonth", "hour") and len(args) == 1:
        return (expr.name, args[0]) if isinstance(args[0], Column) else None
    if expr.name in ("date_format", "trunc") and isinstance(args[0], Column) and isinstance(args[1], Literal):
        return expr.name, args[0]
    if expr.name == "date_trunc" and isinstance(args[1], Column) and isinstance(args[0], Literal):
        return expr.name, args[1]
    return None


def partition_expressions(metadata: Metadata, protocol: Protocol | None) -> list[PartitionExpression]:
    """The table's partition columns generated from a timestamp or date column, as a
    substring of a string column or as a copy of a column, in a shape whose filters can be
    derived (others are ignored: they just do not prune). Empty when the ``protocol`` does not
    enforce generated columns (Delta's ``generatePartitionFilters``): the partition values of
    such a table need not be its expressions' values. ``protocol`` None: a table being created."""
    if not enforces_generated_columns(protocol, metadata):
        return []
    fields = {f["name"].lower(): f for f in _fields(metadata)}
    out: list[PartitionExpression] = []
    for partition in metadata.partition_columns:
        f = fields.get(partition.lower())
        text = (f.get("metadata") or {}).get(GENERATION_EXPRESSION) if f is not None else None
        if f is None or text is None:
            continue
        try:
            shape = _shape(parse_expression(str(text)))
        except UnsupportedConstraintError:
            continue
        if shape is None or len(shape[1].path) != 1:
            continue
        source = fields.get(shape[1].path[0].lower())
        if source is None or source.get("type") not in _SOURCE_TYPES.get(shape[0], _TEMPORAL):
            continue
        if COLLATIONS_KEY in (source.get("metadata") or {}):
            continue  # a collation orders strings otherwise than the partition filters
        if shape[0] == "identity" and source.get("type") != f.get("type"):
            continue  # a cast copy: its values are not the source's
        if shape[0] == "date_trunc" and (source.get("type") == "timestamp_ntz" or f.get("type") != "timestamp"):
            continue  # Delta's TimestampTruncPartitionExpr: an instant of a timestamp or date's local time
        expr = parse_expression(str(text))
        out.append(PartitionExpression(partition, str(source["name"]), source["type"], shape[0], expr, str(text)))
    return out


def _source_value(value: Any, source_type: str, time_zone: str | None) -> tuple[Any, dt.timedelta] | None:
    """The filter literal as a source-column value (for ``timestamp``: its local time), and
    how far the partition's local time may be from it (an unknown time zone)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if source_type == "date":  # Spark compares a date with text cast to a date: its date part
            return value.date(), dt.timedelta(0)
    if time_zone is not None and source_type == "timestamp" and isinstance(value, dt.datetime):
        if value.tzinfo is None:  # text or a naive value: local time of the session, as Spark reads it
            return value, dt.timedelta(0)
        zone = session_time_zone(time_zone)
        if zone is not None:
            return value.astimezone(zone).replace(tzinfo=None), dt.timedelta(0)
    if source_type == "date":
        if isinstance(value, dt.datetime):
            return None
        return (value, dt.timedelta(0)) if isinstance(value, dt.date) else None
    if isinstance(value, dt.datetime):
        if source_type == "timestamp_ntz":
            return (value.replace(tzinfo=None), dt.timedelta(0)) if value.tzinfo is None else None
        if value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None), _ZONE_SPREAD
        return value, _NAIVE_SPREAD
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day), (
            dt.timedelta(0) if source_type == "timestamp_ntz" else _NAIVE_SPREAD
        )
    return None


def _derive_copied(p: PartitionExpression, op: str, value: Any) -> list[tuple[str, str, Any]]:
    """Delta's ``IdentityPartitionExpr`` (the partition column is the source column) and
    ``SubstringPartitionExpr``. An empty string is a null partition value, which Delta keeps
    with ``OR part IS NULL``: so does a term on a copied string column, a literal whose
    substring is empty derives nothing, and ``<``/``<=`` on a substring keep the null
    partition too (the empty string sorts first)."""
    if p.function == "identity":
        if p.source_type != "string":
            return [(p.partition_column, op, value)]
        column = p.partition_column
        return [("", OR, (((column, op, value),), ((column, "isnull", None),)))]
    if not isinstance(value, str):
        return []
    part = p.value(value)
    if not part:
        return []
    if op == "=":
        return [(p.partition_column, "=", part)]
    position = p.expr.args[1] if isinstance(p.expr, Call) else None
    from_start = isinstance(position, Literal) and position.value in (0, 1)
    if op in (">", ">=") and from_start:
        return [(p.partition_column, ">=", part)]
    if op in ("<", "<=") and from_start:
        column = p.partition_column
        return [("", OR, (((column, "<=", part),), ((column, "isnull", None),)))]
    return []


def _derive(p: PartitionExpression, op: str, value: Any, time_zone: str | None) -> list[tuple[str, str, Any]]:
    if op == "isnull":
        return [(p.partition_column, "isnull", None)]
    if p.function in ("identity", "substring"):
        return _derive_copied(p, op, value)
    parsed = _source_value(value, p.source_type, time_zone)
    if parsed is None:
        return []
    v, spread = parsed
    # the partition holds f(local time) for a zone we do not know: bound it by the values
    # at both ends of the spread; a non-monotonic f (month, day, hour) only when they agree
    try:
        low, high = p.value(v - spread), p.value(v + spread)
        if p.function == "date_trunc" and low is not None and high is not None:
            # a date's midnight: Delta's writers take it in their session's zone, deltalog's in
            # UTC (its expressions know no session zone): keep both
            zone = None if p.source_type == "date" else time_zone
            low, high = _local_instants(low, high, spread, zone)
    except (UnsupportedConstraintError, OverflowError, pa.ArrowInvalid):
        return []
    if low is None or high is None:
        return []
    col = p.partition_column
    if p.monotonic:
        if op in (">", ">=") and p.function == "date_format":
            # a year past 9999 is written with its sign (+12345-07): text that sorts first
            return [("", OR, (((col, ">=", low),), ((col, "startswith", "+"),)))]
        if op in (">", ">="):
            return [(col, ">=", low)]
        if op in ("<", "<="):
            return [(col, "<=", high)]
        if op == "=":
            return [(col, "=", low)] if low == high else [(col, ">=", low), (col, "<=", high)]
        return []
    if op == "=" and low == high:
        return [(col, "=", low)]
    return []


def _local_instants(
    low: dt.datetime, high: dt.datetime, spread: dt.timedelta, time_zone: str | None
) -> tuple[dt.datetime, dt.datetime]:
    """``date_trunc``'s bounds, local times of the session, as the instants its timestamp
    partition holds (Spark's ``truncTimestamp`` truncates in the session time zone): both
    instants of a time a DST change repeats or skips; widened by the largest zone offset
    when the zone is unknown."""
    low, high = low.replace(tzinfo=None), high.replace(tzinfo=None)
    zone = session_time_zone(time_zone)
    if zone is None or spread:
        return (low - _ZONE_SPREAD).replace(tzinfo=dt.timezone.utc), (high + _ZONE_SPREAD).replace(
            tzinfo=dt.timezone.utc
        )
    lows = [low.replace(tzinfo=zone, fold=f).astimezone(dt.timezone.utc) for f in (0, 1)]
    highs = [high.replace(tzinfo=zone, fold=f).astimezone(dt.timezone.utc) for f in (0, 1)]
    return min(lows), max(highs)


def derived_partition_terms(
    terms: Sequence[tuple[str, str, Any]], expressions: Sequence[PartitionExpression], time_zone: str | None = None
) -> list[tuple[str, str, Any]]:
    """Partition terms implied by ``terms`` on the source columns of generated partition
    columns: every row a term keeps lies in a partition the derived terms keep (rows are
    still filtered by the original terms). ``op`` is one of ``= < <= > >= isnull``.

    For a ``timestamp`` (with zone) source, ``time_zone`` is the reader's session time
    zone: as in Delta, the table is taken to be written in it. Without it the bounds widen
    by the largest zone offset (28 hours for a value without a zone)."""
    by_source: dict[str, list[PartitionExpression]] = {}
    for p in expressions:
        by_source.setdefault(p.source_column.lower(), []).append(p)
    out: list[tuple[str, str, Any]] = []
    for column, op, value in terms:
        for p in by_source.get(column.lower(), []):
            out.extend(_derive(p, op, value, time_zone))
        out.extend(_derive_date_parts(by_source.get(column.lower(), []), op, value, time_zone))
    return out


#: the partition columns of a date split into parts, most significant first
_DATE_PARTS = (("year",), ("month",), ("day", "dayofmonth"), ("hour",))


def _date_parts(expressions: Sequence[PartitionExpression]) -> list[PartitionExpression]:
    """The ``year``, ``month`` (and ``day``, and ``hour``) partition columns of one source
    column, in that order (Delta's ``YearMonthPartitionExpr``, ``YearMonthDayPartitionExpr``,
    ``YearMonthDayHourPartitionExpr``); empty without at least year and month."""
    chain: list[PartitionExpression] = []
    for names in _DATE_PARTS:
        part = next((p for p in expressions if p.function in names), None)
        if part is None:
            break
        chain.append(part)
    return chain if len(chain) >= 2 else []


def _derive_date_parts(
    expressions: Sequence[PartitionExpression], op: str, value: Any, time_zone: str | None
) -> list[tuple[str, str, Any]]:
    """A range on the source column as the range of its (year, month, ...) partition values,
    compared in order: ``ts >= t`` keeps ``year > Y OR (year = Y AND month > M) OR (year = Y
    AND month = M AND day >= D)``, as Delta's ``YearMonthDayPartitionExpr.greaterThanOrEqual``
    (``>`` and ``<`` keep the bounding partition: its values are truncated)."""
    chain = _date_parts(expressions)
    if not chain or op not in ("<", "<=", ">", ">=", "="):
        return []
    parsed = _source_value(value, chain[0].source_type, time_zone)
    if parsed is None:
        return []
    v, spread = parsed
    try:
        low, high = [p.value(v - spread) for p in chain], [p.value(v + spread) for p in chain]
    except (UnsupportedConstraintError, OverflowError, pa.ArrowInvalid):
        return []
    if any(x is None for x in (*low, *high)):
        return []
    columns = [p.partition_column for p in chain]
    out = []
    if op in (">", ">=", "="):
        out.append(_lexicographic(columns, low, ">"))
    if op in ("<", "<=", "="):
        out.append(_lexicographic(columns, high, "<"))
    return out


def _lexicographic(columns: Sequence[str], bound: Sequence[Any], op: str) -> tuple[str, str, Any]:
    """``(columns) >= bound`` (``op`` ``>``; ``<``: ``<=``) in the order of the columns, as a
    disjunction: one conjunction per column, equal on the columns before it."""
    conjunctions = []
    for k, column in enumerate(columns):
        equal = tuple((c, "=", b) for c, b in zip(columns[:k], bound[:k], strict=True))
        last = k == len(columns) - 1
        conjunctions.append((*equal, (column, f"{op}=" if last else op, bound[k])))
    return ("", OR, tuple(conjunctions))
