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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.txn.protocol.actions import CommitInfo, Metadata, Protocol
from deltalog.txn.protocol.features import protocol_features
from deltalog.txn.protocol.properties import COLUMN_MAPPING_MAX_ID, InvalidPropertyError

__all__ = [
    "MetadataResolution",
    "commit_tags",
    "dropped_features",
    "resolve_metadata_conflict",
]

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


def _enables_name_mapping(current: Metadata, winning: Metadata) -> bool:
    return current.properties.column_mapping_mode == "none" and winning.properties.column_mapping_mode == "name"


@dataclass(frozen=True)
class _Change:
    """A property the winner set: the transaction's and the winner's metadata, the winner's
    protocol, and whether the key is new."""

    current: Metadata
    winning: Metadata
    protocol: Protocol
    is_new: bool


#: The properties a winner may set without failing a transaction that changes no metadata
#: (Delta's ``attemptToResolveMetadataConflicts`` allow-list), each with its condition.
_RESOLVABLE: dict[str, Callable[[_Change], bool]] = {
    "delta.enableDeletionVectors": lambda c: (
        _supports(c.protocol, "deletionVectors") and c.winning.properties.enable_deletion_vectors
    ),
    "delta.checkpointPolicy": lambda c: (
        _supports(c.protocol, "v2Checkpoint") and c.winning.properties.checkpoint_policy == "v2"
    ),
    "delta.enableInCommitTimestamps": lambda c: (
        _supports(c.protocol, "inCommitTimestamp") and c.winning.properties.enable_in_commit_timestamps
    ),
    "delta.inCommitTimestampEnablementVersion": lambda c: c.is_new,
    "delta.inCommitTimestampEnablementTimestamp": lambda c: c.is_new,
    "delta.enableRowTracking": lambda c: (
        _supports(c.protocol, "rowTracking") and c.winning.properties.enable_row_tracking
    ),
    "delta.rowTracking.materializedRowIdColumnName": lambda c: c.winning.properties.enable_row_tracking,
    "delta.rowTracking.materializedRowCommitVersionColumnName": lambda c: c.winning.properties.enable_row_tracking,
    "delta.columnMapping.mode": lambda c: (
        _enables_name_mapping(c.current, c.winning) and _supports(c.protocol, "columnMapping")
    ),
    COLUMN_MAPPING_MAX_ID: lambda c: True,
}


def _rule_allows(key: str, change: _Change) -> bool:
    """Whether the allow-list admits the winner's value of ``key``; a value its rule cannot
    parse (another engine's ``delta.checkpointPolicy=unknown-policy``) is refused, as Delta's
    per-key validators refuse it: the conflict stays unresolved."""
    rule = _RESOLVABLE.get(key)
    if rule is None:
        return False
    try:
        return rule(change)
    except InvalidPropertyError:
        return False


def _configuration_change_allowed(current: Metadata, winning: Metadata, protocol: Protocol) -> tuple[bool, bool]:
    """(allowed, enables row tracking) for the winner's configuration change."""
    cur, win = current.configuration, winning.configuration
    if set(cur) - set(win):
        return False, False  # unsetting a property is not resolved
    changed = {k: (k not in cur) for k in win if cur.get(k) != win[k]}
    for key, is_new in changed.items():
        if not _rule_allows(key, _Change(current, winning, protocol, is_new)):
            return False, False
    enables_row_tracking = winning.properties.enable_row_tracking and not current.properties.enable_row_tracking
    return True, enables_row_tracking


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
