"""The streaming sink's implicit casts, as Delta's ``DeltaSink``.

Delta's sink writes a batch whose column types differ from the table's when Spark's
``TypeCoercion.implicitCast`` converts them (``SchemaMergingUtils.mergeSchemas`` with
``allowImplicitConversions``: the table keeps its type) and casts each column to the table's
type by name (``castIfNeeded`` with ``CastByName(allowMissingStructField = true)``: struct
fields by name, arrays and maps element by element), with ANSI casts by default: a value that
does not fit is an error (the other values of ``spark.sql.storeAssignmentPolicy``:
:mod:`~deltalog.contrib.spark.sink_policies`).

:func:`write_types` runs when the query starts: it gives the batch's schema with the table's
types where a cast applies and refuses the columns no cast converts.
:func:`cast_columns` runs in the write tasks on Arrow data, with the :class:`SinkCasts` the
plan made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.contrib.spark.errors import CastOverflowError, DeltaAnalysisError, SchemaMismatchError
from deltalog.contrib.spark.sink_policies import legacy_cast, rounding_room, sql_type_name, up_castable
from deltalog.txn.protocol.time_zones import wall_clock_instants

__all__ = ["SinkCasts", "cast_columns", "implicitly_castable", "write_types"]

_INTEGRAL = {"byte": pa.int8(), "short": pa.int16(), "integer": pa.int32(), "long": pa.int64()}
_FRACTIONAL = {"float": pa.float32(), "double": pa.float64()}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_NULL = ("null", "void")
#: Spark casts a decimal of more digits than a long holds into these through a double
#: (``Decimal.roundToInt``: 127.999999999999999999 is 128 in an ``integer``)
_VIA_DOUBLE = ("byte", "short", "integer")
_LONG_DIGITS = 18
_DATETIME = ("date", "timestamp", "timestamp_ntz")
#: Types Spark's implicit cast turns into a string whose text deltalog writes as Spark does.
_TO_STRING = {*_INTEGRAL, "boolean", "date"}


@dataclass(frozen=True)
class SinkCasts:
    """What a stream's write tasks cast (:func:`cast_columns`)."""

    #: the top-level columns cast: (name, batch type, table type), types as Spark's JSON
    columns: tuple[tuple[str, str, str], ...] = ()
    #: the session's time zone (Arrow's name): a ``date`` cast to a ``timestamp`` is its
    #: midnight there, as Spark's cast of a date; None: UTC
    time_zone: str | None = None
    #: the session's ``spark.sql.storeAssignmentPolicy``: ``LEGACY`` casts as Spark with ANSI off
    policy: str = "ANSI"

    def __bool__(self) -> bool:
        return bool(self.columns)


def _kind(t: Any) -> str:
    if isinstance(t, dict):
        return str(t["type"])
    name = str(t)
    if name.startswith("decimal"):
        return "decimal"
    if name.startswith("string") or name.startswith("varchar") or name.startswith("char"):
        return "string"
    return name


def _numeric(t: Any) -> bool:
    return _kind(t) in ("decimal", *_INTEGRAL, *_FRACTIONAL)


def implicitly_castable(data: Any, table: Any) -> bool:
    """Whether Spark's ``TypeCoercion.implicitCast`` converts a value of atomic type ``data``
    to ``table`` (both as in a schema's JSON): what Delta's ``SchemaMergingUtils.mergeSchemas``
    with ``allowImplicitConversions`` accepts for a column both schemas have."""
    return _spark_casts(data, table)


def _spark_casts(data: Any, table: Any) -> bool:
    """Whether Spark's ``TypeCoercion.implicitCast`` converts ``data`` to ``table`` (atomic)."""
    d, t = _kind(data), _kind(table)
    if d in _NULL or (_numeric(data) and _numeric(table)):
        return True
    if d in _DATETIME and t in _DATETIME:
        return True
    if d == "string" and (_numeric(table) or t in (*_DATETIME, "binary")):
        return True
    return t == "string" and d not in ("struct", "array", "map")


def _deltalog_casts(data: Any, table: Any) -> bool:
    """Whether :func:`cast_columns` casts ``data`` to ``table`` as Spark does (atomic)."""
    d, t = _kind(data), _kind(table)
    if d in _NULL or (d in _DATETIME and t in _DATETIME and (d, t) != ("timestamp_ntz", "date")):
        return True
    if t == "string":
        return d in _TO_STRING
    return _numeric(data) and _numeric(table) and not (d in _FRACTIONAL and t == "decimal")


