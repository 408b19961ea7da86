"""Google Cloud Storage (``gs://``), through google-cloud-storage.

A log file is published with a *simple* multipart upload carrying
``ifGenerationMatch=0``: GCS creates the object only when no live object has the name
and answers ``412 Precondition Failed`` otherwise. That is put-if-absent
(CONDITIONAL_WRITE); an object is visible only whole.

The upload is always a single multipart request, whatever its size: the library would
switch to a resumable upload above 8 MiB, and fake-gcs-server ignores preconditions on
resumable uploads (and on ``uploadType=media``) -- measured, see ``docs/backends.md``.
Reads, listings and deletes go through the google-cloud-storage client.

Options:

``STORAGE_EMULATOR_HOST`` (option or environment variable)
    an emulator such as fake-gcs-server (``http://127.0.0.1:4443``); implies anonymous
    credentials.
``GOOGLE_CLOUD_PROJECT`` (``GOOGLE_PROJECT_ID``)
    the project (for the emulator and the data filesystem).
``GOOGLE_SERVICE_ACCOUNT`` / ``GOOGLE_SERVICE_ACCOUNT_PATH`` / ``GOOGLE_APPLICATION_CREDENTIALS``
    path of a service-account JSON key file; ``GOOGLE_SERVICE_ACCOUNT_KEY``: the JSON itself.
``GOOGLE_ANONYMOUS=true``
    no credentials (public buckets).
otherwise the standard chain (``google.auth.default()``: the
``GOOGLE_APPLICATION_CREDENTIALS`` environment variable, gcloud, metadata server).
``GOOGLE_MAX_ATTEMPTS`` / ``DELTALOG_RETRY_MAX_ATTEMPTS``
    retries (see :mod:`deltalog.logstores.retry`).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from deltalog.logstores.base import MutualExclusion, StoreSemantics
from deltalog.logstores.errors import LogStoreConfigError, LogStoreError
from deltalog.logstores.object_store import ObjectLocation, ObjectLogStore
from deltalog.logstores.retry import Outcome, outcome_for_status

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["GcsHttpError", "GcsLogStore"]

_SCOPES = ("https://www.googleapis.com/auth/devstorage.read_write",)
_PUBLIC_ENDPOINT = "https://storage.googleapis.com"
_SA_PATH_KEYS = (
    "GOOGLE_SERVICE_ACCOUNT",
    "GOOGLE_SERVICE_ACCOUNT_PATH",
    "SERVICE_ACCOUNT",
    "GOOGLE_APPLICATION_CREDENTIALS",
)
_SA_KEY_KEYS = ("GOOGLE_SERVICE_ACCOUNT_KEY", "SERVICE_ACCOUNT_KEY")


class GcsHttpError(Exception):
    """A non-2xx answer to deltalog's own upload request (turned into a
    :class:`LogStoreError` by the store; only retries and tests see it)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"GCS answered {status}: {text[:300]}")
        self.status = status


