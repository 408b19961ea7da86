"""Which ``_delta_log`` files expired-log cleanup deletes: Delta Spark's
``BufferingLogDeletionIterator`` (``DeltaHistoryManager``), file for file.

The commits, checkpoints and ``.crc`` files are walked in name order (so version by
version, a version's checkpoint first). A file of a newer version whose modification time
is not after the previous file's counts as that time + 1 ms (the adjustment time travel
makes, :mod:`deltalog.txn.log.history`). Files are buffered between checkpoints: at each
complete, non-empty checkpoint the files buffered since the previous one are deleted when
the last of them is at or before the cutoff and of a version at most ``max_version``, and
kept otherwise. A checkpoint whose own time needs the adjustment is not such a boundary:
deleting the files before it would change the times (and so the time travel) of the
versions that remain. Files after the last boundary always stay.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from deltalog.logstores.base import FileStatus
from deltalog.txn.protocol.file_names import (
    CHECKPOINT_CLASSIC_RE,
    CHECKPOINT_MULTIPART_RE,
    CHECKPOINT_V2_RE,
    file_version,
)

__all__ = ["expired_log_files"]


@dataclass
class _Deletion:
    """The walk's state: what goes, what waits for the next checkpoint, the last file."""

    cutoff_ms: int
    max_version: int
    doomed: list[FileStatus] = field(default_factory=list)
    buffer: list[tuple[FileStatus, int, int]] = field(default_factory=list)  # file, version, time
    parts: dict[tuple[int, int], list[tuple[FileStatus, int, int]]] = field(default_factory=dict)
    last: tuple[int, int] | None = None  # version, time of the previous file

    def flush(self) -> None:
        """Delete the buffered files when the last of them has expired; empty the buffer."""
        if self.buffer:
            _, version, time = self.buffer[-1]
            if time <= self.cutoff_ms and version <= self.max_version:
                self.doomed.extend(status for status, _, _ in self.buffer)
        self.buffer.clear()

    def add(self, status: FileStatus, version: int) -> None:
        time = status.modification_time
        if self.last is not None and self.last[0] < version and self.last[1] >= time:
            time = self.last[1] + 1
            self.buffer.append((status, version, time))
        elif status.size > 0 and (total := _checkpoint_parts(status.name)) is not None:
            self._add_checkpoint(status, version, time, total)
        else:
            self.buffer.append((status, version, time))
        self.last = (version, time)

    def _add_checkpoint(self, status: FileStatus, version: int, time: int, total: int) -> None:
        group = self.parts.setdefault((version, total), [])
        group.append((status, version, time))
        if len(group) == total:  # complete: a boundary (parts of an incomplete one never go)
            self.flush()
            self.buffer.extend(self.parts.pop((version, total)))


def _checkpoint_parts(name: str) -> int | None:
    """The number of files of the checkpoint ``name`` belongs to, None if not a checkpoint."""
    if CHECKPOINT_CLASSIC_RE.match(name) or CHECKPOINT_V2_RE.match(name):
        return 1
    m = CHECKPOINT_MULTIPART_RE.match(name)
    return None if m is None else int(m.group(3))


def expired_log_files(listing: Iterable[FileStatus], cutoff_ms: int, max_version: int) -> list[FileStatus]:
    """The commits, checkpoints and ``.crc`` files of ``listing`` that
    cleanup deletes for the cutoff ``cutoff_ms`` when versions up to ``max_version`` may go
    (Delta: the version of ``_last_checkpoint`` - 1)."""
    walk = _Deletion(cutoff_ms, max_version)
    for status in sorted(listing, key=lambda s: s.name):  # a store may list out of order
        version = file_version(status.name)
        if version is not None:
            walk.add(status, version)
    return walk.doomed
