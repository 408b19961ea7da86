"""Which table features can be dropped, and the protocol without one (Delta's
``RemovableFeature``, ``TableFeature.getDependentFeatures`` and ``Protocol.removeFeature``).

No I/O: ``deltalog.txn.commands.drop_feature`` runs the command.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltalog.txn.protocol.actions import Protocol
from deltalog.txn.protocol.features import FEATURES, protocol_features

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
        RemovableFeature("columnMapping", True, False),
        RemovableFeature("typeWidening", True, True),
        RemovableFeature("typeWidening-preview", True, True),
        RemovableFeature("rowTracking", False, False),
        RemovableFeature("domainMetadata", False, False),
        RemovableFeature("coordinatedCommits-preview", False, False),
        RemovableFeature("catalogOwned-preview", True, False),
    )
}

#: ``requiredFeatures`` of Delta's features: a feature cannot be dropped while one needing it stays.
_REQUIRES: dict[str, frozenset[str]] = {
    "rowTracking": frozenset({"domainMetadata"}),
    "clustering": frozenset({"domainMetadata"}),
    "icebergCompatV1": frozenset({"columnMapping"}),
    "icebergCompatV2": frozenset({"columnMapping"}),
    "variantShredding": frozenset({"variantType"}),
    "coordinatedCommits-preview": frozenset({"inCommitTimestamp", "vacuumProtocolCheck"}),
    "catalogOwned-preview": frozenset({"inCommitTimestamp", "vacuumProtocolCheck"}),
}


def dependent_features(name: str, protocol: Protocol) -> list[str]:
    """The features of ``protocol`` that need ``name`` (Delta's ``dependentFeatureCheck``)."""
    reader, writer = protocol_features(protocol)
    return sorted(f for f in reader | writer if name in _REQUIRES.get(f, ()))


def _legacy_versions(name: str) -> tuple[int, int]:
    """Delta's ``minReaderVersion`` / ``minWriterVersion`` of a feature."""
    info = FEATURES.get(name)
    if info is None or info.legacy_writer is None:
        return (3 if info is not None and info.reader_writer else 1), 7
    return info.legacy_reader or 1, info.legacy_writer


def protocol_without(protocol: Protocol, name: str, add: tuple[str, ...] = ()) -> Protocol:
    """``protocol`` without feature ``name`` (and with the writer features ``add``),
    normalized as Delta's ``removeFeature``: the legacy versions when they imply exactly the
    remaining features, else table features with the lowest reader version."""
    reader, writer = protocol_features(protocol)
    remaining = ((reader | writer) - {name}) | set(add)
    versions = [_legacy_versions(f) for f in remaining]
    min_reader = max((r for r, _ in versions), default=1)
    min_writer = max((w for _, w in versions), default=1)
    if min_writer < 7:
        legacy = Protocol(min_reader, min_writer)
        legacy_reader, legacy_writer = protocol_features(legacy)
        if legacy_reader | legacy_writer == remaining:
            return legacy
    rw = sorted(f for f in remaining if (info := FEATURES.get(f)) is not None and info.reader_writer)
    if min_reader >= 3:
        return Protocol(3, 7, tuple(rw), tuple(sorted(remaining)))
    return Protocol(min_reader, 7, None, tuple(sorted(remaining)))
