"""What only the Azure store does: URI forms and the ways to authenticate."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow.fs as pafs
import pytest

from deltalog.logstores.azure import AzureBlobLogStore, parse_connection_string
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError
from tests.backends.conftest import FAST_RETRIES, Backend
from tests.servers.azure import ACCOUNT, ACCOUNT_KEY, connection_string


def test_az_and_abfss_uris_name_the_same_blobs(azure: Backend) -> None:
    store = azure.store()
    store.write(f"az://{azure.bucket}/t/_delta_log/a.json", ["a"])
    assert list(store.read(f"{azure.root}/_delta_log/a.json")) == ["a"]
    wasbs = f"wasbs://{azure.bucket}@{ACCOUNT}.blob.core.windows.net/t"
    assert [s.path for s in store.list_from(f"{wasbs}/_delta_log/")] == [f"{wasbs}/_delta_log/a.json"]


def test_connection_string(azure: Backend) -> None:
    store = AzureBlobLogStore({"AZURE_STORAGE_CONNECTION_STRING": connection_string(azure.server.url), **FAST_RETRIES})
    path = f"az://{azure.bucket}/t/_delta_log/{0:020d}.json"
    store.write(path, ["x"])
    with pytest.raises(FileAlreadyExistsError):
        store.write(path, ["y"])
    assert "AccountKey" not in repr(store) and ACCOUNT_KEY not in repr(store)
    fs = store.filesystem()
    assert fs.get_file_info(f"{azure.bucket}/t/_delta_log/{0:020d}.json").size == 2


def test_sas_token(azure: Backend) -> None:
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    sas = generate_container_sas(
        ACCOUNT,
        azure.bucket,
        account_key=ACCOUNT_KEY,
        permission=ContainerSasPermissions(read=True, write=True, delete=True, list=True, create=True),
        expiry=datetime.now(timezone.utc) + timedelta(hours=1),
    )
    store = AzureBlobLogStore(
        {
            "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT,
            "AZURE_STORAGE_SAS_TOKEN": sas,
            "AZURE_STORAGE_ENDPOINT": f"{azure.server.url}/{ACCOUNT}",
            "AZURE_STORAGE_ALLOW_HTTP": "true",
        }
    )
    path = f"az://{azure.bucket}/t/_delta_log/{0:020d}.json"
    store.write(path, ["x"])
    with pytest.raises(FileAlreadyExistsError):
        store.write(path, ["y"])
    assert [s.name for s in store.list_from(path)] == [f"{0:020d}.json"]
    assert sas not in repr(store)
    # The data filesystem gets the SAS too. (pyarrow 26's AzureFileSystem addresses
    # Azurite wrongly when given a SAS token -- "resource name length" errors -- so its
    # requests are not exercised here; docs/backends.md says so.)
    assert isinstance(store.filesystem(), pafs.AzureFileSystem)


def test_emulator_flag_uses_the_well_known_account(azure: Backend) -> None:
    store = AzureBlobLogStore(
        {
            "AZURE_STORAGE_USE_EMULATOR": "true",
            "AZURE_STORAGE_ENDPOINT": f"{azure.server.url}/{ACCOUNT}",
            "AZURE_STORAGE_ALLOW_HTTP": "true",
        }
    )
    store.write(f"az://{azure.bucket}/t/x.json", ["x"])
    assert list(azure.store().read(f"{azure.root}/x.json")) == ["x"]
    assert isinstance(store.filesystem(), pafs.AzureFileSystem)


def test_account_from_the_uri_travels_in_the_spec(azure: Backend) -> None:
    opts = azure.options()
    del opts["AZURE_STORAGE_ACCOUNT_NAME"]
    store = AzureBlobLogStore(opts)
    store.write(f"{azure.root}/x.json", ["x"])
    spec = store.spec()
    assert spec.options["AZURE_STORAGE_ACCOUNT_NAME"] == ACCOUNT
    assert list(spec.build().read(f"az://{azure.bucket}/t/x.json")) == ["x"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:1/acct"}, "ALLOW_HTTP"),
        ({"AZURE_STORAGE_ENDPOINT": "nowhere"}, "must be a URL"),
        ({"AZURE_STORAGE_ACCOUNT_KEY": "k" * 8, "AZURE_STORAGE_SAS_TOKEN": "s" * 8}, "not both"),
        ({"AZURE_STORAGE_CONNECTION_STRING": "garbage"}, "Key=Value"),
    ],
)
def test_bad_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(LogStoreConfigError) as info:
        AzureBlobLogStore(options)
    assert message in str(info.value)
    assert "k" * 8 not in str(info.value) and "s" * 8 not in str(info.value)


def test_az_uri_without_account_is_a_config_error() -> None:
    store = AzureBlobLogStore({})
    with pytest.raises(LogStoreConfigError) as info:
        store.read_bytes("az://container/t/x.json")
    assert "AZURE_STORAGE_ACCOUNT_NAME" in str(info.value)


def test_parse_connection_string_keeps_equals_signs() -> None:
    parsed = parse_connection_string("AccountName=a;AccountKey=abc==;BlobEndpoint=http://h/a;")
    assert parsed == {"AccountName": "a", "AccountKey": "abc==", "BlobEndpoint": "http://h/a"}


def test_listing_falls_back_when_the_service_rejects_start_from(azure: Backend, proxy_for) -> None:
    from tests.backends.faultproxy import Fault

    store = azure.store()
    for v in range(4):
        store.write(f"{azure.root}/_delta_log/{v:020d}.json", ["x"])
    proxy = proxy_for(azure)
    body = b"<?xml version='1.0'?><Error><Code>InvalidQueryParameterValue</Code><Message>startFrom</Message></Error>"
    proxy.add(
        Fault(
            "status",
            method="GET",
            query_contains="startFrom",
            times=100,
            status=400,
            body=body,
            headers={"x-ms-error-code": "InvalidQueryParameterValue"},
        )
    )
    old_service = azure.store(proxy.url)
    for _ in range(2):
        names = [s.name for s in old_service.list_from(f"{azure.root}/_delta_log/{2:020d}.json")]
        assert names == [f"{2:020d}.json", f"{3:020d}.json"]
    listings = [p for m, p in proxy.requests if m == "GET" and "comp=list" in p]
    # one refused startFrom, then whole-directory listings only
    assert len(listings) == 3 and sum("startFrom" in p for p in listings) == 1
