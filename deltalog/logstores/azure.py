"""Azure Blob Storage and ADLS Gen2 (``az://``, ``abfs://``, ``abfss://``, ``wasb://``,
``wasbs://``, ``azure://``), through azure-storage-blob.

A log file is published with ``upload_blob(..., overwrite=False)``, a Put Blob with
``If-None-Match: *``: the service creates the blob only when none has that name and
answers ``409 BlobAlreadyExists`` otherwise. That is put-if-absent (CONDITIONAL_WRITE);
a blob is visible only whole.

URIs: ``abfss://<container>@<account>.dfs.core.windows.net/<path>`` (also ``abfs``,
``wasbs``/``wasb`` with ``.blob.``), or ``az://<container>/<path>`` with the account
from the options.

Options (object_store / delta-rs names, case-insensitive):

``AZURE_STORAGE_CONNECTION_STRING``
    a full connection string (account, key or SAS, endpoints). Wins over the rest.
``AZURE_STORAGE_ACCOUNT_NAME`` (``AZURE_STORAGE_ACCOUNT``, ``ACCOUNT_NAME``)
    the account, when the URI does not carry it.
``AZURE_STORAGE_ACCOUNT_KEY`` (``AZURE_STORAGE_ACCESS_KEY``, ``ACCOUNT_KEY``, ``ACCESS_KEY``)
    shared key.
``AZURE_STORAGE_SAS_TOKEN`` (``AZURE_STORAGE_SAS_KEY``, ``SAS_TOKEN``)
    a SAS token.
otherwise ``DefaultAzureCredential`` (environment, workload and managed identity, Azure
CLI) when ``azure-identity`` is installed (``deltalog[azure-identity]``).
``AZURE_STORAGE_USE_EMULATOR=true``
    Azurite at ``http://127.0.0.1:10000/devstoreaccount1`` with its well-known key.
``AZURE_STORAGE_ENDPOINT`` (``AZURE_ENDPOINT``)
    the blob service URL (for Azurite include the account: ``http://host:port/account``);
    ``http://`` needs ``AZURE_STORAGE_ALLOW_HTTP=true`` (or ``ALLOW_HTTP``).
``AZURE_MAX_ATTEMPTS`` / ``DELTALOG_RETRY_MAX_ATTEMPTS``
    retries (see :mod:`deltalog.logstores.retry`).

Data files go through ``pyarrow.fs.AzureFileSystem`` (pyarrow >= 16), which works
with Azurite as well as with real accounts (flat and hierarchical namespace).
"""

from __future__ import annotations

import importlib.util
import io
import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from deltalog.logstores.base import LogStoreSpec, MutualExclusion, StoreSemantics
from deltalog.logstores.errors import LogStoreConfigError, LogStoreError
from deltalog.logstores.object_store import ObjectLocation, ObjectLogStore
from deltalog.logstores.options import StorageOptions
from deltalog.logstores.retry import Outcome, outcome_for_status

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["AzureBlobLogStore", "parse_connection_string"]

log = logging.getLogger(__name__)

EMULATOR_ACCOUNT = "devstoreaccount1"
# Azurite's documented development key; public, not a secret.
EMULATOR_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

_ACCOUNT_KEYS = ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT", "ACCOUNT_NAME")
_KEY_KEYS = (
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_MASTER_KEY",
    "ACCOUNT_KEY",
    "ACCESS_KEY",
)
_SAS_KEYS = ("AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SAS_KEY", "SAS_TOKEN", "SAS_KEY")
_ENDPOINT_KEYS = ("AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT")


def parse_connection_string(text: str) -> dict[str, str]:
    """``Key=Value;...`` into a dict (values may contain ``=``)."""
    parts: dict[str, str] = {}
    for item in text.split(";"):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise LogStoreConfigError("AZURE_STORAGE_CONNECTION_STRING is not a Key=Value;... string")
        parts[key.strip()] = value.strip()
    return parts


