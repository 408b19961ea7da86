"""A commit lock in Redis: a renewed table lease plus per-version fencing.

Configured with ``lock="redis://[[user]:password@]host[:port][/db][?param=value...]"``
(``rediss://`` for TLS). Parameters, as query parameters or as storage options named
``deltalog.lock.redis.<param>`` (options win): ``username``, ``password``, ``key_prefix``
(``deltalog:``), ``lease_ttl`` (``15s``), ``acquire_timeout`` (``120s``), ``entry_ttl``
(``1d``), ``socket_timeout`` (``5s``), ``connect_timeout`` (``5s``), ``ssl_ca_certs``,
``ssl_certfile``, ``ssl_keyfile``, ``ssl_cert_reqs`` (``required``/``optional``/``none``),
``ssl_check_hostname`` (``true``). ``REDIS_USERNAME`` / ``REDIS_PASSWORD`` options work too.
Durations take ``ms``, ``s``, ``m``, ``h`` or ``d``; a bare number is seconds.

How a commit of version N is published (docs/locks.md has the failure analysis):

1. take the table's lease (``SET NX PX`` with a random token, renewed by a background
   thread with a compare-and-``PEXPIRE``, released with a compare-and-``DEL``); the lease
   only keeps writers from wasting attempts, safety comes from the steps below;
2. fail with FileAlreadyExistsError if ``N.json`` exists; if the claim of N-1 is
   incomplete, repair it; if ``N-1.json`` is missing, fail;
3. write the commit to a temp file ``_delta_log/.tmp/<N>.json.<uuid>``;
4. claim N: an atomic script creates the entry ``{tempPath, token, complete=false}`` only
   if no entry for N exists (the mutual-exclusion point) and advances the table's
   ``latest`` pointer;
5. check the claim is still ours, copy the commit to ``N.json``, mark the entry complete
   (it then expires after ``entry_ttl``) and delete the temp file.

Only the content of the one claimed temp file can ever be written to ``N.json``, by the
claimant or by a repairer, so a claimant whose lease ran out (paused, slow) can never
publish a second, different file for N.

``redis`` (redis-py) is imported only when a lock is built: ``pip install 'deltalog[redis]'``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from deltalog import durations
from deltalog.durations import InvalidDurationError
from deltalog.logstores.base import LogStore
from deltalog.logstores.errors import AmbiguousWriteError, FileAlreadyExistsError
from deltalog.logstores.options import StorageOptions
from deltalog.txn.commit.locks.base import CommitLock, commit_file_name, commit_uri
from deltalog.txn.commit.locks.errors import (
    CommitLockConfigError,
    CommitOutcomeUnknownError,
    LockLostError,
    LockTimeoutError,
    LockUnavailableError,
    MissingCommitError,
    UnrecoverableClaimError,
)
from deltalog.txn.protocol.file_names import padded_version

__all__ = ["RedisCommitLock", "RedisLockConfig", "parse_duration", "redis_lock_from_uri"]

log = logging.getLogger(__name__)

OPTION_PREFIX = "deltalog.lock.redis."
TEMP_DIR = ".tmp"

_PARAMS = (
    "username",
    "password",
    "db",
    "key_prefix",
    "lease_ttl",
    "acquire_timeout",
    "entry_ttl",
    "socket_timeout",
    "connect_timeout",
    "ssl_ca_certs",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_cert_reqs",
    "ssl_check_hostname",
)
# KEYS[1] lease key; ARGV[1] token, ARGV[2] ttl in ms.
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS[1] lease key; ARGV[1] token.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""
# KEYS[1] entry of version N, KEYS[2] latest pointer; ARGV: tempPath, token, N, fileName,
# table, owner. Creates the entry only if absent: the mutual-exclusion point.
_CLAIM = """
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('hset', KEYS[1], 'tempPath', ARGV[1], 'token', ARGV[2], 'complete', 'false',
           'fileName', ARGV[4], 'table', ARGV[5], 'owner', ARGV[6])
