"""A ``_delta_log`` listing sorted by kind, and the *log segment* of a snapshot: the newest
complete checkpoint at or before a version plus the contiguous commits after it.

The file names themselves are built and recognised in
:mod:`deltalog.txn.protocol.file_names`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from deltalog.logstores.base import FileStatus
from deltalog.txn.protocol.errors import InvalidTableStateError, NonContiguousVersionsError, VersionNotFoundError
from deltalog.txn.protocol.file_names import (
    CHECKPOINT_CLASSIC_RE,
    CHECKPOINT_MULTIPART_RE,
    CHECKPOINT_V2_RE,
    CHECKSUM_RE,
    DELTA_FILE_RE,
)

__all__ = [
    "CheckpointInstance",
    "LogListing",
    "LogSegment",
    "build_segment",
    "parse_listing",
]

# Order of checkpoint formats at one version (Delta's CheckpointInstance.Format).
KIND_RANK = {"classic": 0, "multipart": 1, "v2": 2}


@dataclass(frozen=True)
class CheckpointInstance:
    """One checkpoint: its version, kind (classic, multipart, v2) and files."""

    version: int
    kind: str
    num_parts: int
    files: tuple[FileStatus, ...]

    @property
    def complete(self) -> bool:
        return len(self.files) == self.num_parts and all(f.size > 0 for f in self.files)

    def sort_key(self) -> tuple[int, int, int, str]:
        return (self.version, KIND_RANK[self.kind], self.num_parts, self.files[0].name if self.files else "")

    @property
    def modification_time(self) -> int:
        return max(f.modification_time for f in self.files)


@dataclass
class LogListing:
    """What a listing of ``_delta_log`` found, by version."""

    commits: dict[int, FileStatus] = field(default_factory=dict)
    checkpoints: list[CheckpointInstance] = field(default_factory=list)
    crcs: dict[int, FileStatus] = field(default_factory=dict)
    others: list[FileStatus] = field(default_factory=list)

    @property
    def max_version(self) -> int:
        versions = list(self.commits)
        versions += [c.version for c in self.checkpoints if c.complete]
        return max(versions, default=-1)

    def complete_checkpoints(self, at_or_before: int | None = None) -> list[CheckpointInstance]:
        found = [c for c in self.checkpoints if c.complete and (at_or_before is None or c.version <= at_or_before)]
        return sorted(found, key=CheckpointInstance.sort_key)


def parse_listing(statuses: Iterable[FileStatus]) -> LogListing:
    """Sort a ``_delta_log`` listing into commits, checkpoints (grouped) and the rest."""
    listing = LogListing()
    parts: dict[tuple[int, int], list[FileStatus]] = {}
    for status in statuses:
        name = status.name
        if (m := DELTA_FILE_RE.match(name)) is not None:
            listing.commits[int(m.group(1))] = status
        elif (m := CHECKPOINT_CLASSIC_RE.match(name)) is not None:
            listing.checkpoints.append(CheckpointInstance(int(m.group(1)), "classic", 1, (status,)))
        elif (m := CHECKPOINT_MULTIPART_RE.match(name)) is not None:
            parts.setdefault((int(m.group(1)), int(m.group(3))), []).append(status)
        elif (m := CHECKPOINT_V2_RE.match(name)) is not None:
            listing.checkpoints.append(CheckpointInstance(int(m.group(1)), "v2", 1, (status,)))
        elif (m := CHECKSUM_RE.match(name)) is not None:
            listing.crcs[int(m.group(1))] = status
        else:
            listing.others.append(status)
    for (version, total), files in parts.items():
        # keep one file per part number (a listing never repeats a name, but be strict)
        by_part: dict[int, FileStatus] = {}
        for f in files:
            m = CHECKPOINT_MULTIPART_RE.match(f.name)
            assert m is not None
            part = int(m.group(2))
            if 1 <= part <= total:
                by_part[part] = f
        ordered = tuple(by_part[p] for p in sorted(by_part))
        listing.checkpoints.append(CheckpointInstance(version, "multipart", total, ordered))
    return listing


@dataclass(frozen=True)
class LogSegment:
    """The files that make up the snapshot at ``version``."""

    log_uri: str
    version: int
    checkpoint: CheckpointInstance | None
    commits: tuple[FileStatus, ...]  # versions checkpoint+1 .. version, contiguous
    checksum: FileStatus | None = None  # ``version``'s ``.crc`` when listed

    @property
    def checkpoint_version(self) -> int | None:
        return None if self.checkpoint is None else self.checkpoint.version

    @property
    def commit_versions(self) -> list[int]:
        return [int(f.name[:20]) for f in self.commits]


_NEWEST = object()


def build_segment(
    log_uri: str, listing: LogListing, version: int | None = None, *, checkpoint: object = _NEWEST
) -> LogSegment:
    """The segment for ``version`` (latest when None) from a listing, on the newest complete
    checkpoint at or before it -- or on ``checkpoint`` when given (``None``: the commits
    from version 0).

    Raises :class:`VersionNotFoundError` when the version is newer than the log or older
    than what it can reconstruct, and :class:`NonContiguousVersionsError` on a gap.
    """
    latest = listing.max_version
    target = latest if version is None else version
    if version is not None and version > latest:
        first = 0 if 0 in listing.commits else min((c.version for c in listing.complete_checkpoints()), default=0)
        raise VersionNotFoundError(
            f"DELTA_VERSION_NOT_FOUND: cannot time travel to version {version} of {log_uri}: "
            f"the latest version is {latest} (available versions: [{first}, {latest}])",
            version=version,
            earliest=first,
            latest=latest,
        )
    if target < 0:
        raise VersionNotFoundError(f"version {target} does not exist in {log_uri}", version=target)
    if checkpoint is _NEWEST:
        candidates = listing.complete_checkpoints(target)
        base = candidates[-1] if candidates else None
    else:
        assert checkpoint is None or isinstance(checkpoint, CheckpointInstance)
        base = checkpoint
    start = 0 if base is None else base.version + 1
    if base is None and 0 not in listing.commits:
        earliest = min((c.version for c in listing.complete_checkpoints()), default=None)
        if earliest is not None and target < earliest:
            raise VersionNotFoundError(
                f"DELTA_VERSION_NOT_FOUND: cannot reconstruct version {target} of {log_uri}: its commits were "
                "cleaned up; "
                f"the earliest reconstructable version is {earliest}",
                version=target,
                earliest=earliest,
                latest=latest,
            )
        raise NonContiguousVersionsError(log_uri, sorted(listing.commits), 0)
    wanted = range(start, target + 1)
    missing = [v for v in wanted if v not in listing.commits]
    if missing:
        raise NonContiguousVersionsError(log_uri, sorted(v for v in listing.commits if v <= target), missing[0])
    if not any(v <= target for v in listing.commits):
        # Delta's getLogSegmentForVersion: a checkpoint alone is no table; cleanup always
        # keeps the commit of the checkpoint's version
        raise InvalidTableStateError(
            f"could not find any delta files for version {target} in {log_uri}: only a checkpoint is left "
            "(as Delta, a table needs its commit files; restore them)"
        )
    return LogSegment(log_uri, target, base, tuple(listing.commits[v] for v in wanted), listing.crcs.get(target))
