"""``delta.dataSkippingStatsColumns`` checked against the table it is set on: Delta's
``StatisticsCollection.validateDeltaStatsColumns``, run on every metadata change (create,
ALTER, a write that changes the schema), as Delta's ``updateMetadata`` runs it.

Refused, with :class:`~deltalog.txn.protocol.stats_columns.InvalidStatsColumnsError` naming
Delta's error class: a partition column; a column the data schema lacks (names match
ignoring case; maps and arrays are entered only through ``key``/``value``/``element``); a
top-level column of a type without statistics (boolean, binary, array, map: a struct
stands for its fields, and a field of a type without statistics is accepted, getting a
null count only); a column listed twice. A value that is not a column list, or has text
after it that Delta's parser would leave unread (``a b``), raises
:class:`~deltalog.txn.protocol.properties.InvalidPropertyError`.

As in Delta, the type and duplicate checks see a column only when it is spelled as the
schema spells it (Delta's ``transformSchema`` matches names exactly): ``FLAG`` for a
boolean ``flag`` is accepted, as Delta accepts it, and gets a null count only.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from deltalog.txn.protocol.column_identifiers import ColumnPath, column_sql
from deltalog.txn.protocol.properties import InvalidPropertyError
from deltalog.txn.protocol.schema import ArrayType, MapType, StructType
from deltalog.txn.protocol.stats_columns import InvalidStatsColumnsError, is_skipping_eligible

if TYPE_CHECKING:
    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.schema import DataType

__all__ = ["validate_stats_columns"]


def validate_stats_columns(metadata: Metadata) -> None:
    """Raise when ``metadata``'s ``delta.dataSkippingStatsColumns`` is one Delta refuses."""
    listed = metadata.properties.data_skipping_stats_columns
    if listed is None:
        return
    if listed.rest:
        raise InvalidPropertyError(
            f"delta.dataSkippingStatsColumns is not a comma-separated list of column names: {listed.rest!r} "
            f"after {', '.join(map(column_sql, listed.paths))} is not part of the list (Delta would leave it "
            "unread). Separate names with commas, nested fields with dots (s.x), and quote a name with spaces "
            "or other special characters in backquotes (`my column`)"
        )
    partitions = {c.lower() for c in metadata.partition_columns}
    schema = StructType.from_json(metadata.schema_string)
    data = StructType(tuple(f for f in schema.fields if f.name.lower() not in partitions))
    checked: list[ColumnPath] = []
    for path in listed.paths:
        if len(path) == 1 and path[0].lower() in partitions:
            raise InvalidStatsColumnsError(
                "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_PARTITIONED_COLUMN",
                f"delta.dataSkippingStatsColumns lists the partition column {path[0]!r}: partition columns "
                "get no statistics (files are skipped by their partition values); remove it from the list",
                [path[0]],
            )
        data_type, spelled_exactly = _resolve(data, path)
        if spelled_exactly:
            checked += _checked_leaves(path, data_type, inside_struct=len(path) > 1)
    twice = [column_sql(p) for p, n in Counter(checked).items() if n > 1]
    if twice:
        raise InvalidStatsColumnsError(
            "DELTA_DUPLICATE_DATA_SKIPPING_COLUMNS",
            f"delta.dataSkippingStatsColumns lists {', '.join(twice)} more than once (a struct stands for "
            "all its fields); list each column once",
            twice,
        )


def _resolve(data: StructType, path: ColumnPath) -> tuple[DataType, bool]:
    """Delta's ``findColumnPosition``: the type at ``path`` in the data schema, and whether
    ``path`` spells every name as the schema does and ends at a field of a struct (when
    Delta's ``transformSchema`` checks its type)."""
    current: DataType = data
    exact, in_struct = True, True
    for i, name in enumerate(path):
        if isinstance(current, StructType):
            if name not in current:
                raise _not_found(path, i, current)
            found = current.field(name)
            exact, in_struct, current = exact and found.name == name, True, found.type
        elif isinstance(current, MapType) and name in ("key", "value"):
            in_struct, current = False, current.key_type if name == "key" else current.value_type
        elif isinstance(current, ArrayType) and name == "element":
            in_struct, current = False, current.element_type
        else:
            raise _not_nested(path, column_sql(path[:i]), current)
    return current, exact and in_struct


def _not_found(path: ColumnPath, depth: int, struct: StructType) -> InvalidStatsColumnsError:
    where = f"the fields of {column_sql(path[:depth])}" if depth else "the table's data columns"
    return InvalidStatsColumnsError(
        "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA",
        f"delta.dataSkippingStatsColumns lists {column_sql(path)}, but {path[depth]!r} is not among {where} "
        f"({', '.join(struct.names) or 'none'}); list existing columns, quoting a name with a dot or other "
        "special characters in backquotes (`a.b`)",
        [column_sql(path)],
    )


def _not_nested(path: ColumnPath, parent: str, data_type: DataType) -> InvalidStatsColumnsError:
    if isinstance(data_type, MapType):
        error_class, hint = "DELTA_FOUND_MAP_TYPE_COLUMN", f"name {parent}.key or {parent}.value"
    elif isinstance(data_type, ArrayType):
        error_class, hint = "DELTA_INCORRECT_ARRAY_ACCESS_BY_NAME", f"name {parent}.element"
    else:
        error_class, hint = "DELTA_COLUMN_PATH_NOT_NESTED", f"list {parent} itself"
    return InvalidStatsColumnsError(
        error_class,
        f"delta.dataSkippingStatsColumns lists {column_sql(path)}, but {parent} is of type "
        f"{data_type.simple_string()}, which has no field of that name: {hint}",
        [column_sql(path)],
    )


def _checked_leaves(path: ColumnPath, data_type: DataType, inside_struct: bool) -> list[ColumnPath]:
    """Delta's ``validateDataSkippingType``: the leaf columns ``path`` stands for; a listed
    column of a type without statistics is refused unless it is a field of a struct."""
    if isinstance(data_type, StructType):
        return [leaf for f in data_type.fields for leaf in _checked_leaves((*path, f.name), f.type, True)]
    if is_skipping_eligible(data_type) or inside_struct:
        return [path]
    raise InvalidStatsColumnsError(
        "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_TYPE",
        f"delta.dataSkippingStatsColumns lists {column_sql(path)} of type {data_type.simple_string()}, which "
        "data skipping keeps no statistics for (numbers, dates, timestamps and strings have them; a struct "
        "stands for its fields); remove it from the list",
        [column_sql(path)],
    )
