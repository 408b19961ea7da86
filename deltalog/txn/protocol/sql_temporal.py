"""Date/time and string functions of the SQL subset (:mod:`~deltalog.txn.protocol.constraint_sql`),
evaluated with ``pyarrow.compute`` as Spark evaluates them.

These are the functions generated columns and column defaults use (``date(ts)``,
``year(ts)``, ``CAST(ts AS DATE)``, ``date_format(ts, 'yyyy-MM')``, ``current_timestamp()``,
...). A timestamp with a time zone -- Spark hands the data source timestamps in its session
time zone -- is taken in that zone's local time, as Spark's ``date``/``year``/``hour`` use
the session time zone. ``current_date()`` is the date in UTC.

Anything these cannot reproduce exactly (a ``date_format`` pattern letter other than
``y M d H m s``, a ``substring`` with a negative position, casting a timestamp to a string,
...) raises through ``fail`` so the caller can refuse instead of writing a wrong value.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.protocol.sql_text_numbers import TextCastError, cast_text_to_number

__all__ = ["Fail", "call_function", "cast_to", "java_to_strftime"]

#: builds the error to raise: (construct, problem) -> exception
Fail: TypeAlias = Callable[[str, str], Exception]
Value: TypeAlias = Any  # pa.Array | pa.ChunkedArray | pa.Scalar

_PATTERN_LETTERS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}
_TRUNC_UNITS = {
    "year": "year",
    "yyyy": "year",
    "yy": "year",
    "quarter": "quarter",
    "month": "month",
    "mon": "month",
    "mm": "month",
    "week": "week",
    "day": "day",
    "dd": "day",
    "hour": "hour",
    "minute": "minute",
    "second": "second",
}
_DATE_UNITS = {"year", "quarter", "month", "week"}
_DELTA_TO_ARROW = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
}


def java_to_strftime(pattern: str) -> str | None:
    """A Java date pattern (``yyyy-MM-dd HH``) as a strftime format; None when it uses a
    letter or a quote this module does not translate exactly."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == ch:
                j += 1
            token = pattern[i:j]
            if token not in _PATTERN_LETTERS:
                return None
            out.append(_PATTERN_LETTERS[token])
            i = j
        elif ch == "'":
            return None
        else:
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)


def _type(value: Value) -> pa.DataType:
    return value.type


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _local(value: Value) -> Value:
    """Timestamps with a zone as local wall-clock time (naive); anything else unchanged."""
    t = _type(value)
    if pa.types.is_timestamp(t) and t.tz is not None:
        return pc.local_timestamp(value)
    return value


