"""Files' partition values as rows, to evaluate a predicate on partition columns that the
engine's partition filters cannot express (an ``OR``, a function of a partition column).

Delta's ``DeltaLog.filterFileList`` evaluates such a predicate over one row of typed
partition values per file. A write's commit runs where there is no Spark session, so here
the CHECK-constraint evaluator (:mod:`deltalog.txn.protocol.constraints`) does it: each file
is one row, each partition column a column of its logical name and type (an empty or absent
value is null, as the protocol reads it).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from deltalog.contrib.spark.partitioning import typed_partition_value
from deltalog.txn.protocol.actions import AddFile, Metadata
from deltalog.txn.protocol.column_mapping import logical_partition_values
from deltalog.txn.protocol.constraints import CompiledConstraint
from deltalog.txn.protocol.partition_filters import partition_column_types
from deltalog.txn.protocol.schema import parse_schema

__all__ = ["files_satisfying", "partition_rows"]


def partition_rows(metadata: Metadata, files: Sequence[AddFile]) -> pa.Table:
    """One row per file of ``files``: its partition values, typed as the table's columns."""
    schema = parse_schema(metadata.schema_string)
    arrow = schema.to_arrow()
    columns = tuple(metadata.partition_columns)
    types = partition_column_types(metadata.schema_string, columns)
    mode = metadata.properties.column_mapping_mode
    values = [logical_partition_values(f.partition_values, schema, columns, mode) for f in files]
    if not columns:  # a column no SQL name reaches, so the table has a row per file
        return pa.table({"": pa.nulls(len(files))})
    return pa.table(
        {c: pa.array([typed_partition_value(v.get(c), types[c]) for v in values], arrow.field(c).type) for c in columns}
    )


def files_satisfying(
    predicate: CompiledConstraint, metadata: Metadata, files: Sequence[AddFile], holds: bool = True
) -> list[AddFile]:
    """The ``files`` whose partition values make ``predicate`` true (with ``holds=False``: the
    others, for which it is false or NULL)."""
    if not files:
        return []
    truth = predicate.evaluate(partition_rows(metadata, files)).to_pylist()
    return [f for f, value in zip(files, truth, strict=True) if (value is True) == holds]
