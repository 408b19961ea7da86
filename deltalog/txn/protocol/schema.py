"""Table schemas: Spark's ``StructType`` JSON (the ``schemaString`` of ``metaData``),
as Python objects, and their mapping to and from Arrow.

Types follow PROTOCOL "Schema Serialization Format": primitive types are JSON strings
(``"long"``, ``"decimal(10,2)"``, ``"timestamp_ntz"``, ...), ``struct``/``array``/``map`` are
objects. Field metadata (column mapping ids and physical names, invariants, generation
expressions, comments) is kept as a dict of JSON values.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from deltalog.txn.protocol.errors import InvalidSchemaError, SchemaMismatchError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ArrayType",
    "DataType",
    "DecimalType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "TypeDifference",
    "as_nullable",
    "check_write_compatible",
    "data_type_from_json",
    "duplicate_column_names",
    "explode",
    "from_arrow",
    "merge_schemas",
    "parse_schema",
    "path_name",
    "same_columns",
    "same_type",
    "split_column_name",
    "type_differences",
    "without_void_fields",
]

PRIMITIVE_NAMES = frozenset(
    {
        "string",
        "long",
        "integer",
        "short",
        "byte",
        "float",
        "double",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "void",
        "variant",
    }
)
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
#: Spark types Delta's ``SchemaUtils.findUnsupportedDataTypes`` refuses (DELTA_UNSUPPORTED_DATA_TYPES):
#: intervals (calendar, year-month, day-time) and ``time(p)``
_UNSUPPORTED = re.compile(r"^(interval( .*)?|time(\(\d+\))?)$")


@dataclass(frozen=True)
class PrimitiveType:
    """A primitive type by its Delta name (``long``, ``timestamp_ntz``, ...)."""

    name: str

    def to_json_value(self) -> Any:
        return self.name

    def simple_string(self) -> str:
        return self.name


@dataclass(frozen=True)
class DecimalType:
    precision: int
    scale: int

    @property
    def name(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def to_json_value(self) -> Any:
        return self.name

    def simple_string(self) -> str:
        return self.name


@dataclass(frozen=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True

    def to_json_value(self) -> Any:
        return {
            "type": "array",
            "elementType": self.element_type.to_json_value(),
            "containsNull": self.contains_null,
        }

    def simple_string(self) -> str:
        return f"array<{self.element_type.simple_string()}>"


@dataclass(frozen=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    def to_json_value(self) -> Any:
        return {
            "type": "map",
            "keyType": self.key_type.to_json_value(),
            "valueType": self.value_type.to_json_value(),
            "valueContainsNull": self.value_contains_null,
        }

    def simple_string(self) -> str:
        return f"map<{self.key_type.simple_string()},{self.value_type.simple_string()}>"


@dataclass(frozen=True)
class StructField:
    name: str
    type: DataType
    nullable: bool = True
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json_value(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.to_json_value(),
            "nullable": self.nullable,
            "metadata": dict(self.metadata),
        }

    def __hash__(self) -> int:
        return hash((self.name, self.type, self.nullable, json.dumps(dict(self.metadata), sort_keys=True)))

    @property
    def physical_name(self) -> str:
        """The column's name in data files (``delta.columnMapping.physicalName`` if set)."""
        value = self.metadata.get("delta.columnMapping.physicalName")
        return str(value) if value else self.name

    @property
    def column_mapping_id(self) -> int | None:
        value = self.metadata.get("delta.columnMapping.id")
        return None if value is None else int(value)


@dataclass(frozen=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    def to_json_value(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.to_json_value() for f in self.fields]}

    def to_json(self) -> str:
        """The ``schemaString`` form (compact JSON)."""
        return json.dumps(self.to_json_value(), separators=(",", ":"))

    def simple_string(self) -> str:
        return "struct<" + ",".join(f"{f.name}:{f.type.simple_string()}" for f in self.fields) + ">"

    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> StructField:
        """The field called ``name`` (case-insensitive, as Delta resolves columns)."""
        lowered = name.lower()
        for f in self.fields:
            if f.name.lower() == lowered:
                return f
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(f.name.lower() == name.lower() for f in self.fields)

    @classmethod
    def from_json(cls, text: str) -> StructType:
        return parse_schema(text)

    def to_arrow(self) -> pa.Schema:
        """The Arrow schema of this table (logical names; field metadata as JSON strings)."""
        import pyarrow as pa

        return pa.schema([_field_to_arrow(f) for f in self.fields])

    def leaf_columns(self) -> list[tuple[tuple[str, ...], StructField]]:
        """Every non-struct column with its path of names (nested structs flattened)."""
        out: list[tuple[tuple[str, ...], StructField]] = []

        def walk(prefix: tuple[str, ...], struct: StructType) -> None:
            for f in struct.fields:
                if isinstance(f.type, StructType):
                    walk((*prefix, f.name), f.type)
                else:
                    out.append(((*prefix, f.name), f))

        walk((), self)
        return out


