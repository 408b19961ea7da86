"""Whether files written under one schema of a table read correctly with another.

Delta's ``SchemaUtils.isReadCompatible`` together with
``DeltaColumnMapping.hasNoColumnMappingSchemaChanges``: a column is the same column when it
has the same name and, under column mapping, the same physical name (a rename or a drop
and add again is another column); files written with an older schema read with a newer
one when every old column is still there, no less nullable, with the same type (or, where
allowed, one type widening widens it to), and the columns added since are nullable. The
streaming source checks each schema change against the stream's schema with it, and the
batch change feed every schema in its range against its read schema. Neither reads across
column mapping turned off (:func:`turns_column_mapping_off`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.txn.protocol.column_mapping import column_mapping_mode
from deltalog.txn.protocol.type_widening import is_type_change_supported

if TYPE_CHECKING:
    from deltalog.txn.protocol.actions import Metadata

__all__ = ["read_shape", "readable_with", "refuse_schema_changes_since_analysis", "turns_column_mapping_off"]


def read_shape(t: Any) -> Any:
    """A schema type without field metadata, except the name each column is stored under:
    its column-mapping physical name (a column dropped and added again under column mapping
    is another column), else its name (enabling column mapping on a table keeps the names
    as physical names, so the upgrade changes nothing: Delta's
    ``hasNoColumnMappingSchemaChanges``)."""
    if isinstance(t, dict) and t.get("type") == "struct":
        fields = []
        for f in t["fields"]:
            physical = (f.get("metadata") or {}).get("delta.columnMapping.physicalName", f["name"])
            fields.append((f["name"], read_shape(f["type"]), bool(f.get("nullable", True)), physical))
        return ("struct", tuple(fields))
    if isinstance(t, dict) and t.get("type") == "array":
        return ("array", read_shape(t["elementType"]), bool(t.get("containsNull", True)))
    if isinstance(t, dict) and t.get("type") == "map":
        return ("map", read_shape(t["keyType"]), read_shape(t["valueType"]), bool(t.get("valueContainsNull", True)))
    return t


def turns_column_mapping_off(earlier: Mapping[str, str], later: Mapping[str, str]) -> bool:
    """Whether column mapping is on in the ``earlier`` configuration and off in the ``later``
    one: Delta's ``hasNoColumnMappingSchemaChanges`` prohibits reading across that downgrade
    (``SET``/``UNSET`` of ``delta.columnMapping.mode``, ``DROP FEATURE columnMapping``) even
    when no physical name changes."""
    return column_mapping_mode(earlier) != "none" and column_mapping_mode(later) == "none"


def readable_with(old: Any, read: Any, widening: bool) -> bool:
    """Whether files written with struct ``old`` (a :func:`read_shape`) can be read with ``read``:
    every old field is in ``read``, stored under the same name, no less nullable, with a type
    it reads (:func:`_type_readable`); fields ``read`` adds are nullable."""
    old_fields = {f[0]: f for f in old[1]}
    read_fields = {f[0]: f for f in read[1]}
    for name, field in old_fields.items():
        other = read_fields.get(name)
        if other is None or other[3] != field[3] or (field[2] and not other[2]):
            return False
        if not _type_readable(field[1], other[1], widening):
            return False
    return all(f[2] for name, f in read_fields.items() if name not in old_fields)


def _type_readable(old: Any, read: Any, widening: bool) -> bool:
    """Whether values of type ``old`` read as ``read``: the same type, a struct that only
    gained nullable fields (at any depth), or, in a table that supports type widening
    (``widening``), a type Delta widens it to (Delta lets a stream backfill through a
    widening with the wider type)."""
    if old == read:
        return True
    if not isinstance(old, tuple) or not isinstance(read, tuple):
        return widening and is_type_change_supported(old, read)
    if old[0] != read[0]:
        return False
    if old[0] == "struct":
        return readable_with(old, read, widening)
    if old[0] == "array":
        return _type_readable(old[1], read[1], widening) and (read[2] or not old[2])
    return (
        _type_readable(old[1], read[1], widening)
        and _type_readable(old[2], read[2], widening)
        and (read[3] or not old[3])
    )


def refuse_schema_changes_since_analysis(table: str, analyzed: Metadata, scanned: Metadata, version: int) -> None:
    """Delta's ``TahoeLogFileIndex.getSnapshot`` (``hasNoColumnMappingSchemaChanges``): a
    DataFrame made at one version and read at a later one must read the same columns. A
    column of the DataFrame stored under another physical name now (renamed away or dropped,
    and a new column added under its name), column mapping turned off or, under column
    mapping, other partition columns would read wrongly (nulls where there is data):
    :class:`~deltalog.contrib.spark.errors.DeltaAnalysisError`, ``DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS``.
    Columns added since are fine; a column gone or retyped is the logical check's (the source's
    ``DELTA_READ_SOURCE_SCHEMA_CONFLICT``)."""
    old, new = read_shape(json.loads(analyzed.schema_string)), read_shape(json.loads(scanned.schema_string))
    # Delta compares the partition columns only when the scanned version maps columns
    mapped = column_mapping_mode(scanned.configuration) != "none"
    if (
        (not mapped or tuple(analyzed.partition_columns) == tuple(scanned.partition_columns))
        and _stored_alike(old, new)
        and not turns_column_mapping_off(analyzed.configuration, scanned.configuration)
    ):
        return
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    raise DeltaAnalysisError(
        f"DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS: The schema of your Delta table {table} has changed in an incompatible "
        "way since your DataFrame or DeltaTable object was created (a column renamed or dropped, a type changed, "
        f"column mapping turned off or other partition columns): it was {analyzed.schema_string} and is "
        f"{scanned.schema_string} at version {version}. Please redefine your DataFrame or DeltaTable object."
    )


def _stored_alike(old: Any, new: Any) -> bool:
    """Whether every field of ``old`` (a :func:`read_shape`) that ``new`` has, by name in any
    case and at any depth, is stored under the same name in both."""
    if not isinstance(old, tuple) or not isinstance(new, tuple) or old[0] != new[0]:
        return True
    if old[0] == "struct":
        fields = {f[0].lower(): f for f in new[1]}
        pairs = [(f, fields.get(f[0].lower())) for f in old[1]]
        return all(o is None or (f[3] == o[3] and _stored_alike(f[1], o[1])) for f, o in pairs)
    return all(_stored_alike(a, b) for a, b in zip(old[1:], new[1:]))
