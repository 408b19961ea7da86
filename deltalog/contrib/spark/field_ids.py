"""Columns of a data file found by Parquet field id, as column mapping's ``id`` mode reads them.

In ``id`` mode a reader matches each column to the file's column carrying its
``delta.columnMapping.id`` as Parquet field id, whatever that column is named (Delta's
``DeltaParquetFileFormat`` with ``spark.sql.parquet.fieldId.read.enabled``): a file written by
another engine may name its columns otherwise, and an id the file does not have reads as nulls
even when a column of the physical name is there. A file without any field id (never written by
a column-mapping writer) is read by physical name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

__all__ = ["child_column_name", "file_column_names", "name_in_file"]

_FIELD_ID = b"PARQUET:field_id"
_COLUMN_MAPPING_ID = "delta.columnMapping.id"
_PHYSICAL_NAME = "delta.columnMapping.physicalName"
#: a name no Parquet column has: the field reads as nulls
_ABSENT = "\x00absent"


def _ids(fields: Any) -> dict[int, str]:
    """``{field id: name}`` of Arrow fields that carry one."""
    out: dict[int, str] = {}
    for f in fields:
        value = (f.metadata or {}).get(_FIELD_ID)
        if value is not None:
            out[int(value)] = f.name
    return out


def file_column_names(physical: Mapping[str, str], schema: Mapping[str, Any], file_schema: pa.Schema) -> dict[str, str]:
    """``physical`` (top-level logical -> physical name) as the file names the columns in ``id``
    mode: the column with the field's id, none when the file lacks that id."""
    by_id = _ids(file_schema)
    if not by_id:
        return dict(physical)
    out = dict(physical)
    for f in schema["fields"]:
        fid = (f.get("metadata") or {}).get(_COLUMN_MAPPING_ID)
        if f["name"] in out and fid is not None:
            out[f["name"]] = by_id.get(int(fid), _ABSENT)
    return out


def name_in_file(name: str, names: Sequence[str]) -> str:
    """``name`` as the file spells it: itself, or the one of ``names`` equal to it ignoring
    case (Spark's Parquet reader matches so while ``spark.sql.caseSensitive`` is false; a
    writer that kept the data's spelling leaves ``S.X`` for the table's ``s.x``); ``name``
    when there is no such one, or several."""
    if name in names:
        return name
    matches = [n for n in names if n.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else name


def child_column_name(struct: pa.StructType, field: Mapping[str, Any], mode: str) -> str:
    """The name, in the file's ``struct``, of the nested ``field`` (a Delta schema field):
    its physical name, or in ``id`` mode the child with its id."""
    meta = field.get("metadata") or {}
    physical = str(meta.get(_PHYSICAL_NAME, field["name"])) if mode != "none" else str(field["name"])
    fid = meta.get(_COLUMN_MAPPING_ID)
    if mode != "id" or fid is None:
        return name_in_file(physical, [struct.field(i).name for i in range(struct.num_fields)])
    by_id = _ids(struct)
    return physical if not by_id else by_id.get(int(fid), _ABSENT)
