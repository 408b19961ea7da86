"""Which row groups of a data file a read task reads: its split and the pushed filters.

**Splits.** A file larger than the split target is read by several tasks, each given a
byte range of it, as Spark splits files (``FilePartition``): the driver never reads a
footer. A task reads the row groups whose *midpoint* falls in its range, exactly as
Spark's ``ParquetFileFormat`` does (parquet-mr's ``filterFileMetaDataByMidpoint``: the
first column chunk's starting position plus half the row group's compressed size), so
every row group is read by exactly one task.

**Row-group skipping.** Pushed filters skip row groups whose footer statistics prove no
row can match, with the test file skipping uses (:func:`~deltalog.contrib.spark.scan.bounds_may_match`).
Parquet writers leave NaN out of a float column's min/max, and Spark orders NaN above
every number, so a float max never bounds a row group; INT96 statistics (no defined
order) are never used, nor are date and timestamp statistics of a file written in Spark's legacy
hybrid calendar (:mod:`~deltalog.txn.log.calendar_rebase`). A row group is kept whenever its
statistics are missing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.scan import Term, bounds_may_match, stats_column
from deltalog.txn.log.calendar_rebase import rebase_spec

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["row_group_offsets", "row_groups_in_range", "row_groups_may_match"]

#: Types whose footer bounds a file in Spark's legacy hybrid calendar holds in that calendar.
_REBASED_TYPES = frozenset({"date", "timestamp"})


def _starting_position(rg: pq.RowGroupMetaData) -> int:
    """parquet-mr's ``BlockMetaData.getStartingPos``: the first column chunk's dictionary
    page offset when it has one (before its data pages), else its first data page."""
    column = rg.column(0)
    start = int(column.data_page_offset)
    dictionary = column.dictionary_page_offset if column.has_dictionary_page else None
    if dictionary is not None and 0 < dictionary < start:
        start = int(dictionary)
    return start


def row_groups_in_range(metadata: pq.FileMetaData, start: int, length: int | None) -> list[int]:
    """The row groups a task given bytes ``[start, start + length)`` of the file reads
    (``length`` None: to the end of the file): those whose midpoint is in the range."""
    end = math.inf if length is None else start + length
    selected = []
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        if rg.num_columns == 0:  # no column chunks to place: the first split reads it
            midpoint = 0
        else:
            total = sum(rg.column(j).total_compressed_size for j in range(rg.num_columns))
            midpoint = _starting_position(rg) + total // 2
        if start <= midpoint < end:
            selected.append(i)
    return selected


def row_group_offsets(metadata: pq.FileMetaData) -> list[int]:
    """The position in the file of each row group's first row (and the file's row count
    last): deletion vectors index rows by their position in the file."""
    offsets = [0]
    for i in range(metadata.num_row_groups):
        offsets.append(offsets[-1] + metadata.row_group(i).num_rows)
    return offsets


def _bounds(statistics: Any, physical_type: str) -> tuple[Any, Any]:
    if statistics is None or not statistics.has_min_max or physical_type == "INT96":
        return None, None
    try:
        lo, hi = statistics.min, statistics.max
    except (ValueError, TypeError, NotImplementedError):  # a type pyarrow cannot convert
        return None, None
    if physical_type in ("FLOAT", "DOUBLE"):
        # NaN is left out of min/max but sorts above every number in Spark: no upper bound
        return (None if isinstance(lo, float) and math.isnan(lo) else lo), None
    return lo, hi


def row_groups_may_match(
    metadata: pq.FileMetaData,
    row_groups: Sequence[int],
    terms: Sequence[Term],
    column_types: Mapping[str, str],
    physical_names: Mapping[str, str] | None = None,
) -> list[int]:
    """The row groups among ``row_groups`` that may hold rows matching every term (a
    conjunction on logical column names; ``column_types``: top-level Spark type names;
    ``physical_names``: top-level logical -> physical names under column mapping)."""
    if not terms:
        return list(row_groups)
    schema = metadata.schema
    leaves = {schema.column(j).path: j for j in range(len(schema))}
    rebase = rebase_spec(metadata.metadata)
    located = []
    for term in terms:
        name, type_name = stats_column(term[0], column_types, physical_names or {})
        index = leaves.get(name)
        if rebase is not None and rebase.datetime and type_name in _REBASED_TYPES:
            continue  # bounds in the legacy calendar: not the values Spark reads
        # a column not in the file, not a leaf or not in the schema: no statistics
        if index is not None and type_name is not None:
            located.append((term, index, schema.column(index).physical_type, type_name))
    selected = []
    for i in row_groups:
        rg = metadata.row_group(i)
        keep = True
        for term, index, physical_type, type_name in located:
            statistics = rg.column(index).statistics
            if statistics is None:
                continue
            lo, hi = _bounds(statistics, physical_type)
            nulls = statistics.null_count if statistics.has_null_count else None
            if not bounds_may_match(term, lo, hi, nulls, rg.num_rows, type_name):
                keep = False
                break
        if keep:
            selected.append(i)
    return selected
