"""Stores that each lack one thing a real store offers: shared by the kit's fault tests
and the checkpoint tests.

Each wraps the in-memory store, whose files live in one process-wide dict, so a test can
write with the faulty store and look at the result with a plain one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow.fs as pafs

from deltalog.logstores.base import FileStatus, MutualExclusion, StoreSemantics
from deltalog.logstores.memory import MemoryLogStore, whole_file_memory_fs

__all__ = [
    "NO_MOVE_MESSAGE",
    "PAGE",
    "DroppingPagesStore",
    "FilesystemShowsPartialFilesStore",
    "NoRenameObjectStore",
    "NoRenameVisibleStore",
    "PartialWritesDeclaredStore",
    "RepeatingPagesStore",
    "SharedReadPositionStore",
]

#: What pyarrow's AzureFileSystem answers on a Blob account without hierarchical namespace.
NO_MOVE_MESSAGE = (
    "FileSystem::Move() is not implemented for Azure Storage accounts without Hierarchical Namespace support"
)
#: The page size of S3's ListObjectsV2, Azure's List Blobs and GCS's objects.list.
PAGE = 1000


class _NoMoveHandler(pafs.FSSpecHandler):
    def move(self, src: str, dest: str) -> None:
        raise NotImplementedError(NO_MOVE_MESSAGE)


class NoRenameObjectStore(MemoryLogStore):
    """An object store as Azure Blob without hierarchical namespace is: an object is
    visible only once its upload completes (``atomic_file_writes``), and the data
    filesystem has no move/rename."""

    atomic_file_writes: ClassVar[bool] = True

    def filesystem(self) -> pafs.FileSystem:
        return pafs.PyFileSystem(_NoMoveHandler(whole_file_memory_fs()))


class _PagedStore(MemoryLogStore):
    """Lists in pages of :data:`PAGE` names, as an object store does; a subclass breaks
    the page boundaries."""

    def _pages(self, statuses: list[FileStatus]) -> Iterator[list[FileStatus]]:
        for start in range(0, len(statuses), PAGE):
            yield statuses[start : start + PAGE]

    def _join(self, pages: Iterator[list[FileStatus]]) -> Iterator[FileStatus]:
        for page in pages:
            yield from page

    def list_from(self, path: str) -> Iterator[FileStatus]:
        return self._join(self._pages(list(super().list_from(path))))


class DroppingPagesStore(_PagedStore):
    """Loses every page after the first (a continuation token never followed)."""

    def _join(self, pages: Iterator[list[FileStatus]]) -> Iterator[FileStatus]:
        yield from next(pages, [])


class RepeatingPagesStore(_PagedStore):
    """Repeats the last key of each page at the start of the next one (a continuation
    that restarts at, not after, the last key)."""

    def _join(self, pages: Iterator[list[FileStatus]]) -> Iterator[FileStatus]:
        last: Any = None
        for page in pages:
            if last is not None:
                yield last
            yield from page
            last = page[-1] if page else None


def _showing_memory_fs() -> Any:
    """fsspec's own memory filesystem over the memory store's files: it stores a file when
    it is opened for writing, so a file shows while it is written."""
    from fsspec.implementations.memory import MemoryFileSystem

    return MemoryFileSystem()


class NoRenameVisibleStore(MemoryLogStore):
    """A store whose data filesystem shows a file while it is written (as local disk does,
    ``atomic_file_writes`` false) and has no move/rename: checkpoints cannot be written
    there, by temp file and rename or otherwise."""

    def filesystem(self) -> pafs.FileSystem:
        return pafs.PyFileSystem(_NoMoveHandler(_showing_memory_fs()))


class SharedReadPositionStore(MemoryLogStore):
    """Its data filesystem hands every reader of a file the same stream (fsspec's memory
    filesystem does): opening the file again moves the position of those reading it."""

    def filesystem(self) -> pafs.FileSystem:
        return pafs.PyFileSystem(pafs.FSSpecHandler(_showing_memory_fs()))


class FilesystemShowsPartialFilesStore(MemoryLogStore):
    """Declares its data filesystem's writes atomic, as an object store does (so the engine
    writes checkpoints in place), but that filesystem shows a file while it is written."""

    atomic_file_writes: ClassVar[bool] = True

    def filesystem(self) -> pafs.FileSystem:
        return pafs.PyFileSystem(pafs.FSSpecHandler(_showing_memory_fs()))


class PartialWritesDeclaredStore(MemoryLogStore):
    """Declares honestly that partial writes are visible."""

    default_semantics = StoreSemantics(MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=True)
