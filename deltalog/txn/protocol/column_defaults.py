"""Column defaults (PROTOCOL "Default Columns", feature ``allowColumnDefaults``) and the
per-task filling of every column with a default expression (Delta's
``ColumnWithDefaultExprUtils``).

A column whose field metadata holds ``CURRENT_DEFAULT`` (a Spark SQL expression) gets that
expression's value in every written row that lacks the column. deltalog evaluates
constant expressions (literals, ``CAST``, arithmetic, ``current_date()``,
``current_timestamp()``, ...) with its SQL subset; a default that names a column or lies
outside the subset is refused by name when the write is planned.

:class:`DefaultExpressions` is what a write task applies to each batch, in Delta's order:
column defaults and identity values for the columns the data lacks, then generated columns
(computed when missing, checked when given).
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from deltalog.errors import DeltaError
from deltalog.txn.protocol.actions import Metadata, Protocol
from deltalog.txn.protocol.constraint_sql import (
    Expr,
    Literal,
    UnsupportedConstraintError,
    column_paths,
    evaluate,
)
from deltalog.txn.protocol.generated_columns import (
    GeneratedColumn,
    check_generated_columns,
    enforces_generated_columns,
    field_expressions,
    fill_generated_columns,
)
from deltalog.txn.protocol.identity import TASK_RANGE, IdentityColumn, identity_columns

__all__ = [
    "CURRENT_DEFAULT",
    "ColumnDefault",
    "DefaultExpressions",
    "TaskColumnFiller",
    "UnsupportedDefaultExpressionError",
    "column_defaults",
    "is_literal_default",
    "plan_default_expressions",
]

CURRENT_DEFAULT = "CURRENT_DEFAULT"


class UnsupportedDefaultExpressionError(DeltaError):
    """A column's ``CURRENT_DEFAULT`` cannot be evaluated by deltalog; nothing was written."""

    def __init__(self, column: str, expression: str, reason: str) -> None:
        self.column = column
        self.expression = expression
        super().__init__(
            f"cannot compute the default of column {column} (DEFAULT {expression}): {reason}. Nothing was "
            "written; provide the column's values in the data"
        )


@dataclass(frozen=True)
class ColumnDefault:
    name: str
    expression: str
    type_json: Any
    expr: Expr = field(repr=False, compare=False, default=Literal(None, "null"))

    def values(self, num_rows: int) -> pa.Array:
        from deltalog.txn.protocol.schema import data_type_from_json, to_arrow_type

        target = to_arrow_type(data_type_from_json(self.type_json))
        try:
            value = evaluate(self.expr, pa.table({"_": pa.nulls(1)}), self.expression)
            scalar = value if isinstance(value, pa.Scalar) else value[0]
            return pa.repeat(scalar.cast(target), num_rows)
        except UnsupportedConstraintError as exc:
            raise UnsupportedDefaultExpressionError(self.name, self.expression, exc.problem) from None
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise UnsupportedDefaultExpressionError(
                self.name, self.expression, f"its value does not cast to {target} ({exc})"
            ) from None


def column_defaults(metadata: Metadata) -> list[ColumnDefault]:
    """The table's (top-level) columns with ``CURRENT_DEFAULT``, parsed."""
    out: list[ColumnDefault] = []
    for c in field_expressions(metadata, CURRENT_DEFAULT, UnsupportedDefaultExpressionError):
        if column_paths(c.expr):
            raise UnsupportedDefaultExpressionError(c.name, c.text, "a default cannot name a column")
        default = ColumnDefault(c.name, c.text, c.type, c.expr)
        default.values(0)  # evaluate once: refuse now, not in a task
        out.append(default)
    return out


def _has(names: Sequence[str], wanted: str) -> bool:
    lowered = wanted.lower()
    return any(n.lower() == lowered for n in names)


class TaskColumnFiller:
    """One write task's filling of default, identity and generated columns (stateful: the
    identity values continue across the task's batches)."""

    def __init__(self, plan: DefaultExpressions, task_id: int) -> None:
        self.plan = plan
        self.task_id = task_id
        self.generated_count: dict[str, int] = {}
        #: the largest (negative step: smallest) value written per tracked identity column
        self.written_extreme: dict[str, int] = {}

    def __call__(self, table: pa.Table) -> pa.Table:
        names = table.column_names
        for default in self.plan.defaults:
            if not _has(names, default.name):
                table = table.append_column(default.name, default.values(table.num_rows))
        for identity in self.plan.identity:
            if identity.name in self.plan.tracked_identity and _has(names, identity.name):
                self._track(identity, table)
            elif not _has(names, identity.name):
                done = self.generated_count.get(identity.name, 0)
                table = table.append_column(
                    pa.field(identity.name, pa.int64()), identity.values(self.task_id, done, table.num_rows)
                )
                self.generated_count[identity.name] = done + table.num_rows
        if self.plan.generated:
            table = fill_generated_columns(table, self.plan.generated, self.plan.time_zone)
        return table

    def _track(self, identity: IdentityColumn, table: pa.Table) -> None:
        import pyarrow.compute as pc

        column = next(n for n in table.column_names if n.lower() == identity.name.lower())
        value = (pc.max if identity.step > 0 else pc.min)(table[column]).as_py()
        if value is None:
            return
        seen = self.written_extreme.get(identity.name)
        if seen is None or (value > seen if identity.step > 0 else value < seen):
            self.written_extreme[identity.name] = int(value)

    @property
    def high_water_marks(self) -> dict[str, int]:
        """The last value this task generated per identity column (its high-water mark), and
        the extreme value it wrote of each tracked one."""
        out: dict[str, int] = dict(self.written_extreme)
        for identity in self.plan.identity:
            n = self.generated_count.get(identity.name, 0)
            if n:
                out[identity.name] = identity.base + identity.step * (self.task_id * TASK_RANGE + n - 1)
        return out


