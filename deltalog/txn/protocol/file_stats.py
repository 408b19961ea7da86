"""Per-file statistics (``add.stats``): numRecords, minValues, maxValues, nullCount.

Pure pyarrow, shared by every writer (OPTIMIZE rewrites, the Spark tasks, Python code
writing its own files). Collected batch by batch with pyarrow compute, for the leaf columns
the table's :class:`~deltalog.txn.protocol.stats_columns.StatsColumns` names
(``delta.dataSkippingStatsColumns``, else the first ``delta.dataSkippingNumIndexedCols``),
as Delta's ``StatisticsCollection`` does: build the collector of a file of a table with
:meth:`StatsCollector.for_table`. Strings keep a prefix as the minimum and a longer maximum
is truncated with a tie-breaker above every string of its prefix
(:func:`truncated_max_string`, Delta's ``truncateMaxStringAgg``): 32 characters, or the
table's ``delta.dataSkippingStringPrefixLength`` (:attr:`StatsColumns.string_prefix_length`;
0 keeps an empty minimum and no maximum, as Delta's ``substring`` and ``truncateMaxStringAgg``). Timestamps are written
with millisecond precision, the minimum rounded down and the maximum rounded up (truncated
where rounding up would leave year 9999: readers widen it by 1 ms, as Delta's do).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.protocol.column_identifiers import ColumnPath
from deltalog.txn.protocol.schema import from_arrow
from deltalog.txn.protocol.stats_columns import STRING_PREFIX_LENGTH, StatsColumns

if TYPE_CHECKING:
    from deltalog.txn.protocol.actions import Metadata, Protocol

__all__ = ["STRING_PREFIX_LENGTH", "StatsCollector", "stats_json", "tight_bounds_on_write", "truncated_max_string"]

_Path = ColumnPath


def _leaf_paths(schema: pa.Schema, columns: Collection[_Path] = ()) -> list[tuple[_Path, pa.DataType]]:
    """The leaf columns of ``schema``; a struct named in ``columns`` (in any case) is a leaf (a
    ``variant``, Arrow's ``struct<value, metadata>`` or a shredded one, is a leaf of the table's
    schema)."""
    leaves: list[tuple[_Path, pa.DataType]] = []

    named = {_lower(c) for c in columns}

    def visit(prefix: _Path, t: pa.DataType, name: str) -> None:
        path = (*prefix, name)
        if pa.types.is_struct(t) and _lower(path) not in named:
            for i in range(t.num_fields):
                child = t.field(i)
                visit(path, child.type, child.name)
        else:
            leaves.append((path, t))

    for f in schema:
        visit((), f.type, f.name)
    return leaves


def _lower(path: Sequence[str]) -> _Path:
    return tuple(name.lower() for name in path)


def _has_min_max(t: pa.DataType) -> bool:
    # an unsigned 64-bit column (a foreign Parquet file's) may hold values past a long's range
    return bool(
        (pa.types.is_integer(t) and not pa.types.is_uint64(t))
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
    )


def _column(batch: pa.RecordBatch | pa.Table, path: _Path) -> pa.Array | pa.ChunkedArray:
    col: Any = batch.column(batch.schema.get_field_index(path[0]))
    for name in path[1:]:
        col = pc.struct_field(col, name)
    return col


def _json_value(value: Any, t: pa.DataType, is_max: bool, prefix_length: int) -> Any:
    if value is None:
        return None
    if pa.types.is_timestamp(t):
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.timezone.utc)
            micros = value.microsecond
            value = value.replace(microsecond=(micros // 1000) * 1000)
            top = dt.datetime.max.replace(tzinfo=value.tzinfo) - dt.timedelta(milliseconds=1)
            if is_max and micros % 1000 and value <= top:
                # rounded up; in the last millisecond of 9999 truncated as Delta writes every
                # max, which readers widen by 1 ms (saturating)
                value = value + dt.timedelta(milliseconds=1)
            text = value.replace(tzinfo=None).isoformat(timespec="milliseconds")
            return text + ("Z" if t.tz is not None else "")
        return None
    if pa.types.is_date(t):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return value  # every digit, as Delta writes it (a double rounds a max below the values)
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, str):
        if is_max:
            return truncated_max_string(value, prefix_length)
        return value[:prefix_length]  # code points, as Spark's ``substring``
    return value


_DELETION_VECTORS = "deletionVectors"

#: Delta's tie-breakers: the largest code point, and DEL when the truncated character is ASCII
_MAX_CHARACTER, _ASCII_MAX_CHARACTER = "\U0010ffff", "\x7f"


def truncated_max_string(value: str, prefix_length: int) -> str | None:
    """Delta's ``truncateMaxStringAgg``: ``value`` cut to ``prefix_length`` UTF-16 units (a
    surrogate pair kept whole) plus a tie-breaker above the first character cut off, so the
    result bounds every string the prefix starts (UTF-8 order, as Spark compares); None
    (no bound) when no such string of at most twice the prefix exists. Lengths count
    UTF-16 units, as in Delta's Java strings."""
    units = value.encode("utf-16-le", "surrogatepass")
    count = len(units) // 2
    if count <= prefix_length:
        return value
    if prefix_length <= 0:
        return None

    def unit(i: int) -> int:
        return int.from_bytes(units[2 * i : 2 * i + 2], "little")

    length = prefix_length + (0xD800 <= unit(prefix_length - 1) < 0xDC00 <= unit(prefix_length) < 0xE000)
    while length <= 2 * prefix_length:
        if length >= count:
            return value
        prefix = units[: 2 * length].decode("utf-16-le")
        if value[len(prefix) :].startswith(_MAX_CHARACTER):
            length += 2  # the largest character cannot be bounded by a tie-breaker: keep it
        elif unit(length) < ord(_ASCII_MAX_CHARACTER):
            return prefix + _ASCII_MAX_CHARACTER
        else:
            return prefix + _MAX_CHARACTER
    return None


