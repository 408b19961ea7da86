"""IcebergCompatV1/V2/V3 (UniForm) and materializePartitionColumns: what they ask of writers.

PROTOCOL "Iceberg Compatibility V1/V2", the IcebergCompatV3 RFC and the
``materializePartitionColumns`` RFC. These
features only constrain writers; turning a table's log into Iceberg metadata (Delta's
``IcebergConverter``) is outside the protocol and outside deltalog.

This module is Delta's ``IcebergCompat`` / ``UniversalFormat`` enforcement, without I/O:

- :func:`with_required_properties`: what enabling asks of the metadata (Delta's
  ``enforceInvariantsAndDependencies``): column mapping ``name`` set on a new table that does
  not choose a mode, row tracking switched on for V3, ``delta.universalFormat.iceberg.atomicConversion.supported``
  set on a new table, UniForm (Iceberg) refused without a compat version and switched off with
  it, V3 never switched off;
- :func:`check_commit`: the checks every commit of an enabled table passes (one version,
  column mapping, no deletion vectors before V3, the type allow-lists, no partition-spec
  rename, Iceberg-supported type widening only, ``numRecords`` in every ``add``; V3: literal
  column defaults, no ALTER to V3 of a table already tracking rows);
- :func:`materializes_partition_columns`: whether data files must hold the partition values;
- :func:`row_tracking_field_ids`: the Parquet field ids of V3's materialized row tracking
  columns (Iceberg's reserved ``_row_id`` and ``_last_updated_sequence_number``).

The nested ids IcebergCompatV2 and V3 require are assigned with the other column mapping
metadata (:func:`deltalog.txn.protocol.column_mapping.update_column_mapping`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from deltalog.txn.protocol.actions import AddFile, Metadata, Protocol
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.properties import TableProperties

__all__ = [
    "ICEBERG_ROW_COMMIT_VERSION_FIELD_ID",
    "ICEBERG_ROW_ID_FIELD_ID",
    "IcebergCompatError",
    "IcebergCompatUnsupportedOperationError",
    "IcebergCompatViolationError",
    "UniFormIcebergRequiresCompatError",
    "check_add",
    "check_commit",
    "complete_metadata",
    "enabled_versions",
    "materializes_partition_columns",
    "row_tracking_field_ids",
    "with_required_properties",
]

MATERIALIZE_FEATURE = "materializePartitionColumns"
#: the property UniForm lists its formats in (read through TableProperties)
_FORMATS_KEY = {"delta.universalFormat.enabledFormats"}

#: IcebergCompatV2's type allow-list (Delta's ``CheckTypeInV2AllowList``); decimals too.
_V2_TYPES = frozenset(
    {"byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean"}
    | {"timestamp", "timestamp_ntz", "date", "array", "map", "struct"}
)
#: V2's partition types (Delta's ``CheckPartitionDataTypeInV2AllowList``): the atomic ones.
_V2_PARTITION_TYPES = _V2_TYPES - {"array", "map", "struct"}
#: IcebergCompatV3's (Delta's ``CheckTypeInV3AllowList``): V2's and variant. The RFC lists
#: geometry and geography too, which deltalog's schemas do not have.
_V3_TYPES = _V2_TYPES | {"variant"}
#: Iceberg's reserved field ids of ``_row_id`` and ``_last_updated_sequence_number``, which
#: V3 gives the materialized row id and row commit version columns (Delta's ``IcebergConstants``).
ICEBERG_ROW_ID_FIELD_ID = 2147483540
ICEBERG_ROW_COMMIT_VERSION_FIELD_ID = 2147483539


class IcebergCompatError(DeltaLogError):
    """Base class of the errors of IcebergCompat and UniForm (Iceberg) validation."""


class IcebergCompatViolationError(IcebergCompatError):
    """A commit breaks a requirement of IcebergCompatV<version> (Delta's
    ``DELTA_ICEBERG_COMPAT_VIOLATION``); ``reason`` is Delta's subclass
    (``VERSION_MUTUAL_EXCLUSIVE``, ``WRONG_REQUIRED_TABLE_PROPERTY``,
    ``DELETION_VECTORS_SHOULD_BE_DISABLED``, ``UNSUPPORTED_DATA_TYPE``,
    ``UNSUPPORTED_PARTITION_DATA_TYPE``, ``REPLACE_TABLE_CHANGE_PARTITION_NAMES``,
    ``UNSUPPORTED_TYPE_WIDENING``, ``MISSING_NUM_RECORDS``). Nothing was committed."""

    def __init__(self, version: int, reason: str, detail: str) -> None:
        super().__init__(
            f"[DELTA_ICEBERG_COMPAT_VIOLATION.{reason}] The validation of IcebergCompatV{version} has failed: "
            f"{detail} Nothing was committed."
        )
        self.version = version
        self.reason = reason


class IcebergCompatUnsupportedOperationError(IcebergCompatError):
    """An operation IcebergCompatV3 does not allow, which Delta refuses with a plain
    ``UnsupportedOperationException`` (no error class): switching V3 off, or switching it on
    by ALTER on a table that already tracks rows. Nothing was committed."""

    def __init__(self, version: int, detail: str) -> None:
        super().__init__(f"IcebergCompatV{version}: {detail} Nothing was committed.")
        self.version = version


class UniFormIcebergRequiresCompatError(IcebergCompatError):
    """``delta.universalFormat.enabledFormats`` names ``iceberg`` but no IcebergCompat version
    is enabled (Delta's ``DELTA_UNIVERSAL_FORMAT_VIOLATION.ICEBERG_COMPAT_REQUIRED``)."""

    def __init__(self) -> None:
        super().__init__(
            "[DELTA_UNIVERSAL_FORMAT_VIOLATION.ICEBERG_COMPAT_REQUIRED] The validation of Universal Format "
            "(iceberg) has failed: it requires IcebergCompat; set 'delta.enableIcebergCompatV2' = 'true' "
            "(or V1, V3) with it. Nothing was committed."
        )


def enabled_versions(configuration: Mapping[str, str]) -> list[int]:
    """The IcebergCompat versions the properties enable (more than one is refused)."""
    props = TableProperties(configuration)
    enabled = (props.enable_iceberg_compat_v1, props.enable_iceberg_compat_v2, props.enable_iceberg_compat_v3)
    return [v for v, on in enumerate(enabled, start=1) if on]


def row_tracking_field_ids(metadata: Metadata | None) -> dict[str, int]:
    """Materialized row tracking column name -> the Parquet field id data files give it:
    Iceberg's reserved ids when IcebergCompatV3 is on (Delta's ``shouldSetIcebergReservedFieldId``,
    ``isGeqEnabled(metadata, 3)``), nothing otherwise."""
    from deltalog.txn.protocol.row_tracking import MATERIALIZED_ROW_COMMIT_VERSION_KEY, MATERIALIZED_ROW_ID_KEY

    if metadata is None or not any(v >= 3 for v in enabled_versions(metadata.configuration)):
        return {}
    ids = {
        MATERIALIZED_ROW_ID_KEY: ICEBERG_ROW_ID_FIELD_ID,
        MATERIALIZED_ROW_COMMIT_VERSION_KEY: ICEBERG_ROW_COMMIT_VERSION_FIELD_ID,
    }
    return {name: fid for key, fid in ids.items() if (name := metadata.configuration.get(key))}


def materializes_partition_columns(protocol: Protocol | None, metadata: Metadata) -> bool:
    """Whether data files of the table hold its partition columns (after the data columns),
    as Delta's ``TransactionalWrite`` decides: an IcebergCompat version is enabled, the
    protocol (``protocol``, or what ``metadata`` asks for) has ``materializePartitionColumns``,
    or ``delta.writePartitionColumnsToParquet`` is true."""
    from deltalog.txn.protocol.protocol_requirements import protocol_for_new_table

    if enabled_versions(metadata.configuration) or metadata.properties.write_partition_columns_to_parquet:
        return True
    features = set(protocol_for_new_table(metadata).writer_features or ())
    if protocol is not None:
        features |= set(protocol.writer_features or ())
    return MATERIALIZE_FEATURE in features


def _without_iceberg_format(config: dict[str, str]) -> dict[str, str]:
    remaining = [f for f in TableProperties(config).universal_format_enabled_formats if f != "iceberg"]
    out = {k: v for k, v in config.items() if k not in _FORMATS_KEY}
    if remaining:
        out["delta.universalFormat.enabledFormats"] = ",".join(remaining)
    return out


def with_required_properties(old: Metadata | None, new: Metadata, creating: bool | None = None) -> Metadata:
    """``new`` with what UniForm and IcebergCompat ask of the properties (Delta's
    ``enforceIcebergInvariantsAndDependencies``; ``old`` is None for a new table, and
    ``creating`` says whether the commit creates the table: by default when ``old`` is None;
    a CLONE does not, as Delta's ``isCreatingOrReorgTable``):

    - UniForm (Iceberg) without a compat version is refused, unless the commit disables the
      version that was on: then ``iceberg`` leaves ``enabledFormats`` too;
    - an enabled version needs column mapping ``name`` or ``id``: a table being created that
      does not set the mode gets ``name``; otherwise a wrong mode is refused;
    - V3 needs ``delta.enableRowTracking``: set to true when not given, on any table (Delta's
      ``RequireRowTracking``, ``autoEnableOnExistingTable``); given otherwise, refused;
    - a table being created gets ``delta.universalFormat.iceberg.atomicConversion.supported``
      = true unless it sets it;
    - V3, once on, cannot be switched off (Delta's ``CheckCannotDisableCompat``)."""
    creating = old is None if creating is None else creating
    config = dict(new.configuration)
    props = new.properties
    versions = enabled_versions(config)
    if old is not None and 3 in enabled_versions(old.configuration) and not any(v >= 3 for v in versions):
        raise IcebergCompatUnsupportedOperationError(3, "IcebergCompat cannot be disabled.")
    if "iceberg" in props.universal_format_enabled_formats and not versions:
        if old is None or not enabled_versions(old.configuration):
            raise UniFormIcebergRequiresCompatError()
        config = _without_iceberg_format(config)
    if 3 in versions and not props.enable_row_tracking:
        if props.enable_row_tracking_given is not None:
            raise IcebergCompatViolationError(
                3,
                "WRONG_REQUIRED_TABLE_PROPERTY",
                "IcebergCompatV3 requires table property 'delta.enableRowTracking' to be set to 'true'. "
                f"Current value: '{props.enable_row_tracking_given}'.",
            )
        config["delta.enableRowTracking"] = "true"
    if versions:
        mode = props.column_mapping_mode
        if mode not in ("name", "id"):
            if not creating or props.column_mapping_mode_given:
                raise IcebergCompatViolationError(
                    versions[-1],
                    "WRONG_REQUIRED_TABLE_PROPERTY",
                    f"IcebergCompatV{versions[-1]} requires table property 'delta.columnMapping.mode' to be set to "
                    f"'name'. Current value: '{mode}'. Enable column mapping first.",
                )
            config["delta.columnMapping.mode"] = "name"
        if creating and not props.iceberg_atomic_conversion_given:
            config["delta.universalFormat.iceberg.atomicConversion.supported"] = "true"
    if config == dict(new.configuration):
        return new
    return dataclasses.replace(new, configuration=config)


def complete_metadata(
    old: Metadata | None, new: Metadata, creating: bool | None = None, removing_column_mapping: bool = False
) -> Metadata:
    """``new`` as a commit records it: what IcebergCompat asks of the properties
    (:func:`with_required_properties`), then column mapping ids, physical names and nested
    ids assigned (:func:`~deltalog.txn.protocol.column_mapping.update_column_mapping`). The
    engine runs it on every metadata change; a writer that plans files before its commit
    runs it too, so the files match the metadata committed (it is idempotent)."""
    from deltalog.txn.protocol.column_mapping import update_column_mapping

    replacing = old is not None and creating is True  # REPLACE TABLE: Delta's isCreatingNewTable
    return update_column_mapping(old, with_required_properties(old, new, creating), removing_column_mapping, replacing)


def _type_names(data_type: Any) -> Iterable[tuple[str, Any]]:
    """Every type inside ``data_type`` (schema JSON) as (its kind, the type)."""
    if isinstance(data_type, str):
        yield ("decimal" if data_type.startswith("decimal") else data_type), data_type
        return
    if not isinstance(data_type, dict):
        return
    kind = str(data_type.get("type"))
    yield kind, data_type
    if kind == "struct":
        for f in data_type.get("fields") or []:
            yield from _type_names(f.get("type"))
    elif kind == "array":
        yield from _type_names(data_type.get("elementType"))
    elif kind == "map":
        yield from _type_names(data_type.get("keyType"))
        yield from _type_names(data_type.get("valueType"))


def _show(data_type: Any) -> str:
    return data_type if isinstance(data_type, str) else str(data_type.get("type"))


def _check_types(version: int, schema: dict[str, Any], metadata: Metadata) -> None:
    """V1: no array, map or void (``CheckNoListMapNullType``); V2, V3: the type allow-lists
    (V3's adds variant; both keep V2's partition types)."""
    allowed = _V3_TYPES if version >= 3 else _V2_TYPES
    for kind, data_type in _type_names(schema):
        refused = kind in ("array", "map", "void") if version == 1 else kind not in (allowed | {"decimal"})
        if refused:
            raise IcebergCompatViolationError(
                version,
                "UNSUPPORTED_DATA_TYPE",
                f"IcebergCompatV{version} does not support the data type {_show(data_type)} in your schema.",
            )
    if version < 2:
        return
    by_name = {str(f.get("name")).lower(): f for f in schema.get("fields") or []}
    for column in metadata.partition_columns:
        data_type = (by_name.get(column.lower()) or {}).get("type")
        kind = next(iter(_type_names(data_type)), ("?", data_type))[0]
        if kind not in (_V2_PARTITION_TYPES | {"decimal"}):
            raise IcebergCompatViolationError(
                version,
                "UNSUPPORTED_PARTITION_DATA_TYPE",
                f"IcebergCompatV{version} does not support the data type {_show(data_type)} for the "
                f"partition column {column!r}.",
            )


def _check_type_widening(version: int, schema: dict[str, Any], protocol: Protocol) -> None:
    """Only type changes Iceberg supports (Delta's ``CheckTypeWideningSupported``): of the
    recorded changes Delta supports, those ``isTypeChangeSupportedByIceberg`` refuses fail."""
    from deltalog.txn.protocol.features import protocol_features
    from deltalog.txn.protocol.type_widening import (
        all_type_changes,
        is_type_change_supported,
        is_type_change_supported_by_iceberg,
    )

    _, writer = protocol_features(protocol)
    if not writer & {"typeWidening", "typeWidening-preview"}:
        return
    for path, change in all_type_changes(schema):
        old, new = change.get("fromType"), change.get("toType")
        if is_type_change_supported(old, new) and not is_type_change_supported_by_iceberg(old, new):
            raise IcebergCompatViolationError(
                version,
                "UNSUPPORTED_TYPE_WIDENING",
                f"IcebergCompatV{version} is incompatible with a type change applied to this table: "
                f"field {path} was changed from {old} to {new}.",
            )


def _deletion_vectors_writable(protocol: Protocol | None, metadata: Metadata | None) -> bool:
    from deltalog.txn.protocol.features import protocol_features

    if protocol is None or metadata is None:
        return False
    reader, writer = protocol_features(protocol)
    return "deletionVectors" in (reader | writer) and metadata.properties.enable_deletion_vectors


def check_commit(
    prev_protocol: Protocol | None,
    prev_metadata: Metadata | None,
    protocol: Protocol,
    metadata: Metadata,
    adds: Iterable[AddFile],
    altering_properties: bool = False,
) -> None:
    """The checks of an IcebergCompat table's commit, in Delta's order; raises
    :class:`IcebergCompatViolationError` (or :class:`IcebergCompatUnsupportedOperationError`).
    ``altering_properties``: the commit is a ``SET TBLPROPERTIES``. Nothing to check when no
    version is enabled."""
    versions = enabled_versions(metadata.configuration)
    if not versions:
        return
    version = versions[-1]
    if len(versions) > 1:
        raise IcebergCompatViolationError(
            version,
            "VERSION_MUTUAL_EXCLUSIVE",
            "Only one IcebergCompat version can be enabled, please explicitly disable all other "
            "IcebergCompat versions that are not needed.",
        )
    mode = metadata.properties.column_mapping_mode
    if mode not in ("name", "id"):
        raise IcebergCompatViolationError(
            version,
            "WRONG_REQUIRED_TABLE_PROPERTY",
            f"IcebergCompatV{version} requires table property 'delta.columnMapping.mode' to be set to 'name'. "
            f"Current value: '{mode}'.",
        )
    for add in adds:
        check_add(metadata, add)
    schema = json.loads(metadata.schema_string)
    _check_types(version, schema, metadata)
    _check_partition_spec(version, prev_metadata, metadata)
    if version < 3:
        _check_deletion_vectors_disabled(version, prev_protocol, prev_metadata, protocol, metadata)
    _check_type_widening(version, schema, protocol)
    if version >= 3:
        _check_defaults_are_literals(version, schema)
        if altering_properties and prev_metadata is not None:
            _check_no_row_tracking_before_upgrade(prev_protocol, prev_metadata)


def _check_deletion_vectors_disabled(
    version: int, prev_protocol: Protocol | None, prev_metadata: Metadata | None, protocol: Protocol, metadata: Metadata
) -> None:
    """Delta's ``CheckDeletionVectorDisabled`` (V1, V2): deletion vectors writable on the
    table read or after this commit are refused."""
    if _deletion_vectors_writable(prev_protocol, prev_metadata) or _deletion_vectors_writable(protocol, metadata):
        raise IcebergCompatViolationError(
            version,
            "DELETION_VECTORS_SHOULD_BE_DISABLED",
            f"IcebergCompatV{version} requires Deletion Vectors to be disabled on the table first "
            "('delta.enableDeletionVectors' = 'false'), then run REORG TABLE ... APPLY (PURGE) to purge them.",
        )


def _check_defaults_are_literals(version: int, schema: dict[str, Any]) -> None:
    """Delta's ``CheckColumnDefaultIsLiteral``: a top-level column's ``CURRENT_DEFAULT`` is a
    literal of its type (Iceberg V3 keeps write defaults as values, not expressions)."""
    from deltalog.txn.protocol.column_defaults import is_literal_default

    for f in schema.get("fields") or []:
        default = (f.get("metadata") or {}).get("CURRENT_DEFAULT")
        if default is not None and not is_literal_default(str(default), f.get("type")):
            raise IcebergCompatViolationError(
                version,
                "UNSUPPORTED_DATA_TYPE",
                f"IcebergCompatV{version} does not support the data type {_show(f.get('type'))}:{f.get('name')} "
                f"in your schema: the column's default ({default}) is not a literal.",
            )


def _check_no_row_tracking_before_upgrade(prev_protocol: Protocol | None, prev_metadata: Metadata) -> None:
    """Delta's ``CheckNoRowTrackingBeforeUpgradeV3``: ALTER TABLE does not switch V3 on for a
    table whose row tracking is already on (its files' materialized row tracking columns lack
    Iceberg's field ids)."""
    from deltalog.txn.protocol.row_tracking import is_enabled

    if any(v >= 3 for v in enabled_versions(prev_metadata.configuration)) or not is_enabled(
        prev_protocol, prev_metadata
    ):
        return
    raise IcebergCompatUnsupportedOperationError(
        3,
        "Alter Table enable icebergCompatV3 with RowTracking enabled is not supported. "
        "Please disable RowTracking first.",
    )


def check_add(metadata: Metadata, add: AddFile) -> None:
    """Delta's ``CheckAddFileHasStats``: an ``add`` of an IcebergCompat table has ``numRecords``
    (also for the actions a large commit streams, which :func:`check_commit` does not see)."""
    versions = enabled_versions(metadata.configuration)
    if versions and add.num_records() is None:
        raise IcebergCompatViolationError(
            versions[-1],
            "MISSING_NUM_RECORDS",
            f"IcebergCompatV{versions[-1]} requires all AddFiles to contain the numRecords statistic. "
            f"AddFile {add.path} is missing this statistic.",
        )


def _check_partition_spec(version: int, prev: Metadata | None, new: Metadata) -> None:
    """Delta's ``CheckNoPartitionEvolution``: a partitioned table keeps its partition columns."""
    if prev is None or not prev.partition_columns or list(prev.partition_columns) == list(new.partition_columns):
        return
    raise IcebergCompatViolationError(
        version,
        "REPLACE_TABLE_CHANGE_PARTITION_NAMES",
        f"IcebergCompatV{version} doesn't support replacing partitioned tables with a differently-named "
        f"partition spec, because Iceberg-Spark 1.1.0 doesn't. Prev Partition Spec: "
        f"{list(prev.partition_columns)}; New Partition Spec: {list(new.partition_columns)}.",
    )
