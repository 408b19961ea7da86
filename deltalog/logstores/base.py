"""The LogStore contract.

A :class:`LogStore` reads and writes the files of a Delta table's ``_delta_log`` with
the same three guarantees as Delta's ``io.delta.storage.LogStore``:

1. **Atomic visibility**: when :meth:`LogStore.is_partial_write_visible` is false, a
   file written with :meth:`LogStore.write` is seen whole or not at all.
2. **Mutual exclusion**: of several writers creating the same file with
   ``overwrite=False`` exactly one succeeds; the others get
   :class:`~deltalog.logstores.errors.FileAlreadyExistsError` -- unless the store
   declares ``MutualExclusion.NONE``, in which case the transaction engine must
   serialize writers with a lock.
3. **Consistent listing**: once a write has returned, every later
   :meth:`LogStore.list_from` includes the file.

Beyond the methods, each store *declares its semantics* (:class:`StoreSemantics`) so the
engine can choose a commit-lock strategy, and hands out a pyarrow filesystem for data
files that can be rebuilt in another process from the picklable :class:`LogStoreSpec`.
"""

from __future__ import annotations

import enum
import importlib
import io
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from deltalog.logstores.options import StorageOptions

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.fs

__all__ = [
    "FileStatus",
    "LogStore",
    "LogStoreSpec",
    "MutualExclusion",
    "StoreSemantics",
    "arrow_threads_allowed",
    "split_uri",
]


class MutualExclusion(enum.Enum):
    """How a store makes sure only one writer creates a given log file."""

    CONDITIONAL_WRITE = "conditional_write"
    """Put-if-absent: S3/Azure ``If-None-Match: *``, GCS ``ifGenerationMatch=0``,
    a local hard link or ``O_EXCL``."""

    ATOMIC_RENAME = "atomic_rename"
    """A rename that fails when the target exists (HDFS, ADLS Gen2)."""

    NONE = "none"
    """A plain put: something outside the store must serialize writers."""


@dataclass(frozen=True)
class StoreSemantics:
    """What a store guarantees, as data the transaction engine reads."""

    mutual_exclusion: MutualExclusion
    partial_write_visible: bool
    consistent_listing: bool = True

    def describe(self) -> str:
        parts = [self.mutual_exclusion.name]
        parts.append("partial writes visible" if self.partial_write_visible else "atomic visibility")
        parts.append("consistent listing" if self.consistent_listing else "eventual listing")
        return ", ".join(parts)


@dataclass(frozen=True, order=True)
class FileStatus:
    """One entry of a listing. ``modification_time`` is in milliseconds since the epoch."""

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]


def split_uri(uri: str) -> tuple[str, str]:
    """Split ``scheme://rest`` into ``(scheme, rest)``; a plain path has scheme ``""``.

    Windows drive letters (``C:\\x``) and single-letter "schemes" count as plain paths.
    """
    head, sep, rest = uri.partition("://")
    if sep and head and len(head) > 1 and all(c.isalnum() or c in "+-." for c in head):
        return head.lower(), rest
    if uri.startswith("file:") and not uri.startswith("file://"):
        return "file", uri[len("file:") :]
    return "", uri


def arrow_threads_allowed(fs: pyarrow.fs.FileSystem) -> bool:
    """Whether pyarrow may read through ``fs`` on its own threads.

    Not for a Python-backed filesystem (``PyFileSystem``: the memory and fsspec stores):
    its calls serialize on the GIL anyway, and with pyarrow 26 a threaded read through one
    can abort the process at interpreter exit ("terminate called without an active
    exception")."""
    import pyarrow.fs as pafs

    return not isinstance(fs, pafs.PyFileSystem)


@dataclass(frozen=True)
class LogStoreSpec:
    """Picklable recipe for a store: ``impl`` is ``"package.module:Class"``.

    Executors and worker processes call :meth:`build` to get an equivalent store.
    """

    impl: str
    options: StorageOptions = field(default_factory=StorageOptions)

    def build(self) -> LogStore:
        module_name, _, class_name = self.impl.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        store = cls(self.options)
        if not isinstance(store, LogStore):
            raise TypeError(f"{self.impl} is not a LogStore")
        return store


