"""Values that UPDATE and MERGE assign, as Delta's ``UpdateExpressionsSupport``.

:func:`cast_if_needed` casts a value to its table column's type as Delta's ``castIfNeeded``
(with ``spark.databricks.delta.resolveMergeUpdateStructsByName.enabled``, on by default): a
value assigned to a struct column is rebuilt field by field, each field taken from the
value's field of the same name (case-insensitive) and cast recursively; a null struct stays
null. Spark's own ``cast`` between structs pairs the fields by position: a struct with its
fields in another order would be written with values in the wrong fields, or refused.
Arrays of structs are rebuilt element by element; other types go through Spark's ``cast``.

:func:`assign_fields` is ``SET s.a.b = value``: the struct rebuilt with the assigned nested
fields replaced (Delta's ``generateUpdateExpressions`` for a nested name).

:func:`evolve_type` is the schema evolution side: a table type with the nested fields a
source type adds, appended nullable, in structs, arrays and maps (Delta's
``SchemaMergingUtils``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.store_assignment import store_assignment_cast
from deltalog.txn.protocol.schema import split_column_name

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

    from deltalog.contrib.spark.resolver import Resolver

__all__ = [
    "StructCast",
    "assign_fields",
    "cast_if_needed",
    "evolve_struct",
    "evolve_type",
    "has_struct",
    "is_void",
    "refuse_conflicting_targets",
    "split_name",
]


def is_void(data_type: DataType) -> bool:
    """Whether ``data_type`` is Spark's ``NullType`` (a ``void`` column of nulls)."""
    from pyspark.sql.types import NullType

    return isinstance(data_type, NullType)