def _write_type(data: Any, table: Any, where: str, strict: bool) -> Any:
    """``data`` (a Spark JSON type) as the sink writes it into a column of type ``table``;
    ``strict``: only up-casts (``spark.sql.storeAssignmentPolicy=STRICT``)."""
    if data == table or table in _NULL:  # a void column takes the data's type (with mergeSchema)
        return data
    if isinstance(data, dict) and isinstance(table, dict) and data["type"] == table["type"]:
        if data["type"] == "struct":
            fields = {f["name"].lower(): f for f in table["fields"]}
            out = []
            for f in data["fields"]:
                ours = fields.get(f["name"].lower())
                if ours is not None:
                    f = {**f, "type": _write_type(f["type"], ours["type"], f"{where}.{f['name']}", strict)}
                out.append(f)
            return {**data, "fields": out}
        if data["type"] == "array":
            element = _write_type(data["elementType"], table["elementType"], f"{where}.element", strict)
            return {**data, "elementType": element}
        if data["type"] == "map":
            key = _write_type(data["keyType"], table["keyType"], f"{where}.key", strict)
            value = _write_type(data["valueType"], table["valueType"], where, strict)
            return {**data, "keyType": key, "valueType": value}
    if isinstance(data, dict) or isinstance(table, dict) or not _spark_casts(data, table):
        raise SchemaMismatchError(
            f"the stream writes {where} as {_name(data)} into a table column of type {_name(table)}, which Spark "
            "does not cast implicitly (Delta's DELTA_FAILED_TO_MERGE_FIELDS); cast it in the query"
        )
    if not _deltalog_casts(data, table):
        raise SchemaMismatchError(
            f"the stream writes {where} as {_name(data)} into a table column of type {_name(table)}: Delta's sink "
            "casts it, deltalog's does not (its text or rounding would differ from Spark's); cast it in the query"
        )
    if strict and not up_castable(str(data), str(table)):
        source, target = sql_type_name(str(data)), sql_type_name(str(table))
        raise DeltaAnalysisError(
            f"CANNOT_UP_CAST_DATATYPE: Cannot up cast {where} from {source} to {target}: the stream's cast may lose "
            "data, which spark.sql.storeAssignmentPolicy=STRICT refuses (as Delta's sink). Cast the column in the "
            "query, or set the policy to ANSI"
        )
    return table


def _name(t: Any) -> str:
    return str(t["type"]) if isinstance(t, dict) else str(t)


def write_types(table: dict[str, Any], data: dict[str, Any], policy: str = "ANSI") -> dict[str, Any]:
    """The batch's schema ``data`` with the table's type in every (nested) column the sink
    casts; columns the table lacks are kept. Raises :class:`SchemaMismatchError` for a
    column no implicit cast converts, and ``DeltaAnalysisError`` for one that is no up-cast
    under ``policy`` ``STRICT``."""
    fields = {f["name"].lower(): f for f in table["fields"]}
    strict = policy == "STRICT"
    out = []
    for f in data["fields"]:
        ours = fields.get(f["name"].lower())
        out.append(f if ours is None else {**f, "type": _write_type(f["type"], ours["type"], f["name"], strict)})
    return {**data, "fields": out}


def _arrow_type(t: Any) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_json_value

    return to_arrow_type(_parse_datatype_json_value(t), timezone="UTC")


def _cast_atomic(values: pa.Array, data: Any, table: Any, how: SinkCasts) -> pa.Array:
    d, t = _kind(data), _kind(table)
    target = _arrow_type(table)
    if d in _NULL:
        return pa.nulls(len(values), target)
    if d in _DATETIME and t in _DATETIME:
        return _cast_datetime(values, d, t, how.time_zone)
    legacy = legacy_cast(values, str(data), str(table), target) if how.policy == "LEGACY" else None
    if legacy is not None:
        return legacy
    if d == "decimal" and (t in _FRACTIONAL or (t in _VIA_DOUBLE and values.type.precision > _LONG_DIGITS)):
        values = _decimal_to_double(values)  # Spark's BigDecimal.doubleValue: the nearest to the exact value
        d = "double"
        if t in _FRACTIONAL:
            return values.cast(target, safe=False)
    if t in _FRACTIONAL or (d in _FRACTIONAL and t in _FRACTIONAL) or d == "date":
        return values.cast(target, safe=False)
    if d in _FRACTIONAL:
        return _fraction_to_integral(values, target)
    if d in _INTEGRAL and t == "decimal":
        return _integral_to_decimal(values, target)
    if d == "decimal" and t != "string":
        return _round_decimal(values, table, target)
    return values.cast(target)


def _decimal_to_double(values: pa.Array) -> pa.Array:
    """A decimal column as doubles, each the double nearest to the exact decimal (Java's
    ``BigDecimal.doubleValue``); Arrow's own cast divides by a power of ten in floating point,
    which is off by a unit in the last place (127.99 became 127.99000000000001)."""
    return values.cast(pa.string()).cast(pa.float64())