class StatsCollector:
    """Accumulates the statistics of one data file over the batches written to it.

    ``schema`` is the file's (physical names); ``columns`` the leaf column paths that get
    statistics, the table's :attr:`StatsColumns.physical_paths`. Without them, those of a
    table of ``schema`` with default properties: its first 32 leaf columns.
    ``string_prefix_length`` is the table's :attr:`StatsColumns.string_prefix_length`."""

    def __init__(
        self,
        schema: pa.Schema,
        columns: Collection[ColumnPath] | None = None,
        string_prefix_length: int = STRING_PREFIX_LENGTH,
    ) -> None:
        self.schema = schema
        self.string_prefix_length = string_prefix_length
        ordered = list(StatsColumns.for_schema(from_arrow(schema)).physical_paths if columns is None else columns)
        # a file's column is the table's whatever its case (Spark resolves names ignoring case)
        in_file = {_lower(path): (path, t) for path, t in _leaf_paths(schema, ordered)}
        found = {path: in_file[_lower(path)] for path in ordered if _lower(path) in in_file}
        #: the stats columns (the table's paths) the file holds, and their types
        self.leaves = [(path, found[path][1]) for path in ordered if path in found]
        #: where each is in the file
        self._source = {path: found[path][0] for path in found}
        #: the stats columns the file does not hold: null in every row (Delta's statsCollector
        #: counts ``count(*)`` nulls for a column missing from the written data)
        self.absent = [path for path in ordered if path not in found]
        self._order = {path: i for i, path in enumerate(ordered)}
        self.num_records = 0
        self._min: dict[_Path, Any] = {}
        self._max: dict[_Path, Any] = {}
        self._nulls: dict[_Path, int] = dict.fromkeys((p for p, _ in self.leaves), 0)
        self._no_bounds: set[_Path] = set()
        self._unknown_nulls: set[_Path] = set()

    @classmethod
    def for_table(cls, metadata: Metadata, schema: pa.Schema) -> StatsCollector:
        """The collector of a file of the table with ``metadata`` whose columns are ``schema``
        (physical names, partition columns left out): statistics for the columns the table's
        properties name, strings cut to its ``delta.dataSkippingStringPrefixLength``."""
        columns = StatsColumns.of(metadata)
        return cls(schema, columns.physical_paths, columns.string_prefix_length)

    def update(self, batch: pa.RecordBatch | pa.Table) -> None:
        if batch.num_rows == 0:
            return
        self.num_records += batch.num_rows
        for path, t in self.leaves:
            col = _column(batch, self._source[path])
            self._nulls[path] += col.null_count
            if not _has_min_max(t) or path in self._no_bounds:
                continue
            if pa.types.is_floating(t) and pc.any(pc.is_nan(col)).as_py():
                self._no_bounds.add(path)
                continue
            try:
                mm = pc.min_max(col).as_py()
            except (OverflowError, ValueError):  # a bound Python cannot hold (a year past 9999)
                self._no_bounds.add(path)
                continue
            lo, hi = mm["min"], mm["max"]
            if lo is None:
                continue
            cur_lo = self._min.get(path)
            cur_hi = self._max.get(path)
            self._min[path] = lo if cur_lo is None or lo < cur_lo else cur_lo
            self._max[path] = hi if cur_hi is None or hi > cur_hi else cur_hi

    def update_from_footer(self, footer: Any, *, datetime_bounds: bool = True) -> None:
        """Take the statistics of a whole file from its Parquet footer (a
        ``pyarrow.parquet.FileMetaData`` whose Arrow schema is this collector's), not from
        its rows: the row groups' ``min``/``max``/``null_count``, for a file another writer
        (Spark's own) wrote. What a footer cannot vouch for is left out, never guessed: the
        bounds of a column whose row groups lack them (INT96 timestamps, long strings) and of
        every floating-point column (a footer's bounds skip NaN, which Spark orders last),
        and the null count of a list or map column (its leaf counts null elements too). A
        variant's null count is its ``metadata`` leaf's: required in the variant group,
        shredded or not, so null exactly where the variant or a struct above it is.
        ``datetime_bounds=False`` leaves out the bounds of dates and timestamps too (a file
        in Spark's legacy hybrid calendar, whose stored numbers readers rebase)."""
        self.num_records += footer.num_rows
        columns = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
        for path, t in self.leaves:
            source = self._source[path]
            index = columns.get(".".join(source))
            if index is None and pa.types.is_struct(t):
                index = columns.get(".".join((*source, "metadata")))
            if index is None:  # a list or map: its Parquet leaves are the elements
                self._unknown_nulls.add(path)
                self._no_bounds.add(path)
                continue
            if not datetime_bounds and (pa.types.is_date(t) or pa.types.is_timestamp(t)):
                self._no_bounds.add(path)
            for rg in range(footer.num_row_groups):
                self._take_row_group(path, t, footer.row_group(rg).column(index).statistics)

    def _take_row_group(self, path: _Path, t: pa.DataType, stats: Any) -> None:
        if stats is None or not stats.has_null_count:
            self._unknown_nulls.add(path)
        else:
            self._nulls[path] += stats.null_count
        if not _has_min_max(t) or path in self._no_bounds:
            return
        if pa.types.is_floating(t) or stats is None or (stats.num_values and not stats.has_min_max):
            self._no_bounds.add(path)
            return
        if not stats.has_min_max:  # only nulls in this row group
            return
        try:
            lo, hi = stats.min, stats.max
        except (OverflowError, ValueError):  # a bound Python cannot hold (a date before year 1)
            self._no_bounds.add(path)
            return
        cur_lo, cur_hi = self._min.get(path), self._max.get(path)
        self._min[path] = lo if cur_lo is None or lo < cur_lo else cur_lo
        self._max[path] = hi if cur_hi is None or hi > cur_hi else cur_hi

    def to_json(self, tight_bounds: bool | None = None) -> str:
        mins: dict[str, Any] = {}
        maxs: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        columns: list[tuple[_Path, pa.DataType | None]] = [*self.leaves, *((path, None) for path in self.absent)]
        for path, t in sorted(columns, key=lambda c: self._order.get(c[0], -1)):
            if t is None:
                _put(nulls, path, self.num_records)
                continue
            if path not in self._unknown_nulls:
                _put(nulls, path, self._nulls[path])
            if path in self._no_bounds:
                continue
            lo = _json_value(self._min.get(path), t, False, self.string_prefix_length)
            hi = _json_value(self._max.get(path), t, True, self.string_prefix_length)
            if lo is not None:
                _put(mins, path, lo)
            if hi is not None:
                _put(maxs, path, hi)
        # as Delta's ``collectStats``: no ``minValues``/``maxValues`` without a column of a type
        # they can hold (a variant, a struct leaf here, is one), no ``nullCount`` without columns
        stats: dict[str, Any] = {"numRecords": self.num_records}
        if any(_has_min_max(t) or pa.types.is_struct(t) for _, t in self.leaves):
            stats.update(minValues=mins, maxValues=maxs)
        if self.leaves or self.absent:
            stats["nullCount"] = nulls
        if tight_bounds is not None:
            stats["tightBounds"] = tight_bounds
        return stats_json(stats)