@dataclass(frozen=True)
class DefaultExpressions:
    """Everything a write task needs to fill columns with default expressions (picklable)."""

    defaults: tuple[ColumnDefault, ...] = ()
    identity: tuple[IdentityColumn, ...] = ()
    generated: tuple[GeneratedColumn, ...] = ()
    #: identity columns whose values the data gives but a MERGE generated (Spark SQL): the
    #: tasks report the largest value written (smallest for a negative step) as the
    #: high-water mark candidate, as Delta's ``IdentityColumnStatsTracker`` over the written rows
    tracked_identity: tuple[str, ...] = ()
    #: the session's time zone (Arrow's name), in which generated ``timestamp`` values computed
    #: as wall-clock times are read (:func:`~deltalog.txn.protocol.generated_columns.fill_generated_columns`)
    time_zone: str | None = None

    def __bool__(self) -> bool:
        return bool(self.defaults or self.identity or self.generated)

    def filled_columns(self) -> tuple[str, ...]:
        """The columns a write task fills when the data lacks them."""
        named: tuple[ColumnDefault | IdentityColumn | GeneratedColumn, ...] = (
            *self.defaults,
            *self.identity,
            *self.generated,
        )
        return tuple(c.name for c in named)

    def for_task(self, task_id: int) -> TaskColumnFiller:
        return TaskColumnFiller(self, task_id)


def plan_default_expressions(
    metadata: Metadata, protocol: Protocol | None = None, time_zone: str | None = None
) -> DefaultExpressions:
    """The table's default, identity and generated columns (those its ``protocol`` enforces,
    :func:`~deltalog.txn.protocol.generated_columns.enforces_generated_columns`; None: a new
    table), each checked to be computable here (raises :class:`UnsupportedDefaultExpressionError`,
    :class:`~deltalog.txn.protocol.generated_columns.UnsupportedGenerationExpressionError` or
    :class:`~deltalog.txn.protocol.identity.IdentityColumnError` otherwise). ``time_zone``: the
    session's (``spark.sql.session.timeZone``), for generated timestamps."""
    from deltalog.txn.protocol.time_zones import arrow_time_zone

    return DefaultExpressions(
        tuple(column_defaults(metadata)),
        tuple(identity_columns(metadata)),
        tuple(check_generated_columns(metadata)) if enforces_generated_columns(protocol, metadata) else (),
        time_zone=arrow_time_zone(time_zone),
    )


_INTEGER = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"\s*[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)\s*")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_LOCAL_TIMESTAMP = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M")


def _quoted(text: str) -> str:
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    raise ValueError(f"string missing quotation marks: {text}")


def _integer(text: str, bits: int) -> None:
    if not _INTEGER.fullmatch(text) or not -(2 ** (bits - 1)) <= int(text) < 2 ** (bits - 1):
        raise ValueError(text)


def _decimal(text: str, type_name: str) -> None:
    precision, scale = (int(p) for p in type_name[len("decimal(") : -1].split(","))
    if not _DECIMAL.fullmatch(text):
        raise ValueError(text)
    value = decimal.Context(prec=precision, rounding=decimal.ROUND_HALF_UP).create_decimal(text)
    if value != value.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP):
        raise ValueError(text)  # Java's setScale(scale) without a rounding mode refuses rounding


def _local_timestamp(text: str) -> None:
    value = _quoted(text)
    for pattern in _LOCAL_TIMESTAMP:
        try:
            datetime.datetime.strptime(value, pattern)
            return
        except ValueError:
            continue
    raise ValueError(text)


def _timestamp(text: str) -> None:
    value = _quoted(text)
    if re.search(r"([+-]\d\d:\d\d|Z)$", value):
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return
    _local_timestamp(text)


def _floating(text: str) -> None:
    if not _FLOAT.fullmatch(text):
        raise ValueError(text)


def _binary(text: str) -> None:
    if text[:1] in ("x", "X"):
        int(_quoted(text[1:]) or "0", 16)


_LITERAL_PARSERS: dict[str, Callable[[str], object]] = {
    "string": _quoted,
    "long": lambda t: _integer(re.sub(r"[lL]$", "", t), 64),
    "integer": lambda t: _integer(t, 32),
    "short": lambda t: _integer(t, 32),
    "byte": lambda t: _integer(t, 32),
    "float": _floating,
    "double": _floating,
    "boolean": lambda t: None,  # Java's Boolean.valueOf takes any text
    "binary": _binary,
    "date": lambda t: datetime.date.fromisoformat(_quoted(t)),
    "timestamp": _timestamp,
    "timestamp_ntz": _local_timestamp,
}


def is_literal_default(expression: str, type_json: Any) -> bool:
    """Whether a column's ``CURRENT_DEFAULT`` text is a literal of its type, as Delta's
    ``DeltaColumnDefaults.hasLiteralDefault`` parses it: quoted strings, dates and
    timestamps, plain numbers (a decimal that fits its scale without rounding), ``x'..'``
    binaries; an expression (``1 + 1``, ``current_date()``) or a nested type is not."""
    if not isinstance(type_json, str):
        return False
    parse = _LITERAL_PARSERS.get(type_json)
    if parse is None and type_json.startswith("decimal("):
        parse = lambda t: _decimal(t, type_json)  # noqa: E731
    if parse is None:
        return False
    try:
        parse(expression)
    except (ValueError, ArithmeticError):
        return False
    return True