class AzureBlobLogStore(ObjectLogStore):
    """Delta log on Azure Blob Storage / ADLS Gen2 with ``If-None-Match: *`` puts."""

    name = "azure"
    schemes = ("az", "azure", "abfs", "abfss", "wasb", "wasbs")
    extra = "azure"
    requires = ("azure.storage.blob",)
    default_semantics = StoreSemantics(
        MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=False, consistent_listing=True
    )
    retry_attempt_options = ("AZURE_MAX_ATTEMPTS",)

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._accounts_seen: set[str] = set()
        self._seen_lock = threading.Lock()
        self._start_from_supported = True

    # -- configuration ------------------------------------------------------------------

    def _connection(self) -> dict[str, str] | None:
        text = self.options.first("AZURE_STORAGE_CONNECTION_STRING", "CONNECTION_STRING")
        return parse_connection_string(text) if text else None

    @property
    def use_emulator(self) -> bool:
        return self.options.flag("AZURE_STORAGE_USE_EMULATOR", "USE_EMULATOR")

    def _validate_options(self) -> None:
        conn = self._connection()
        if conn is not None and not (conn.get("AccountName") or conn.get("BlobEndpoint")):
            raise LogStoreConfigError("AZURE_STORAGE_CONNECTION_STRING has neither AccountName nor BlobEndpoint")
        endpoint = self.options.first(*_ENDPOINT_KEYS)
        if endpoint is not None:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise LogStoreConfigError(f"AZURE_STORAGE_ENDPOINT must be a URL, got {endpoint!r}")
            if parts.scheme == "http" and not self.options.flag(
                "AZURE_STORAGE_ALLOW_HTTP", "AZURE_ALLOW_HTTP", "ALLOW_HTTP"
            ):
                raise LogStoreConfigError(
                    f"the Azure endpoint {endpoint} is plain http; set AZURE_STORAGE_ALLOW_HTTP=true"
                )
        if self.options.first(*_KEY_KEYS) and self.options.first(*_SAS_KEYS):
            raise LogStoreConfigError("give either an account key or a SAS token, not both")

    def _account(self, uri_account: str | None) -> str:
        conn = self._connection()
        if conn is not None and conn.get("AccountName"):
            return conn["AccountName"]
        account = self.options.first(*_ACCOUNT_KEYS) or uri_account
        if account is None and self.use_emulator:
            return EMULATOR_ACCOUNT
        if account is None:
            with self._seen_lock:
                seen = sorted(self._accounts_seen)
            if len(seen) == 1:
                return seen[0]
            raise LogStoreConfigError(
                "no Azure storage account: use an abfss://<container>@<account>.dfs.core.windows.net/ "
                "URI or set AZURE_STORAGE_ACCOUNT_NAME"
            )
        return account

    def _endpoint(self, account: str, host: str | None) -> str:
        """The blob service URL of ``account``."""
        conn = self._connection()
        if conn is not None and conn.get("BlobEndpoint"):
            return conn["BlobEndpoint"].rstrip("/")
        if conn is not None:
            protocol = conn.get("DefaultEndpointsProtocol", "https")
            suffix = conn.get("EndpointSuffix", "core.windows.net")
            return f"{protocol}://{account}.blob.{suffix}"
        endpoint = self.options.first(*_ENDPOINT_KEYS)
        if endpoint is not None:
            return endpoint.rstrip("/")
        if self.use_emulator:
            return f"http://127.0.0.1:10000/{account}"
        if host and "." in host:
            # abfss://c@acct.dfs.core.windows.net -> https://acct.blob.core.windows.net
            _, _, suffix = host.partition(".")
            service, _, rest = suffix.partition(".")
            if service in ("dfs", "blob") and rest:
                return f"https://{account}.blob.{rest}"
        return f"https://{account}.blob.core.windows.net"

    def _credential(self, account: str) -> Any:
        conn = self._connection()
        if conn is not None:
            if conn.get("AccountKey"):
                return {"account_name": conn.get("AccountName", account), "account_key": conn["AccountKey"]}
            if conn.get("SharedAccessSignature"):
                return conn["SharedAccessSignature"]
            return None
        key = self.options.first(*_KEY_KEYS)
        if key is not None:
            return {"account_name": account, "account_key": key}
        sas = self.options.first(*_SAS_KEYS)
        if sas is not None:
            return sas.lstrip("?")
        if self.use_emulator:
            return {"account_name": account, "account_key": EMULATOR_KEY}
        if importlib.util.find_spec("azure.identity") is not None:
            from azure.identity import DefaultAzureCredential

            return DefaultAzureCredential()
        log.warning(
            "no Azure credentials given and azure-identity is not installed: accessing %s "
            "anonymously (pip install 'deltalog[azure-identity]' for DefaultAzureCredential)",
            account,
        )
        return None

    def _service(self, account: str, host: str | None) -> Any:
        def build() -> Any:
            from azure.storage.blob import BlobServiceClient

            # retry_total=0: deltalog.logstores.retry retries, knowing which puts are ambiguous.
            return BlobServiceClient(
                self._endpoint(account, host),
                credential=self._credential(account),
                retry_total=0,
                connection_timeout=20,
                read_timeout=60,
            )

        return self._client(f"{account}|{host}", build)

    # -- locations ----------------------------------------------------------------------

    def _locate(self, path: str) -> ObjectLocation:
        scheme, rest = self._split_scheme(path)
        authority, _, key = rest.partition("/")
        container, at, host = authority.partition("@")
        if not container:
            raise LogStoreConfigError(
                f"an Azure URI needs a container: {path!r} "
                "(abfss://<container>@<account>.dfs.core.windows.net/path or az://<container>/path)"
            )
        uri_account = host.split(".", 1)[0] if at and host else None
        if uri_account:
            with self._seen_lock:
                self._accounts_seen.add(uri_account)
        return ObjectLocation(f"{scheme}://{authority}/", container, key)

    def _blob(self, loc: ObjectLocation) -> Any:
        authority = loc.root.split("://", 1)[1].rstrip("/")
        _, at, host = authority.partition("@")
        uri_account = host.split(".", 1)[0] if at and host else None
        account = self._account(uri_account)
        return self._service(account, host or None).get_blob_client(loc.bucket, loc.key)

    def _container(self, loc: ObjectLocation) -> Any:
        authority = loc.root.split("://", 1)[1].rstrip("/")
        _, at, host = authority.partition("@")
        uri_account = host.split(".", 1)[0] if at and host else None
        return self._service(self._account(uri_account), host or None).get_container_client(loc.bucket)

    # -- requests -----------------------------------------------------------------------

    def _get_object(self, loc: ObjectLocation) -> bytes:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            data: bytes = self._blob(loc).download_blob().readall()
            return data
        except ResourceNotFoundError as exc:
            if getattr(exc, "error_code", None) == "ContainerNotFound":
                raise
            raise FileNotFoundError(loc.uri) from None

    def _put_object(self, loc: ObjectLocation, data: bytes, if_absent: bool) -> None:
        self._blob(loc).upload_blob(data, overwrite=not if_absent, length=len(data))

    def _list_dir(self, loc: ObjectLocation, prefix: str, start: str) -> Iterator[tuple[str, int, int]]:
        from azure.core.exceptions import HttpResponseError

        container = self._container(loc)

        def listing(start_from: str | None) -> list[tuple[str, int, int]]:
            found: list[tuple[str, int, int]] = []
            extra = {"start_from": start_from} if start_from else {}
            for item in container.walk_blobs(name_starts_with=prefix or None, delimiter="/", **extra):
                size = getattr(item, "size", None)
                if size is None:  # a BlobPrefix (sub-directory)
                    continue
                found.append((item.name, int(size), int(item.last_modified.timestamp() * 1000)))
            return found

        what = f"listing {loc.root}{prefix}"
        if start and self._start_from_supported:
            try:
                # startFrom (inclusive) skips the older versions on the service side.
                return iter(self._call(lambda: listing(prefix + start), what))
            except LogStoreError as exc:
                cause = exc.__cause__
                if not (isinstance(cause, HttpResponseError) and cause.status_code == 400):
                    raise
                log.info("the Azure service rejected startFrom; listing whole directories from now on")
                self._start_from_supported = False
        return iter(self._call(lambda: listing(None), what))

    def _delete_object(self, loc: ObjectLocation) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            self._blob(loc).delete_blob()
        except ResourceNotFoundError as exc:
            if getattr(exc, "error_code", None) == "ContainerNotFound":
                raise

    # -- errors -------------------------------------------------------------------------

    def _is_transient(self, exc: BaseException) -> bool:
        from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError

        if isinstance(exc, (ServiceRequestError, ServiceResponseError)):
            return True
        if isinstance(exc, HttpResponseError):
            status = exc.status_code or 0
            return status in (408, 429) or status >= 500
        return False

    def _classify_publish(self, exc: BaseException) -> Outcome:
        from azure.core.exceptions import (
            HttpResponseError,
            ResourceExistsError,
            ServiceRequestError,
            ServiceResponseError,
        )

        if isinstance(exc, ResourceExistsError):
            return Outcome.EXISTS
        if isinstance(exc, ServiceRequestError):
            return Outcome.RETRY  # the request never got out
        if isinstance(exc, ServiceResponseError):
            return Outcome.AMBIGUOUS  # sent, answer lost
        if isinstance(exc, HttpResponseError):
            status = exc.status_code or 0
            if status in (409, 412) and getattr(exc, "error_code", None) != "ContainerBeingDeleted":
                return Outcome.EXISTS
            return outcome_for_status(status)
        return Outcome.FATAL

    def _translate(self, exc: BaseException, what: str) -> BaseException | None:
        detail = self._redact(f"{type(exc).__name__}: {exc}")
        code = getattr(exc, "error_code", None)
        status = getattr(exc, "status_code", None) or 0
        if code == "ContainerNotFound":
            return LogStoreError(f"{what} failed: the container does not exist ({detail}); create it first")
        if status in (401, 403):
            return LogStoreError(
                f"{what} failed: access denied ({detail}); check the account key, SAS token or "
                "the identity used by DefaultAzureCredential"
            )
        return LogStoreError(f"{what} failed: {detail}")

    # -- data files and specs --------------------------------------------------------------

    def spec(self) -> LogStoreSpec:
        options = self.options.to_dict()
        conn = self._connection()
        if self.options.first(*_ACCOUNT_KEYS) is None and not (conn and conn.get("AccountName")):
            with self._seen_lock:
                seen = sorted(self._accounts_seen)
            if len(seen) == 1:  # the account came from a URI: the other process needs it too
                options["AZURE_STORAGE_ACCOUNT_NAME"] = seen[0]
        cls = type(self)
        return LogStoreSpec(f"{cls.__module__}:{cls.__qualname__}", StorageOptions(options))

    def open_output_stream(self, path: str) -> io.IOBase:
        """Through the Blob service's staged blocks, committed when the stream closes: the
        data filesystem's stream shows the blob from the moment it opens."""
        from deltalog.logstores.azure_blocks import BlockBlobOutputStream

        loc = self._locate(path)
        return BlockBlobOutputStream(self._blob(loc), self._call, loc.uri)

    def filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs as pafs

        account = self._account(None)
        kwargs: dict[str, Any] = {"account_name": account}
        endpoint = urlsplit(self._endpoint(account, None))
        if not endpoint.netloc.startswith(f"{account}.blob."):
            kwargs["blob_storage_authority"] = endpoint.netloc
            kwargs["dfs_storage_authority"] = endpoint.netloc
        else:
            suffix = endpoint.netloc.split(".blob.", 1)[1]
            kwargs["blob_storage_authority"] = f".blob.{suffix}"
            kwargs["dfs_storage_authority"] = f".dfs.{suffix}"
        kwargs["blob_storage_scheme"] = endpoint.scheme
        kwargs["dfs_storage_scheme"] = endpoint.scheme
        credential = self._credential(account)
        if isinstance(credential, dict):
            kwargs["account_key"] = credential["account_key"]
        elif isinstance(credential, str):
            kwargs["sas_token"] = credential
        # Otherwise pyarrow uses its own DefaultAzureCredential chain.
        return pafs.AzureFileSystem(**kwargs)
