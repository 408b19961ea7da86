"""What the object-store LogStores (S3, Azure Blob, GCS) share.

A subclass names how to reach one object (``_get_object``, ``_put_object``,
``_list_dir``, ``_delete_object``) and how to judge its SDK's errors
(``_is_transient``, ``_classify_publish``, ``_translate``); this base turns those into
the LogStore contract: line framing, all-or-nothing put-if-absent with retries
(:mod:`deltalog.logstores.retry`), listings sorted by UTF-8 bytes and inclusive of the
start name, and picklable stores that rebuild their SDK clients lazily.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from deltalog.logstores.base import FileStatus, LogStore, split_uri
from deltalog.logstores.errors import LogStoreConfigError, LogStoreError
from deltalog.logstores.options import redact
from deltalog.logstores.retry import Outcome, RetryPolicy, call_with_retry, publish_with_retry

__all__ = ["ObjectLocation", "ObjectLogStore", "decode_lines", "encode_lines"]

T = TypeVar("T")


def encode_lines(lines: Iterable[str]) -> bytes:
    """Each line followed by ``\\n``, UTF-8."""
    return "".join(line + "\n" for line in lines).encode("utf-8")


def decode_lines(data: bytes) -> list[str]:
    """The lines of a log file, line breaks (``\\n``, ``\\r\\n``) removed."""
    text = data.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


@dataclass(frozen=True)
class ObjectLocation:
    """One object: ``root`` is ``scheme://authority/`` exactly as the caller spelled it."""

    root: str
    bucket: str
    key: str

    @property
    def uri(self) -> str:
        return self.root + self.key


