"""Which protocol a table's metadata needs, and upgrading a protocol to it.

Legacy features map to protocol versions (PROTOCOL "Writer Version Requirements"):
appendOnly and invariants need writer 2, checkConstraints 3, changeDataFeed and
generatedColumns 4, columnMapping reader 2 / writer 5, identityColumns 6. Features that
only exist as table features (deletionVectors, timestampNtz, inCommitTimestamp,
v2Checkpoint, domainMetadata, ...) need writer 7 (and reader 3 for reader-writer
features), with every active feature listed by name.

A table's properties can also ask for a protocol: ``delta.minReaderVersion``,
``delta.minWriterVersion`` and ``delta.feature.<name>`` = ``supported`` (or ``enabled``).
As Delta (``Protocol.filterProtocolPropsFromTableProps``), they go into the protocol and are
not kept in the metadata's configuration (:func:`without_protocol_properties`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from deltalog.txn.protocol.actions import Metadata, Protocol
from deltalog.txn.protocol.collations import has_collated_string
from deltalog.txn.protocol.errors import FeatureRequiresManualEnablementError
from deltalog.txn.protocol.properties import DELTA_TABLE_PROPERTIES, FEATURE_PROPERTY_PREFIX
from deltalog.txn.protocol.protocol_versions import (
    dependency_closure,
    implicit_features,
    merge,
    normalized,
    same_protocol,
    supported_features,
    table_features_protocol,
)

__all__ = [
    "active_features",
    "check_features_match_metadata",
    "is_protocol_property",
    "merge_protocols",
    "protocol_for_existing_table",
    "protocol_for_new_table",
    "session_table_defaults",
    "walk_types",
    "with_table_defaults",
    "without_protocol_properties",
]

_FEATURE_STATUSES = ("supported", "enabled")


def is_protocol_property(key: str) -> bool:
    """Delta's ``TableFeatureProtocolUtils.isTableProtocolProperty``: a property that asks
    for a protocol and is never stored in the metadata."""
    return key in (
        "delta.minReaderVersion",
        "delta.minWriterVersion",
        "delta.ignoreProtocolDefaults",
    ) or key.startswith(FEATURE_PROPERTY_PREFIX)


def without_protocol_properties(metadata: Metadata) -> Metadata:
    """``metadata`` without the protocol properties (:func:`is_protocol_property`)."""
    if not any(is_protocol_property(k) for k in metadata.configuration):
        return metadata
    config = {k: v for k, v in metadata.configuration.items() if not is_protocol_property(k)}
    return replace(metadata, configuration=config)


#: Delta's session defaults of table properties: ``<prefix><name>`` gives a new table
#: ``delta.<name>`` (``DeltaConfigs.sqlConfPrefix``), ``<prefix>feature.<f>`` gives ``delta.feature.<f>``
SESSION_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."


def session_table_defaults(confs: Mapping[str, str]) -> dict[str, str]:
    """The table properties a Spark session's confs give every table it creates (Delta's
    ``mergeGlobalConfigs``): ``spark.databricks.delta.properties.defaults.enableChangeDataFeed``
    is ``delta.enableChangeDataFeed``, ``...defaults.feature.<f>`` is ``delta.feature.<f>``;
    names Delta does not register (:data:`~deltalog.txn.protocol.properties.DELTA_TABLE_PROPERTIES`)
    are not table properties and are left out."""
    out: dict[str, str] = {}
    for key, value in confs.items():
        if key.startswith(SESSION_DEFAULTS_PREFIX):
            name = "delta." + key[len(SESSION_DEFAULTS_PREFIX) :]
            if name.startswith(FEATURE_PROPERTY_PREFIX) or name in DELTA_TABLE_PROPERTIES:
                out[name] = str(value)
    return out


def with_table_defaults(configuration: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """A new table's properties: ``defaults`` (:func:`session_table_defaults`) under its own,
    without the protocol ones when ``delta.ignoreProtocolDefaults`` is true in either (Delta's
    ``mergeGlobalConfigs``)."""
    ignore = any(
        str(m.get("delta.ignoreProtocolDefaults", "")).strip().lower() == "true" for m in (configuration, defaults)
    )
    kept = {
        k: v
        for k, v in defaults.items()
        if not (ignore and is_protocol_property(k) and k != "delta.ignoreProtocolDefaults")
    }
    return {**kept, **configuration}


def _requested_features(metadata: Metadata) -> set[str]:
    """The features ``delta.feature.<name>`` properties ask for; raises
    :class:`~deltalog.txn.protocol.properties.InvalidPropertyError` for a feature Delta does
    not know or a status other than ``supported``/``enabled``."""
    from deltalog.txn.protocol.features import FEATURES
    from deltalog.txn.protocol.properties import InvalidPropertyError

    by_lower = {f.lower(): f for f in FEATURES}  # Delta's featureNameToFeature: any case
    requested: set[str] = set()
    for key, value in metadata.configuration.items():
        if not key.startswith(FEATURE_PROPERTY_PREFIX):
            continue
        given = key[len(FEATURE_PROPERTY_PREFIX) :]
        name = by_lower.get(given.lower(), given)
        if name not in FEATURES:
            raise InvalidPropertyError(
                f"DELTA_UNSUPPORTED_FEATURES_IN_CONFIG: {key}: {name!r} is not a table feature Delta knows; "
                f"known features: {', '.join(sorted(FEATURES))}"
            )
        if str(value).strip().lower() not in _FEATURE_STATUSES:
            raise InvalidPropertyError(
                f"{key}={value!r}: a feature property takes 'supported' (or 'enabled'); a feature is "
                "removed with DROP FEATURE, not by a property"
            )
        requested.add(name)
    return requested


def walk_types(data_type: Any) -> Iterator[Any]:
    """``data_type`` (a schema's JSON form) and every type and field inside it, at any depth
    (struct fields, array elements, map keys and values)."""
    yield data_type
    if isinstance(data_type, dict):
        kind = data_type.get("type")
        if kind == "struct":
            for f in data_type.get("fields") or []:
                yield from _walk_fields(f)
        elif kind == "array":
            yield from walk_types(data_type.get("elementType"))
        elif kind == "map":
            yield from walk_types(data_type.get("keyType"))
            yield from walk_types(data_type.get("valueType"))


def _walk_fields(field: dict[str, Any]) -> Iterator[Any]:
    yield field
    yield from walk_types(field.get("type"))


#: the features a table property turns on: (the property's attribute of
#: :class:`~deltalog.txn.protocol.properties.TableProperties`, the feature); a true value
#: turns it on (``delta.enableVariantShredding`` adds the preview feature, as Delta's
#: ``forceUsePreviewTableFeature`` default)
_PROPERTY_FEATURES: tuple[tuple[str, str], ...] = (
    ("append_only", "appendOnly"),
    ("check_constraints", "checkConstraints"),
    ("enable_change_data_feed", "changeDataFeed"),
    ("enable_deletion_vectors", "deletionVectors"),
    ("enable_in_commit_timestamps", "inCommitTimestamp"),
    ("enable_type_widening", "typeWidening"),
    ("enable_variant_shredding", "variantShredding-preview"),
    ("enable_iceberg_compat_v1", "icebergCompatV1"),
    ("enable_iceberg_compat_v2", "icebergCompatV2"),
    ("enable_iceberg_compat_v3", "icebergCompatV3"),
    ("enable_materialize_partition_columns_feature", "materializePartitionColumns"),
    ("enable_row_tracking", "rowTracking"),
)


def active_features(metadata: Metadata) -> set[str]:
    """Features the metadata makes active (by properties and schema)."""
    props = metadata.properties
    features = {feature for attribute, feature in _PROPERTY_FEATURES if getattr(props, attribute)}
    if props.column_mapping_mode in ("name", "id"):
        features.add("columnMapping")
    if props.checkpoint_policy == "v2":
        features.add("v2Checkpoint")
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError:
        return features
    if has_collated_string(schema.get("fields")):
        features.add("collations")
    for item in walk_types(schema):
        if item == "timestamp_ntz":
            features.add("timestampNtz")
        elif item == "variant":
            features.add("variantType")
        elif isinstance(item, dict) and "name" in item:
            meta = item.get("metadata") or {}
            if "delta.invariants" in meta:
                features.add("invariants")
            if "delta.generationExpression" in meta:
                features.add("generatedColumns")
            if any(str(k).startswith("delta.identity.") for k in meta):
                features.add("identityColumns")
            if "CURRENT_DEFAULT" in meta:
                features.add("allowColumnDefaults")
    return features


def _ignores_protocol_defaults(metadata: Metadata) -> bool:
    return str(metadata.configuration.get("delta.ignoreProtocolDefaults", "")).strip().lower() == "true"


def _asked_versions(metadata: Metadata) -> tuple[int | None, int | None]:
    """The ``delta.minReaderVersion`` / ``delta.minWriterVersion`` the properties ask for;
    raises :class:`~deltalog.txn.protocol.properties.InvalidPropertyError` for a version Delta
    does not support (``DeltaConfigs.MIN_READER_VERSION``'s validation: reader 1 to 3, writer
    1 to 7; Delta's ``protocolPropNotIntException`` when not a number)."""
    from deltalog.txn.protocol.features import MAX_READER_VERSION, MAX_WRITER_VERSION
    from deltalog.txn.protocol.properties import InvalidPropertyError

    props = metadata.properties
    asked = (props.min_reader_version, props.min_writer_version)
    for key, value, top in zip(
        ("delta.minReaderVersion", "delta.minWriterVersion"), asked, (MAX_READER_VERSION, MAX_WRITER_VERSION)
    ):
        if value is not None and not 1 <= value <= top:
            raise InvalidPropertyError(
                f"{key}={value}: {key} needs to be one of {', '.join(map(str, range(1, top + 1)))}."
            )
    return asked


def protocol_for_new_table(metadata: Metadata) -> Protocol:
    """The protocol of a new table with ``metadata`` (Delta's ``Protocol.forNewTable``): the
    versions its properties ask for (else Delta's defaults (1, 2), or (1, 1) with
    ``delta.ignoreProtocolDefaults``) with the features they imply, plus every feature the
    properties name (``delta.feature.<name>``) or the metadata uses, with their dependencies;
    normalized."""
    # delta.minReaderVersion / delta.minWriterVersion (InvalidPropertyError when not a number,
    # Delta's protocolPropNotIntException)
    reader, writer = _asked_versions(metadata)
    reader = 1 if reader is None else reader
    writer = (1 if _ignores_protocol_defaults(metadata) else 2) if writer is None else writer
    implied = implicit_features(Protocol(reader if writer >= 7 else min(2, reader), writer))
    requested = dependency_closure(_requested_features(metadata))
    enabled = dependency_closure(requested | _metadata_needs(metadata, requested))
    return normalized(table_features_protocol(3, enabled | implied))


def protocol_for_existing_table(current: Protocol, metadata: Metadata) -> Protocol | None:
    """The protocol an existing table with protocol ``current`` needs for its new
    ``metadata``, or None when ``current`` serves (Delta's ``updateMetadataInternal``):

    1. versions its properties ask for are merged in (so they add the features they imply);
    2. features ``delta.feature.<name>`` names are added;
    3. features the metadata uses are added (``upgradeProtocolFromMetadataForExistingTable``):
       the protocol grows only by them, never toward a new table's defaults. A feature Delta
       does not add on its own to an existing table (``timestampNtz``) raises
       :class:`~deltalog.txn.protocol.errors.FeatureRequiresManualEnablementError`.
    """
    proposed = current
    reader, writer = _asked_versions(metadata)
    if reader is not None or writer is not None:
        asked = Protocol(
            current.min_reader_version if reader is None else reader,
            current.min_writer_version if writer is None else writer,
        )
        _check_reader_needs_writer_features(asked)
        proposed = merge(current, asked)
    requested = dependency_closure(_requested_features(metadata))
    if not requested <= supported_features(proposed):
        proposed = merge(table_features_protocol(3, requested), proposed)
    uses = dependency_closure(
        set(proposed.writer_features or ()) | _metadata_needs(metadata, supported_features(proposed))
    )
    required = normalized(table_features_protocol(3, uses))
    missing = supported_features(required) - supported_features(proposed)
    if missing:
        manual = sorted(missing & _MANUAL_ON_EXISTING_TABLES)
        if manual:
            raise FeatureRequiresManualEnablementError(
                f"the table's schema or properties need the table feature(s) {', '.join(manual)}, which Delta "
                "does not add to an existing table on its own (DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT): enable "
                "them first with " + ", ".join(f"'delta.feature.{f}' = 'supported'" for f in manual)
            )
        proposed = merge(required, proposed)
    return None if same_protocol(proposed, current) else proposed


def _check_reader_needs_writer_features(asked: Protocol) -> None:
    """Delta's ``Protocol`` refuses reader version 3 (reader features) with a writer version
    below 7 (``DELTA_READ_FEATURE_PROTOCOL_REQUIRES_WRITE``): an existing table asked for
    ``delta.minReaderVersion=3`` must be asked for ``delta.minWriterVersion=7`` as well."""
    from deltalog.txn.protocol.properties import InvalidPropertyError

    if asked.min_reader_version >= 3 and asked.min_writer_version < 7:
        raise InvalidPropertyError(
            f"DELTA_READ_FEATURE_PROTOCOL_REQUIRES_WRITE: protocol ({asked.min_reader_version}, "
            f"{asked.min_writer_version}) asks for reader features without writer features; set "
            "'delta.minWriterVersion' = '7' together with 'delta.minReaderVersion' = '3'"
        )


#: a feature the metadata turns on (by its schema or a property) -> its preview/stable twin,
#: which serves instead when the protocol supports it: as Delta's ``VariantTypeTableFeature``
#: (not needed beside ``variantType-preview``), ``VariantShreddingPreviewTableFeature``
#: (not needed beside ``variantShredding``) and ``TypeWideningTableFeature`` (not needed
#: beside ``typeWidening-preview``), and as Delta Kernel, a table with
#: ``collations-preview`` does not get ``collations`` (it would lock out the clients that know
#: only the preview)
_TWIN_SERVES: dict[str, str] = {
    "variantType": "variantType-preview",
    "variantShredding-preview": "variantShredding",
    "typeWidening": "typeWidening-preview",
    "collations": "collations-preview",
}


def _metadata_needs(metadata: Metadata, supported: AbstractSet[str]) -> set[str]:
    """The features ``metadata`` turns on (:func:`active_features`) but those whose twin is in
    ``supported`` (the features the protocol has or the properties ask for by name). A twin
    asked for by name, or needed by another feature (``variantShredding`` needs
    ``variantType``), is added all the same: only what the metadata implies is left out."""
    return {f for f in active_features(metadata) if _TWIN_SERVES.get(f) not in supported}


#: features a table's metadata makes active that Delta adds to an existing table's protocol
#: only when asked by name (``automaticallyUpdateProtocolOfExistingTables`` false)
_MANUAL_ON_EXISTING_TABLES = frozenset({"timestampNtz"})


def merge_protocols(current: Protocol, required: Protocol) -> Protocol | None:
    """``current`` merged with ``required`` as Delta merges protocols (every feature of both,
    normalized); None when that is ``current`` itself."""
    merged = merge(current, required)
    return None if same_protocol(merged, current) else merged


#: the features Delta turns on from the metadata (``FeatureAutomaticallyEnabledByMetadata``)
#: that :func:`active_features` tells without knowing the protocol; the ones with a preview
#: twin (typeWidening, variantType, variantShredding) are left to Delta, and Delta does not
#: turn on collations or allowColumnDefaults from the metadata
_MUST_BE_LISTED = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
        "identityColumns",
        "timestampNtz",
        "deletionVectors",
        "rowTracking",
        "domainMetadata",
        "inCommitTimestamp",
        "v2Checkpoint",
        "icebergCompatV1",
        "icebergCompatV2",
        "icebergCompatV3",
        "materializePartitionColumns",
    }
)


def check_features_match_metadata(protocol: Protocol, metadata: Metadata, table: str = "") -> None:
    """Delta's ``assertTableFeaturesMatchMetadata``, run on every snapshot: on a table-features
    protocol, a feature the metadata turns on (or a listed feature needs) must be listed.
    Raises :class:`~deltalog.txn.protocol.errors.InvalidTableStateError`
    (``DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH``), which only another writer's commit can cause."""
    from deltalog.txn.protocol.errors import InvalidTableStateError

    if protocol.min_writer_version < 7 and protocol.min_reader_version < 3:
        return
    listed = set(protocol.writer_features or ()) | set(protocol.reader_features or ())
    active = dependency_closure(listed | (active_features(metadata) & _MUST_BE_LISTED))
    missing = sorted((active - listed) & _MUST_BE_LISTED)
    if missing:
        raise InvalidTableStateError(
            f"DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH: unable to operate on the table {table} because the "
            f"following table features are enabled in metadata but not listed in protocol: {', '.join(missing)}. "
            "Another writer committed a protocol without them; add them with 'delta.feature.<name>' = 'supported'"
        )
