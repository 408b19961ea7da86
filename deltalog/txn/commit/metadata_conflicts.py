"""Protocol and metadata changes of a winning commit that a losing transaction can absorb.

Delta's ``ConflictChecker.checkProtocolCompatibility`` and
``attemptToResolveMetadataConflicts``:

- a winner whose protocol drops a table feature the transaction read fails it
  (:class:`ProtocolChangedError`), whatever it does;
- a winner that changes the metadata fails a transaction that changes the metadata too
  (:class:`MetadataChangedError`);
- otherwise the winner's metadata is adopted when it differs from what the transaction
  read only in the table properties of an allow-list, changed in a direction that needs no
  data rewrite: enabling deletion vectors, in-commit timestamps (with their enablement
  version and timestamp), the V2 checkpoint policy, row tracking (and its materialized
  column names), column mapping ``name`` mode (whose schema changes only add
  column-mapping field metadata); a metadata update tagged as an identity high-water-mark
  update is always adopted. Removing a property, or any other change (schema, partitioning,
  description, ...), fails the transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.txn.protocol.actions import CommitInfo, Metadata, Protocol
from deltalog.txn.protocol.features import protocol_features

__all__ = [
    "MetadataResolution",
    "commit_tags",
    "dropped_features",
    "resolve_metadata_conflict",
]

ENABLE_DELETION_VECTORS = "delta.enableDeletionVectors"
CHECKPOINT_POLICY = "delta.checkpointPolicy"
ENABLE_ICT = "delta.enableInCommitTimestamps"
ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
MATERIALIZED_ROW_ID = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_ROW_COMMIT_VERSION = "delta.rowTracking.materializedRowCommitVersionColumnName"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
COLUMN_MAPPING_MAX_ID = "delta.columnMapping.maxColumnId"
#: commitInfo tag of a metadata update that only moves identity high-water marks
IDENTITY_UPDATE_TAG = "delta.identity.schemaUpdate"

#: field-level metadata keys of column mapping (Delta's COLUMN_MAPPING_METADATA_KEYS)
COLUMN_MAPPING_FIELD_KEYS = frozenset(
    {
        "delta.columnMapping.id",
        "delta.columnMapping.physicalName",
        "delta.columnMapping.nested.ids",
        "parquet.field.id",
        "parquet.field.nested.ids",
    }
)

ALLOWED_PROPERTIES = frozenset(
    {
        ENABLE_DELETION_VECTORS,
        CHECKPOINT_POLICY,
        ENABLE_ICT,
        ICT_ENABLEMENT_VERSION,
        ICT_ENABLEMENT_TIMESTAMP,
        ENABLE_ROW_TRACKING,
        MATERIALIZED_ROW_ID,
        MATERIALIZED_ROW_COMMIT_VERSION,
        COLUMN_MAPPING_MODE,
        COLUMN_MAPPING_MAX_ID,
    }
)


@dataclass(frozen=True)
class MetadataResolution:
    """A winner's metadata change the transaction absorbs."""

    metadata: Metadata
    #: the winner turned row tracking on: this commit cannot claim it preserved row ids
    row_tracking_enabled: bool = False


def commit_tags(info: CommitInfo | None) -> dict[str, str]:
    """``commitInfo.tags`` (empty when absent)."""
    if info is None:
        return {}
    tags = info.extra.get("tags")
    return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, Mapping) else {}


def dropped_features(new: Protocol, old: Protocol) -> frozenset[str]:
    """Features ``old`` supports (explicitly or implied by its versions) that ``new`` does
    not (Delta's ``TableFeature.getDroppedFeatures``)."""
    old_reader, old_writer = protocol_features(old)
    new_reader, new_writer = protocol_features(new)
    return frozenset((old_reader | old_writer) - (new_reader | new_writer))


def _true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _supports(protocol: Protocol, feature: str) -> bool:
    reader, writer = protocol_features(protocol)
    return feature in reader or feature in writer


