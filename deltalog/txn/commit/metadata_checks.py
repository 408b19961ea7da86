"""Verification of new table metadata before it is committed.

Checks what Delta checks when a transaction changes metadata: the schema string parses,
no two columns share a name ignoring case (at any nesting level), partition columns
exist, are top-level, are not repeated and have a type a partition can have, no map key
is a collated string, the
change-data-feed column names are not used while CDF is enabled, and the columns
``delta.dataSkippingStatsColumns`` lists are ones Delta collects statistics for
(:func:`~deltalog.txn.protocol.stats_column_checks.validate_stats_columns`, whose errors are
raised as they are: :class:`~deltalog.txn.protocol.stats_columns.InvalidStatsColumnsError`),
as is an ``InvalidPropertyError`` for a ``delta.dataSkippingStringPrefixLength`` below 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from deltalog.txn.commit.commit_errors import InvalidMetadataError
from deltalog.txn.protocol.actions import Action, AddCDCFile, AddFile, Metadata, RemoveFile
from deltalog.txn.protocol.collations import collated_map_keys
from deltalog.txn.protocol.column_mapping import is_drop_column_operation, is_rename_column_operation
from deltalog.txn.protocol.errors import ColumnMappingAndCdcOperationBlockedError, InvalidSchemaError
from deltalog.txn.protocol.generated_columns import retyped_generated_columns
from deltalog.txn.protocol.properties import InvalidPropertyError, validate_changed_property_values
from deltalog.txn.protocol.schema import parse_schema
from deltalog.txn.protocol.stats_column_checks import validate_stats_columns

__all__ = [
    "CDF_RESERVED_COLUMNS",
    "refuse_change_data_columns",
    "refuse_column_mapping_change_with_file_actions",
    "verify_metadata",
]

CDF_RESERVED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def _type_name(data_type: Any) -> str:
    if isinstance(data_type, str):
        return data_type
    if isinstance(data_type, dict):
        return str(data_type.get("type", "?"))
    return "?"


def _check_duplicates(fields: list[dict[str, Any]], where: str) -> None:
    seen: dict[str, str] = {}
    for f in fields:
        name = f.get("name")
        if not isinstance(name, str):
            raise InvalidMetadataError(f"a field of {where} has no name: {f!r}")
        lowered = name.lower()
        if lowered in seen:
            raise InvalidMetadataError(
                f"DELTA_DUPLICATE_COLUMNS_FOUND: duplicate column names (case-insensitive) in {where}: "
                f"{seen[lowered]!r} and {name!r}. "
                "Rename one of them."
            )
        seen[lowered] = name
        _check_nested(f.get("type"), f"{where}.{name}" if where != "the schema" else name)


def _check_nested(data_type: Any, where: str) -> None:
    if not isinstance(data_type, dict):
        return
    kind = data_type.get("type")
    if kind == "struct":
        _check_duplicates(list(data_type.get("fields") or []), where)
    elif kind == "array":
        _check_nested(data_type.get("elementType"), f"{where}.element")
    elif kind == "map":
        _check_nested(data_type.get("keyType"), f"{where}.key")
        _check_nested(data_type.get("valueType"), f"{where}.value")


def _check_field_names(metadata: Metadata) -> None:
    """Delta's ``assertMetadata``: without column mapping, no column name (at any depth) may
    hold one of ``' ,;{}()\\n\\t='``, which Parquet cannot name a column by
    (``DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES``; a partition column:
    ``DELTA_INVALID_PARTITION_COLUMN``)."""
    from deltalog.txn.protocol.column_mapping import invalid_column_names

    try:
        if metadata.properties.column_mapping_mode != "none":
            return
    except InvalidPropertyError as exc:
        raise InvalidMetadataError(str(exc)) from exc
    schema = parse_schema(metadata.schema_string)
    partitions = {c.lower() for c in metadata.partition_columns}
    invalid = invalid_column_names(schema)
    bad_partitions = [n for n in invalid if n.lower() in partitions]
    if bad_partitions:
        raise InvalidMetadataError(
            f"DELTA_INVALID_PARTITION_COLUMN: {bad_partitions[0]} is not a valid partition column: Found invalid "
            "character(s) among ' ,;{}()\\n\\t=' in it. Rename the column, or enable column mapping "
            "(delta.columnMapping.mode=name)"
        )
    if invalid:
        raise InvalidMetadataError(
            "DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES: Found invalid character(s) among ' ,;{}()\\n\\t=' in the "
            f"column names of your schema: {', '.join(invalid)}. Rename them, or enable column mapping "
            "(delta.columnMapping.mode=name)"
        )


#: atomic types that are not orderable, so no partition column (Delta's
#: ``PartitionUtils.validatePartitionColumn``; Delta's geometry and geography too)
_UNORDERABLE_ATOMIC_TYPES = frozenset({"variant"})


def _check_partition_columns(metadata: Metadata, fields: list[dict[str, Any]]) -> None:
    """Partition columns are in the schema, listed once, of an orderable atomic type (Delta's
    ``PartitionUtils.validatePartitionColumn``), and not all of it."""
    by_lower = {str(f.get("name", "")).lower(): f for f in fields}
    seen_partitions: set[str] = set()
    for column in metadata.partition_columns:
        lowered = column.lower()
        if lowered in seen_partitions:
            raise InvalidMetadataError(f"partition column {column!r} is listed twice")
        seen_partitions.add(lowered)
        f = by_lower.get(lowered)
        if f is None:
            raise InvalidMetadataError(
                f"partition column {column!r} is not in the schema (columns: "
                f"{', '.join(str(x.get('name')) for x in fields) or 'none'})"
            )
        data_type = f.get("type")
        if isinstance(data_type, dict) or data_type in _UNORDERABLE_ATOMIC_TYPES:
            raise InvalidMetadataError(
                f"DELTA_INVALID_PARTITION_COLUMN_TYPE: Using column {column!r} of type {_type_name(data_type)} as a "
                "partition column is not supported; partition by a column of an atomic type other than variant"
            )
    if fields and len(seen_partitions) == len(fields):
        raise InvalidMetadataError(
            "every column of the schema is a partition column; at least one data column is needed"
        )


def verify_metadata(metadata: Metadata, previous: Metadata | None = None) -> None:
    """Raise :class:`InvalidMetadataError` when ``metadata`` must not be committed in place of
    ``previous`` (None: it creates the table), :class:`InvalidPropertyError` for a property
    value it brings that Delta refuses (:func:`validate_changed_property_values`)."""
    cdf_was_on = previous is not None and previous.properties.enable_change_data_feed
    try:
        schema = json.loads(metadata.schema_string)
    except (TypeError, ValueError) as exc:
        raise InvalidMetadataError(f"the schema string is not valid JSON: {exc}") from exc
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        raise InvalidMetadataError('the schema string must be a JSON struct type ({"type": "struct", ...})')
    fields = list(schema.get("fields") or [])
    _check_duplicates(fields, "the schema")
    try:  # every type one Delta knows (a reader could not parse the schema otherwise)
        parse_schema(metadata.schema_string)
    except InvalidSchemaError as exc:
        raise InvalidMetadataError(str(exc)) from exc
    keys = collated_map_keys(fields)
    if keys:
        raise InvalidMetadataError(
            f"map key(s) {', '.join(keys)} have a collation; a map key cannot be a collated string (as in "
            "Delta): give the keys the default collation (UTF8_BINARY)"
        )

    _check_partition_columns(metadata, fields)
    _check_field_names(metadata)

    try:
        cdf_on = metadata.properties.enable_change_data_feed
        _ = metadata.properties.checkpoint_interval  # a bad value is refused here, not at the next checkpoint
        _ = metadata.properties.isolation_level  # not at the next commit's conflict checks
        _ = metadata.properties.random_prefix_length, metadata.properties.randomize_file_prefixes
        _ = metadata.properties.auto_compact  # not in the post-commit hook, after the write
    except InvalidPropertyError as exc:
        raise InvalidMetadataError(str(exc)) from exc
    validate_stats_columns(metadata)
    validate_changed_property_values(metadata.configuration, previous.configuration if previous else None)
    if cdf_on:
        refuse_change_data_columns([str(f.get("name", "")) for f in fields], cdf_was_on)


def refuse_retyped_generated_columns(current: Metadata, new: Metadata) -> None:
    """Delta's ``validateGeneratedColumns`` at each metadata change: a generated column must
    keep its expression's type, so ``new`` may not retype one whose inputs keep their types
    (:func:`~deltalog.txn.protocol.generated_columns.retyped_generated_columns`)."""
    for name, expression, old_type, new_type in retyped_generated_columns(current, new):
        raise InvalidMetadataError(
            f"DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH: The expression type of the generated column {name} is "
            f"{old_type}, but the column type is {new_type} (its expression {expression} reads columns whose types "
            f"did not change); keep the column {old_type}: cast the data written into it (a mergeSchema write "
            "widens it otherwise), or drop the generated column and add it again with the new type"
        )


def refuse_change_data_columns(names: Sequence[str], cdf_was_on: bool) -> None:
    """Delta's ``CDCReader.checkMetadataChange`` for metadata with the change data feed on:
    a column named as the feed's (``_change_type``, ``_commit_version``, ``_commit_timestamp``)
    is ``RESERVED_CDC_COLUMNS_ON_WRITE`` when the feed ``cdf_was_on`` before, else (this change
    turns it on) ``DELTA_TABLE_ALREADY_CONTAINS_CDC_COLUMNS``."""
    clashing = [n for n in names if n.lower() in CDF_RESERVED_COLUMNS]
    if not clashing:
        return
    columns = "[" + ",".join(clashing) + "]"
    if cdf_was_on:
        raise InvalidMetadataError(
            f"RESERVED_CDC_COLUMNS_ON_WRITE: The write contains reserved columns {columns} that are used "
            "internally as metadata for Change Data Feed. To write to the table either rename/drop these columns "
            "or disable Change Data Feed on the table by setting delta.enableChangeDataFeed to false"
        )
    raise InvalidMetadataError(
        f"DELTA_TABLE_ALREADY_CONTAINS_CDC_COLUMNS: Unable to enable Change Data Capture on the table. The table "
        f"already contains reserved columns {columns} that will be used internally as metadata for the table's "
        "Change Data Feed. To enable Change Data Feed on the table rename/drop these columns"
    )


def refuse_column_mapping_change_with_file_actions(
    current: Metadata, new: Metadata, actions: Sequence[Action], operation: str
) -> None:
    """Delta's ``performCdcColumnMappingCheck``: when ``new`` (replacing ``current``, an existing
    table's metadata) records the change data feed and maps columns, a commit that turns column
    mapping on, or drops or renames a column under it (a physical path gone, or under another
    name), cannot also add or remove files: what the feed would show for them is undefined.
    Raises :class:`ColumnMappingAndCdcOperationBlockedError`."""
    if not new.properties.enable_change_data_feed or new.properties.column_mapping_mode == "none":
        return
    if not any(isinstance(a, (AddFile, RemoveFile, AddCDCFile)) for a in actions):
        return
    if current.properties.column_mapping_mode != "none":
        old_schema, new_schema = parse_schema(current.schema_string), parse_schema(new.schema_string)
        if not is_drop_column_operation(new_schema, old_schema) and not is_rename_column_operation(
            new_schema, old_schema
        ):
            return
    raise ColumnMappingAndCdcOperationBlockedError(operation)
