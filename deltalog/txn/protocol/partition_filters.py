"""Partition filters: ``(column, op, value)`` tuples evaluated against partition values.

A filter list is a conjunction. Partition values are strings in the log (``None`` is
null); they are compared as the partition column's type, so ``("year", ">", 2020)``
compares numbers, not strings. Null semantics follow SQL, with two conveniences:
``(c, "=", None)`` means ``c IS NULL`` and ``(c, "!=", None)`` means ``c IS NOT NULL``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.errors import DeltaError
from deltalog.txn.protocol.time_zones import parse_date_text, parse_timestamp_text

__all__ = [
    "OR",
    "InvalidPartitionFilterError",
    "PartitionFilter",
    "PartitionPredicate",
    "PartitionValueKeys",
    "SparkFloat",
    "partition_column_types",
]

PartitionFilter = tuple[str, str, Any]

#: The operator of a disjunction in the terms a scan skips files by (the Spark layer's
#: ``Term``): ``("", OR, (conjunction, ...))``, each conjunction a tuple of terms.
#: :class:`PartitionPredicate` takes no disjunction; the scan tests it file by file.
OR = "or"

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_SET_OPS = ("in", "not in")


class InvalidPartitionFilterError(DeltaError, ValueError):
    """A partition filter names a column that is not a partition column, uses an
    unknown operator, or has a value that cannot be compared with the column's type."""


def partition_column_types(schema_string: str, partition_columns: Sequence[str]) -> dict[str, str]:
    """``{partition column: Spark type name}`` from a ``schemaString``."""
    schema = json.loads(schema_string)
    types: dict[str, str] = {}
    wanted = {c.lower(): c for c in partition_columns}
    for f in schema.get("fields", []):
        name = f.get("name", "")
        if name.lower() in wanted:
            t = f.get("type")
            types[wanted[name.lower()]] = t if isinstance(t, str) else json.dumps(t)
    for column in partition_columns:
        types.setdefault(column, "string")
    return types


def _parse_timestamp(text: str) -> Any:
    """A timestamp partition value as Spark's cast reads it (:func:`parse_timestamp_text`: one
    digit fields, an offset or a zone id), naive; one naming a zone at its UTC instant."""
    parsed = parse_timestamp_text(text)
    if parsed is None:
        raise ValueError(f"not a timestamp: {text!r}")
    return _utc(parsed) if parsed.tzinfo is not None else parsed


def _utc(value: dt.datetime) -> Any:
    """The aware ``value`` as a naive UTC datetime, or a :class:`_BeyondDatetime` when its
    instant lies outside Python's datetimes (``9999-12-31 23:59:59`` of a zone west of UTC:
    Spark's timestamps reach further)."""
    try:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    except OverflowError:
        return _BeyondDatetime(value)


class _BeyondDatetime:
    """An instant after (or before) every naive UTC datetime: compared with one it is
    greater (or less), never equal, as Spark compares the two timestamps."""

    __slots__ = ("above", "value")

    def __init__(self, value: dt.datetime) -> None:
        self.value = value
        self.above = value.year > 1

    def _key(self, other: Any) -> tuple[int, Any] | None:
        if isinstance(other, _BeyondDatetime):
            return (1 if other.above else -1, other.value)
        return (0, None) if isinstance(other, dt.datetime) else None

    def _compare(self, other: Any, test: Callable[[int], bool]) -> Any:
        theirs = self._key(other)
        if theirs is None:
            return NotImplemented
        mine = 1 if self.above else -1
        if theirs[0] == mine:
            return test(0 if theirs[1] == self.value else (1 if self.value > theirs[1] else -1))
        return test(1 if mine > theirs[0] else -1)

    def __eq__(self, other: object) -> Any:
        return self._compare(other, lambda c: c == 0)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, lambda c: c < 0)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, lambda c: c <= 0)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, lambda c: c > 0)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, lambda c: c >= 0)

    def __hash__(self) -> int:
        return hash((_BeyondDatetime, self.value))

    def __repr__(self) -> str:
        return f"_BeyondDatetime({self.value.isoformat()})"


def _parse_date(text: str) -> dt.date:
    """A date partition value as Spark's cast reads it (:func:`parse_date_text`)."""
    parsed = parse_date_text(text)
    if parsed is None:
        raise ValueError(f"not a date: {text!r}")
    return parsed


class SparkFloat(float):
    """A float ordered as Spark orders them: NaN equals NaN and is above every other value
    (so a NaN max keeps ``x > 1`` and a NaN value matches a NaN max, as in Delta)."""

    def _key(self) -> tuple[int, float]:
        return (1, 0.0) if math.isnan(self) else (0, float(self))

    def __lt__(self, other: object) -> bool:
        return self._key() < SparkFloat(other)._key() if isinstance(other, float) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self._key() <= SparkFloat(other)._key() if isinstance(other, float) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self._key() > SparkFloat(other)._key() if isinstance(other, float) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self._key() >= SparkFloat(other)._key() if isinstance(other, float) else NotImplemented

    def __eq__(self, other: object) -> bool:
        return self._key() == SparkFloat(other)._key() if isinstance(other, float) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())


def _integer(v: Any) -> int | decimal.Decimal | float:
    """A value compared with an integer column: a partition value (text) as an int; a number
    as it is -- Spark compares ``year < 9.5`` as decimals, so ``9.5`` must not become ``9``."""
    if isinstance(v, (decimal.Decimal, float)) and not v == int(v):
        return v
    return int(v)