def _differing_fields(a: Metadata, b: Metadata) -> set[str]:
    pairs = {
        "id": (a.id, b.id),
        "name": (a.name, b.name),
        "description": (a.description, b.description),
        "format": (a.format, b.format),
        "schemaString": (a.schema_string, b.schema_string),
        "partitionColumns": (tuple(a.partition_columns), tuple(b.partition_columns)),
        "configuration": (dict(a.configuration), dict(b.configuration)),
        "createdTime": (a.created_time, b.created_time),
    }
    return {name for name, (x, y) in pairs.items() if x != y}


def _mapping_mode(metadata: Metadata) -> str:
    return metadata.configuration.get(COLUMN_MAPPING_MODE, "none").strip().lower()


def _enables_name_mapping(current: Metadata, winning: Metadata) -> bool:
    return _mapping_mode(current) == "none" and _mapping_mode(winning) == "name"


def _configuration_change_allowed(current: Metadata, winning: Metadata, protocol: Protocol) -> tuple[bool, bool]:
    """(allowed, enables row tracking) for the winner's configuration change."""
    cur, win = current.configuration, winning.configuration
    if set(cur) - set(win):
        return False, False  # unsetting a property is not resolved
    changed = {k: (k not in cur) for k in win if cur.get(k) != win[k]}
    if not set(changed) <= ALLOWED_PROPERTIES:
        return False, False
    for key, is_new in changed.items():
        value = win[key]
        if key == ENABLE_ROW_TRACKING:
            ok = _supports(protocol, "rowTracking") and _true(value)
        elif key in (MATERIALIZED_ROW_ID, MATERIALIZED_ROW_COMMIT_VERSION):
            ok = _true(win.get(ENABLE_ROW_TRACKING))
        elif key == COLUMN_MAPPING_MODE:
            ok = _enables_name_mapping(current, winning) and _supports(protocol, "columnMapping")
        elif key == ENABLE_DELETION_VECTORS:
            ok = _supports(protocol, "deletionVectors") and _true(value)
        elif key == CHECKPOINT_POLICY:
            ok = _supports(protocol, "v2Checkpoint") and value.strip().lower() == "v2"
        elif key == ENABLE_ICT:
            ok = _supports(protocol, "inCommitTimestamp") and _true(value)
        elif key in (ICT_ENABLEMENT_VERSION, ICT_ENABLEMENT_TIMESTAMP):
            ok = is_new
        else:
            ok = True
        if not ok:
            return False, False
    return True, ENABLE_ROW_TRACKING in changed


def _schema_change_allowed(current: Metadata, winning: Metadata) -> bool:
    """Only column-mapping field metadata may change, and only while name mapping is
    being enabled (Delta's ``checkSchemaChangesForConflicts``)."""
    if not _enables_name_mapping(current, winning):
        return False
    try:
        cur_fields = json.loads(current.schema_string).get("fields") or []
        win_fields = json.loads(winning.schema_string).get("fields") or []
    except (ValueError, AttributeError):
        return False
    if len(cur_fields) != len(win_fields):
        return False
    for a, b in zip(cur_fields, win_fields):
        if (a.get("name"), a.get("type"), a.get("nullable")) != (b.get("name"), b.get("type"), b.get("nullable")):
            return False
        ma: dict[str, Any] = a.get("metadata") or {}
        mb: dict[str, Any] = b.get("metadata") or {}
        changed = {k for k in set(ma) | set(mb) if ma.get(k) != mb.get(k)}
        if not changed <= COLUMN_MAPPING_FIELD_KEYS:
            return False
    return True


def resolve_metadata_conflict(
    current: Metadata, winning: Metadata, protocol: Protocol, winner_info: CommitInfo | None
) -> MetadataResolution | None:
    """The resolution of the winner's metadata change for a transaction that does not
    change the metadata itself and assumed ``current``; None when it must fail.
    ``protocol`` is the protocol after the winner (features are checked against it)."""
    if _true(commit_tags(winner_info).get(IDENTITY_UPDATE_TAG)):
        return MetadataResolution(winning)
    differing = _differing_fields(current, winning)
    if not differing <= {"configuration", "schemaString"}:
        return None
    row_tracking_enabled = False
    if "configuration" in differing:
        allowed, row_tracking_enabled = _configuration_change_allowed(current, winning, protocol)
        if not allowed:
            return None
    if "schemaString" in differing and not _schema_change_allowed(current, winning):
        return None
    return MetadataResolution(winning, row_tracking_enabled)