def has_struct(data_type: DataType) -> bool:
    """Whether ``data_type`` is a struct or holds one (in an array or a map)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, StructType):
        return True
    if isinstance(data_type, ArrayType):
        return has_struct(data_type.elementType)
    if isinstance(data_type, MapType):
        return has_struct(data_type.keyType) or has_struct(data_type.valueType)
    return False


@dataclass(frozen=True)
class StructCast:
    """How :func:`cast_if_needed` treats a table struct field the value lacks: an error
    (``allow_missing`` false: Delta's ``CastByName`` without schema evolution), else null,
    or, with ``original`` (the target row's value, for an ``updateAll`` under schema
    evolution), the target's own value of that field."""

    allow_missing: bool
    original: Column | None = None
    original_type: DataType | None = None

    def field(self, name: str) -> StructCast:
        """How to cast the field ``name`` of the struct (the target's own field, if it has it)."""
        from pyspark.sql.types import StructType

        if self.original is None or not isinstance(self.original_type, StructType):
            return StructCast(self.allow_missing)
        found = next((f for f in self.original_type.fields if f.name.lower() == name.lower()), None)
        if found is None:
            return StructCast(self.allow_missing)
        return StructCast(self.allow_missing, self.original.getField(found.name), found.dataType)


def cast_if_needed(value: Column, from_type: DataType, to_type: DataType, where: str, how: StructCast) -> Column:
    """``value`` (of ``from_type``) as ``to_type``, struct fields by name; ``where`` names
    the column in errors. A value struct's field the table struct lacks is an error (Delta's
    "cannot cast": add it with schema evolution)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    if from_type == to_type:
        return value
    if isinstance(from_type, StructType) and isinstance(to_type, StructType):
        return _struct_by_name(value, from_type, to_type, where, how)
    if isinstance(from_type, ArrayType) and isinstance(to_type, ArrayType) and has_struct(to_type.elementType):
        element_from, element_to = from_type.elementType, to_type.elementType
        per_element = StructCast(how.allow_missing)
        return F.transform(
            value, lambda e: cast_if_needed(e, element_from, element_to, f"{where}.element", per_element)
        )
    if isinstance(from_type, MapType) and isinstance(to_type, MapType) and has_struct(to_type):
        per_entry = StructCast(how.allow_missing)
        key_from, key_to, value_from, value_to = (
            from_type.keyType,
            to_type.keyType,
            from_type.valueType,
            to_type.valueType,
        )
        values = F.transform_values(
            value, lambda _, v: cast_if_needed(v, value_from, value_to, f"{where}.value", per_entry)
        )
        if not has_struct(key_to):
            return values
        return F.transform_keys(values, lambda k, _: cast_if_needed(k, key_from, key_to, f"{where}.key", per_entry))
    return store_assignment_cast(value, from_type, to_type, where)


def _struct_by_name(value: Column, from_type: StructType, to_type: StructType, where: str, how: StructCast) -> Column:
    from pyspark.sql import functions as F

    source = {f.name.lower(): f for f in from_type.fields}
    extra = sorted(set(source) - {f.name.lower() for f in to_type.fields})
    missing = [f.name for f in to_type.fields if f.name.lower() not in source]
    if extra or (missing and not how.allow_missing):
        raise DeltaAnalysisError(
            f"DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION: Cannot cast {from_type.simpleString()} to "
            f"{to_type.simpleString()} ({where}). All nested columns must match: the table's struct lacks a "
            "field, or the value lacks one; withSchemaEvolution() adds the first and allows the second"
        )
    fields = []
    for f in to_type.fields:
        found = source.get(f.name.lower())
        if found is None:
            kept = how.field(f.name).original
            fields.append((F.lit(None).cast(f.dataType) if kept is None else kept).alias(f.name))
        else:
            nested = how.field(f.name)
            field = cast_if_needed(value.getField(found.name), found.dataType, f.dataType, f"{where}.{f.name}", nested)
            fields.append(field.alias(f.name))
    kept = how.original if how.original is not None and has_fields_to_keep(from_type, to_type) else None
    null = value.isNull() if kept is None else value.isNull() & kept.isNull()
    return F.when(null, F.lit(None).cast(to_type)).otherwise(F.struct(*fields))


def has_fields_to_keep(value: StructType, table: StructType) -> bool:
    """Whether ``table`` has a field ``value`` lacks (by name, case-insensitive), at any depth
    through structs (not into arrays or maps, whose target values are never kept): Delta's
    ``hasExtraStructFieldsToPreserveValue``. Only then does ``updateAll`` keep a target struct
    for a null source struct; else the null source struct is written as null."""
    from pyspark.sql.types import StructType

    fields = {f.name.lower(): f.dataType for f in value.fields}
    for f in table.fields:
        found = fields.get(f.name.lower())
        if found is None:
            return True
        inner = f.dataType
        if isinstance(found, StructType) and isinstance(inner, StructType) and has_fields_to_keep(found, inner):
            return True
    return False


def evolve_struct(table: StructType, source: StructType) -> StructType:
    """``table`` with the fields of ``source`` it lacks (by name, case-insensitive) appended
    nullable, recursively into the fields both have, through arrays and maps too (a struct
    element of an array, a map's key or value: Delta's ``SchemaMergingUtils.mergeSchemas``);
    other fields keep the table's type (a value of another type is cast to it)."""
    from pyspark.sql.types import StructField, StructType

    by_name = {f.name.lower(): f for f in source.fields}
    fields = []
    for f in table.fields:
        other = by_name.pop(f.name.lower(), None)
        if other is not None:
            f = StructField(f.name, evolve_type(f.dataType, other.dataType), f.nullable, f.metadata)
        fields.append(f)
    fields.extend(StructField(f.name, f.dataType, True) for f in by_name.values())
    return StructType(fields)


def evolve_type(table: DataType, source: DataType) -> DataType:
    """``table`` with the struct fields ``source`` adds at any depth (:func:`evolve_struct`),
    inside arrays and maps too; a ``void`` takes the ``source`` type (Delta's ``mergeSchemas``);
    a type of another shape stays ``table``."""
    from pyspark.sql.types import ArrayType, MapType, NullType, StructType

    if isinstance(table, NullType):
        return source
    if isinstance(table, StructType) and isinstance(source, StructType):
        return evolve_struct(table, source)
    if isinstance(table, ArrayType) and isinstance(source, ArrayType):
        return ArrayType(evolve_type(table.elementType, source.elementType), table.containsNull)
    if isinstance(table, MapType) and isinstance(source, MapType):
        key = evolve_type(table.keyType, source.keyType)
        return MapType(key, evolve_type(table.valueType, source.valueType), table.valueContainsNull)
    return table


def split_name(name: str) -> list[str]:
    """``a.b.c`` (backquotes allowed: ``a.`b.c```) as its name parts, each stripped."""
    return [p.strip() for p in split_column_name(name)]


def refuse_conflicting_targets(targets: Sequence[tuple[str, ...]], resolver: Resolver) -> None:
    """Raise :class:`DeltaAnalysisError` when two assigned targets (a column and its nested
    field names) are the same (by the session's ``resolver``: ``S`` and ``s`` are the same
    unless ``spark.sql.caseSensitive``), or one is a struct holding the other, as Delta's
    ``generateUpdateExpressions`` (``DELTA_CONFLICT_SET_COLUMN``): ``SET s = ..., s.a = ...``
    or ``SET S = ..., s = ...`` would let one assignment silently win."""
    lowered = [tuple(resolver.key(p) for p in t) for t in targets]
    for i, first in enumerate(lowered):
        for j in range(i + 1, len(lowered)):
            second = lowered[j]
            if first[: len(second)] == second or second[: len(first)] == first:
                names = ", ".join(".".join(f"`{p}`" for p in t) for t in (targets[i], targets[j]))
                raise DeltaAnalysisError(
                    f"DELTA_CONFLICT_SET_COLUMN: There is a conflict from these SET columns: {names}; "
                    "assign each column or nested field once"
                )


def assign_fields(
    current: Column, struct: DataType, assignments: Mapping[tuple[str, ...], Column], where: str
) -> Column:
    """``current`` (a struct of type ``struct``) with the nested fields at the paths of
    ``assignments`` (relative to it) set to their values, rebuilt field by field (a null
    struct becomes a struct of nulls with the assigned fields, as in Delta). A path naming
    no field is a :class:`DeltaAnalysisError`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if not isinstance(struct, StructType):
        raise DeltaAnalysisError(f"cannot set a nested field of {where}: it is {struct.simpleString()}, not a struct")
    names = {f.name.lower() for f in struct.fields}
    unknown = sorted({path[0] for path in assignments if path[0].lower() not in names})
    if unknown:
        raise DeltaAnalysisError(f"{where} has no field(s) {unknown} (fields: {[f.name for f in struct.fields]})")
    fields = []
    for f in struct.fields:
        mine = {path: v for path, v in assignments.items() if path[0].lower() == f.name.lower()}
        whole = next((v for path, v in mine.items() if len(path) == 1), None)
        if whole is not None:
            fields.append(whole.alias(f.name))
        elif mine:
            deeper = {path[1:]: v for path, v in mine.items()}
            fields.append(
                assign_fields(current.getField(f.name), f.dataType, deeper, f"{where}.{f.name}").alias(f.name)
            )
        else:
            fields.append(current.getField(f.name).alias(f.name))
    return F.struct(*fields)
