"""The local-disk LogStore (``file://`` URIs and plain paths).

A log file is written to a temp file in the same directory, flushed and fsynced, then
published with :func:`os.link`, which fails when the target exists. So the store needs no
lock (CONDITIONAL_WRITE) and a reader never sees a partial file. The directory is fsynced
after the link so that an acknowledged commit survives a power loss.
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from deltalog.logstores.base import FileStatus, LogStore, MutualExclusion, StoreSemantics, split_uri
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError, LogStoreError

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["LocalLogStore", "local_path"]

TEMP_PREFIX = "."
TEMP_SUFFIX = ".tmp"


def local_path(uri: str) -> str:
    """The absolute local path of a ``file://`` URI or a plain path.

    Store paths are raw strings, as Hadoop ``Path`` strings are: ``file:///tmp/a b``
    names the directory ``/tmp/a b`` and nothing is percent-decoded here. (The URI
    encoding of ``add``/``remove`` paths inside the log is the log layer's business.)
    """
    scheme, rest = split_uri(uri)
    if scheme not in ("", "file"):
        raise LogStoreConfigError(f"not a local path: {uri}")
    if scheme == "file":
        if rest.startswith("//"):  # file:////x is unusual but legal
            rest = rest[1:]
        elif not rest.startswith("/"):
            host, _, tail = rest.partition("/")
            if host not in ("", "localhost"):
                raise LogStoreConfigError(f"file URIs with a host are not supported: {uri}")
            rest = "/" + tail
    return os.path.abspath(os.path.expanduser(rest))


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class LocalLogStore(LogStore):
    """Delta log on a local (POSIX) filesystem."""

    name = "local"
    schemes = ("file",)
    default_semantics = StoreSemantics(
        MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=False, consistent_listing=True
    )

    def read(self, path: str) -> Iterator[str]:
        local = local_path(path)
        handle = open(local, encoding="utf-8", newline="")  # raises FileNotFoundError

        def lines() -> Iterator[str]:
            with handle:
                for line in handle:
                    yield line.rstrip("\r\n")

        return lines()

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        self._write(path, lines, overwrite, durable=True)

    def write_auxiliary(self, path: str, lines: Iterable[str]) -> None:
        # a checksum lost or emptied by a crash is ignored by readers: no fsync for it
        # (a subclass that replaces ``write`` keeps its own way of writing)
        if type(self).write is not LocalLogStore.write:
            self.write(path, lines, overwrite=False)
            return
        self._write(path, lines, False, durable=False)

    def _write(self, path: str, lines: Iterable[str], overwrite: bool, durable: bool) -> None:
        target = local_path(path)
        directory = os.path.dirname(target)
        if not overwrite and os.path.lexists(target):
            raise FileAlreadyExistsError(path)
        os.makedirs(directory, exist_ok=True)
        temp = os.path.join(directory, f"{TEMP_PREFIX}{os.path.basename(target)}.{uuid.uuid4().hex}{TEMP_SUFFIX}")
        try:
            with open(temp, "xb") as handle:
                buffer: list[bytes] = []
                size = 0
                for line in lines:
                    encoded = line.encode("utf-8") + b"\n"
                    buffer.append(encoded)
                    size += len(encoded)
                    if size >= 1 << 20:
                        handle.write(b"".join(buffer))
                        buffer.clear()
                        size = 0
                handle.write(b"".join(buffer))
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
            if overwrite:
                os.replace(temp, target)
            else:
                try:
                    os.link(temp, target)
                except FileExistsError:
                    raise FileAlreadyExistsError(path) from None
                except OSError as exc:
                    if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                        raise LogStoreError(
                            f"the filesystem under {directory} does not support hard links, "
                            "which the local LogStore needs for put-if-absent; use a store "
                            "with a lock instead (fsspec+file:// with lock=redis://...)"
                        ) from exc
                    raise
            if durable:
                _fsync_dir(directory)
        finally:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass

    def list_from(self, path: str) -> Iterator[FileStatus]:
        local = local_path(path)
        directory, start = os.path.split(local)
        start_key = start.encode("utf-8")
        scheme, _ = split_uri(path)
        prefix = self._uri_prefix(directory, scheme)
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return iter(())
        found: list[tuple[bytes, FileStatus]] = []
        for entry in entries:
            key = entry.name.encode("utf-8", "surrogateescape")
            if key < start_key:
                continue
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:
                continue
            found.append((key, FileStatus(prefix + entry.name, st.st_size, st.st_mtime_ns // 1_000_000)))
        found.sort(key=lambda item: item[0])
        return iter([status for _, status in found])

    @staticmethod
    def _uri_prefix(directory: str, scheme: str) -> str:
        base = directory.rstrip(os.sep) + os.sep
        return "file://" + base if scheme == "file" else base

    def resolve_path(self, path: str) -> str:
        return "file://" + local_path(path)

    def delete(self, path: str) -> None:
        try:
            os.unlink(local_path(path))
        except FileNotFoundError:
            pass

    def read_bytes(self, path: str) -> bytes:
        with open(local_path(path), "rb") as handle:
            return handle.read()

    def filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs as pafs

        return pafs.LocalFileSystem()

    def fs_path(self, path: str) -> str:
        return local_path(path)
