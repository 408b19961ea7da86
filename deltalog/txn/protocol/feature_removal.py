"""Which table features can be dropped, and the protocol without one (Delta's
``RemovableFeature``, ``TableFeature.getDependentFeatures`` and ``Protocol.removeFeature``).

No I/O: ``deltalog.txn.commands.drop_feature`` runs the command.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltalog.txn.protocol.actions import Protocol
from deltalog.txn.protocol.protocol_versions import (
    REQUIRED_FEATURES,
    normalized,
    supported_features,
    table_features_protocol,
)

__all__ = [
    "REMOVABLE",
    "RemovableFeature",
    "dependent_features",
    "protocol_without",
]


@dataclass(frozen=True)
class RemovableFeature:
    name: str
    #: Delta's ``requiresHistoryProtection``: dropping it leaves barrier checkpoints and
    #: adds ``checkpointProtection`` (the fast drop), or needs the history truncated
    history_protection: bool
    #: deltalog runs its pre-downgrade work (else the drop is refused by name)
    implemented: bool
    #: Delta's ``tablePropertiesToRemoveAtDowngradeCommit``: properties concurrent writers
    #: may use while the protocol has the feature, removed by the downgrade commit itself
    downgrade_removes: tuple[str, ...] = ()


#: Delta's removable features deltalog knows (``RemovableFeature`` in ``TableFeature.scala``).
REMOVABLE: dict[str, RemovableFeature] = {
    f.name: f
    for f in (
        RemovableFeature("deletionVectors", True, True),
        RemovableFeature("v2Checkpoint", True, True),
        RemovableFeature("vacuumProtocolCheck", True, True),
        RemovableFeature("inCommitTimestamp", False, True),
        RemovableFeature("checkConstraints", False, True),
        RemovableFeature("checkpointProtection", False, True),
        RemovableFeature("columnMapping", True, True),
        RemovableFeature("typeWidening", True, True),
        RemovableFeature("typeWidening-preview", True, True),
        RemovableFeature(
            "rowTracking",
            False,
            True,
            (
                "delta.enableRowTracking",
                "delta.rowTrackingSuspended",
                "delta.rowTracking.materializedRowIdColumnName",
                "delta.rowTracking.materializedRowCommitVersionColumnName",
            ),
        ),
        RemovableFeature("domainMetadata", False, True),
        RemovableFeature(
            "materializePartitionColumns", False, True, ("delta.enableMaterializePartitionColumnsFeature",)
        ),
        RemovableFeature("coordinatedCommits-preview", False, False),
        RemovableFeature("catalogOwned-preview", True, False),
    )
}


def dependent_features(name: str, protocol: Protocol) -> list[str]:
    """The features of ``protocol`` that need ``name`` (Delta's ``dependentFeatureCheck``)."""
    return sorted(f for f in supported_features(protocol) if name in REQUIRED_FEATURES.get(f, ()))


def protocol_without(protocol: Protocol, name: str, add: tuple[str, ...] = ()) -> Protocol:
    """``protocol`` without feature ``name`` (and with the writer features ``add``),
    normalized as Delta's ``removeFeature``: the legacy versions when they imply exactly the
    remaining features, else table features with the lowest reader version."""
    remaining = (supported_features(protocol) - {name}) | set(add)
    return normalized(table_features_protocol(3, remaining))
