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
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from deltalog.txn.protocol.actions import Metadata, Protocol
from deltalog.txn.protocol.collations import has_collated_string

__all__ = [
    "active_features",
    "is_protocol_property",
    "merge_protocols",
    "required_protocol",
    "walk_types",
    "without_protocol_properties",
]

#: ``delta.feature.<name>``: a table property that adds the feature to the protocol.
FEATURE_PROPERTY_PREFIX = "delta.feature."
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


def _requested_features(metadata: Metadata) -> set[str]:
    """The features ``delta.feature.<name>`` properties ask for; raises
    :class:`~deltalog.txn.protocol.properties.InvalidPropertyError` for a feature Delta does
    not know or a status other than ``supported``/``enabled``."""
    from deltalog.txn.protocol.features import FEATURES
    from deltalog.txn.protocol.properties import InvalidPropertyError

    requested: set[str] = set()
    for key, value in metadata.configuration.items():
        if not key.startswith(FEATURE_PROPERTY_PREFIX):
            continue
        name = key[len(FEATURE_PROPERTY_PREFIX) :]
        if name not in FEATURES:
            raise InvalidPropertyError(
                f"{key}: {name!r} is not a table feature Delta knows; known features: {', '.join(sorted(FEATURES))}"
            )
        if str(value).strip().lower() not in _FEATURE_STATUSES:
            raise InvalidPropertyError(
                f"{key}={value!r}: a feature property takes 'supported' (or 'enabled'); a feature is "
                "removed with DROP FEATURE, not by a property"
            )
        requested.add(name)
    return requested


# feature name -> (min reader version, min writer version) when it is a legacy feature
_LEGACY: dict[str, tuple[int, int]] = {
    "appendOnly": (1, 2),
    "invariants": (1, 2),
    "checkConstraints": (1, 3),
    "changeDataFeed": (1, 4),
    "generatedColumns": (1, 4),
    "columnMapping": (2, 5),
    "identityColumns": (1, 6),
}
READER_WRITER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
    }
)


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


def active_features(metadata: Metadata) -> set[str]:
    """Features the metadata makes active (by properties and schema)."""
    props = metadata.properties
    features: set[str] = set()
    if props.append_only:
        features.add("appendOnly")
    if props.check_constraints:
        features.add("checkConstraints")
    if props.enable_change_data_feed:
        features.add("changeDataFeed")
    if props.column_mapping_mode in ("name", "id"):
        features.add("columnMapping")
    if props.enable_deletion_vectors:
        features.add("deletionVectors")
    if props.enable_in_commit_timestamps:
        features.add("inCommitTimestamp")
    if props.checkpoint_policy == "v2":
        features.add("v2Checkpoint")
    if props.enable_type_widening:
        features.add("typeWidening")
    if props.enable_variant_shredding:
        # Delta's forceUsePreviewTableFeature (default true): the preview feature is added
        features.add("variantShredding-preview")
    if props.enable_iceberg_compat_v1:
        features.add("icebergCompatV1")
    if props.enable_iceberg_compat_v2:
        features.add("icebergCompatV2")
    if props.enable_materialize_partition_columns_feature:
        features.add("materializePartitionColumns")
    if props.enable_row_tracking:
        # rowTracking requires domainMetadata (its high-water mark is a domain)
        features.update(("rowTracking", "domainMetadata"))
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError:
        return features
    if has_collated_string(schema.get("fields")):
        # the collated-string RFC: collations needs domainMetadata
        features.update(("collations", "domainMetadata"))
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


