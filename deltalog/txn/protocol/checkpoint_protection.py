"""The ``checkpointProtection`` writer feature (Delta's ``CheckpointProtectionTableFeature``,
RFC ``protocol_rfcs/checkpoint-protection.md``).

Delta adds it when a feature is dropped without truncating history: the checkpoints written
just before the drop hide the commits that still use the dropped feature from older
readers, and ``delta.requireCheckpointProtectionBeforeVersion`` (the version of the drop
commit) keeps them in place. A writer of such a table, by the RFC's requirements:

a, c) removes checkpoints and commits before that version only together, up to a complete
   checkpoint it keeps (deltalog's cleanup never ends anywhere else: Delta's
   ``checkpointExistsAtCleanupBoundary`` case of ``metadataCleanupAllowed``);
b) never writes a checkpoint of a version before it whose protocol it cannot write
   (:func:`check_checkpoint_allowed`);
d) deletes the commits before the checkpoints (``deltalog.txn.log.cleanup``).
"""

from __future__ import annotations

import dataclasses

from deltalog.txn.protocol.actions import Metadata, Protocol
from deltalog.txn.protocol.features import check_write_supported, protocol_features
from deltalog.txn.protocol.properties import REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION

__all__ = [
    "FEATURE",
    "PROPERTY",
    "check_checkpoint_allowed",
    "checkpoint_protection_version",
    "with_checkpoint_protection",
]

FEATURE = "checkpointProtection"
PROPERTY = REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION


def checkpoint_protection_version(protocol: Protocol, metadata: Metadata) -> int:
    """The version checkpoints are protected before (0: none), as Delta's
    ``getCheckpointProtectionVersion``: the property counts only while the protocol has the
    feature."""
    _, writer = protocol_features(protocol)
    if FEATURE not in writer:
        return 0
    return metadata.properties.require_checkpoint_protection_before_version


def with_checkpoint_protection(metadata: Metadata, version: int) -> Metadata:
    """``metadata`` protecting the checkpoints before ``version`` (Delta's
    ``metadataWithCheckpointProtection``)."""
    return dataclasses.replace(metadata, configuration={**metadata.configuration, PROPERTY: str(version)})


def check_checkpoint_allowed(
    version: int,
    protocol: Protocol,
    metadata: Metadata,
    latest_protocol: Protocol,
    latest_metadata: Metadata,
    table: str = "",
) -> None:
    """Refuse (:class:`~deltalog.txn.protocol.errors.UnsupportedFeatureError`) a checkpoint of
    ``version`` (whose protocol and metadata are given) when the latest state protects the
    checkpoints before it and this client cannot write the protocol at that version (RFC
    requirement b)."""
    if version >= checkpoint_protection_version(latest_protocol, latest_metadata):
        return
    check_write_supported(protocol, metadata, table=f"{table} at version {version} (protected by {FEATURE})")