def _as_timestamp(value: Value, fail: Fail, what: str) -> Value:
    t = _type(value)
    if pa.types.is_timestamp(t):
        return _local(value)
    if pa.types.is_date(t) or pa.types.is_null(t):
        return value.cast(pa.timestamp("us"))
    if _is_text(t):
        try:
            return value.cast(pa.timestamp("us"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise fail(what, f"{what} of a string that is not a timestamp ({exc})") from None
    raise fail(what, f"{what} of {t}")


def _as_date(value: Value, fail: Fail, what: str) -> Value:
    t = _type(value)
    if pa.types.is_date32(t):
        return value
    if pa.types.is_null(t):
        return value.cast(pa.date32())
    return _as_timestamp(value, fail, what).cast(pa.date32())


def _literal_text(value: Value, fail: Fail, what: str) -> str:
    if isinstance(value, pa.Scalar) and _is_text(value.type) and value.is_valid:
        return str(value.as_py())
    raise fail(what, f"{what} with an argument that is not a string literal")


def _literal_int(value: Value, fail: Fail, what: str) -> int:
    if isinstance(value, pa.Scalar) and pa.types.is_integer(value.type) and value.is_valid:
        return int(value.as_py())
    raise fail(what, f"{what} with an argument that is not an integer literal")


def _part(name: str, value: Value, fail: Fail) -> Value:
    if name in ("year", "month", "day", "dayofmonth") and pa.types.is_date(_type(value)):
        local = value
    else:
        local = _as_timestamp(value, fail, f"{name}()")
    extract = {"year": pc.year, "month": pc.month, "day": pc.day, "dayofmonth": pc.day, "hour": pc.hour}[name]
    return extract(local).cast(pa.int32())


def _trunc(args: Sequence[Value], fail: Fail, date_first: bool) -> Value:
    what = "trunc()" if date_first else "date_trunc()"
    value, unit_arg = (args[0], args[1]) if date_first else (args[1], args[0])
    unit = _TRUNC_UNITS.get(_literal_text(unit_arg, fail, what).strip().lower())
    if unit is None or (date_first and unit not in _DATE_UNITS):
        raise fail(what, f"{what} to the unit {_literal_text(unit_arg, fail, what)!r}")
    options: dict[str, Any] = {"unit": unit}
    if unit == "week":
        options["week_starts_monday"] = True
    if date_first:
        return pc.floor_temporal(_as_date(value, fail, what), **options)
    t = _type(value)
    if pa.types.is_timestamp(t):
        return pc.floor_temporal(value, **options)  # a zoned timestamp is floored in local time
    return pc.floor_temporal(_as_timestamp(value, fail, what), **options)


def _substring(args: Sequence[Value], fail: Fail) -> Value:
    pos = _literal_int(args[1], fail, "substring()")
    length = _literal_int(args[2], fail, "substring()") if len(args) > 2 else None
    if pos < 0 or (length is not None and length < 0):
        raise fail("substring()", "substring() with a negative position or length")
    start = max(pos - 1, 0)
    value = _text(args[0], fail, "substring()")
    if length is None:
        return pc.utf8_slice_codeunits(value, start=start)
    return pc.utf8_slice_codeunits(value, start=start, stop=start + length)  # Spark: position 0 is 1


def _text(value: Value, fail: Fail, what: str) -> Value:
    t = _type(value)
    if _is_text(t):
        return value
    if pa.types.is_timestamp(t) or pa.types.is_floating(t):
        raise fail(what, f"{what} of {t} (its text form differs from Spark's)")
    try:
        return value.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise fail(what, f"{what} of {t} ({exc})") from None


def call_function(name: str, args: list[Value], fail: Fail) -> Value:
    """The value of the function ``name`` (one of ``MORE_FUNCTIONS``) on ``args``."""
    if name == "current_timestamp":
        return pa.scalar(dt.datetime.now(dt.timezone.utc), pa.timestamp("us", tz="UTC"))
    if name == "current_date":
        return pa.scalar(dt.datetime.now(dt.timezone.utc).date(), pa.date32())
    if name in ("date", "to_date"):
        return _as_date(args[0], fail, f"{name}()")
    if name in ("year", "month", "day", "dayofmonth", "hour"):
        return _part(name, args[0], fail)
    if name == "date_format":
        pattern = _literal_text(args[1], fail, "date_format()")
        fmt = java_to_strftime(pattern)
        if fmt is None:
            raise fail("date_format()", f"date_format() with the pattern {pattern!r}")
        return _date_format(_as_timestamp(args[0], fail, "date_format()"), fmt)
    if name in ("trunc", "date_trunc"):
        return _trunc(args, fail, date_first=name == "trunc")
    if name == "concat":
        return pc.binary_join_element_wise(*[_text(a, fail, "concat()") for a in args], "")
    if name in ("substring", "substr"):
        return _substring(args, fail)
    raise fail(f"the function {name}()", f"{name}() is not supported")


def _date_format(ts: Value, fmt: str) -> Value:
    """``date_format`` with Java's sign for a year of more than four digits: ``yyyy`` prints
    12345 as ``+12345`` (Spark's ``DateTimeFormatter``, SignStyle.EXCEEDS_PAD)."""
    text = pc.strftime(ts, format=fmt, locale="C")
    if "%Y" not in fmt:
        return text
    signed = pc.strftime(ts, format=fmt.replace("%Y", "+%Y"), locale="C")
    return pc.if_else(pc.greater(pc.year(ts), 9999), signed, text)


def cast_to(value: Value, type_name: str, fail: Fail) -> Value:
    """``CAST(value AS type_name)`` (a Delta type name)."""
    what = f"CAST(... AS {type_name})"
    if type_name == "date":
        return _as_date(value, fail, what)
    if type_name in ("timestamp", "timestamp_ntz"):
        t = _type(value)
        if pa.types.is_timestamp(t):
            return value if type_name == "timestamp" else _local(value)
        return _as_timestamp(value, fail, what)
    if type_name == "string":
        return _text(value, fail, what)
    target = _DELTA_TO_ARROW[type_name]
    if _is_text(_type(value)) and (pa.types.is_integer(target) or pa.types.is_floating(target)):
        try:
            return cast_text_to_number(value, target)
        except TextCastError as exc:
            raise fail(what, str(exc)) from None
    source = _type(value)
    if pa.types.is_integer(target) and (pa.types.is_floating(source) or pa.types.is_decimal(source)):
        value = pc.trunc(value)  # Spark drops the fraction; a value out of range still fails
    try:
        return value.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise fail(what, f"{what} of {source} ({exc})") from None
