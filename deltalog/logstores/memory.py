"""The in-memory LogStore (``memory://``), shared by every user in one process.

It keeps files in fsspec's process-wide memory filesystem, so data files written
through :meth:`MemoryLogStore.filesystem` (Parquet, checkpoints) and log files written
through :meth:`MemoryLogStore.write` live side by side. Put-if-absent is a check and an
insert under one process-wide lock: CONDITIONAL_WRITE, and a file is visible only whole.
Meant for tests and examples; another process (a Spark executor) does not see it.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from deltalog.logstores.base import FileStatus, LogStore, MutualExclusion, StoreSemantics, split_uri
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["MemoryLogStore", "whole_file_memory_fs"]

_LOCK = threading.Lock()


def whole_file_memory_fs() -> Any:
    """fsspec's process-wide memory filesystem, publishing files whole and reading them
    privately (the ``memory://`` store's, and the ``fsspec`` store's for ``memory``)."""
    return _whole_file_memory_fs_class()()


@functools.cache
def _whole_file_memory_fs_class() -> type:
    """fsspec's memory filesystem (its process-wide store), with files published whole and
    read privately. fsspec puts a file being written into the store when it is opened (a
    partial file is listed and read, and a listing that measures it while it is written
    fails the writer with ``BufferError``), and hands every reader of a file the stored
    object itself (one position shared by all readers, each open moving it back to 0)."""
    from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

    class PendingFile(MemoryFile):  # type: ignore[misc]
        """A file being written: in the store once closed, whole (once: a close from the
        finalizer of a file deleted since must not bring it back)."""

        published = False

        def close(self) -> None:
            if not self.published:
                self.published = True
                self.commit()

    class WholeFileMemoryFileSystem(MemoryFileSystem):  # type: ignore[misc]
        def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
            path = self._strip_protocol(path)
            if mode in ("wb", "xb"):
                if mode == "xb" and path in self.store:
                    raise FileExistsError(path)
                if "data" in kwargs:  # pipe_file: whole already
                    return super()._open(path, mode, **kwargs)
                return PendingFile(self, path)
            if mode == "rb" and path in self.store:
                return MemoryFile(self, path, self.store[path].getvalue())
            return super()._open(path, mode, **kwargs)

    return WholeFileMemoryFileSystem


class MemoryLogStore(LogStore):
    """Delta log in process memory."""

    name = "memory"
    schemes = ("memory",)
    default_semantics = StoreSemantics(
        MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=False, consistent_listing=True
    )

    def fs_path(self, path: str) -> str:
        scheme, rest = split_uri(path)
        if scheme != "memory":
            raise LogStoreConfigError(f"not a memory:// URI: {path}")
        return "/" + rest.lstrip("/")

    def _uri(self, fs_path: str) -> str:
        return "memory://" + fs_path.lstrip("/")

    def read(self, path: str) -> Iterator[str]:
        key = self.fs_path(path)
        entry = whole_file_memory_fs().store.get(key)
        if entry is None:
            raise FileNotFoundError(path)
        text = bytes(entry.getbuffer()).decode("utf-8")
        # Only "\n" ends a line: str.splitlines() would also split on U+2028, U+0085, ...
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        return iter(line.removesuffix("\r") for line in lines)

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        key = self.fs_path(path)
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        fs = whole_file_memory_fs()
        with _LOCK:
            if not overwrite and key in fs.store:
                raise FileAlreadyExistsError(path)
            fs.pipe_file(key, data)

    def list_from(self, path: str) -> Iterator[FileStatus]:
        key = self.fs_path(path)
        directory, _, start = key.rpartition("/")
        prefix = directory + "/"
        start_key = start.encode("utf-8")
        found: list[tuple[bytes, FileStatus]] = []
        for name, entry in _items(whole_file_memory_fs().store):
            if not name.startswith(prefix):
                continue
            child = name[len(prefix) :]
            if "/" in child or child.encode("utf-8") < start_key:
                continue
            found.append((child.encode("utf-8"), FileStatus(self._uri(name), entry.size, _mtime_ms(entry))))
        found.sort(key=lambda item: item[0])
        return iter([status for _, status in found])

    def resolve_path(self, path: str) -> str:
        return self._uri(self.fs_path(path))

    def delete(self, path: str) -> None:
        with _LOCK:
            whole_file_memory_fs().store.pop(self.fs_path(path), None)

    def read_bytes(self, path: str) -> bytes:
        entry = whole_file_memory_fs().store.get(self.fs_path(path))
        if entry is None:
            raise FileNotFoundError(path)
        return bytes(entry.getbuffer())

    def filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs as pafs

        return pafs.PyFileSystem(pafs.FSSpecHandler(whole_file_memory_fs()))


def _items(store: dict[str, Any]) -> list[tuple[str, Any]]:
    """The store's entries at one moment. Data files written through :meth:`MemoryLogStore.filesystem`
    (pyarrow over fsspec) change the store without :data:`_LOCK`, and copying the entries can run
    other threads (a garbage collection calls Python code), so a copy that saw the store change
    size is taken again."""
    while True:
        with _LOCK:
            try:
                return list(store.items())
            except RuntimeError:  # "dictionary changed size during iteration"
                continue


def _mtime_ms(entry: Any) -> int:
    stamp = getattr(entry, "modified", None) or getattr(entry, "created", None)
    if stamp is None:
        return int(time.time() * 1000)
    if isinstance(stamp, (int, float)):
        return int(stamp * 1000)
    return int(stamp.timestamp() * 1000)