class GcsLogStore(ObjectLogStore):
    """Delta log on Google Cloud Storage with ``ifGenerationMatch=0`` uploads."""

    name = "gcs"
    schemes = ("gs", "gcs")
    extra = "gcs"
    requires = ("google.cloud.storage",)
    default_semantics = StoreSemantics(
        MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=False, consistent_listing=True
    )
    retry_attempt_options = ("GOOGLE_MAX_ATTEMPTS",)

    # -- configuration ------------------------------------------------------------------

    @property
    def emulator(self) -> str | None:
        host = self.options.first("STORAGE_EMULATOR_HOST") or os.environ.get("STORAGE_EMULATOR_HOST")
        if not host:
            return None
        return host if "://" in host else f"http://{host}"

    @property
    def endpoint(self) -> str:
        return (self.emulator or _PUBLIC_ENDPOINT).rstrip("/")

    @property
    def project(self) -> str | None:
        return self.options.first("GOOGLE_CLOUD_PROJECT", "GOOGLE_PROJECT_ID", "PROJECT_ID")

    @property
    def anonymous(self) -> bool:
        return self.emulator is not None or self.options.flag("GOOGLE_ANONYMOUS", "ANONYMOUS")

    def _validate_options(self) -> None:
        emulator = self.emulator
        if emulator is not None and not urlsplit(emulator).netloc:
            raise LogStoreConfigError(f"STORAGE_EMULATOR_HOST must be host:port or a URL, got {emulator!r}")

    def _credentials(self) -> Any:
        if self.anonymous:
            from google.auth.credentials import AnonymousCredentials

            return AnonymousCredentials()  # type: ignore[no-untyped-call]
        key_json = self.options.first(*_SA_KEY_KEYS)
        key_path = self.options.first(*_SA_PATH_KEYS)
        if key_json is not None or key_path is not None:
            from google.oauth2 import service_account

            try:
                if key_json is not None:
                    return service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
                        json.loads(key_json), scopes=_SCOPES
                    )
                return service_account.Credentials.from_service_account_file(key_path, scopes=_SCOPES)  # type: ignore[no-untyped-call]
            except (ValueError, OSError) as exc:
                raise LogStoreConfigError(f"cannot load the GCS service-account key: {type(exc).__name__}") from None
        import google.auth

        credentials, _ = google.auth.default(scopes=_SCOPES)
        return credentials

    @property
    def client(self) -> Any:
        """The google-cloud-storage client (built on first use)."""

        def build() -> Any:
            from google.cloud import storage

            options = {"api_endpoint": self.emulator} if self.emulator else None
            return storage.Client(
                project=self.project or ("deltalog" if self.anonymous else None),
                credentials=self._credentials(),
                client_options=options,
            )

        return self._client("gcs", build)

    @property
    def session(self) -> Any:
        """An HTTP session for uploads, authorized unless anonymous."""

        def build() -> Any:
            if self.anonymous:
                import requests

                return requests.Session()
            from google.auth.transport.requests import AuthorizedSession

            return AuthorizedSession(self._credentials())  # type: ignore[no-untyped-call]

        return self._client("session", build)

    # -- locations ----------------------------------------------------------------------

    def _locate(self, path: str) -> ObjectLocation:
        return self._bucket_location(path, "a GCS URI", "gs://bucket/path")

    # -- requests -----------------------------------------------------------------------

    def _get_object(self, loc: ObjectLocation) -> bytes:
        from google.api_core.exceptions import NotFound

        try:
            data: bytes = self.client.bucket(loc.bucket).blob(loc.key).download_as_bytes(retry=None)
            return data
        except NotFound:
            raise FileNotFoundError(loc.uri) from None

    def _put_object(self, loc: ObjectLocation, data: bytes, if_absent: bool) -> None:
        boundary = f"deltalog-{uuid.uuid4().hex}"
        metadata = json.dumps({"name": loc.key, "contentType": "application/json"})
        body = b"".join(
            [
                f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n"
                f"--{boundary}\r\nContent-Type: application/json\r\n\r\n".encode(),
                data,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        url = f"{self.endpoint}/upload/storage/v1/b/{quote(loc.bucket, safe='')}/o?uploadType=multipart"
        if if_absent:
            url += "&ifGenerationMatch=0"
        response = self.session.post(
            url,
            data=body,
            headers={"Content-Type": f'multipart/related; boundary="{boundary}"'},
            timeout=(10, 60),
        )
        if response.status_code >= 300:
            raise GcsHttpError(response.status_code, response.text)

    def _list_dir(self, loc: ObjectLocation, prefix: str, start: str) -> Iterator[tuple[str, int, int]]:
        def listing() -> list[tuple[str, int, int]]:
            blobs = self.client.list_blobs(
                loc.bucket,
                prefix=prefix or None,
                delimiter="/",
                start_offset=(prefix + start) if start else None,
                retry=None,
            )
            return [(b.name, int(b.size or 0), int(b.updated.timestamp() * 1000)) for b in blobs]

        return iter(self._call(listing, f"listing {loc.root}{prefix}"))

    def _delete_object(self, loc: ObjectLocation) -> None:
        from google.api_core.exceptions import NotFound

        try:
            self.client.bucket(loc.bucket).blob(loc.key).delete(retry=None)
        except NotFound as exc:
            if "bucket" in str(exc).lower() and "object" not in str(exc).lower():
                raise

    # -- errors -------------------------------------------------------------------------

    @staticmethod
    def _status(exc: BaseException) -> int:
        if isinstance(exc, GcsHttpError):
            return exc.status
        code = getattr(exc, "code", None)
        return code if isinstance(code, int) else 0

    def _is_transient(self, exc: BaseException) -> bool:
        import requests

        if isinstance(exc, (requests.ConnectionError, requests.Timeout)):
            return True
        status = self._status(exc)
        return status in (408, 429) or status >= 500

    def _classify_publish(self, exc: BaseException) -> Outcome:
        import requests

        if isinstance(exc, requests.ConnectTimeout):
            return Outcome.RETRY
        if isinstance(exc, requests.ConnectionError) and _refused(exc):
            return Outcome.RETRY
        if isinstance(exc, (requests.ConnectionError, requests.Timeout)):
            return Outcome.AMBIGUOUS
        status = self._status(exc)
        if status == 412:
            return Outcome.EXISTS
        return outcome_for_status(status)

    def _translate(self, exc: BaseException, what: str) -> BaseException | None:
        detail = self._redact(f"{type(exc).__name__}: {exc}")
        status = self._status(exc)
        if status in (401, 403):
            return LogStoreError(
                f"{what} failed: access denied ({detail}); check the service account or the "
                "application default credentials"
            )
        if status == 404:
            return LogStoreError(f"{what} failed: the bucket does not exist ({detail}); create it first")
        return LogStoreError(f"{what} failed: {detail}")

    # -- data files ---------------------------------------------------------------------

    def filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs as pafs

        kwargs: dict[str, Any] = {"retry_time_limit": timedelta(seconds=30)}
        if self.project:
            kwargs["project_id"] = self.project
        emulator = self.emulator
        if emulator is not None:
            parts = urlsplit(emulator)
            kwargs.update(anonymous=True, scheme=parts.scheme, endpoint_override=parts.netloc)
        elif self.anonymous:
            kwargs["anonymous"] = True
        elif self.options.first(*_SA_KEY_KEYS, *_SA_PATH_KEYS) is not None:
            # pyarrow cannot read a key given as an option: hand it a fresh access token.
            from google.auth.transport.requests import Request

            credentials = self._credentials()
            credentials.refresh(Request())
            kwargs["access_token"] = credentials.token
            kwargs["credential_token_expiration"] = credentials.expiry
        return pafs.GcsFileSystem(**kwargs)


def _refused(exc: BaseException) -> bool:
    """Whether a requests ConnectionError happened before anything was sent."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ in ("NewConnectionError", "ConnectionRefusedError"):
            return True
        for arg in getattr(current, "args", ()):
            if isinstance(arg, BaseException) and type(arg).__name__ in (
                "NewConnectionError",
                "ConnectionRefusedError",
                "MaxRetryError",
            ):
                reason = getattr(arg, "reason", None)
                if type(arg).__name__ != "MaxRetryError" or type(reason).__name__ == "NewConnectionError":
                    return True
        current = current.__cause__ or current.__context__
    return False
