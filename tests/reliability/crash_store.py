"""Test-only fault injection for the crash tests: a local store that kills its own process.

:class:`CrashingLocalLogStore` is a :class:`~deltalog.logstores.local.LocalLogStore` whose
process SIGKILLs itself at the N-th *crash point* (``DELTALOG_CRASH_AT=N``, or the
``crash_at`` argument). Crash points are counted before and after every step that
changes the disk: ``os.fsync``, ``os.link``, ``os.replace``, ``os.rename`` and
``os.unlink`` (the local store's temp-file + hard-link publish, ``_last_checkpoint``,
log cleanup), and every write, close, move and delete that goes through the store's
pyarrow filesystem (checkpoint Parquet files, which may be cut off half-written).

Killing the process is the fault: nothing is simulated after it. The hooks patch the
``os`` functions of the process they are installed in, so install them only in a
throwaway writer process (see ``crash_worker.py``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from deltalog.logstores.local import LocalLogStore

ENV_CRASH_AT = "DELTALOG_CRASH_AT"

__all__ = ["ENV_CRASH_AT", "CrashPoints", "CrashingLocalLogStore", "install_os_hooks"]


class CrashPoints:
    """Counts crash points; at number ``crash_at`` the process SIGKILLs itself."""

    def __init__(self, crash_at: int | None) -> None:
        self.crash_at = crash_at
        self.count = 0
        self.last = ""

    def hit(self, name: str) -> None:
        self.count += 1
        self.last = name
        if self.crash_at is not None and self.count == self.crash_at:
            os.kill(os.getpid(), signal.SIGKILL)


POINTS = CrashPoints(int(os.environ[ENV_CRASH_AT]) if os.environ.get(ENV_CRASH_AT) else None)
_HOOKED = ("fsync", "link", "replace", "rename", "unlink")


def install_os_hooks(points: CrashPoints) -> None:
    """Count a crash point before and after each disk-changing ``os`` call of this process."""
    for name in _HOOKED:
        original = getattr(os, name)
        if getattr(original, "__crash_hook__", False):
            original = original.__wrapped__

        def make(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
            def hooked(*args: Any, **kwargs: Any) -> Any:
                points.hit(f"before {label}")
                result = fn(*args, **kwargs)
                points.hit(f"after {label}")
                return result

            hooked.__crash_hook__ = True  # type: ignore[attr-defined]
            hooked.__wrapped__ = fn  # type: ignore[attr-defined]
            return hooked

        setattr(os, name, make(original, name))


class _CrashingStream:
    """A file object for ``pa.PythonFile``: crash points around its writes."""

    #: pyarrow writes a Parquet file in hundreds of small pieces: a crash point at the
    #: first piece and then at every EVERY-th keeps the count of points manageable.
    EVERY = 64

    def __init__(self, inner: pa.NativeFile, points: CrashPoints) -> None:
        self.inner = inner
        self.points = points
        self.closed = False
        self.writes = 0

    def write(self, data: bytes) -> int:
        counted = self.writes % self.EVERY == 0
        self.writes += 1
        if counted:
            self.points.hit("before parquet write")
        self.inner.write(data)
        if counted:
            self.points.hit("after parquet write")
        return len(data)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        if not self.closed:
            self.points.hit("before parquet close")
            self.inner.close()
            self.closed = True

    def tell(self) -> int:
        return int(self.inner.tell())

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False


class _CrashingHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """Delegates to the local pyarrow filesystem, with crash points on every change."""

    def __init__(self, points: CrashPoints) -> None:
        self.fs = pafs.LocalFileSystem()
        self.points = points

    def get_type_name(self) -> str:
        return "crashing-local"

    def normalize_path(self, path: str) -> str:
        return path

    def equals(self, other: Any) -> bool:
        return isinstance(other, _CrashingHandler)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return list(self.fs.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return list(self.fs.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.points.hit("before delete_dir")
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.points.hit("before delete_dir_contents")
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("refusing to delete the root directory")

    def delete_file(self, path: str) -> None:
        self.points.hit("before delete_file")
        self.fs.delete_file(path)
        self.points.hit("after delete_file")

    def move(self, src: str, dest: str) -> None:
        self.points.hit("before move")
        self.fs.move(src, dest)
        self.points.hit("after move")

    def copy_file(self, src: str, dest: str) -> None:
        self.points.hit("before copy")
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        self.points.hit("before open_output_stream")
        inner = self.fs.open_output_stream(path)
        return pa.PythonFile(_CrashingStream(inner, self.points), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        inner = self.fs.open_append_stream(path)
        return pa.PythonFile(_CrashingStream(inner, self.points), mode="w")


class CrashingLocalLogStore(LocalLogStore):
    """The local store, plus crash points (see the module docstring)."""

    name = "crashing-local"

    def __init__(self, options: Any = None, points: CrashPoints | None = None) -> None:
        super().__init__(options)
        self.points = points if points is not None else POINTS

    def filesystem(self) -> pafs.FileSystem:
        return pafs.PyFileSystem(_CrashingHandler(self.points))