DataType = PrimitiveType | DecimalType | ArrayType | MapType | StructType


def data_type_from_json(value: Any, where: str = "schema") -> DataType:
    """Decode one type of the schema JSON."""
    if isinstance(value, str):
        if value in PRIMITIVE_NAMES:
            return PrimitiveType(value)
        m = _DECIMAL.match(value)
        if m:
            precision, scale = int(m.group(1)), int(m.group(2))
            if not 1 <= precision <= 38 or scale > precision:
                raise InvalidSchemaError(
                    f"invalid decimal type {value!r} at {where}: precision must be 1..38 and scale <= precision"
                )
            return DecimalType(precision, scale)
        if value == "decimal":
            return DecimalType(10, 0)
        if _UNSUPPORTED.match(value):
            column = where.removeprefix("schema").removeprefix(".") or where
            raise InvalidSchemaError(
                f"DELTA_UNSUPPORTED_DATA_TYPES: Found columns using unsupported data types: [{column}: {value}]; "
                "a Delta table cannot hold interval or time types: cast the column (to a string, or a number)"
            )
        raise InvalidSchemaError(f"unknown data type {value!r} at {where}")
    if not isinstance(value, dict):
        raise InvalidSchemaError(f"a data type must be a string or an object, got {value!r} at {where}")
    kind = value.get("type")
    try:
        if kind == "struct":
            fields = value.get("fields")
            if not isinstance(fields, list):
                raise InvalidSchemaError(f"struct without a 'fields' list at {where}")
            return StructType(tuple(_field_from_json(f, where) for f in fields))
        if kind == "array":
            return ArrayType(
                data_type_from_json(value["elementType"], f"{where}.element"),
                bool(value.get("containsNull", True)),
            )
        if kind == "map":
            return MapType(
                data_type_from_json(value["keyType"], f"{where}.key"),
                data_type_from_json(value["valueType"], f"{where}.value"),
                bool(value.get("valueContainsNull", True)),
            )
        if kind == "udt" and "sqlType" in value:
            return data_type_from_json(value["sqlType"], where)
    except KeyError as exc:
        raise InvalidSchemaError(f"{kind} type without {exc} at {where}") from None
    raise InvalidSchemaError(f"unknown data type {json.dumps(value)[:200]} at {where}")


def _field_from_json(value: Any, where: str) -> StructField:
    if not isinstance(value, dict) or "name" not in value or "type" not in value:
        raise InvalidSchemaError(f"a struct field needs 'name' and 'type', got {json.dumps(value)[:200]} at {where}")
    name = value["name"]
    if not isinstance(name, str):
        raise InvalidSchemaError(f"field name must be a string, got {name!r} at {where}")
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidSchemaError(f"field metadata must be an object at {where}.{name}")
    return StructField(
        name,
        data_type_from_json(value["type"], f"{where}.{name}"),
        bool(value.get("nullable", True)),
        metadata,
    )


