"""Z-order and Hilbert clustering of rows (Delta's ``ZOrderClustering`` and
``HilbertClustering``): the columns a ``ZORDER BY`` names, checked as Delta's
``validateZorderByColumns`` (top-level columns and nested fields), and the row order of a
bin by their range ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.commands.hilbert import hilbert_order
from deltalog.txn.protocol.column_identifiers import ColumnPath
from deltalog.txn.protocol.schema import ArrayType, DataType, MapType, PrimitiveType, StructType, split_column_name
from deltalog.txn.protocol.stats_columns import StatsColumns

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "ZOrderCheck",
    "ZOrderColumn",
    "column_at",
    "hilbert_indices",
    "is_orderable",
    "range_ids",
    "z_order_columns",
    "z_order_indices",
]


@dataclass(frozen=True)
class ZOrderColumn:
    """A column to order by: its name as given, as the commit and the errors name it
    (Spark's ``UnresolvedAttribute.name``: ``a`` or ``s.B``, a part holding a dot in
    backquotes), and its path in the data files (physical names)."""

    name: str
    physical_path: ColumnPath


@dataclass(frozen=True)
class ZOrderCheck:
    """The checked ``ZORDER BY`` columns, or why Delta refuses them: ``refusal`` (a partition
    or missing column), else ``without_stats`` (the columns without statistics, which Delta
    reports together), else ``not_orderable``."""

    columns: tuple[ZOrderColumn, ...]
    refusal: str | None = None
    without_stats: tuple[str, ...] = ()
    #: ``(name, type)`` of the columns Spark cannot sort (Delta's ``RangePartitionId`` refuses
    #: them when the rewrite is planned, after the statistics check)
    not_orderable: tuple[tuple[str, str], ...] = ()


def _quoted(part: str) -> str:
    return f"`{part}`" if "." in part else part


def z_order_columns(snapshot: Snapshot, names: Sequence[str | ColumnPath], check_stats: bool = True) -> ZOrderCheck:
    """Delta's ``validateZorderByColumns``: each name (dots separate nested fields, as Spark
    parses them; a tuple: the parts already split) is a data column or a field nested in
    one, not a partition column, and (``check_stats``) has statistics."""
    partition = {c.lower() for c in snapshot.partition_columns}
    stats_columns = StatsColumns.of(snapshot.metadata)
    out: list[ZOrderColumn] = []
    without_stats: list[str] = []
    not_orderable: list[tuple[str, str]] = []
    for given in names:
        parts = split_column_name(given) if isinstance(given, str) else list(given)
        name = ".".join(map(_quoted, parts))
        if len(parts) == 1 and parts[0].lower() in partition:
            return ZOrderCheck((), f"{name} is a partition column. Z-Ordering can only be performed on data columns")
        resolved = _resolve(snapshot.schema, parts)
        if resolved is None or resolved[0][0].lower() in partition:
            return ZOrderCheck((), f"Z-Ordering column {name} does not exist in the table's data schema")
        logical, physical, data_type = resolved
        if check_stats and not stats_columns.covers(logical):
            without_stats.append(name)
        if not is_orderable(data_type):
            not_orderable.append((name, data_type.simple_string()))
        out.append(ZOrderColumn(name, physical))
    return ZOrderCheck(tuple(out), without_stats=tuple(without_stats), not_orderable=tuple(not_orderable))


def is_orderable(data_type: DataType) -> bool:
    """Spark's ``RowOrdering.isOrderable``: atomic types but variant, and structs and arrays of
    orderable types; never a map."""
    if isinstance(data_type, StructType):
        return all(is_orderable(f.type) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return is_orderable(data_type.element_type)
    if isinstance(data_type, MapType):
        return False
    return not (isinstance(data_type, PrimitiveType) and data_type.name == "variant")


def _resolve(schema: StructType, parts: Sequence[str]) -> tuple[tuple[str, ...], ColumnPath, DataType] | None:
    """The (logical, physical) names and the type of the field at ``parts`` (any case), or None."""
    logical: list[str] = []
    physical: list[str] = []
    node: Any = schema
    for part in parts:
        if not isinstance(node, StructType):
            return None
        f = next((f for f in node.fields if f.name.lower() == part.lower()), None)
        if f is None:
            return None
        logical.append(f.name)
        physical.append(f.physical_name)
        node = f.type
    return tuple(logical), tuple(physical), node


def column_at(table: pa.Table, column: ColumnPath | str) -> pa.ChunkedArray:
    """The values of a column of ``table``, or of the nested field at a path."""
    if isinstance(column, str):
        return table[column]
    values = table[column[0]]
    return pc.struct_field(values, list(column[1:])) if len(column) > 1 else values


def range_ids(column: pa.Array | pa.ChunkedArray, num_ranges: int) -> Any:
    """Delta's ``range_partition_id(col, num_ranges)`` over all of ``column``: each value's
    rank (equal values share the lowest, nulls first) scaled to ``[0, num_ranges)``."""
    import numpy as np

    n = len(column)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    ranks = np.asarray(pc.rank(column, sort_keys="ascending", tiebreaker="min"), dtype=np.uint64)
    nulls = column.null_count
    if nulls:  # ranked last; Spark's ascending order puts them first
        is_null = np.asarray(column.is_null(), dtype=bool)
        ranks = np.where(is_null, np.uint64(1), ranks + np.uint64(nulls))
    ids = (ranks - np.uint64(1)) * np.uint64(num_ranges) // np.uint64(max(n, 1))
    return ids.astype(np.uint32)


def z_order_indices(table: pa.Table, columns: Sequence[ColumnPath | str], num_ranges: int) -> pa.Array:
    """Row order by Delta's Z-value: ``interleave_bits`` of each column's range id (the most
    significant bit of every column first, columns in the given order; a column is a name
    or the path of a nested field)."""
    import numpy as np

    bits = max(1, int(num_ranges - 1).bit_length())
    ids = [range_ids(column_at(table, c), num_ranges) for c in columns]
    matrix = np.zeros((table.num_rows, bits * len(ids)), dtype=np.uint8)
    for b in range(bits):
        for j, column_ids in enumerate(ids):
            matrix[:, b * len(ids) + j] = (column_ids >> np.uint32(bits - 1 - b)) & 1
    packed = np.packbits(matrix, axis=1)
    order = np.lexsort(packed.T[::-1])
    return pa.array(order, pa.int64())


def hilbert_indices(table: pa.Table, columns: Sequence[ColumnPath | str], num_ranges: int) -> pa.Array:
    """Row order along the Hilbert curve of the columns' range ids (Delta's ``HilbertClustering``)."""
    bits = max(1, int(num_ranges - 1).bit_length())
    return pa.array(hilbert_order([range_ids(column_at(table, c), num_ranges) for c in columns], bits), pa.int64())