local latest = tonumber(redis.call('get', KEYS[2]) or '-1')
if tonumber(ARGV[3]) > latest then
  redis.call('set', KEYS[2], ARGV[3])
end
return 1
"""
# KEYS[1] entry; ARGV[1] tempPath, ARGV[2] ttl in ms. Completes only the claim we saw.
_COMPLETE = """
if redis.call('hget', KEYS[1], 'tempPath') ~= ARGV[1] then
  return 0
end
redis.call('hset', KEYS[1], 'complete', 'true')
redis.call('pexpire', KEYS[1], ARGV[2])
return 1
"""


def parse_duration(value: str | float | int, name: str) -> float:
    """Seconds from ``"500ms"``, ``"15s"``, ``"2m"``, ``"1h"``, ``"1d"``, ``"interval 1 day"`` or a
    bare number of seconds (:func:`deltalog.durations.parse_duration`)."""
    try:
        seconds = durations.parse_duration(value, f"the Redis lock setting {name}").total_seconds()
    except InvalidDurationError as exc:
        raise CommitLockConfigError(str(exc)) from None
    if seconds <= 0:
        raise CommitLockConfigError(f"the Redis lock setting {name} must be positive, got {value!r}")
    return seconds


@dataclass(frozen=True)
class RedisLockConfig:
    """Where the Redis server is and how the lock behaves. ``repr`` hides the password."""

    host: str = "127.0.0.1"
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    ssl_ca_certs: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_cert_reqs: str = "required"
    ssl_check_hostname: bool = True
    key_prefix: str = "deltalog:"
    lease_ttl: float = 15.0
    acquire_timeout: float = 120.0
    entry_ttl: float = 86400.0
    socket_timeout: float = 5.0
    connect_timeout: float = 5.0

    @classmethod
    def from_uri(cls, uri: str, options: Mapping[str, object] | None = None) -> RedisLockConfig:
        """Parse a ``redis://`` / ``rediss://`` URI; ``options`` override its parameters."""
        scheme, sep, _ = uri.partition("://")
        scheme = scheme.lower()
        if not sep or scheme not in ("redis", "rediss"):
            raise CommitLockConfigError("a Redis lock URI starts with redis:// or rediss://")
        try:
            parts = urlsplit(uri)
            port = parts.port or 6379
        except ValueError:
            raise CommitLockConfigError(
                f"cannot parse the Redis lock URI {_redact_uri(uri)!r}: write "
                "redis://[[user]:password@]host[:port][/db][?param=value]"
            ) from None
        settings: dict[str, str] = {}
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key not in _PARAMS or key == "password":
                raise CommitLockConfigError(
                    f"unknown Redis lock parameter {key!r} in the URI; known: "
                    f"{', '.join(p for p in _PARAMS if p != 'password')} (give the password in "
                    "the URI's user info or in the option deltalog.lock.redis.password)"
                )
            settings[key] = value
        if parts.username:
            settings["username"] = unquote(parts.username)
        if parts.password is not None:
            settings["password"] = unquote(parts.password)
        path = parts.path.strip("/")
        if path:
            settings["db"] = path
        opts = options if isinstance(options, StorageOptions) else StorageOptions(options)
        for param in _PARAMS:
            found = opts.first(OPTION_PREFIX + param)
            if found is not None:
                settings[param] = found
        for param, key in (("username", "REDIS_USERNAME"), ("password", "REDIS_PASSWORD")):
            if param not in settings and (found := opts.first(key)) is not None:
                settings[param] = found
        return cls._from_settings(parts.hostname or "127.0.0.1", port, scheme == "rediss", settings)

    @classmethod
    def _from_settings(cls, host: str, port: int, tls: bool, s: Mapping[str, str]) -> RedisLockConfig:
        try:
            db = int(s.get("db", "0"))
        except ValueError:
            raise CommitLockConfigError(f"the Redis database must be a number, got {s['db']!r}") from None
        reqs = s.get("ssl_cert_reqs", "required").lower()
        if reqs not in ("required", "optional", "none"):
            raise CommitLockConfigError(f"ssl_cert_reqs must be required, optional or none, got {reqs!r}")
        config = cls(
            host=host,
            port=port,
            db=db,
            username=s.get("username") or None,
            password=s.get("password") or None,
            tls=tls,
            ssl_ca_certs=s.get("ssl_ca_certs") or None,
            ssl_certfile=s.get("ssl_certfile") or None,
            ssl_keyfile=s.get("ssl_keyfile") or None,
            ssl_cert_reqs=reqs,
            ssl_check_hostname=s.get("ssl_check_hostname", "true").lower() in ("1", "true", "yes", "on"),
            key_prefix=s.get("key_prefix", "deltalog:"),
        )
        for name in ("lease_ttl", "acquire_timeout", "entry_ttl", "socket_timeout", "connect_timeout"):
            if name in s:
                config = replace(config, **{name: parse_duration(s[name], name)})  # type: ignore[arg-type]
        if config.lease_ttl < 0.1:
            raise CommitLockConfigError("lease_ttl must be at least 100ms")
        if config.entry_ttl < 3 * config.lease_ttl:
            raise CommitLockConfigError("entry_ttl must be at least three times lease_ttl")
        return config

    def display_uri(self) -> str:
        """The server as a URI without the password (for logs and errors)."""
        auth = ""
        if self.username or self.password:
            auth = f"{self.username or ''}{':***' if self.password else ''}@"
        return f"{'rediss' if self.tls else 'redis'}://{auth}{self.host}:{self.port}/{self.db}"

    def client_kwargs(self) -> dict[str, Any]:
        """Arguments for ``redis.Redis`` (they contain the password: never log them)."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "db": self.db,
            "username": self.username,
            "password": self.password,
            "socket_timeout": self.socket_timeout,
            "socket_connect_timeout": self.connect_timeout,
            "decode_responses": True,
        }
        if self.tls:
            kwargs.update(
                ssl=True,
                ssl_ca_certs=self.ssl_ca_certs,
                ssl_certfile=self.ssl_certfile,
                ssl_keyfile=self.ssl_keyfile,
                ssl_cert_reqs=self.ssl_cert_reqs,
                ssl_check_hostname=self.ssl_check_hostname,
            )
        return kwargs


def _redact_uri(uri: str) -> str:
    return re.sub(r"(://[^/@:]*):[^/@]*@", r"\1:***@", uri)


def redis_lock_from_uri(uri: str, options: Mapping[str, str] | None = None) -> RedisCommitLock:
    """The factory registered for ``redis://`` and ``rediss://`` lock settings."""
    return RedisCommitLock(RedisLockConfig.from_uri(uri, options))