def _fraction_to_integral(values: pa.Array, target: pa.DataType) -> pa.Array:
    """A float or double cast to an integer as Spark's ANSI cast: toward zero; NaN and values out
    of range fail the safe cast, except 2^63 into a ``long``, which Spark's bound check (against
    ``Long.MaxValue`` as a double, 2^63) lets through and saturates to ``Long.MaxValue``."""
    whole = pc.trunc(values)
    if target != pa.int64():
        return whole.cast(target)
    at_bound = pc.equal(whole, 2.0**63)
    return pc.if_else(at_bound, pa.scalar(2**63 - 1, target), pc.if_else(at_bound, 0.0, whole).cast(target))


def _round_decimal(values: pa.Array, table: Any, target: pa.DataType) -> pa.Array:
    """A decimal cast to another decimal (half up, as Java's ``HALF_UP``: a tie away from zero)
    or to an integer (toward zero), as Spark's: the rounding runs at one more digit of precision
    than the column's, so that 999.99 rounds to 1000 and 0.999 (a ``decimal(3,3)``) to 1 before
    the cast checks the target's precision, as Spark's ``changePrecision``."""
    match = _DECIMAL.fullmatch(str(table))
    digits = int(match.group(2)) if match else 0
    half_up = "half_towards_infinity"
    return pc.round(rounding_room(values), ndigits=digits, round_mode=half_up if match else "towards_zero").cast(target)


def _cast_datetime(values: pa.Array, d: str, t: str, time_zone: str | None) -> pa.Array:
    """A date or timestamp cast as Spark's, in the session time zone: a ``timestamp``'s wall
    clock there (the zone of Spark's Arrow data), a wall clock's instant there."""
    if d == "timestamp" and values.type.tz:
        values = pc.local_timestamp(values)
    if t == "date":
        return pc.floor_temporal(values, unit="day").cast(pa.date32())
    wall_clock = values.cast(pa.timestamp("us"))
    return wall_clock if t == "timestamp_ntz" else wall_clock_instants(wall_clock, time_zone).cast(_arrow_type(t))


def _integral_to_decimal(values: pa.Array, target: pa.DataType) -> pa.Array:
    """An integer column cast to a decimal checked value by value, as Spark's: Arrow casts an
    integer only to a decimal that holds every value of the integer type, so the values go
    through such a decimal (at the target's scale) first, then to the target."""
    digits = len(str(2 ** (values.type.bit_width - 1))) + target.scale
    wide = pa.decimal128(digits, target.scale) if digits <= 38 else pa.decimal256(digits, target.scale)
    return values.cast(wide).cast(target)


def _cast(values: pa.Array, data: Any, table: Any, how: SinkCasts) -> pa.Array:
    if data == table:
        return values
    kind = _kind(table)
    mask = pc.is_null(values) if values.null_count else None
    if kind == "struct" and isinstance(values, pa.StructArray):
        have = {f["name"].lower(): (i, f) for i, f in enumerate(data["fields"])}
        children, fields = [], []
        for f in table["fields"]:
            found = have.get(f["name"].lower())
            child_type = _arrow_type(f["type"])
            if found is None:
                children.append(pa.nulls(len(values), child_type))
            else:
                children.append(_cast(values.field(found[0]), found[1]["type"], f["type"], how))
            fields.append(pa.field(f["name"], children[-1].type))
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if kind == "array" and isinstance(values, pa.ListArray):
        items = _cast(values.values, data["elementType"], table["elementType"], how)
        return pa.ListArray.from_arrays(values.offsets, items, mask=mask)
    if kind == "map" and isinstance(values, pa.MapArray):
        keys = _cast(values.keys, data["keyType"], table["keyType"], how)
        items = _cast(values.items, data["valueType"], table["valueType"], how)
        return pa.MapArray.from_arrays(values.offsets, keys, items, mask=mask)
    return _cast_atomic(values, data, table, how)


def cast_columns(table: pa.Table, casts: SinkCasts) -> pa.Table:
    """``table`` with each column of ``casts`` cast to the table's type. Raises
    :class:`CastOverflowError` for a value that does not fit."""
    import json

    names = {n.lower(): i for i, n in enumerate(table.column_names)}
    for name, data, target in casts.columns:
        i = names.get(name.lower())
        if i is None:
            continue
        data_type, table_type = json.loads(data), json.loads(target)
        try:
            column = pa.chunked_array(
                [_cast(chunk, data_type, table_type, casts) for chunk in table.column(i).chunks],
                type=_arrow_type(table_type) if table.column(i).num_chunks == 0 else None,
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise CastOverflowError(
                f"a value of column {name} ({_name(data_type)}) does not fit the table's type {_name(table_type)} "
                f"(Spark's CAST_OVERFLOW_IN_TABLE_INSERT): {exc}. Nothing of this batch was committed; filter or "
                "cast the values in the query"
            ) from None
        table = table.set_column(i, pa.field(table.column_names[i], column.type), column)
    return table