def parse_schema(text: str) -> StructType:
    """Parse a ``schemaString``; raises :class:`InvalidSchemaError` naming the problem."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvalidSchemaError(f"the schema is not valid JSON: {exc}") from None
    parsed = data_type_from_json(value)
    if not isinstance(parsed, StructType):
        raise InvalidSchemaError(f"a table schema must be a struct, got {parsed.simple_string()}")
    seen: set[str] = set()
    for f in parsed.fields:
        if f.name.lower() in seen:
            raise InvalidSchemaError(f"duplicate column {f.name!r} in the schema (names are case-insensitive)")
        seen.add(f.name.lower())
    return parsed


# ---------------------------------------------------------------------------------------
# What writes do with schemas (Delta's SchemaUtils / SchemaMergingUtils)


def split_column_name(name: str) -> list[str]:
    """A column name with dots as its name parts: ``a.b.c`` is field ``c`` of field ``b`` of
    column ``a``; backquotes keep dots in a part (```a.b`.c`` is field ``c`` of column ``a.b``),
    and inside them two backquotes are one (```val``ue``` is ``val`ue``), as Spark's
    ``UnresolvedAttribute.parseAttributeName``."""
    parts, part, quoted, escaped = [], "", False, False
    for i, ch in enumerate(name):
        if escaped:
            escaped = False
        elif ch == "`" and quoted and name[i + 1 : i + 2] == "`":
            part += ch
            escaped = True
        elif ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(part)
            part = ""
        else:
            part += ch
    parts.append(part)
    return parts


def explode(
    schema: StructType, name: Callable[[StructField], str] = lambda f: f.name
) -> list[tuple[tuple[str, ...], StructField]]:
    """Every struct field at any depth with its path of ``name`` s (the field names, or e.g.
    their physical names), outermost first; ``element``, ``key`` and ``value`` step into arrays
    and maps (Delta's ``SchemaMergingUtils.explode``)."""
    out: list[tuple[tuple[str, ...], StructField]] = []

    def walk(prefix: tuple[str, ...], dt: DataType) -> None:
        if isinstance(dt, StructType):
            for f in dt.fields:
                path = (*prefix, name(f))
                out.append((path, f))
                walk(path, f.type)
        elif isinstance(dt, ArrayType):
            walk((*prefix, "element"), dt.element_type)
        elif isinstance(dt, MapType):
            walk((*prefix, "key"), dt.key_type)
            walk((*prefix, "value"), dt.value_type)

    walk((), schema)
    return out


def path_name(path: tuple[str, ...]) -> str:
    """A column path as Delta names it in messages (Spark's ``UnresolvedAttribute.name``): the
    parts joined by dots, a part holding a dot backquoted (```a.b`.c``)."""
    return ".".join(f"`{p}`" if "." in p else p for p in path)


def duplicate_column_names(schema: StructType) -> list[str]:
    """The column names ``schema`` holds twice, in any case, at any depth (:func:`explode`),
    sorted: ```a.b``` is not ``a`` 's field ``b`` (Delta's
    ``SchemaMergingUtils.checkColumnNameDuplication``, which every write runs on its data)."""
    names = [path_name(path) for path, _ in explode(schema)]
    counts = Counter(n.lower() for n in names)
    return sorted({n for n in names if counts[n.lower()] > 1})


def as_nullable(dt: DataType) -> DataType:
    """Every field and element nullable, as Delta's ``schema.asNullable`` on write."""
    if isinstance(dt, StructType):
        return StructType(tuple(StructField(f.name, as_nullable(f.type), True, f.metadata) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(as_nullable(dt.element_type), True)
    if isinstance(dt, MapType):
        return MapType(as_nullable(dt.key_type), as_nullable(dt.value_type), True)
    return dt


def without_void_fields(schema: StructType) -> StructType:
    """``schema`` without its ``void`` (NullType) fields, those of nested structs too: what a
    write's files hold (Delta's ``SchemaUtils.dropNullTypeColumns``)."""
    return StructType(
        tuple(
            replace(f, type=without_void_fields(f.type)) if isinstance(f.type, StructType) else f
            for f in schema.fields
            if not _is_void(f.type)
        )
    )


def _shape(dt: DataType) -> Any:
    """A type without nullability, metadata and name case (what schema comparison looks at)."""
    if isinstance(dt, StructType):
        return ("struct", tuple((f.name.lower(), _shape(f.type)) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ("array", _shape(dt.element_type))
    if isinstance(dt, MapType):
        return ("map", _shape(dt.key_type), _shape(dt.value_type))
    return dt.to_json_value()


def same_type(a: DataType, b: DataType) -> bool:
    """Same type, nullability, metadata and name case aside."""
    return bool(_shape(a) == _shape(b))


def same_columns(a: StructType, b: StructType) -> bool:
    """Same columns (case-insensitive, any order at the top level) and types; nullability ignored."""
    return {f.name.lower(): _shape(f.type) for f in a.fields} == {f.name.lower(): _shape(f.type) for f in b.fields}


_WIDENINGS = {
    ("integer", "long"),
    ("short", "integer"),
    ("short", "long"),
    ("byte", "short"),
    ("byte", "integer"),
    ("byte", "long"),
    ("float", "double"),
}


#: Delta's ``SchemaMergingUtils.mergeDataTypes`` merges any two of these to the wider, without
#: type widening: Parquet stores byte, short and integer alike as INT32, so a file written with
#: the narrower type reads as the wider one. Narrower data fits the column as it is; wider data
#: widens the column in place (``mergeSchema``), recording no ``delta.typeChanges``.
_PARQUET_INT32_WIDTHS = {"byte": 0, "short": 1, "integer": 2}


def _describe(dt: DataType) -> str:
    value = dt.to_json_value()
    return value if isinstance(value, str) else json.dumps(value)


def _merge_type(table: DataType, new: DataType, where: str) -> DataType:
    """``table`` with what ``new`` adds: struct fields at any depth, inside arrays and maps
    too (Delta's ``SchemaMergingUtils.mergeSchemas``); the table's nullability is kept. A
    ``void`` (NullType) column takes the other side's type: data of nulls fits any column,
    and a column of nulls becomes the data's type. Of byte, short and integer the wider is
    taken (:data:`_PARQUET_INT32_WIDTHS`)."""
    if _is_void(new):
        return table
    if _is_void(table):
        return as_nullable(new)
    if isinstance(table, StructType) and isinstance(new, StructType):
        return _merge_struct(table, new, where)
    if isinstance(table, ArrayType) and isinstance(new, ArrayType):
        return ArrayType(_merge_type(table.element_type, new.element_type, f"{where}.element"), table.contains_null)
    if isinstance(table, MapType) and isinstance(new, MapType):
        return MapType(
            _merge_type(table.key_type, new.key_type, f"{where}.key"),
            _merge_type(table.value_type, new.value_type, f"{where}.value"),
            table.value_contains_null,
        )
    if _shape(table) == _shape(new):
        return table
    pair = (_describe(table), _describe(new))
    if pair[0] in _PARQUET_INT32_WIDTHS and pair[1] in _PARQUET_INT32_WIDTHS:
        return table if _PARQUET_INT32_WIDTHS[pair[0]] >= _PARQUET_INT32_WIDTHS[pair[1]] else new
    failed = f"DELTA_FAILED_TO_MERGE_FIELDS: Failed to merge fields '{where}' and '{where}': {_conflict(table, new)}"
    if pair in _WIDENINGS or pair[::-1] in _WIDENINGS:
        raise SchemaMismatchError(
            f"{failed} (the table's and the data's); cast column {where} to {pair[0]} before writing, or widen it "
            "(delta.enableTypeWidening with mergeSchema, or alterColumnType)"
        )
    raise SchemaMismatchError(
        f"{failed} (the table's and the data's); cast column {where} to the table's type, or overwrite the table "
        "with overwriteSchema=true"
    )


def _conflict(table: DataType, new: DataType) -> str:
    """The cause Delta's ``mergeDataTypes`` gives two types it cannot merge."""
    if isinstance(table, DecimalType) and isinstance(new, DecimalType):
        ranges = []
        if table.precision != new.precision:
            ranges.append(f"precision {table.precision} and {new.precision}")
        if table.scale != new.scale:
            ranges.append(f"scale {table.scale} and {new.scale}")
        return "DELTA_MERGE_INCOMPATIBLE_DECIMAL_TYPE: Failed to merge decimal types with incompatible " + " & ".join(
            ranges
        )
    types = f"{table.simple_string()} and {new.simple_string()}"
    return f"DELTA_MERGE_INCOMPATIBLE_DATATYPE: Failed to merge incompatible data types {types}"


def _merge_struct(table: StructType, new: StructType, where: str) -> StructType:
    fields = list(table.fields)
    index = {f.name.lower(): i for i, f in enumerate(fields)}
    for f in new.fields:
        path = f"{where}.{f.name}" if where else f.name
        i = index.get(f.name.lower())
        if i is None:
            fields.append(StructField(f.name, as_nullable(f.type), True, f.metadata))
        else:
            old = fields[i]
            fields[i] = StructField(old.name, _merge_type(old.type, f.type, path), old.nullable, old.metadata)
    return StructType(tuple(fields))


def merge_schemas(table: StructType, new: StructType) -> StructType:
    """The table schema with the data's new columns added, nullable (``mergeSchema``); the
    table's columns keep their nullability, NOT NULL ones too (Delta's ``mergeSchemas``).
    Raises :class:`SchemaMismatchError` when a column has another type."""
    return _merge_struct(table, new, "")


#: how Delta's ``DeltaErrors.schemaChangedException`` opens: a write that would change the
#: schema without ``mergeSchema`` (a new column or nested field, a column's type)
_METADATA_MISMATCH = "DELTA_METADATA_MISMATCH: A schema mismatch detected when writing to the Delta table: "


def check_write_compatible(table: StructType, data: StructType) -> None:
    """Raise :class:`SchemaMismatchError` (Delta's ``DELTA_METADATA_MISMATCH``) unless ``data``
    fits ``table`` without a schema change. As Delta's ``mergeSchemas`` runs before its schema
    change check, a column of a type that cannot merge is ``DELTA_FAILED_TO_MERGE_FIELDS``
    first, even when the data also has a column the table lacks."""
    changes: list[tuple[str, DataType | None, DataType]] = []
    for f in data.fields:
        if f.name in table:
            old = table.field(f.name).type
            merged = _merge_type(old, f.type, f.name)
            if _shape(merged) != _shape(old):
                changes.extend(_changed_fields(old, merged, f.name))
    extra = [f.name for f in data.fields if f.name not in table]
    if extra:
        raise SchemaMismatchError(
            f"{_METADATA_MISMATCH}the data has columns the table does not: {', '.join(extra)}; write with "
            "option('mergeSchema', 'true') to add them, or overwrite with overwriteSchema=true"
        )
    retyped = [
        f"{path} is {_describe(was)} in the table and {_describe(now)} in the data"
        for path, was, now in changes
        if was is not None
    ]
    if retyped:
        raise SchemaMismatchError(
            f"{_METADATA_MISMATCH}{', '.join(retyped)}, a change of the table's type (a void column takes the "
            "data's type; a byte or short one widens, as Parquet stores byte, short and integer alike); write with "
            "option('mergeSchema', 'true') to change it, or cast the data to the table's type"
        )
    nested = [path for path, was, _ in changes if was is None]
    if nested:
        raise SchemaMismatchError(
            f"{_METADATA_MISMATCH}the data has nested fields the table does not: {', '.join(nested)}; write with "
            "option('mergeSchema', 'true') to add them, or overwrite with overwriteSchema=true"
        )


@dataclass(frozen=True)
class TypeDifference:
    """A column the data types differently from the table (:func:`type_differences`)."""

    #: the column's path, with ``element`` / ``key`` / ``value`` steps into arrays and maps
    path: tuple[str, ...]
    table: DataType
    data: DataType


def type_differences(table: StructType, data: StructType) -> list[TypeDifference]:
    """The columns both schemas have (case-insensitive, at any depth) whose types differ below
    any struct, array or map both have alike (Delta's ``checkDependentExpressions`` walk with
    ``transformColumns``); nullability aside."""
    return _differences(table, data, ())


def _differences(table: DataType, data: DataType, path: tuple[str, ...]) -> list[TypeDifference]:
    if isinstance(table, StructType) and isinstance(data, StructType):
        theirs = {f.name.lower(): f for f in data.fields}
        out: list[TypeDifference] = []
        for f in table.fields:
            other = theirs.get(f.name.lower())
            if other is not None:
                out += _differences(f.type, other.type, (*path, f.name))
        return out
    if isinstance(table, ArrayType) and isinstance(data, ArrayType):
        return _differences(table.element_type, data.element_type, (*path, "element"))
    if isinstance(table, MapType) and isinstance(data, MapType):
        return [
            *_differences(table.key_type, data.key_type, (*path, "key")),
            *_differences(table.value_type, data.value_type, (*path, "value")),
        ]
    return [] if _shape(table) == _shape(data) else [TypeDifference(path, table, data)]


def _is_void(dt: DataType) -> bool:
    return isinstance(dt, PrimitiveType) and dt.name == "void"


def _changed_fields(table: DataType, merged: DataType, where: str) -> list[tuple[str, DataType | None, DataType]]:
    """What merging data into ``table`` changed, as ``(path, type in the table, merged type)``:
    a field ``table`` lacks has None; a type ``merged`` widened (a byte/short column taking
    wider data, a ``void`` one taking the data's type) its table type."""
    if isinstance(table, StructType) and isinstance(merged, StructType):
        known = {f.name.lower(): f for f in table.fields}
        out: list[tuple[str, DataType | None, DataType]] = []
        for f in merged.fields:
            old = known.get(f.name.lower())
            path = f"{where}.{f.name}"
            out.extend([(path, None, f.type)] if old is None else _changed_fields(old.type, f.type, path))
        return out
    if isinstance(table, ArrayType) and isinstance(merged, ArrayType):
        return _changed_fields(table.element_type, merged.element_type, f"{where}.element")
    if isinstance(table, MapType) and isinstance(merged, MapType):
        return [
            *_changed_fields(table.key_type, merged.key_type, f"{where}.key"),
            *_changed_fields(table.value_type, merged.value_type, f"{where}.value"),
        ]
    return [] if _shape(table) == _shape(merged) else [(where, table, merged)]


# ---------------------------------------------------------------------------------------
# Arrow


def to_arrow_type(dt: DataType) -> pa.DataType:
    import pyarrow as pa

    if isinstance(dt, PrimitiveType):
        simple = {
            "string": pa.string(),
            "long": pa.int64(),
            "integer": pa.int32(),
            "short": pa.int16(),
            "byte": pa.int8(),
            "float": pa.float32(),
            "double": pa.float64(),
            "boolean": pa.bool_(),
            "binary": pa.binary(),
            "date": pa.date32(),
            "timestamp": pa.timestamp("us", tz="UTC"),
            "timestamp_ntz": pa.timestamp("us"),
            "void": pa.null(),
            "variant": pa.struct(
                [
                    pa.field("value", pa.binary(), nullable=False),
                    pa.field("metadata", pa.binary(), nullable=False),
                ]
            ),
        }
        return simple[dt.name]
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, ArrayType):
        return pa.list_(pa.field("element", to_arrow_type(dt.element_type), nullable=dt.contains_null))
    if isinstance(dt, MapType):
        return pa.map_(
            pa.field("key", to_arrow_type(dt.key_type), nullable=False),
            pa.field("value", to_arrow_type(dt.value_type), nullable=dt.value_contains_null),
        )
    return pa.struct([_field_to_arrow(f) for f in dt.fields])


def _field_to_arrow(f: StructField) -> pa.Field:
    import pyarrow as pa

    meta = {k: v if isinstance(v, str) else json.dumps(v) for k, v in f.metadata.items()} or None
    return pa.field(f.name, to_arrow_type(f.type), nullable=f.nullable, metadata=meta)


def from_arrow_type(t: pa.DataType, where: str = "schema") -> DataType:
    """The Delta type of an Arrow type (large/view variants map to the same type)."""
    import pyarrow.types as pt

    if pt.is_string(t) or pt.is_large_string(t) or getattr(pt, "is_string_view", lambda _: False)(t):
        return PrimitiveType("string")
    if (
        pt.is_binary(t)
        or pt.is_large_binary(t)
        or pt.is_fixed_size_binary(t)
        or getattr(pt, "is_binary_view", lambda _: False)(t)
    ):
        return PrimitiveType("binary")
    for check, name in (
        (pt.is_int64, "long"),
        (pt.is_int32, "integer"),
        (pt.is_int16, "short"),
        (pt.is_int8, "byte"),
        (pt.is_float32, "float"),
        (pt.is_float64, "double"),
        (pt.is_boolean, "boolean"),
        (pt.is_date32, "date"),
        (pt.is_null, "void"),
    ):
        if check(t):
            return PrimitiveType(name)
    if pt.is_uint8(t):
        return PrimitiveType("short")
    if pt.is_uint16(t):
        return PrimitiveType("integer")
    if pt.is_uint32(t) or pt.is_uint64(t):
        return PrimitiveType("long")
    if pt.is_date64(t):
        return PrimitiveType("date")
    if pt.is_timestamp(t):
        return PrimitiveType("timestamp" if t.tz is not None else "timestamp_ntz")
    if pt.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        return ArrayType(from_arrow_type(t.value_type, where), t.value_field.nullable)
    if pt.is_map(t):
        return MapType(from_arrow_type(t.key_type, where), from_arrow_type(t.item_type, where), t.item_field.nullable)
    if pt.is_struct(t):
        return StructType(tuple(_field_from_arrow(t.field(i), where) for i in range(t.num_fields)))
    if pt.is_dictionary(t):
        return from_arrow_type(t.value_type, where)
    raise InvalidSchemaError(
        f"the Arrow type {t} at {where} has no Delta equivalent; cast it first "
        f"(supported: {sorted(PRIMITIVE_NAMES)}, decimal, list, map, struct)"
    )


def _field_from_arrow(f: pa.Field, where: str) -> StructField:
    metadata: dict[str, Any] = {}
    for key, value in (f.metadata or {}).items():
        k = key.decode() if isinstance(key, bytes) else str(key)
        v = value.decode() if isinstance(value, bytes) else str(value)
        try:
            metadata[k] = json.loads(v)
        except ValueError:
            metadata[k] = v
    return StructField(f.name, from_arrow_type(f.type, f"{where}.{f.name}"), f.nullable, metadata)


def from_arrow(schema: pa.Schema) -> StructType:
    """A Delta schema from an Arrow schema."""
    return StructType(tuple(_field_from_arrow(schema.field(i), "schema") for i in range(len(schema))))