def _converter(type_name: str) -> Callable[[Any], Any]:
    t = type_name.lower()
    if t in ("byte", "short", "integer", "int", "long", "bigint", "tinyint", "smallint"):
        return _integer
    if t in ("float", "double"):
        return lambda v: SparkFloat(v)
    if t.startswith("decimal"):
        return lambda v: decimal.Decimal(str(v))
    if t == "boolean":
        return lambda v: v if isinstance(v, bool) else str(v).strip().lower() == "true"
    if t == "date":
        return lambda v: v if isinstance(v, dt.date) and not isinstance(v, dt.datetime) else _parse_date(str(v))
    if t in ("timestamp", "timestamp_ntz"):

        def ts(v: Any) -> Any:
            if isinstance(v, dt.datetime):
                return _utc(v) if v.tzinfo else v
            return _parse_timestamp(str(v))

        return ts
    return lambda v: v if isinstance(v, str) else str(v)


@dataclass(frozen=True)
class _Term:
    column: str
    op: str
    value: Any  # converted; a frozenset/tuple for in / not in; None for null tests
    convert: Callable[[Any], Any]
    #: a NULL among the values of ``not in``: SQL's ``x NOT IN (.., NULL)`` is never true
    null_listed: bool = False

    def holds(self, partition_values: Mapping[str, str | None]) -> bool:
        raw = partition_values.get(self.column)
        if raw is None:
            raw = _lookup_case_insensitive(partition_values, self.column)
        if raw == "":
            raw = None  # PROTOCOL: an empty string, of any type, is a null partition value
        if self.op in ("=", "==") and self.value is None:
            return raw is None
        if self.op in ("!=", "<>") and self.value is None:
            return raw is not None
        if raw is None:
            return False
        try:
            current = self.convert(raw)
        except (ValueError, ArithmeticError):
            return False
        if self.op == "in":
            return current in self.value
        if self.op == "not in":
            return not self.null_listed and current not in self.value
        return _COMPARE[self.op](current, self.value)


def _lookup_case_insensitive(values: Mapping[str, str | None], column: str) -> str | None:
    lowered = column.lower()
    for key, value in values.items():
        if key.lower() == lowered:
            return value
    return None


class PartitionValueKeys:
    """Partition values as hashable keys: each column's value converted to its type, as
    :class:`PartitionPredicate` compares them (``"01"`` and ``"1"`` are one int; an empty
    string is null), so files can be matched against many partitions by a set lookup
    instead of one ``=`` predicate per partition."""

    def __init__(self, column_types: Mapping[str, str]) -> None:
        self._columns = tuple(column_types)
        self._converters = tuple(_converter(t) for t in column_types.values())

    def key(self, partition_values: Mapping[str, str | None]) -> tuple[Any, ...] | None:
        """The converted values (None for a null), or None when one does not parse as its
        type (it then equals no value, as in :class:`PartitionPredicate`)."""
        out: list[Any] = []
        for column, convert in zip(self._columns, self._converters, strict=True):
            raw = partition_values.get(column)
            if raw is None:
                raw = _lookup_case_insensitive(partition_values, column)
            if raw is None or raw == "":
                out.append(None)
                continue
            try:
                out.append(convert(raw))
            except (ValueError, ArithmeticError):
                return None
        return tuple(out)


class PartitionPredicate:
    """A conjunction of partition filters, validated against a table's partition columns."""

    def __init__(self, filters: Iterable[PartitionFilter], column_types: Mapping[str, str]) -> None:
        self.filters = tuple(filters)
        by_lower = {c.lower(): c for c in column_types}
        terms: list[_Term] = []
        for item in self.filters:
            if not (isinstance(item, (tuple, list)) and len(item) == 3):
                raise InvalidPartitionFilterError(f"a partition filter is a (column, op, value) tuple, got {item!r}")
            column, op, value = item
            if not isinstance(column, str) or column.lower() not in by_lower:
                raise InvalidPartitionFilterError(  # Delta's wording (DeltaCommand.verifyPartitionPredicates)
                    f"DELTA_NON_PARTITION_COLUMN_REFERENCE: Predicate references non-partition column "
                    f"'{column}'. Only the partition columns may be referenced: [{', '.join(column_types)}]"
                )
            column = by_lower[column.lower()]
            op = str(op).strip().lower()
            if op not in _COMPARE and op not in _SET_OPS:
                raise InvalidPartitionFilterError(
                    f"unknown operator {op!r} in filter {item!r}; use one of = != < <= > >= in, not in"
                )
            convert = _converter(column_types[column])
            try:
                if op in _SET_OPS:
                    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                        raise InvalidPartitionFilterError(f"'{op}' needs a list of values, got {value!r} in {item!r}")
                    converted: Any = frozenset(convert(v) for v in value if v is not None)
                elif value is None:
                    if op not in ("=", "==", "!=", "<>"):
                        raise InvalidPartitionFilterError(
                            f"only = and != can compare with None (IS NULL / IS NOT NULL): {item!r}"
                        )
                    converted = None
                else:
                    converted = convert(value)
            except (ValueError, TypeError, ArithmeticError) as exc:
                raise InvalidPartitionFilterError(
                    f"cannot compare {value!r} with partition column {column!r} of type {column_types[column]}: {exc}"
                ) from exc
            null_listed = op == "not in" and any(v is None for v in value)
            terms.append(_Term(column, op, converted, convert, null_listed))
        self._terms = tuple(terms)

    @property
    def is_true(self) -> bool:
        """An empty conjunction: every file matches."""
        return not self._terms

    def matches(self, partition_values: Mapping[str, str | None]) -> bool:
        return all(term.holds(partition_values) for term in self._terms)

    def describe(self) -> str:
        return " AND ".join(f"{c} {op} {v!r}" for c, op, v in self.filters) or "true"

    def __repr__(self) -> str:
        return f"PartitionPredicate({self.describe()})"
