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
            return ZOrderCheck(
                (),
                f"[DELTA_ZORDERING_ON_PARTITION_COLUMN] {name} is a partition column. Z-Ordering can only be "
                "performed on data columns",
            )
        resolved = _resolve(snapshot.schema, parts)
        if resolved is None or resolved[0][0].lower() in partition:
            return ZOrderCheck(
                (), f"[DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST] Z-Ordering column {name} does not exist in data schema."
            )
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
    """Delta's ``range_partition_id(col, num_ranges)`` over all of ``column``: Spark's
    ``RangePartitioner`` of ``num_ranges`` partitions sampling every non-null value (as Spark
    does up to ``rangeExchange.sampleSizePerPartition`` rows a task): up to ``num_ranges - 1``
    distinct bounds, one every ``rows / num_ranges`` values in sorted order
    (``determineBounds``), and each value's id the number of bounds below it
    (``getPartition``: a value equal to a bound takes the range below). Nulls, not sampled,
    get range 0 as Delta's ``PartitionerExpr`` gives them."""
    import numpy as np

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_nested(column.type):
        dense = _nested_dense_ranks(column)
    else:  # Arrow ranks nulls last (one group), NaN above every number, as Spark orders them
        dense = np.asarray(pc.rank(column, sort_keys="ascending", tiebreaker="dense"), dtype=np.int64) - 1
    valid = np.asarray(column.is_valid(), dtype=bool)
    bounds = _range_bounds(np.bincount(dense[valid]), num_ranges)
    ids = np.searchsorted(bounds, dense, side="left")
    ids[~valid] = 0
    return ids.astype(np.uint32)


def _range_bounds(counts: Any, num_ranges: int) -> Any:
    """Spark's ``RangePartitioner.determineBounds`` over sorted distinct values occurring
    ``counts`` times each (every value weighing 1): the dense ranks of the bounds. A value
    becomes a bound when the values up to it reach the next multiple of ``rows / num_ranges``."""
    import numpy as np

    cumulative = np.cumsum(counts)
    step = float(cumulative[-1]) / num_ranges if len(cumulative) else 0.0
    bounds: list[int] = []
    target = step
    while len(bounds) < num_ranges - 1:
        k = max(bounds[-1] + 1 if bounds else 0, int(np.searchsorted(cumulative, target, side="left")))
        if k >= len(cumulative):
            break
        bounds.append(k)
        target += step
    return np.asarray(bounds, dtype=np.int64)


def _nested_dense_ranks(column: pa.Array) -> Any:
    """0-based dense ranks (equal values share one) of a struct or array column in Spark's
    order, which Arrow cannot sort: a struct field by field, an array element by element
    with a shorter prefix first, nulls first at every level, NaN above every number."""
    import numpy as np

    keys = [_sort_key(v) for v in column.to_pylist()]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    ranks = np.zeros(len(keys), dtype=np.int64)
    for position, row in enumerate(order):
        same = position > 0 and keys[order[position - 1]] == keys[row]
        ranks[row] = ranks[order[position - 1]] + (0 if same else 1) if position > 0 else 0
    return ranks


def _sort_key(value: Any) -> tuple[Any, ...]:
    """A Python key ordering ``value`` (a struct as a dict, an array as a list) as Spark does."""
    if value is None:
        return (0,)
    if isinstance(value, dict):
        return (1, tuple(_sort_key(v) for v in value.values()))
    if isinstance(value, list):
        return (1, tuple(_sort_key(v) for v in value))
    if isinstance(value, float) and value != value:  # NaN: above every other number in Spark
        return (2,)
    return (1, value)


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
    """Row order along the Hilbert curve of the columns' range ids (Delta's ``HilbertClustering``,
    with its ``numBits``: ``floor(log2(num_ranges)) + 1``, 10 for 1000 ranges)."""
    bits = int(num_ranges).bit_length()
    return pa.array(hilbert_order([range_ids(column_at(table, c), num_ranges) for c in columns], bits), pa.int64())