# -- helpers -----------------------------------------------------------------------------


def _exists(store: LogStore, uri: str) -> bool:
    name = uri.rsplit("/", 1)[-1]
    for status in store.list_from(uri):
        return status.name == name
    return False


def _same_lines(first: Iterable[str], second: Iterable[str]) -> bool:
    missing = object()
    return all(a == b for a, b in zip_longest(first, second, fillvalue=missing))


def _strip_userinfo(uri: str) -> str:
    head, sep, rest = uri.partition("://")
    if sep:
        netloc, slash, path = rest.partition("/")
        if "@" in netloc:
            netloc = netloc.rsplit("@", 1)[1]
        return f"{head}://{netloc}{slash}{path}"
    return uri


@dataclass(frozen=True)
class _Table:
    """The Redis keys of one table's log."""

    log_uri: str  # as the caller names it (store paths are built from it)
    ident: str  # resolved, without user info: the same for every writer
    base: str  # key prefix of this table

    @property
    def lease_key(self) -> str:
        return self.base + "lease"

    @property
    def latest_key(self) -> str:
        return self.base + "latest"

    def entry_key(self, version: int) -> str:
        return f"{self.base}commit:{padded_version(version)}"

    def commit(self, version: int) -> str:
        return commit_uri(self.log_uri, version)

    def temp(self, temp_rel: str) -> str:
        return f"{self.log_uri}/{temp_rel}"


