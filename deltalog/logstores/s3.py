"""Amazon S3 and S3-compatible services (``s3://``, ``s3a://``), through boto3.

:class:`S3LogStore` publishes a log file with ``PutObject`` and ``If-None-Match: *``:
S3 creates the object only if no object has that key and answers ``412
PreconditionFailed`` (or ``409 ConditionalRequestConflict`` while another conditional
write of the key is in flight) otherwise. That is put-if-absent, so the store declares
CONDITIONAL_WRITE and needs no lock; an S3 object is visible only whole.

:class:`S3PlainPutLogStore` (``logstore="s3-no-conditional-put"``) is for
S3-compatible services that ignore or reject ``If-None-Match``: it checks with
``HeadObject`` and then puts, which is racy, so it declares NONE and the engine demands
a Redis commit lock (or an explicit single-writer opt-in).

Options (delta-rs / AWS names, case-insensitive; unset means the standard AWS chain:
environment, ``~/.aws``, SSO, instance and container roles):

``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT``
    a custom endpoint (MinIO, moto, Ceph, ...). An ``http://`` endpoint also needs
    ``AWS_ALLOW_HTTP=true``.
``AWS_REGION`` / ``AWS_DEFAULT_REGION``
    the region (``us-east-1`` when a custom endpoint is given without one).
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``
    credentials; ``AWS_SKIP_SIGNATURE=true`` for anonymous access.
``AWS_S3_ADDRESSING_STYLE`` (``path|virtual|auto``), ``AWS_VIRTUAL_HOSTED_STYLE_REQUEST``,
``AWS_FORCE_PATH_STYLE``
    addressing; path style by default with a custom endpoint, ``auto`` otherwise.
``AWS_MAX_ATTEMPTS`` (or ``DELTALOG_RETRY_MAX_ATTEMPTS``), ``AWS_RETRY_MODE``
    retries (see :mod:`deltalog.logstores.retry`); the mode picks pyarrow's retry
    strategy for data files (``standard``/``adaptive`` or ``legacy``).
``AWS_CONNECT_TIMEOUT``, ``AWS_READ_TIMEOUT`` (also ``CONNECT_TIMEOUT``, ``TIMEOUT``)
    durations such as ``5s``.
``DELTALOG_S3_LIST_PAGE_SIZE``
    keys per ``ListObjectsV2`` page (default 1000).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from deltalog.logstores.base import MutualExclusion, StoreSemantics
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError, LogStoreError
from deltalog.logstores.object_store import ObjectLocation, ObjectLogStore
from deltalog.logstores.retry import Outcome, parse_duration

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["S3LogStore", "S3PlainPutLogStore"]

log = logging.getLogger(__name__)

_THROTTLE_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequests",
        "ServiceUnavailable",
        "RequestThrottled",
        "Busy",
    }
)
_SERVER_CODES = frozenset({"InternalError", "RequestTimeout", "InternalServerError"})
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


def _error_code(exc: BaseException) -> tuple[str, int]:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return "", 0
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


class S3LogStore(ObjectLogStore):
    """Delta log on S3 with conditional puts (``If-None-Match: *``)."""

    name = "s3"
    schemes: ClassVar[tuple[str, ...]] = ("s3", "s3a")
    extra = "s3"
    requires = ("boto3",)
    default_semantics = StoreSemantics(
        MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=False, consistent_listing=True
    )
    retry_attempt_options = ("AWS_MAX_ATTEMPTS",)

    # -- configuration ------------------------------------------------------------------

    @property
    def endpoint(self) -> str | None:
        return self.options.first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT", "ENDPOINT_URL")

    @property
    def region(self) -> str | None:
        region = self.options.first("AWS_REGION", "AWS_DEFAULT_REGION", "REGION")
        if region is None and self.endpoint is not None:
            return "us-east-1"
        return region

    @property
    def addressing_style(self) -> str:
        style = self.options.first("AWS_S3_ADDRESSING_STYLE")
        if style is not None:
            return style.strip().lower()
        if self.options.flag("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "VIRTUAL_HOSTED_STYLE_REQUEST"):
            return "virtual"
        if self.options.first("AWS_FORCE_PATH_STYLE") is not None:
            return "path" if self.options.flag("AWS_FORCE_PATH_STYLE") else "virtual"
        return "path" if self.endpoint is not None else "auto"

    @property
    def list_page_size(self) -> int:
        text = self.options.first("DELTALOG_S3_LIST_PAGE_SIZE", default="1000") or "1000"
        try:
            size = int(text)
        except ValueError:
            size = 0
        if not 1 <= size <= 1000:
            raise LogStoreConfigError(f"DELTALOG_S3_LIST_PAGE_SIZE must be 1..1000, got {text!r}")
        return size

    def _timeout(self, *keys: str) -> float | None:
        for key in keys:
            value = self.options.first(key)
            if value is not None:
                return parse_duration(value, key)
        return None

    def _validate_options(self) -> None:
        endpoint = self.endpoint
        if endpoint is not None:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise LogStoreConfigError(f"AWS_ENDPOINT_URL must look like https://host[:port], got {endpoint!r}")
            if parts.scheme == "http" and not self.options.flag("AWS_ALLOW_HTTP", "ALLOW_HTTP"):
                raise LogStoreConfigError(
                    f"the S3 endpoint {endpoint} is plain http; set AWS_ALLOW_HTTP=true to allow "
                    "unencrypted connections (as delta-rs requires too)"
                )
        if self.addressing_style not in ("path", "virtual", "auto"):
            raise LogStoreConfigError(
                f"AWS_S3_ADDRESSING_STYLE must be path, virtual or auto, not {self.addressing_style!r}"
            )
        mode = (self.options.first("AWS_RETRY_MODE") or "standard").lower()
        if mode not in ("standard", "adaptive", "legacy"):
            raise LogStoreConfigError(f"AWS_RETRY_MODE must be standard, adaptive or legacy, not {mode!r}")
        self.list_page_size  # noqa: B018 -- validates

    def _session(self) -> Any:
        import boto3

        return boto3.session.Session(
            aws_access_key_id=self.options.first("AWS_ACCESS_KEY_ID", "ACCESS_KEY_ID"),
            aws_secret_access_key=self.options.first("AWS_SECRET_ACCESS_KEY", "SECRET_ACCESS_KEY"),
            aws_session_token=self.options.first("AWS_SESSION_TOKEN", "AWS_TOKEN", "SESSION_TOKEN"),
            region_name=self.region,
            profile_name=self.options.first("AWS_PROFILE", "PROFILE"),
        )

    def _make_client(self) -> Any:
        from botocore.config import Config

        extra: dict[str, Any] = {}
        if self.options.flag("AWS_SKIP_SIGNATURE", "SKIP_SIGNATURE"):
            from botocore import UNSIGNED

            extra["signature_version"] = UNSIGNED
        connect = self._timeout("AWS_CONNECT_TIMEOUT", "CONNECT_TIMEOUT")
        read = self._timeout("AWS_READ_TIMEOUT", "TIMEOUT")
        config = Config(
            region_name=self.region,
            # Retries happen in deltalog.logstores.retry: an SDK resending a conditional
            # put after a lost answer would report our own commit as someone else's.
            retries={"total_max_attempts": 1, "mode": "standard"},
            s3={"addressing_style": self.addressing_style},
            connect_timeout=connect if connect is not None else 10,
            read_timeout=read if read is not None else 60,
            max_pool_connections=32,
            **extra,
        )
        return self._session().client("s3", endpoint_url=self.endpoint, config=config)

    @property
    def client(self) -> Any:
        """The boto3 S3 client (built on first use)."""
        return self._client("s3", self._make_client)

    # -- locations ----------------------------------------------------------------------

    def _locate(self, path: str) -> ObjectLocation:
        return self._bucket_location(path, "an S3 URI", "s3://bucket/path")

    # -- requests -----------------------------------------------------------------------

    def _get_object(self, loc: ObjectLocation) -> bytes:
        try:
            response = self.client.get_object(Bucket=loc.bucket, Key=loc.key)
            data: bytes = response["Body"].read()
            return data
        except Exception as exc:
            code, status = _error_code(exc)
            if code in _NOT_FOUND_CODES or (status == 404 and code != "NoSuchBucket"):
                raise FileNotFoundError(loc.uri) from None
            raise

    def _put_object(self, loc: ObjectLocation, data: bytes, if_absent: bool) -> None:
        kwargs: dict[str, Any] = {"Bucket": loc.bucket, "Key": loc.key, "Body": data}
        if if_absent:
            kwargs["IfNoneMatch"] = "*"
        self.client.put_object(**kwargs)

    def _list_dir(self, loc: ObjectLocation, prefix: str, start: str) -> Iterator[tuple[str, int, int]]:
        request: dict[str, Any] = {
            "Bucket": loc.bucket,
            "Prefix": prefix,
            "Delimiter": "/",
            "MaxKeys": self.list_page_size,
        }
        if start:
            # StartAfter is exclusive and list_from inclusive: start just before the name
            # (the base class drops the few extra keys this lets through).
            request["StartAfter"] = prefix + start[:-1]
        while True:
            page: dict[str, Any] = self._call(
                functools.partial(self.client.list_objects_v2, **request),
                f"listing s3://{loc.bucket}/{prefix}",
            )
            for item in page.get("Contents", ()):
                yield item["Key"], int(item["Size"]), int(item["LastModified"].timestamp() * 1000)
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            request = {**request, "ContinuationToken": token}
            request.pop("StartAfter", None)

    def _delete_object(self, loc: ObjectLocation) -> None:
        self.client.delete_object(Bucket=loc.bucket, Key=loc.key)

    def _head(self, loc: ObjectLocation) -> bool:
        try:
            self.client.head_object(Bucket=loc.bucket, Key=loc.key)
            return True
        except Exception as exc:
            code, status = _error_code(exc)
            if status == 404 or code in _NOT_FOUND_CODES:
                return False
            raise

    # -- errors -------------------------------------------------------------------------

    def _is_transient(self, exc: BaseException) -> bool:
        from botocore.exceptions import BotoCoreError, HTTPClientError

        if isinstance(exc, (HTTPClientError, BotoCoreError)) and _is_connection_error(exc):
            return True
        code, status = _error_code(exc)
        if status == 501 or code == "NotImplemented":
            return False
        return status == 429 or status >= 500 or code in _THROTTLE_CODES or code in _SERVER_CODES

    def _classify_publish(self, exc: BaseException) -> Outcome:
        from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

        if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError)):
            return Outcome.RETRY  # never reached the service
        if _is_connection_error(exc):
            return Outcome.AMBIGUOUS  # sent, answer lost
        code, status = _error_code(exc)
        if status == 501 or code == "NotImplemented":
            return Outcome.FATAL  # the service does not do conditional puts
        if status == 412 or code == "PreconditionFailed":
            return Outcome.EXISTS
        if status == 409 and code in ("ConditionalRequestConflict", "OperationAborted", ""):
            return Outcome.EXISTS
        if status in (429, 503) or code in _THROTTLE_CODES:
            return Outcome.RETRY
        if status >= 500 or code in _SERVER_CODES:
            return Outcome.AMBIGUOUS
        return Outcome.FATAL

    def _translate(self, exc: BaseException, what: str) -> BaseException | None:
        code, status = _error_code(exc)
        detail = self._redact(f"{type(exc).__name__}: {exc}")
        if code == "NoSuchBucket":
            return LogStoreError(f"{what} failed: the bucket does not exist ({detail}); create it first")
        if status in (401, 403) or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return LogStoreError(
                f"{what} failed: access denied ({detail}); check the credentials (AWS_ACCESS_KEY_ID, "
                "AWS_PROFILE or the AWS chain) and the bucket policy"
            )
        if code == "NotImplemented" or status == 501:
            return LogStoreError(
                f"{what} failed: the service does not implement this request ({detail}). For "
                "S3-compatible services without conditional writes use "
                "logstore='s3-no-conditional-put' with a Redis commit lock"
            )
        return LogStoreError(f"{what} failed: {detail}")

    # -- data files ---------------------------------------------------------------------

    def filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs as pafs

        kwargs: dict[str, Any] = {}
        endpoint = self.endpoint
        if endpoint is not None:
            parts = urlsplit(endpoint)
            kwargs["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
            kwargs["scheme"] = parts.scheme
        if self.region is not None:
            kwargs["region"] = self.region
        if self.options.flag("AWS_SKIP_SIGNATURE", "SKIP_SIGNATURE"):
            kwargs["anonymous"] = True
        elif self.options.first("AWS_ACCESS_KEY_ID", "ACCESS_KEY_ID") is not None:
            kwargs["access_key"] = self.options.first("AWS_ACCESS_KEY_ID", "ACCESS_KEY_ID")
            kwargs["secret_key"] = self.options.first("AWS_SECRET_ACCESS_KEY", "SECRET_ACCESS_KEY")
            token = self.options.first("AWS_SESSION_TOKEN", "AWS_TOKEN", "SESSION_TOKEN")
            if token is not None:
                kwargs["session_token"] = token
        elif self.options.first("AWS_PROFILE", "PROFILE") is not None:
            # pyarrow cannot take a profile name: resolve it here, in this process.
            credentials = self._session().get_credentials()
            if credentials is None:
                raise LogStoreConfigError("the AWS profile given in AWS_PROFILE has no credentials")
            frozen = credentials.get_frozen_credentials()
            kwargs["access_key"] = frozen.access_key
            kwargs["secret_key"] = frozen.secret_key
            if frozen.token:
                kwargs["session_token"] = frozen.token
        kwargs["force_virtual_addressing"] = self.addressing_style == "virtual"
        mode = (self.options.first("AWS_RETRY_MODE") or "standard").lower()
        attempts = self.retry_policy.max_attempts
        kwargs["retry_strategy"] = (
            pafs.AwsDefaultS3RetryStrategy(max_attempts=attempts)
            if mode == "legacy"
            else pafs.AwsStandardS3RetryStrategy(max_attempts=attempts)
        )
        connect = self._timeout("AWS_CONNECT_TIMEOUT", "CONNECT_TIMEOUT")
        if connect is not None:
            kwargs["connect_timeout"] = connect
        read = self._timeout("AWS_READ_TIMEOUT", "TIMEOUT")
        if read is not None:
            kwargs["request_timeout"] = read
        return pafs.S3FileSystem(**kwargs)


def _is_connection_error(exc: BaseException) -> bool:
    from botocore.exceptions import (
        ConnectionClosedError,
        ConnectionError,
        HTTPClientError,
        IncompleteReadError,
        ReadTimeoutError,
        ResponseStreamingError,
    )

    return isinstance(
        exc,
        (
            ConnectionError,
            HTTPClientError,
            ConnectionClosedError,
            ReadTimeoutError,
            IncompleteReadError,
            ResponseStreamingError,
        ),
    )


class S3PlainPutLogStore(S3LogStore):
    """S3-compatible storage without conditional writes: ``HeadObject`` then ``PutObject``.

    The check and the put are two requests, so two writers can both "win": the store
    declares NONE and the transaction engine refuses to commit through it without a
    Redis commit lock or an explicit single-writer opt-in.
    """

    name = "s3-no-conditional-put"
    schemes = ()
    default_semantics = StoreSemantics(MutualExclusion.NONE, partial_write_visible=False, consistent_listing=True)

    def _accepts_scheme(self, scheme: str) -> bool:
        # Serves no scheme by default (s3:// picks the conditional store), but any
        # s3:// or s3a:// URI once chosen explicitly.
        return scheme in S3LogStore.schemes

    def _publish(self, path: str, loc: ObjectLocation, data: bytes) -> None:
        if self._call(lambda: self._head(loc), f"checking {path}"):
            raise FileAlreadyExistsError(path)
        # A plain put is idempotent: resending it after a lost answer is harmless.
        self._call(lambda: self._put_object(loc, data, False), f"writing {path}")
