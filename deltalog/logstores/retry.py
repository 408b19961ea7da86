"""Retrying transient storage errors, shared by the cloud LogStores.

Every cloud store turns off its SDK's own retries and retries here instead, for one
reason: an SDK that silently resends a conditional put after a timeout gets ``412``
for its *own* earlier attempt and reports "already exists" -- a lost commit. Here
the store knows which attempts had an unknown outcome.

Two entry points:

* :func:`call_with_retry` for idempotent requests (reads, lists, deletes, overwrites):
  retried with exponential backoff and full jitter; after the last attempt
  :class:`~deltalog.logstores.errors.TransientStorageError`.
* :func:`publish_with_retry` for the put-if-absent of a log file. An attempt whose
  outcome is unknown (the request was sent, the answer was lost) makes the rest of the
  publish *ambiguous*: a later "already exists" is success only when the object holds
  exactly the bytes we sent, and running out of attempts raises
  :class:`~deltalog.logstores.errors.AmbiguousWriteError`, never success or
  :class:`~deltalog.logstores.errors.FileAlreadyExistsError` blindly.

Options (all stores): ``DELTALOG_RETRY_MAX_ATTEMPTS`` (default 5, counting the first
try), ``DELTALOG_RETRY_BASE_DELAY`` (``100ms``), ``DELTALOG_RETRY_MAX_DELAY`` (``5s``).
"""

from __future__ import annotations

import enum
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from deltalog import durations
from deltalog.durations import InvalidDurationError
from deltalog.logstores.errors import (
    AmbiguousWriteError,
    FileAlreadyExistsError,
    LogStoreConfigError,
    TransientStorageError,
)
from deltalog.logstores.options import StorageOptions, redact