@dataclass(frozen=True)
class _Pending:
    """A claim whose outcome this process could not learn (Redis failed mid-claim)."""

    version: int
    token: str
    temp_rel: str


class _Lease:
    """A held table lease and the thread that renews it. ``lost`` is set when the lease is
    lost; ``renewals`` counts the renewals so far (:meth:`wait_renewed` waits for them)."""

    def __init__(self, lock: RedisCommitLock, table: _Table, token: str) -> None:
        self.table = table
        self.token = token
        self.lost = threading.Event()
        self.renewals = 0
        self._renewed = threading.Condition()
        self._lock = lock
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew_loop, name=f"deltalog-redis-lease-{table.ident[-40:]}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def wait_renewed(self, count: int, timeout: float) -> bool:
        """Wait until the lease has been renewed ``count`` times; False if it is lost first
        or ``timeout`` seconds pass."""
        with self._renewed:
            self._renewed.wait_for(lambda: self.renewals >= count or self.lost.is_set(), timeout)
            return self.renewals >= count

    def _signal(self, renewed: bool) -> None:
        with self._renewed:
            if renewed:
                self.renewals += 1
            else:
                self.lost.set()
            self._renewed.notify_all()

    def _renew_loop(self) -> None:
        import redis

        ttl = self._lock.config.lease_ttl
        ttl_ms = max(1, int(ttl * 1000))
        last_ok = time.monotonic()
        while not self._stop.wait(ttl / 3):
            try:
                renew = self._lock._scripts()["renew"]
                renewed = renew(keys=[self.table.lease_key], args=[self.token, ttl_ms])
            except redis.RedisError as exc:
                if time.monotonic() - last_ok >= ttl:
                    log.warning(
                        "lost the commit lease of %s: Redis unreachable (%s)",
                        self.table.ident,
                        self._lock._safe(str(exc)),
                    )
                    self._signal(renewed=False)
                    return
                log.info("cannot renew the commit lease of %s yet: %s", self.table.ident, self._lock._safe(str(exc)))
                continue
            if not renewed:
                log.warning("lost the commit lease of %s: it expired or Redis lost it", self.table.ident)
                self._signal(renewed=False)
                return
            last_ok = time.monotonic()
            self._signal(renewed=True)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()