def required_protocol(metadata: Metadata, *, new_table: bool = True) -> Protocol:
    """The smallest protocol that supports every feature ``metadata`` makes active,
    honouring ``delta.minReaderVersion`` / ``delta.minWriterVersion`` and the features
    ``delta.feature.<name>`` properties ask for (listed by name, so with writer 7). A new
    table starts at Delta's default (1, 2); an existing one at nothing, so its protocol grows
    only by what the metadata uses (Delta's ``upgradeProtocolFromMetadataForExistingTable``)."""
    requested = _requested_features(metadata)
    features = active_features(metadata) | requested
    if "variantShredding" in requested:
        # Delta's VariantShreddingPreviewTableFeature: not needed beside the stable feature
        features.discard("variantShredding-preview")
    reader, writer = 1, 2 if new_table else 1
    try:
        reader = max(reader, metadata.properties.min_reader_version or 1)
        writer = max(writer, metadata.properties.min_writer_version or 1)
    except ValueError:  # InvalidPropertyError: a version that is not a number is ignored
        pass
    needs_table_features = writer >= 7 or bool(requested) or any(f not in _LEGACY for f in features)
    if not needs_table_features:
        for feature in features:
            r, w = _LEGACY[feature]
            reader, writer = max(reader, r), max(writer, w)
        return Protocol(reader, writer)
    if new_table and writer < 7:
        # Delta's forNewTable: the new table's versions (its properties or the defaults)
        # count with the features they imply, listed by name on a table-features protocol
        features |= {f for f, (r, w) in _LEGACY.items() if r <= min(reader, 2) and w <= writer}
    reader_features = sorted(f for f in features if f in READER_WRITER_FEATURES)
    if reader_features or reader >= 3:
        return Protocol(3, 7, tuple(reader_features), tuple(sorted(features)))
    return Protocol(max(reader, 1), 7, None, tuple(sorted(features)))


def _features_of(protocol: Protocol) -> tuple[set[str], set[str]]:
    """(reader features, writer features) a protocol supports, legacy versions expanded (a
    table-features version, writer 7 or reader 3, supports only the features it lists)."""
    if protocol.writer_features is not None or protocol.min_writer_version >= 7:
        writer = set(protocol.writer_features or ())
    else:
        writer = {f for f, (_, w) in _LEGACY.items() if protocol.min_writer_version >= w}
    if protocol.reader_features is not None or protocol.min_reader_version >= 3:
        reader = set(protocol.reader_features or ())
    else:
        reader = {"columnMapping"} if protocol.min_reader_version >= 2 else set()
    return reader, writer


def merge_protocols(current: Protocol, required: Protocol) -> Protocol | None:
    """``current`` upgraded to also support ``required``; ``None`` when it already does.

    Never downgrades: versions only go up and features are never dropped.
    """
    cur_reader, cur_writer = _features_of(current)
    req_reader, req_writer = _features_of(required)
    if "collations-preview" in cur_writer:
        # as Delta Kernel: a table with the preview feature does not get the stable one
        # added, which would lock out the clients that know only the preview
        req_writer.discard("collations")
    if "variantShredding" in cur_writer:
        # Delta's VariantShreddingPreviewTableFeature: not required when the stable one is there
        req_reader.discard("variantShredding-preview")
        req_writer.discard("variantShredding-preview")
    if (
        req_reader <= cur_reader
        and req_writer <= cur_writer
        and current.min_reader_version >= required.min_reader_version
        and current.min_writer_version >= required.min_writer_version
    ):
        return None
    reader_version = max(current.min_reader_version, required.min_reader_version)
    writer_version = max(current.min_writer_version, required.min_writer_version)
    legacy = current.writer_features is None and required.writer_features is None
    if legacy and writer_version < 7 and reader_version < 3:
        return Protocol(reader_version, writer_version)
    # Table features (also when only the versions ask for them, e.g. an upgrade to (3, 7)):
    # list everything either protocol supports, the legacy versions' features made explicit.
    writer = sorted(cur_writer | req_writer)
    reader = sorted((cur_reader | req_reader) & READER_WRITER_FEATURES)
    if reader or reader_version >= 3:
        return Protocol(3, 7, tuple(reader), tuple(writer))
    return Protocol(reader_version, 7, None, tuple(writer))