__all__ = [
    "Outcome",
    "RetryPolicy",
    "call_with_retry",
    "parse_duration",
    "publish_with_retry",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


def parse_duration(text: str, option: str) -> float:
    """Seconds in ``"250ms"``, ``"5s"``, ``"2m"``, ``"interval 1 minute"`` or a plain number of
    seconds (:func:`deltalog.durations.parse_duration`)."""
    try:
        return durations.parse_duration(text, f"option {option}").total_seconds()
    except InvalidDurationError as exc:
        raise LogStoreConfigError(str(exc)) from None


class Outcome(enum.Enum):
    """What a failed request means for a publish."""

    EXISTS = "exists"
    """The target exists (412 / 409): someone -- maybe our earlier attempt -- wrote it."""
    RETRY = "retry"
    """Transient, and the request certainly did not take effect (throttled, refused)."""
    AMBIGUOUS = "ambiguous"
    """Transient, and the request may have taken effect (timeout or reset after sending, 5xx)."""
    FATAL = "fatal"
    """Not worth retrying (denied, bad request): re-raise as it is."""


def outcome_for_status(status: int) -> Outcome:
    """What an HTTP status (other than the store's own "exists" answers) means for a
    publish: throttling is retried, a timeout or a 5xx may have landed, the rest is fatal."""
    if status in (429, 503):
        return Outcome.RETRY
    if status == 408 or status >= 500:
        return Outcome.AMBIGUOUS
    return Outcome.FATAL


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter."""

    max_attempts: int = 5
    base_delay: float = 0.1
    max_delay: float = 5.0

    @classmethod
    def from_options(cls, options: Mapping[str, str], *attempt_aliases: str) -> RetryPolicy:
        opts = options if isinstance(options, StorageOptions) else StorageOptions(options)
        attempts_text = opts.first("DELTALOG_RETRY_MAX_ATTEMPTS", *attempt_aliases)
        attempts = cls.max_attempts
        if attempts_text is not None:
            try:
                attempts = int(attempts_text)
            except ValueError:
                attempts = 0
            if attempts < 1:
                raise LogStoreConfigError(f"retry max attempts must be a whole number >= 1, got {attempts_text!r}")
        base = opts.first("DELTALOG_RETRY_BASE_DELAY")
        top = opts.first("DELTALOG_RETRY_MAX_DELAY")
        return cls(
            max_attempts=attempts,
            base_delay=cls.base_delay if base is None else parse_duration(base, "DELTALOG_RETRY_BASE_DELAY"),
            max_delay=cls.max_delay if top is None else parse_duration(top, "DELTALOG_RETRY_MAX_DELAY"),
        )

    def delay(self, attempt: int) -> float:
        """Seconds to sleep after failed attempt number ``attempt`` (1-based)."""
        cap = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return random.uniform(0, cap)


def _describe(exc: BaseException, options: Mapping[str, str]) -> str:
    return redact(f"{type(exc).__name__}: {exc}", options)


def call_with_retry(
    fn: Callable[[], T],
    *,
    what: str,
    policy: RetryPolicy,
    is_transient: Callable[[BaseException], bool],
    options: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``fn()``, retried while it raises transient errors.

    Non-transient errors propagate unchanged. After ``policy.max_attempts`` transient
    failures raises :class:`TransientStorageError` naming ``what``.
    """
    opts = options or {}
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            if not is_transient(exc):
                raise
            if attempt >= policy.max_attempts:
                raise TransientStorageError(
                    f"{what} failed after {attempt} attempts; last error: {_describe(exc, opts)}. "
                    "The service may be overloaded or unreachable: try again later, or raise "
                    "DELTALOG_RETRY_MAX_ATTEMPTS."
                ) from exc
            pause = policy.delay(attempt)
            log.info("%s: transient error (%s); retry %d in %.2fs", what, _describe(exc, opts), attempt, pause)
            sleep(pause)


def publish_with_retry(
    path: str,
    data: bytes,
    *,
    put_if_absent: Callable[[], None],
    read_existing: Callable[[], bytes | None],
    classify: Callable[[BaseException], Outcome],
    policy: RetryPolicy,
    options: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Create ``path`` holding ``data`` unless it exists, telling apart the four outcomes.

    ``put_if_absent()`` sends one conditional put; ``read_existing()`` returns the
    object's bytes (``None`` when it is missing) and is used only after an ambiguous
    attempt; ``classify`` maps an exception of ``put_if_absent`` to an :class:`Outcome`.
    """
    opts = options or {}
    ambiguous: BaseException | None = None
    attempt = 0
    while True:
        attempt += 1
        try:
            put_if_absent()
            return
        except Exception as exc:
            outcome = classify(exc)
            if outcome is Outcome.FATAL:
                raise
            if outcome is Outcome.EXISTS:
                if ambiguous is None:
                    raise FileAlreadyExistsError(path) from None
                try:
                    existing = read_existing()
                except Exception as read_exc:
                    raise AmbiguousWriteError(path, _Redacted(_describe(read_exc, opts))) from read_exc
                if existing == data:
                    log.info("%s: an earlier attempt whose answer was lost had landed", path)
                    return
                if existing is not None:
                    raise FileAlreadyExistsError(path) from None
                # A conflict (409) while the object is not there yet: ask again.
            if outcome is Outcome.AMBIGUOUS:
                ambiguous = exc
            if attempt >= policy.max_attempts:
                if ambiguous is not None:
                    raise AmbiguousWriteError(path, _Redacted(_describe(ambiguous, opts))) from exc
                raise TransientStorageError(
                    f"writing {path} failed after {attempt} attempts; last error: "
                    f"{_describe(exc, opts)}. Nothing was written; try the commit again later."
                ) from exc
            pause = policy.delay(attempt)
            log.info(
                "%s: transient error on publish (%s, %s); retry %d in %.2fs",
                path,
                outcome.value,
                _describe(exc, opts),
                attempt,
                pause,
            )
            sleep(pause)


class _Redacted(Exception):
    """Carries an already-redacted description into AmbiguousWriteError's message."""