def tight_bounds_on_write(protocol: Protocol | None, metadata: Metadata | None = None) -> bool | None:
    """The ``tightBounds`` of the statistics of a file a commit adds to a table with
    ``protocol`` (None for a new table) whose commit records ``metadata`` (None: it changes
    none): true when the protocol the commit records supports deletion vectors, enabled or
    not (Delta's ``statsCollector`` adds it whenever ``deletionVectorsSupported``); None, no
    ``tightBounds``, otherwise."""
    from deltalog.txn.protocol.protocol_requirements import protocol_for_new_table
    from deltalog.txn.protocol.protocol_versions import supported_features

    features: set[str] = set()
    if metadata is not None:  # what the new metadata asks for, in the commit's protocol too
        features |= supported_features(protocol_for_new_table(metadata))
    if protocol is not None:
        features |= supported_features(protocol)
    return True if _DELETION_VECTORS in features else None


def stats_json(value: Any) -> str:
    """Statistics ``value`` as compact JSON, decimals as exact JSON numbers (``json`` writes them only
    through ``float``): ``str`` of a :class:`~decimal.Decimal` is Java's
    ``BigDecimal.toString``, the text Delta's statistics hold."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{stats_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, decimal.Decimal):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _put(target: dict[str, Any], path: Sequence[str], value: Any) -> None:
    node = target
    for name in path[:-1]:
        node = node.setdefault(name, {})
    node[path[-1]] = value
