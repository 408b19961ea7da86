"""Delta's protocol algebra (``TableFeatureSupport``): the features a protocol supports, its
normalized form, and the merge of protocols. No I/O.

A legacy protocol (writer version below 7) supports the legacy features its versions imply;
a table-features protocol supports exactly the features it lists. Delta keeps every protocol
it writes in its weakest form (``normalized``): the legacy versions when they imply exactly
the supported features, else writer 7 with the lowest reader version the features allow
(3 only when a reader-writer table feature is listed). So ``(1, 2)`` plus change data feed is
``(1, 7, [appendOnly, changeDataFeed, invariants])``, while ``(1, 4)`` plus change data feed
stays ``(1, 4)``.
"""

from __future__ import annotations

from collections.abc import Iterable

from deltalog.txn.protocol.actions import Protocol
from deltalog.txn.protocol.features import FEATURES

__all__ = [
    "REQUIRED_FEATURES",
    "dependency_closure",
    "feature_versions",
    "implicit_features",
    "merge",
    "min_required_versions",
    "normalized",
    "same_protocol",
    "supported_features",
    "table_features_protocol",
]

#: Delta's ``requiredFeatures``: a feature is supported only together with these (and the
#: collated-string RFC's ``domainMetadata`` for collations).
REQUIRED_FEATURES: dict[str, frozenset[str]] = {
    "rowTracking": frozenset({"domainMetadata"}),
    "clustering": frozenset({"domainMetadata"}),
    "collations": frozenset({"domainMetadata"}),
    "icebergCompatV1": frozenset({"columnMapping"}),
    "icebergCompatV2": frozenset({"columnMapping"}),
    "icebergCompatV3": frozenset({"columnMapping", "rowTracking"}),
    "variantShredding": frozenset({"variantType"}),
    "coordinatedCommits-preview": frozenset({"inCommitTimestamp", "vacuumProtocolCheck"}),
    "catalogOwned-preview": frozenset({"inCommitTimestamp", "vacuumProtocolCheck"}),
}


def dependency_closure(features: Iterable[str]) -> set[str]:
    """``features`` and everything they require, transitively (Delta's ``getDependencyClosure``)."""
    out = set(features)
    pending = list(out)
    while pending:
        for needed in REQUIRED_FEATURES.get(pending.pop(), ()):
            if needed not in out:
                out.add(needed)
                pending.append(needed)
    return out


def _is_reader_writer(name: str) -> bool:
    info = FEATURES.get(name)
    return info is not None and info.reader_writer


def feature_versions(name: str) -> tuple[int, int]:
    """Delta's ``minReaderVersion`` / ``minWriterVersion`` of a feature: a legacy feature's
    versions; a table feature needs writer 7 and, when readers must know it, reader 3."""
    info = FEATURES.get(name)
    if info is not None and info.legacy_writer is not None:
        return info.legacy_reader or 1, info.legacy_writer
    return (3 if _is_reader_writer(name) else 1), 7


def min_required_versions(features: Iterable[str]) -> tuple[int, int]:
    """The lowest versions every feature of ``features`` allows (Delta's ``minimumRequiredVersions``)."""
    versions = [feature_versions(f) for f in features]
    return max((r for r, _ in versions), default=1), max((w for _, w in versions), default=1)


def implicit_features(protocol: Protocol) -> frozenset[str]:
    """The legacy features a legacy protocol's versions imply; none for a table-features one."""
    if protocol.min_writer_version >= 7:
        return frozenset()
    return frozenset(
        info.name
        for info in FEATURES.values()
        if info.legacy_writer is not None
        and protocol.min_reader_version >= (info.legacy_reader or 1)
        and protocol.min_writer_version >= info.legacy_writer
    )


def _listed(protocol: Protocol) -> frozenset[str]:
    return frozenset(protocol.reader_features or ()) | frozenset(protocol.writer_features or ())


def supported_features(protocol: Protocol) -> frozenset[str]:
    """Every feature ``protocol`` supports: listed or implied (``implicitlyAndExplicitlySupportedFeatures``)."""
    return _listed(protocol) | implicit_features(protocol)


def table_features_protocol(reader_version: int, features: Iterable[str]) -> Protocol:
    """Writer 7 listing ``features`` (all in ``writerFeatures``; the reader-writer ones also in
    ``readerFeatures`` when ``reader_version`` is 3)."""
    names = sorted(set(features))
    if reader_version >= 3:
        return Protocol(3, 7, tuple(f for f in names if _is_reader_writer(f)), tuple(names))
    return Protocol(reader_version, 7, None, tuple(names))


def normalized(protocol: Protocol) -> Protocol:
    """``protocol`` in its weakest form (Delta's ``denormalized.normalized``): the legacy
    versions when they imply exactly the supported features, else writer 7 with the lowest
    reader version. A legacy protocol with versions higher than its features need, such as
    ``(2, 3)``, comes out as ``(1, 3)``."""
    features = supported_features(protocol)
    reader, writer = min_required_versions(features)
    if writer < 7 and implicit_features(Protocol(reader, writer)) == features:
        return Protocol(reader, writer)
    return table_features_protocol(reader, features)


def merge(*protocols: Protocol) -> Protocol:
    """The protocol supporting every feature of ``protocols`` at versions at least theirs,
    normalized (Delta's ``Protocol.merge``)."""
    reader = max(p.min_reader_version for p in protocols)
    writer = max(p.min_writer_version for p in protocols)
    if writer < 7:
        return normalized(Protocol(min(reader, 2), writer))
    return normalized(table_features_protocol(reader, {f for p in protocols for f in supported_features(p)}))


def same_protocol(a: Protocol, b: Protocol) -> bool:
    """Whether two protocols are the same action (feature lists compared as sets)."""
    return (
        a.min_reader_version == b.min_reader_version
        and a.min_writer_version == b.min_writer_version
        and set(a.reader_features or ()) == set(b.reader_features or ())
        and set(a.writer_features or ()) == set(b.writer_features or ())
        and (a.reader_features is None) == (b.reader_features is None)
        and (a.writer_features is None) == (b.writer_features is None)
    )