class RedisCommitLock(CommitLock):
    """Serialize and fence commits with a Redis server shared by every writer."""

    name = "redis"

    def __init__(self, config: RedisLockConfig) -> None:
        self.config = config
        self._client_obj: Any = None
        self._script_objs: dict[str, Any] | None = None
        self._pending: dict[str, list[_Pending]] = {}
        self._guard = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------

    def _client(self) -> Any:
        with self._guard:
            if self._client_obj is None:
                try:
                    import redis
                    from redis.backoff import ExponentialBackoff
                    from redis.retry import Retry
                except ImportError as exc:
                    raise CommitLockConfigError(
                        "the Redis commit lock needs the package 'redis': pip install 'deltalog[redis]'"
                    ) from exc
                self._client_obj = redis.Redis(
                    retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
                    **self.config.client_kwargs(),
                )
            return self._client_obj

    def _scripts(self) -> dict[str, Any]:
        client = self._client()
        with self._guard:
            if self._script_objs is None:
                self._script_objs = {
                    "renew": client.register_script(_RENEW),
                    "release": client.register_script(_RELEASE),
                    "claim": client.register_script(_CLAIM),
                    "complete": client.register_script(_COMPLETE),
                }
            return self._script_objs

    def _safe(self, text: str) -> str:
        secret = self.config.password
        if secret and len(secret) >= 3:
            text = text.replace(secret, "***")
        return text

    @contextmanager
    def _redis(self, doing: str) -> Iterator[Any]:
        """Run Redis calls, turning redis-py's errors into LockUnavailableError."""
        import redis

        client = self._client()
        try:
            yield client
        except redis.AuthenticationError as exc:
            raise LockUnavailableError(
                f"Redis at {self.config.display_uri()} refused our credentials while trying to "
                f"{doing} ({self._safe(str(exc))}); check the username and password. Nothing was published."
            ) from None
        except redis.RedisError as exc:
            raise LockUnavailableError(
                f"cannot {doing}: Redis at {self.config.display_uri()} failed "
                f"({type(exc).__name__}: {self._safe(str(exc))}). Nothing was published; retry "
                "when Redis is reachable."
            ) from None

    def _table(self, store: LogStore, log_uri: str) -> _Table:
        log_uri = log_uri.rstrip("/")
        ident = _strip_userinfo(store.resolve_path(log_uri)).rstrip("/")
        digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32]
        return _Table(log_uri, ident, f"{self.config.key_prefix}table:{digest}:")

    def close(self) -> None:
        with self._guard:
            client, self._client_obj, self._script_objs = self._client_obj, None, None
        if client is not None:
            try:
                client.close()
            except Exception as exc:  # closing must never fail the caller
                log.debug("closing the Redis client failed: %s", self._safe(str(exc)))

    def __repr__(self) -> str:
        return f"RedisCommitLock({self.config.display_uri()!r}, key_prefix={self.config.key_prefix!r})"

    # -- the lease -----------------------------------------------------------------------

    @contextmanager
    def lease(self, store: LogStore, log_uri: str) -> Iterator[_Lease]:
        """Hold the table's lease (renewed in the background) for the ``with`` block."""
        table = self._table(store, log_uri)
        with self._hold_lease(table) as held:
            yield held

    @contextmanager
    def _hold_lease(self, table: _Table) -> Iterator[_Lease]:
        token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        ttl_ms = max(1, int(self.config.lease_ttl * 1000))
        deadline = time.monotonic() + self.config.acquire_timeout
        delay = 0.005
        while True:
            with self._redis(f"take the commit lease of {table.ident}") as client:
                if client.set(table.lease_key, token, nx=True, px=ttl_ms):
                    break
                holder = client.get(table.lease_key)
                if holder == token:  # our SET landed but its reply was lost and retried
                    break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                who = ":".join(str(holder).split(":")[:2]) if holder else "a writer that just released it"
                raise LockTimeoutError(
                    f"could not take the commit lease of {table.ident} within "
                    f"{self.config.acquire_timeout:g}s: it is held by {who}. A dead holder's lease "
                    f"expires after lease_ttl ({self.config.lease_ttl:g}s); raise acquire_timeout if "
                    "commits are legitimately slow."
                )
            time.sleep(min(remaining, delay * (0.5 + random.random())))
            delay = min(delay * 2, 0.1)
        held = _Lease(self, table, token)
        held.start()
        try:
            yield held
        finally:
            held.stop()
            try:
                self._scripts()["release"](keys=[table.lease_key], args=[token])
            except Exception as exc:  # it expires by itself
                log.info(
                    "could not release the commit lease of %s (%s); it will expire", table.ident, self._safe(str(exc))
                )

    # -- commits -------------------------------------------------------------------------

    def write_commit(self, store: LogStore, log_uri: str, version: int, lines: Iterable[str]) -> None:
        # ``lines`` may be a generator (a large commit): it is streamed to the temp file
        # once, and N.json is copied from there, never held in memory.
        table = self._table(store, log_uri)
        target = table.commit(version)
        self._resolve_pending(store, table)
        with self._hold_lease(table) as held:
            if _exists(store, target):
                raise FileAlreadyExistsError(target)
            self._check_previous(store, table, version)
            self._await_grace(table)
            temp_rel = f"{TEMP_DIR}/{commit_file_name(version)}.{uuid.uuid4()}"
            store.write(table.temp(temp_rel), lines, overwrite=True)
            if held.lost.is_set():
                # Paused or slow past the lease: others may have moved on. That is safe --
                # the claim below is the fence -- so go on; the claim fails if N is taken.
                log.info("the commit lease of %s ran out before version %d was claimed", table.ident, version)
            token = uuid.uuid4().hex
            self._claim(store, table, version, temp_rel, token)
            self._publish(store, table, version, temp_rel, token)

    def _claim(self, store: LogStore, table: _Table, version: int, temp_rel: str, token: str) -> None:
        import redis

        target = table.commit(version)
        owner = f"{socket.gethostname()}:{os.getpid()}"
        won: int | None
        try:
            won = int(
                self._scripts()["claim"](
                    keys=[table.entry_key(version), table.latest_key],
                    args=[temp_rel, token, version, commit_file_name(version), table.ident, owner],
                )
            )
        except redis.RedisError as exc:
            log.info(
                "claiming version %d of %s failed (%s); reading the claim back",
                version,
                table.ident,
                self._safe(str(exc)),
            )
            won = None
        if won == 1:
            return
        try:
            entry = self._client().hgetall(table.entry_key(version))
        except redis.RedisError as exc:
            with self._guard:
                self._pending.setdefault(table.ident, []).append(_Pending(version, token, temp_rel))
            raise CommitOutcomeUnknownError(
                target,
                f"Redis at {self.config.display_uri()} failed while version {version} of "
                f"{table.ident} was being claimed ({type(exc).__name__}), so it is unknown whether "
                "this writer holds the claim. If it does, the next writer or lock.recover() "
                "publishes this commit from its temp file. When Redis is back call "
                "lock.recover(store, log_uri) and read the commit back to find out.",
            ) from None
        if entry.get("token") == token:  # the claim landed; its reply was lost
            return
        self._delete_quietly(store, table.temp(temp_rel))
        if won is None and not entry:
            raise LockUnavailableError(
                f"Redis at {self.config.display_uri()} failed while version {version} of "
                f"{table.ident} was being claimed, and the claim did not land; nothing was "
                "published. Retry the commit."
            )
        raise FileAlreadyExistsError(target)

    def _publish(self, store: LogStore, table: _Table, version: int, temp_rel: str, token: str) -> None:
        import redis

        target = table.commit(version)
        try:
            entry = self._client().hgetall(table.entry_key(version))
        except redis.RedisError as exc:
            with self._guard:
                self._pending.setdefault(table.ident, []).append(_Pending(version, token, temp_rel))
            raise CommitOutcomeUnknownError(
                target,
                f"Redis at {self.config.display_uri()} failed after this writer claimed version "
                f"{version} of {table.ident} ({type(exc).__name__}); the commit is not published "
                "yet. If Redis kept the claim, the next writer or lock.recover() publishes it "
                "from its temp file; if Redis lost it, it is never published. When Redis is back "
                "call lock.recover(store, log_uri) and read the commit back to find out.",
            ) from None
        if entry.get("token") != token:
            # Redis restarted or was flushed after our claim: the claim is gone, and another
            # writer may claim N. Publishing now could overwrite its file.
            self._delete_quietly(store, table.temp(temp_rel))
            raise LockLostError(
                f"the claim of version {version} of {table.ident} vanished from Redis at "
                f"{self.config.display_uri()} before it was published (Redis restarted or was "
                "flushed); nothing was published. Retry the commit."
            )
        try:
            self._copy(store, table, temp_rel, target)
        except FileAlreadyExistsError:
            # N.json holds another writer's commit: our claim has nothing left to publish.
            self._complete(store, table, version, temp_rel)
            raise
        self._complete(store, table, version, temp_rel)

    def _copy(self, store: LogStore, table: _Table, temp_rel: str, target: str) -> None:
        """Write the claimed content to ``N.json``; the file existing with the same content
        means a repairer already did it."""
        failure: BaseException | None = None
        for attempt in range(3):
            try:
                store.write(target, store.read(table.temp(temp_rel)), overwrite=False)
                return
            except FileAlreadyExistsError:
                if _same_lines(store.read(target), store.read(table.temp(temp_rel))):
                    return
                # Somebody wrote N.json without going through this lock.
                log.error("%s was written by a writer that does not use the Redis lock", target)
                raise
            except AmbiguousWriteError:
                raise
            except Exception as exc:
                failure = exc
                log.info("publishing %s failed (attempt %d): %s", target, attempt + 1, exc)
                time.sleep(0.05 * (attempt + 1))
        raise AmbiguousWriteError(target, failure)

    def _complete(self, store: LogStore, table: _Table, version: int, temp_rel: str) -> None:
        import redis

        ttl_ms = int(self.config.entry_ttl * 1000)
        try:
            self._scripts()["complete"](keys=[table.entry_key(version)], args=[temp_rel, ttl_ms])
        except redis.RedisError as exc:
            # The commit is published; a later writer marks the claim complete.
            log.info(
                "version %d of %s is published but its claim could not be marked complete (%s); the next writer will",
                version,
                table.ident,
                self._safe(str(exc)),
            )
            return
        self._delete_quietly(store, table.temp(temp_rel))

    def _check_previous(self, store: LogStore, table: _Table, version: int) -> None:
        if version == 0:
            with self._redis("read the claim of version 0") as client:
                entry = client.hgetall(table.entry_key(0))
            if entry and entry.get("complete") != "true":
                self._repair(store, table, 0, entry)
            elif entry and not _exists(store, table.commit(0)):
                raise MissingCommitError(
                    f"Redis still records version 0 of {table.ident} as committed, but the log has "
                    "no version 0: the table was deleted and is being created again within "
                    f"entry_ttl ({self.config.entry_ttl:g}s). If that is so, clear the old claims "
                    "with RedisCommitLock.forget(store, log_uri) and retry."
                )
            return
        previous = version - 1
        with self._redis(f"read the claim of version {previous}") as client:
            entry = client.hgetall(table.entry_key(previous))
        if entry and entry.get("complete") != "true":
            self._repair(store, table, previous, entry)
            return
        if not _exists(store, table.commit(previous)):
            if entry:
                raise MissingCommitError(
                    f"Redis records version {previous} of {table.ident} as committed but "
                    f"{table.commit(previous)} does not exist: the log was changed behind the "
                    "lock's back (deleted or restored files). Repair the log before writing."
                )
            raise MissingCommitError(
                f"cannot write version {version} of {table.ident}: version {previous} does not "
                "exist. Commit versions must be contiguous; list the log and commit at latest + 1."
            )

    def _await_grace(self, table: _Table) -> None:
        """After Redis lost its data (restart without persistence, flush), wait one lease
        TTL before the first claim on a table, so a claimant of the old Redis that is still
        publishing notices its claim vanished before anyone claims the same version again."""
        epoch_key = self.config.key_prefix + "epoch"
        with self._redis("read the lock's epoch") as client:
            pipe = client.pipeline(transaction=False)
            pipe.exists(table.latest_key)
            pipe.get(epoch_key)
            pipe.time()
            has_latest, epoch, (sec, usec) = pipe.execute()
            if has_latest:
                return
            now_ms = int(sec) * 1000 + int(usec) // 1000
            if epoch is None:
                client.set(epoch_key, now_ms, nx=True)
                epoch = client.get(epoch_key) or now_ms
        wait = self.config.lease_ttl - (now_ms - int(epoch)) / 1000.0
        if wait > 0:
            log.info(
                "Redis at %s has no record of %s and started less than lease_ttl ago; "
                "waiting %.2fs before the first claim",
                self.config.display_uri(),
                table.ident,
                wait,
            )
            time.sleep(wait)

    # -- repair --------------------------------------------------------------------------

    def recover(self, store: LogStore, log_uri: str) -> None:
        """Publish the table's latest version if it is claimed but not complete."""
        table = self._table(store, log_uri)
        self._resolve_pending(store, table)
        with self._redis(f"read the latest claim of {table.ident}") as client:
            latest = client.get(table.latest_key)
            if latest is None:
                return
            version = int(latest)
            entry = client.hgetall(table.entry_key(version))
        if entry and entry.get("complete") != "true":
            self._repair(store, table, version, entry)

    def _resolve_pending(self, store: LogStore, table: _Table) -> None:
        with self._guard:
            pending = list(self._pending.get(table.ident, ()))
        for item in pending:
            with self._redis(f"read back the claim of version {item.version} of {table.ident}") as client:
                entry = client.hgetall(table.entry_key(item.version))
            if entry.get("token") == item.token and entry.get("complete") != "true":
                self._repair(store, table, item.version, entry)
            # Our own temp file: published now, or never referenced by a claim.
            self._delete_quietly(store, table.temp(item.temp_rel))
            with self._guard:
                items = self._pending.get(table.ident, [])
                if item in items:
                    items.remove(item)
                if not items:
                    self._pending.pop(table.ident, None)

    def _repair(self, store: LogStore, table: _Table, version: int, entry: Mapping[str, str]) -> None:
        """Copy an incomplete claim's temp file to ``N.json`` (if missing), mark it complete."""
        target = table.commit(version)
        temp_rel = entry.get("tempPath", "")
        key = table.entry_key(version)
        if not temp_rel.startswith(TEMP_DIR + "/") or ".." in temp_rel:
            raise UnrecoverableClaimError(
                f"the claim of version {version} of {table.ident} has a bad temp path {temp_rel!r}"
            )
        failure: BaseException | None = None
        for attempt in range(4):
            try:
                if not _exists(store, target):
                    temp_there = _exists(store, table.temp(temp_rel))
                    with self._redis(f"re-read the claim of version {version}") as client:
                        fresh = client.hgetall(key)
                    if fresh.get("tempPath") != temp_rel or fresh.get("complete") == "true":
                        return  # finished by its claimant, or gone with a Redis restart
                    if not temp_there:
                        if _exists(store, target):
                            continue
                        raise UnrecoverableClaimError(
                            f"version {version} of {table.ident} was claimed (by "
                            f"{fresh.get('owner', 'an unknown writer')}) but {target} was never "
                            f"written and the claimant's temp file {table.temp(temp_rel)} is gone, so "
                            "the table cannot advance. If no writer of that claim is still running, "
                            "delete the Redis key "
                            f"{key!r} (see docs/locks.md, 'Unrecoverable claim')."
                        )
                    try:
                        store.write(target, store.read(table.temp(temp_rel)), overwrite=False)
                    except FileAlreadyExistsError:
                        pass
                with self._redis(f"mark version {version} complete") as client:
                    ttl_ms = int(self.config.entry_ttl * 1000)
                    self._scripts()["complete"](keys=[key], args=[temp_rel, ttl_ms])
                # The temp file stays: its claimant may still be copying from it, and
                # deletes it itself when it finishes (a dead claimant's stays behind).
                log.info("repaired version %d of %s from its claimant's temp file", version, table.ident)
                return
            except (UnrecoverableClaimError, LockUnavailableError):
                raise
            except Exception as exc:
                failure = exc
                log.info("repairing version %d of %s failed (attempt %d): %s", version, table.ident, attempt + 1, exc)
        raise MissingCommitError(
            f"version {version} of {table.ident} is claimed but not published, and publishing "
            f"it from the claimant's temp file failed 4 times (last: {failure}). Retry later."
        )

    @staticmethod
    def _delete_quietly(store: LogStore, uri: str) -> None:
        try:
            store.delete(uri)
        except Exception as exc:  # a leftover temp file is harmless
            log.debug("could not delete %s: %s", uri, exc)

    # -- operator tools ------------------------------------------------------------------

    def claim_of(self, store: LogStore, log_uri: str, version: int) -> dict[str, str] | None:
        """The Redis entry of one version (``tempPath``, ``complete``, ``owner``...), if any."""
        table = self._table(store, log_uri)
        with self._redis(f"read the claim of version {version}") as client:
            entry = client.hgetall(table.entry_key(version))
        return dict(entry) if entry else None

    def forget(self, store: LogStore, log_uri: str) -> int:
        """Delete every Redis key of one table (after deleting the table itself, so it can be
        created again at the same path). Returns the number of keys deleted."""
        table = self._table(store, log_uri)
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", table.base) + "*"
        deleted = 0
        with self._redis(f"forget the claims of {table.ident}") as client:
            for key in client.scan_iter(match=pattern, count=500):
                deleted += int(client.delete(key))
        return deleted