class LogStore(ABC):
    """Base class of every storage backend.

    A subclass sets the class attributes, implements the five abstract methods and,
    if its data files do not live on the local disk, :meth:`filesystem` and
    :meth:`fs_path`. Paths are full URIs as the table was opened with
    (``s3://bucket/t/_delta_log/00000000000000000000.json``) or plain local paths.
    """

    #: Short name, shown in ``deltalog stores`` and usable as ``logstore=<name>``.
    name: ClassVar[str] = ""
    #: URI schemes this store serves by default.
    schemes: ClassVar[tuple[str, ...]] = ()
    #: Scheme prefixes this store serves (``fsspec+`` serves ``fsspec+sftp``, ...), matched
    #: when no store names the exact scheme.
    scheme_prefixes: ClassVar[tuple[str, ...]] = ()
    #: The pip extra that installs its dependencies (``deltalog[<extra>]``).
    extra: ClassVar[str | None] = None
    #: Modules that must be importable for the store to work.
    requires: ClassVar[tuple[str, ...]] = ()
    #: Whether a file written through :meth:`open_output_stream` becomes visible only once
    #: complete, as an object-store PUT does. Local files are visible while they are
    #: written, so checkpoints and other whole files written through the data filesystem
    #: go through a temp name and a rename unless this is true.
    atomic_file_writes: ClassVar[bool] = False
    #: What the store guarantees. Stores whose guarantees depend on configuration
    #: override the :attr:`semantics` property instead.
    default_semantics: ClassVar[StoreSemantics] = StoreSemantics(MutualExclusion.NONE, partial_write_visible=True)

    def __init__(self, options: Mapping[str, object] | None = None) -> None:
        self.options = options if isinstance(options, StorageOptions) else StorageOptions(options)

    # -- semantics -----------------------------------------------------------------

    @property
    def semantics(self) -> StoreSemantics:
        return self.default_semantics

    def is_partial_write_visible(self, path: str) -> bool:
        """Whether a reader can observe a half-written file at ``path``."""
        return self.semantics.partial_write_visible

    def needs_temp_file_for(self, path: str) -> bool:
        """Whether a whole file written through :meth:`filesystem` at ``path`` (a
        checkpoint, a sidecar) must go through a temp name and a rename to be seen only
        whole: when partial writes are visible, or when the data filesystem's output
        streams are not atomic (local disk, memory)."""
        return self.is_partial_write_visible(path) or not self.atomic_file_writes

    # -- the contract ----------------------------------------------------------------

    @abstractmethod
    def read(self, path: str) -> Iterator[str]:
        """The lines of the file, line breaks removed.

        Raises :class:`FileNotFoundError` when the file does not exist.
        """

    @abstractmethod
    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        """Write ``lines`` (each followed by ``\\n``, UTF-8) to ``path``, all or nothing.

        With ``overwrite=False`` raises
        :class:`~deltalog.logstores.errors.FileAlreadyExistsError` when ``path``
        exists; that is the mutual-exclusion point of a commit. A failed write leaves
        no visible partial file when partial writes are declared invisible.
        """

    @abstractmethod
    def list_from(self, path: str) -> Iterator[FileStatus]:
        """Files in ``path``'s directory whose names sort >= its name, sorted by name.

        Names compare as UTF-8 byte strings. A directory that does not exist lists as
        empty (object stores have no directories; Delta's Hadoop stores raise instead).
        """

    @abstractmethod
    def resolve_path(self, path: str) -> str:
        """The fully qualified form of ``path`` (scheme, absolute path)."""

    # -- beyond Delta's contract: what the engine needs for cleanup and data files -------

    def write_auxiliary(self, path: str, lines: Iterable[str]) -> None:
        """Write a log file that readers do without when it is missing, empty or unreadable
        (the version checksum ``N.crc``), never overwriting: as :meth:`write` with
        ``overwrite=False``, except that a store may skip work that only makes the file
        survive a crash (the local store does not ``fsync`` it)."""
        self.write(path, lines, overwrite=False)

    def delete(self, path: str) -> None:
        """Delete one file; a missing file is not an error."""
        import pyarrow.fs as pafs

        fs = self.filesystem()
        try:
            fs.delete_file(self.fs_path(path))
        except FileNotFoundError:
            return
        except OSError:
            if fs.get_file_info(self.fs_path(path)).type == pafs.FileType.NotFound:
                return
            raise

    def read_bytes(self, path: str) -> bytes:
        """The whole file as bytes (checkpoints, deletion vectors)."""
        fs = self.filesystem()
        with fs.open_input_stream(self.fs_path(path)) as stream:
            data: bytes = stream.read()
            return data

    @abstractmethod
    def filesystem(self) -> pyarrow.fs.FileSystem:
        """A pyarrow filesystem for the table's data files and checkpoints."""

    @abstractmethod
    def fs_path(self, path: str) -> str:
        """The path of URI ``path`` inside :meth:`filesystem`."""

    def open_output_stream(self, path: str) -> pyarrow.NativeFile | io.IOBase:
        """A stream writing the file at URI ``path`` (a checkpoint part, a sidecar). Where
        :attr:`atomic_file_writes` is true the engine writes such a file in place and
        relies on it appearing whole, when the stream closes; a store whose data
        filesystem shows a file earlier overrides this. Default: the data filesystem's."""
        return self.filesystem().open_output_stream(self.fs_path(path))

    def spec(self) -> LogStoreSpec:
        """A picklable recipe that rebuilds this store in another process."""
        cls = type(self)
        return LogStoreSpec(f"{cls.__module__}:{cls.__qualname__}", self.options)

    def describe(self) -> dict[str, Any]:
        """Name, schemes and semantics, for ``deltalog stores`` and reports."""
        sem = self.semantics
        return {
            "name": self.name or type(self).__name__,
            "schemes": [*self.schemes, *(p + "*" for p in self.scheme_prefixes)],
            "mutual_exclusion": sem.mutual_exclusion.name,
            "partial_write_visible": sem.partial_write_visible,
            "consistent_listing": sem.consistent_listing,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options.redacted()!r})"
