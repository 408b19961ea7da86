"""The streaming sink's casts under ``spark.sql.storeAssignmentPolicy``, as Delta's
``UpdateExpressionsSupport.cast`` (which its ``DeltaSink`` casts with):

- ``ANSI`` (the default): an ANSI cast; a value that does not fit fails the batch
  (:mod:`~deltalog.contrib.spark.sink_cast`);
- ``LEGACY``: Spark's cast with ANSI off: an integer that does not fit wraps (Java's narrowing,
  ``Long.MaxValue`` into an ``int`` is -1), a fraction saturates (NaN is 0; into a ``byte`` or
  ``short`` it saturates as an ``int``, then wraps), a decimal into an integer wraps, and a
  value a decimal cannot hold is null (:func:`legacy_cast`);
- ``STRICT``: only a cast that cannot lose data (Spark's ``Cast.canUpCast``, checked when the
  query starts: :func:`up_castable`).

Types are Spark's JSON names of atomic types (``long``, ``decimal(6,2)``, ...).
"""

from __future__ import annotations

import decimal
import re

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["legacy_cast", "rounding_room", "sql_type_name", "up_castable"]

#: Spark's ``numericPrecedence``: a cast to a later type is an up-cast
_PRECEDENCE = ("byte", "short", "integer", "long", "float", "double")
#: the decimal digits each integral type needs (Spark's ``DecimalType.forType``)
_INTEGRAL_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}
_INTEGRAL_BITS = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_DATETIME_UP_CASTS = {
    ("date", "timestamp"),
    ("date", "timestamp_ntz"),
    ("timestamp", "timestamp_ntz"),
    ("timestamp_ntz", "timestamp"),
    ("timestamp", "long"),
    ("long", "timestamp"),
}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_SQL_NAMES = {"byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT"}


def sql_type_name(name: str) -> str:
    """Spark's SQL name of an atomic type (``long`` is ``BIGINT``), as its errors show it."""
    return _SQL_NAMES.get(name, name.upper())


def _decimal(name: str) -> tuple[int, int] | None:
    match = _DECIMAL.fullmatch(name)
    if match:
        return int(match.group(1)), int(match.group(2))
    digits = _INTEGRAL_DIGITS.get(name)
    return None if digits is None else (digits, 0)


def up_castable(data: str, table: str) -> bool:
    """Spark's ``Cast.canUpCast`` of atomic ``data`` into ``table``: a wider number (a decimal
    only into a decimal or integer that holds all its values), a date into a timestamp,
    anything into a string."""
    if data == table or data in ("null", "void") or table.startswith("string"):
        return True
    if data in _PRECEDENCE and table in _PRECEDENCE:
        return _PRECEDENCE.index(data) < _PRECEDENCE.index(table)
    if (data, table) in _DATETIME_UP_CASTS:
        return True
    source, target = _decimal(data), _decimal(table)
    if source is None or target is None or not (data.startswith("decimal") or table.startswith("decimal")):
        return False
    if table in _INTEGRAL_DIGITS:  # a decimal into an integer: one digit fewer than the integer's decimal
        return source[1] == 0 and source[0] < target[0]
    return source[0] - source[1] <= target[0] - target[1] and source[1] <= target[1]


def legacy_cast(values: pa.Array, data: str, table: str, target: pa.DataType) -> pa.Array | None:
    """``values`` of numeric type ``data`` cast into ``table`` (Arrow type ``target``) as Spark's
    cast with ANSI off; None where that cast gives what the ANSI one gives."""
    if table in _INTEGRAL_BITS and data in _INTEGRAL_BITS:
        return values.cast(target, safe=False)
    if table in _INTEGRAL_BITS and data in ("float", "double"):
        return _saturated(values, 64 if table == "long" else 32).cast(target, safe=False)
    if table in _INTEGRAL_BITS and data.startswith("decimal"):  # BigDecimal.longValue: the low 64 bits
        whole = pc.round(rounding_room(values), ndigits=0, round_mode="towards_zero")
        return whole.cast(pa.int64(), safe=False).cast(target, safe=False)
    if isinstance(target, pa.Decimal128Type) and (data in _INTEGRAL_BITS or data.startswith("decimal")):
        return _null_on_overflow(values, target)
    return None


def rounding_room(values: pa.Array) -> pa.Array:
    """A decimal column at one more digit of precision, so that rounding it cannot overflow its
    type (999.99 rounds to 1000, 0.999 of a ``decimal(3,3)`` to 1): Spark rounds the exact
    value (``changePrecision``) and only then checks the target's precision."""
    source = values.type
    wide = pa.decimal128 if source.precision < 38 else pa.decimal256
    return values.cast(wide(source.precision + 1, source.scale))


def _saturated(values: pa.Array, bits: int) -> pa.Array:
    """A fraction toward zero as a ``bits``-wide integer, as Java's ``(int)``/``(long)``: NaN is
    0, a value out of range is the nearest bound."""
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    wide = pa.int64() if bits == 64 else pa.int32()
    values = values.cast(pa.float64())
    finite = pc.if_else(pc.is_nan(values), 0.0, values)
    inside = pc.and_(pc.greater(finite, float(low)), pc.less(finite, float(high)))
    cast = pc.if_else(inside, finite, 0.0).cast(wide, safe=False)
    bound = pc.if_else(pc.greater(finite, 0.0), pa.scalar(high, wide), pa.scalar(low, wide))
    return pc.if_else(inside, cast, bound)


def _null_on_overflow(values: pa.Array, target: pa.Decimal128Type) -> pa.Array:
    """Integers or decimals into decimal ``target`` (rounded half up to its scale): a value it
    cannot hold is null, as Spark's ``changePrecision`` with ANSI off."""
    if pa.types.is_integer(values.type):
        digits = len(str(2 ** (values.type.bit_width - 1)))
        values = values.cast(pa.decimal128(min(38, digits + target.scale), target.scale))
    else:
        values = pc.round(rounding_room(values), ndigits=target.scale, round_mode="half_towards_infinity")
    int_digits = target.precision - target.scale
    if values.type.precision - values.type.scale <= int_digits:
        return values.cast(target)
    fits = pc.less(pc.abs(values), pa.scalar(decimal.Decimal(10) ** int_digits, values.type))
    return pc.if_else(fits, values, pa.scalar(None, values.type)).cast(target)