class ObjectLogStore(LogStore):
    """Base of the stores that keep the log in an object store."""

    #: Extra aliases of ``DELTALOG_RETRY_MAX_ATTEMPTS`` (``AWS_MAX_ATTEMPTS``, ...).
    retry_attempt_options: tuple[str, ...] = ()
    #: An object becomes visible only when its upload completes (single PUT, multipart
    #: completion, committed block list, finalized upload), so whole files written
    #: through the data filesystem (checkpoints) need no temp name and copy.
    atomic_file_writes: ClassVar[bool] = True

    def __init__(self, options: Mapping[str, object] | None = None) -> None:
        super().__init__(options)
        self.retry_policy = RetryPolicy.from_options(self.options, *self.retry_attempt_options)
        self._client_lock = threading.Lock()
        self._clients: dict[str, Any] = {}
        self._validate_options()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # SDK clients hold sockets and locks: ship the options (as the spec completes
        # them), rebuild the clients.
        return (type(self), (self.spec().options,))

    # -- what a subclass provides --------------------------------------------------------

    def _validate_options(self) -> None:
        """Raise :class:`LogStoreConfigError` early for contradictory options."""

    @abstractmethod
    def _locate(self, path: str) -> ObjectLocation:
        """Split a URI of this store into root, bucket (container) and key."""

    @abstractmethod
    def _get_object(self, loc: ObjectLocation) -> bytes:
        """The object's bytes; :class:`FileNotFoundError` when it is missing."""

    @abstractmethod
    def _put_object(self, loc: ObjectLocation, data: bytes, if_absent: bool) -> None:
        """One upload attempt (no retries); conditional on absence when ``if_absent``."""

    @abstractmethod
    def _list_dir(self, loc: ObjectLocation, prefix: str, start: str) -> Iterator[tuple[str, int, int]]:
        """``(key, size, mtime_ms)`` of the objects directly under ``prefix`` (a key ending
        in ``/`` or empty) whose names sort >= ``start``; may return more, in any order.
        Each page request should go through :meth:`_call`."""

    @abstractmethod
    def _delete_object(self, loc: ObjectLocation) -> None:
        """Delete; a missing object is not an error."""

    @abstractmethod
    def _is_transient(self, exc: BaseException) -> bool:
        """Whether retrying an idempotent request may help."""

    @abstractmethod
    def _classify_publish(self, exc: BaseException) -> Outcome:
        """What a failed conditional put means (see :class:`Outcome`)."""

    def _translate(self, exc: BaseException, what: str) -> BaseException | None:
        """A typed error for a non-transient SDK error, or ``None`` to re-raise as is."""
        return LogStoreError(f"{what} failed: {self._redact(f'{type(exc).__name__}: {exc}')}")

    # -- helpers ------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return redact(text, self.options)

    def _client(self, key: str, factory: Callable[[], T]) -> T:
        """A lazily built SDK client, one per ``key``, shared by threads."""
        client = self._clients.get(key)
        if client is None:
            with self._client_lock:
                client = self._clients.get(key)
                if client is None:
                    client = factory()
                    self._clients[key] = client
        result: T = client
        return result

    def _call(self, fn: Callable[[], T], what: str) -> T:
        try:
            return call_with_retry(
                fn, what=what, policy=self.retry_policy, is_transient=self._is_transient, options=self.options
            )
        except (FileNotFoundError, LogStoreError):
            raise
        except Exception as exc:
            translated = self._translate(exc, what)
            if translated is None:
                raise
            raise translated from exc

    def _split_scheme(self, path: str) -> tuple[str, str]:
        scheme, rest = split_uri(path)
        if scheme not in self.schemes and not self._accepts_scheme(scheme):
            served = ", ".join(s + "://" for s in self.schemes)
            raise LogStoreConfigError(f"{type(self).__name__} serves {served} URIs, not {path!r}")
        return scheme, rest

    def _accepts_scheme(self, scheme: str) -> bool:
        return False

    def _bucket_location(self, path: str, what: str, example: str) -> ObjectLocation:
        """``scheme://bucket/key`` as a location (S3, GCS)."""
        scheme, rest = self._split_scheme(path)
        bucket, _, key = rest.partition("/")
        if not bucket:
            raise LogStoreConfigError(f"{what} needs a bucket: {path!r} ({example})")
        return ObjectLocation(f"{scheme}://{bucket}/", bucket, key)

    # -- the contract ----------------------------------------------------------------

    def read(self, path: str) -> Iterator[str]:
        return iter(decode_lines(self.read_bytes(path)))

    def read_bytes(self, path: str) -> bytes:
        loc = self._locate(path)
        return self._call(lambda: self._get_object(loc), f"reading {path}")

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        loc = self._locate(path)
        data = encode_lines(lines)
        if overwrite:
            self._call(lambda: self._put_object(loc, data, False), f"writing {path}")
            return
        self._publish(path, loc, data)

    def _publish(self, path: str, loc: ObjectLocation, data: bytes) -> None:
        def read_existing() -> bytes | None:
            try:
                return self._call(lambda: self._get_object(loc), f"reading back {path}")
            except FileNotFoundError:
                return None

        def classify(exc: BaseException) -> Outcome:
            return self._classify_publish(exc)

        try:
            publish_with_retry(
                path,
                data,
                put_if_absent=lambda: self._put_object(loc, data, True),
                read_existing=read_existing,
                classify=classify,
                policy=self.retry_policy,
                options=self.options,
            )
        except (FileNotFoundError, LogStoreError):
            raise
        except Exception as exc:
            translated = self._translate(exc, f"writing {path}")
            if translated is None:
                raise
            raise translated from exc

    def list_from(self, path: str) -> Iterator[FileStatus]:
        loc = self._locate(path)
        prefix, _, start = loc.key.rpartition("/")
        prefix = prefix + "/" if prefix else ""
        start_bytes = start.encode("utf-8")
        found: dict[str, FileStatus] = {}
        for key, size, mtime in self._list_dir(loc, prefix, start):
            if not key.startswith(prefix):
                continue
            name = key[len(prefix) :]
            if not name or "/" in name or name.encode("utf-8") < start_bytes:
                continue
            found[key] = FileStatus(loc.root + key, size, mtime)
        ordered = sorted(found.items(), key=lambda item: item[0].encode("utf-8"))
        return iter([status for _, status in ordered])

    def resolve_path(self, path: str) -> str:
        loc = self._locate(path)
        key = loc.key.rstrip("/")
        return (loc.root + key) if key else loc.root.rstrip("/")

    def delete(self, path: str) -> None:
        loc = self._locate(path)
        self._call(lambda: self._delete_object(loc), f"deleting {path}")

    def fs_path(self, path: str) -> str:
        loc = self._locate(path)
        return f"{loc.bucket}/{loc.key}".rstrip("/")
