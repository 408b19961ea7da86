"""How much one micro-batch of the streaming source takes: Delta's ``AdmissionLimits``
(``maxFilesPerTrigger``, ``maxBytesPerTrigger``) over the stream's indexed files.

The initial snapshot and the commits of a plain stream are admitted file by file. In the
change feed (Delta's ``IndexedChangeFileSeq.filterFiles``) a commit with ``cdc`` files, or
with deletion vectors, is admitted whole (its pre- and post-images, or its remove and re-add
of one file, never straddle two batches), and a commit of plain adds and removes file by
file, so it may span batches; a batch enters a next commit only while capacity remains.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.contrib.spark.changes import merge_changed_nothing
from deltalog.contrib.spark.reads import FileToRead
from deltalog.txn.protocol.actions import AddCDCFile, AddFile, CommitInfo, RemoveFile

__all__ = [
    "BASE_INDEX",
    "END_INDEX",
    "METADATA_CHANGE_INDEX",
    "POST_METADATA_CHANGE_INDEX",
    "AdmissionLimits",
    "IndexedFile",
    "WholeCommit",
    "excluded_paths",
    "whole_commit",
]

#: the index before every file of a version (Delta's ``BASE_INDEX``: -100 in memory, so that
#: it sorts before the metadata-change indices, serialised as -1 with ``sourceVersion`` 1)
BASE_INDEX = -100
#: with ``schemaTrackingLocation``: the barrier of a commit that changes the schema (Delta's
#: ``METADATA_CHANGE_INDEX``), and the offset right after it (``POST_METADATA_CHANGE_INDEX``);
#: offsets at these indices are serialised with ``sourceVersion`` 3
METADATA_CHANGE_INDEX = -20
POST_METADATA_CHANGE_INDEX = -19
#: the index after every file of a version; never an offset (Delta's ``END_INDEX``)
END_INDEX = sys.maxsize - 100


@dataclass(frozen=True)
class WholeCommit:
    """A change-feed commit admitted whole, with what Delta's ``admit(Seq[AdmittableFile])``
    counts for it: its ``cdc`` files, or its adds and removes (deletion vectors), whose
    ``bytes`` are their sizes."""

    files: int
    bytes: int
    #: Delta counts the commit's placeholders (its base and end) as files too: a commit with
    #: deletion vectors, whose placeholders Delta keeps in the admitted sequence
    counts_placeholders: bool = False


@dataclass(frozen=True)
class IndexedFile:
    """One position of the stream: a file to read of ``version`` at ``index`` (an ``add``,
    or in the change feed a change file), or a placeholder."""

    version: int
    index: int
    file: FileToRead | None = None
    #: set on every position of a change-feed commit admitted whole (None: file by file)
    whole: WholeCommit | None = None


def excluded_paths(regex: str | None) -> Callable[[str], object] | None:
    """``excludeRegex`` as a test on a file's path (None without the option)."""
    return re.compile(regex).search if regex else None


def whole_commit(actions: Sequence[Any], excluded: Callable[[str], object] | None = None) -> WholeCommit | None:
    """How Delta's CDC source admits a commit: whole when it has ``cdc`` files or deletion
    vectors (files ``excludeRegex`` matches are not counted), else file by file (None)."""
    cdcs = [a for a in actions if isinstance(a, AddCDCFile) and not (excluded and excluded(a.path))]
    if any(isinstance(a, AddCDCFile) for a in actions):
        return WholeCommit(len(cdcs), sum(c.size for c in cdcs))
    changes = [a for a in actions if isinstance(a, (AddFile, RemoveFile)) and a.data_change]
    info = next((a for a in actions if isinstance(a, CommitInfo)), None)
    if not any(a.deletion_vector is not None for a in changes) or (info and merge_changed_nothing(info)):
        return None
    kept = [a for a in changes if not (excluded and excluded(a.path))]
    return WholeCommit(len(kept), sum(a.size or 0 for a in kept), counts_placeholders=True)


class AdmissionLimits:
    """How much one batch may take (Delta's ``AdmissionLimits``). Placeholders are always
    admitted; a file is admitted while capacity remains before it, so a batch holds at
    least one file even when that file alone is over ``maxBytesPerTrigger``."""

    def __init__(self, max_files: int | None, max_bytes: int | None, change_feed: bool = False) -> None:
        self.files = sys.maxsize if max_files is None else max_files
        self.bytes = sys.maxsize if max_bytes is None else max_bytes
        #: the change feed's rules (Delta's CDC source): whole commits, capacity checked per commit
        self.change_feed = change_feed
        #: whether this batch took anything yet, placeholders included (Delta's ``commitProcessedInBatch``)
        self.started = False

    @property
    def has_capacity(self) -> bool:
        return self.files > 0 and self.bytes > 0

    def admit(self, item: IndexedFile) -> bool:
        self.started = True
        if item.file is None:
            return True
        admitted = self.has_capacity
        self.files -= 1
        self.bytes -= item.file.size
        return admitted

    def admit_commit(self, commit: WholeCommit, items: list[IndexedFile]) -> bool:
        """A commit admitted whole: always as what a batch takes first, else only when all
        of it fits (Delta's ``admit(Seq[AdmittableFile])``)."""
        files = commit.files + (sum(1 for i in items if i.file is None) if commit.counts_placeholders else 0)
        if files == 0:
            return True
        admitted = not self.started or (self.files >= files and self.bytes >= commit.bytes)
        self.started = True
        self.files -= files
        self.bytes -= commit.bytes
        return admitted

    def filter(self, items: Iterator[IndexedFile]) -> Iterator[IndexedFile]:
        """The items of one batch. In the change feed a batch enters a commit only while
        capacity remains (Delta's ``takeWhile(hasCapacity)`` over the commits), and a commit
        admitted whole is held back until its end placeholder."""
        pending: list[IndexedFile] = []
        version: int | None = None
        for item in items:
            if self.change_feed and item.version != version:
                if version is not None and not self.has_capacity:
                    return
                version = item.version
            if item.whole is None:
                if not self.admit(item):
                    return
                yield item
                continue
            pending.append(item)
            if item.index == END_INDEX:
                if not self.admit_commit(item.whole, pending):
                    return
                yield from pending
                pending = []
        if pending and pending[-1].whole is not None and self.admit_commit(pending[-1].whole, pending):
            yield from pending
