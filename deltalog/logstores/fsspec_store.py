"""Any fsspec filesystem as a LogStore (``fsspec+<protocol>://...`` or ``logstore="fsspec"``).

fsspec offers no common put-if-absent, so this store's guarantees are *declared*:

``FSSPEC_MUTUAL_EXCLUSION`` = ``conditional_write`` | ``atomic_rename`` | ``none``
    how a log file is published:

    * ``conditional_write``: ``open(path, "xb")``, which must raise
      :class:`FileExistsError` when the file exists (for ``memory``, whose ``"xb"`` is
      a check-then-insert, ``pipe_file(mode="create")`` under a process-wide lock);
    * ``atomic_rename``: written to a temp file, then ``mv`` to the target, which must
      fail when the target exists (HDFS-like filesystems);
    * ``none``: an existence check and a plain write; the engine then demands a Redis
      commit lock or an explicit single-writer opt-in.

    Default: inferred. ``conditional_write`` for the protocols where deltalog has
    verified an exclusive create (``file``/``local``: ``open(..., "xb")`` is ``O_EXCL``;
    ``memory``: see above), ``none`` for everything else.
``FSSPEC_PARTIAL_WRITE_VISIBLE`` = ``true`` | ``false``
    whether a reader can see a half-written file. Default: ``true`` for ``file``
    (an ``O_EXCL`` file fills while visible), ``false`` for ``memory``, ``true``
    otherwise (the safe assumption).
``FSSPEC_PROTOCOL``
    the protocol when the URI does not name one.
``FSSPEC_STORAGE_OPTIONS``
    a JSON object of keyword arguments for the filesystem's constructor.

Data files go through the same fsspec filesystem wrapped in
``pyarrow.fs.PyFileSystem(FSSpecHandler(fs))``; paths inside it are fsspec paths.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from deltalog.logstores.base import (
    FileStatus,
    LogStore,
    LogStoreSpec,
    MutualExclusion,
    StoreSemantics,
    split_uri,
)
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError
from deltalog.logstores.memory import whole_file_memory_fs
from deltalog.logstores.object_store import decode_lines, encode_lines
from deltalog.logstores.options import StorageOptions

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["VERIFIED_EXCLUSIVE_CREATE", "FsspecLogStore"]

log = logging.getLogger(__name__)

PREFIX = "fsspec+"
_MEMORY_LOCK = threading.Lock()

#: Protocols whose ``open(path, "xb")`` deltalog's tests prove exclusive, with whether
#: a half-written file is visible to readers.
VERIFIED_EXCLUSIVE_CREATE: dict[str, bool] = {"file": True, "local": True, "memory": False}


def _mtime_ms(info: Mapping[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created", "modified"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return int(value.timestamp() * 1000)
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        return int(number * 1000) if number < 1e11 else int(number)
    return 0


class FsspecLogStore(LogStore):
    """Delta log on any fsspec filesystem, with declared (or verified) semantics."""

    name = "fsspec"
    scheme_prefixes = (PREFIX,)
    extra = None
    requires = ("fsspec",)

    def __init__(self, options: Mapping[str, object] | None = None) -> None:
        super().__init__(options)
        self._filesystems: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._protocols_seen: set[str] = set()
        declared = self.options.first("FSSPEC_MUTUAL_EXCLUSION")
        self._declared_exclusion: MutualExclusion | None = None
        if declared is not None:
            try:
                self._declared_exclusion = MutualExclusion(declared.strip().lower())
            except ValueError:
                raise LogStoreConfigError(
                    f"FSSPEC_MUTUAL_EXCLUSION must be conditional_write, atomic_rename or none, not {declared!r}"
                ) from None
        text = self.options.first("FSSPEC_STORAGE_OPTIONS")
        self._fs_kwargs: dict[str, Any] = {}
        if text:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                raise LogStoreConfigError("FSSPEC_STORAGE_OPTIONS must be a JSON object")
            self._fs_kwargs = parsed

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (type(self), (self.spec().options,))

    # -- semantics ----------------------------------------------------------------------

    def _default_protocol(self) -> str | None:
        configured = self.options.first("FSSPEC_PROTOCOL")
        if configured:
            return configured.lower()
        with self._lock:
            seen = sorted(self._protocols_seen)
        return seen[0] if len(seen) == 1 else None

    def semantics_for(self, protocol: str | None) -> StoreSemantics:
        """What the store guarantees on ``protocol`` (declared, else inferred)."""
        verified = VERIFIED_EXCLUSIVE_CREATE.get(protocol or "")
        exclusion = self._declared_exclusion
        if exclusion is None:
            exclusion = MutualExclusion.CONDITIONAL_WRITE if verified is not None else MutualExclusion.NONE
        visible_default = True if verified is None else verified
        visible = self.options.flag("FSSPEC_PARTIAL_WRITE_VISIBLE", default=visible_default)
        return StoreSemantics(exclusion, partial_write_visible=visible, consistent_listing=True)

    @property
    def semantics(self) -> StoreSemantics:
        return self.semantics_for(self._default_protocol())

    def is_partial_write_visible(self, path: str) -> bool:
        return self.semantics_for(self._split(path)[0]).partial_write_visible

    # -- paths --------------------------------------------------------------------------

    def _split(self, path: str) -> tuple[str, str, str]:
        """``(protocol, fsspec path, uri prefix)`` of a URI."""
        scheme, rest = split_uri(path)
        if scheme.startswith(PREFIX):
            protocol = scheme[len(PREFIX) :]
            prefix = f"{scheme}://"
        elif scheme:
            protocol, prefix = scheme, f"{scheme}://"
        else:
            protocol = self.options.first("FSSPEC_PROTOCOL") or "file"
            prefix = ""
        protocol = protocol.lower()
        with self._lock:
            self._protocols_seen.add(protocol)
        return protocol, rest, prefix

    def fs_for(self, protocol: str) -> Any:
        """The fsspec filesystem of ``protocol`` (built once)."""
        with self._lock:
            fs = self._filesystems.get(protocol)
            if fs is None:
                import fsspec

                try:
                    if protocol == "memory":  # fsspec's shows files half written and shares read positions
                        fs = whole_file_memory_fs()
                    else:
                        fs = fsspec.filesystem(protocol, **self._fs_kwargs)
                except (ValueError, ImportError) as exc:
                    raise LogStoreConfigError(f"fsspec has no usable filesystem for {protocol!r}: {exc}") from exc
                self._filesystems[protocol] = fs
        return fs

    def _target(self, path: str) -> tuple[Any, str, str, str]:
        protocol, rest, prefix = self._split(path)
        fs = self.fs_for(protocol)
        raw = rest if prefix else path
        target = str(fs._strip_protocol(raw))
        if raw.endswith("/") and not target.endswith("/"):
            target += "/"  # "dir/" means "everything in dir" to list_from
        return fs, target, prefix, protocol

    def _uri(self, prefix: str, fs_path: str, protocol: str) -> str:
        if not prefix:
            return fs_path
        if protocol in ("file", "local") and fs_path.startswith("/"):
            return prefix + fs_path
        return prefix + fs_path.lstrip("/")

    # -- the contract ---------------------------------------------------------------------

    def read(self, path: str) -> Iterator[str]:
        return iter(decode_lines(self.read_bytes(path)))

    def read_bytes(self, path: str) -> bytes:
        fs, target, _, _ = self._target(path)
        try:
            data: bytes = fs.cat_file(target)
        except FileNotFoundError:
            raise FileNotFoundError(path) from None
        return data

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        fs, target, _, protocol = self._target(path)
        data = encode_lines(lines)
        parent = target.rsplit("/", 1)[0]
        if parent and parent != target:
            fs.makedirs(parent, exist_ok=True)
        if overwrite:
            fs.pipe_file(target, data)
            return
        exclusion = self.semantics_for(protocol).mutual_exclusion
        if exclusion is MutualExclusion.CONDITIONAL_WRITE and protocol == "memory":
            # fsspec's memory "xb" checks and then inserts without a lock: add one. The
            # memory filesystem lives in this process, so this lock makes it exclusive.
            with _MEMORY_LOCK:
                try:
                    fs.pipe_file(target, data, mode="create")
                except FileExistsError:
                    raise FileAlreadyExistsError(path) from None
        elif exclusion is MutualExclusion.CONDITIONAL_WRITE:
            self._create_exclusive(fs, target, data, path)
        elif exclusion is MutualExclusion.ATOMIC_RENAME:
            self._rename_into_place(fs, target, data, path)
        else:
            if fs.exists(target):
                raise FileAlreadyExistsError(path)
            fs.pipe_file(target, data)

    @staticmethod
    def _create_exclusive(fs: Any, target: str, data: bytes, path: str) -> None:
        try:
            handle = fs.open(target, "xb")
        except FileExistsError:
            raise FileAlreadyExistsError(path) from None
        try:
            with handle:
                handle.write(data)
        except BaseException:
            # Never leave a partial file behind: it would block the version forever.
            try:
                fs.rm_file(target)
            except OSError:
                log.warning("could not remove the partial log file %s", path)
            raise

    @staticmethod
    def _rename_into_place(fs: Any, target: str, data: bytes, path: str) -> None:
        directory, _, name = target.rpartition("/")
        temp = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
        fs.pipe_file(temp, data)
        try:
            if fs.exists(target):
                raise FileAlreadyExistsError(path)
            try:
                fs.mv(temp, target)
            except FileExistsError:
                raise FileAlreadyExistsError(path) from None
        finally:
            try:
                if fs.exists(temp):
                    fs.rm_file(temp)
            except OSError:
                log.warning("could not remove the temp file %s", temp)

    def list_from(self, path: str) -> Iterator[FileStatus]:
        fs, target, prefix, protocol = self._target(path)
        directory, _, start = target.rpartition("/")
        start_bytes = start.encode("utf-8")
        try:
            entries = fs.ls(directory or "/", detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return iter(())
        found: list[tuple[bytes, FileStatus]] = []
        for info in entries:
            if info.get("type") != "file":
                continue
            name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
            key = name.encode("utf-8", "surrogateescape")
            if key < start_bytes:
                continue
            full = f"{directory}/{name}" if directory else name
            found.append(
                (key, FileStatus(self._uri(prefix, full, protocol), int(info.get("size") or 0), _mtime_ms(info)))
            )
        found.sort(key=lambda item: item[0])
        return iter([status for _, status in found])

    def resolve_path(self, path: str) -> str:
        _, target, prefix, protocol = self._target(path)
        uri = self._uri(prefix or (PREFIX + protocol + "://"), target.rstrip("/") or target, protocol)
        return uri

    def delete(self, path: str) -> None:
        fs, target, _, _ = self._target(path)
        try:
            fs.rm_file(target)
        except FileNotFoundError:
            return

    def filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs as pafs

        protocol = self._default_protocol() or "file"
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs_for(protocol)))

    def fs_path(self, path: str) -> str:
        return str(self._target(path)[1])

    def spec(self) -> LogStoreSpec:
        options = self.options.to_dict()
        protocol = self._default_protocol()
        if protocol is not None and self.options.first("FSSPEC_PROTOCOL") is None:
            options["FSSPEC_PROTOCOL"] = protocol
        cls = type(self)
        return LogStoreSpec(f"{cls.__module__}:{cls.__qualname__}", StorageOptions(options))
