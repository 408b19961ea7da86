"""What only the GCS store does: simple uploads of any size keep their precondition."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError
from deltalog.logstores.gcs import GcsLogStore
from tests.backends.conftest import Backend


def test_log_file_over_8_mib_is_still_put_if_absent(gcs: Backend, proxy_for) -> None:
    # The library would switch to a resumable upload above 8 MiB, whose precondition
    # fake-gcs-server ignores; the store keeps one simple upload whatever the size.
    proxy = proxy_for(gcs)
    store = gcs.store(proxy.url)
    path = f"{gcs.root}/_delta_log/{0:020d}.json"
    lines = [f'{{"add":{{"path":"{i:06d}.parquet"}}}}' + " " * 200 for i in range(45_000)]
    store.write(path, lines)
    with pytest.raises(FileAlreadyExistsError):
        store.write(path, ["small"])
    with pytest.raises(FileAlreadyExistsError):
        store.write(path, lines)
    assert store.read_bytes(path)[:40] == b'{"add":{"path":"000000.parquet"}}       '
    uploads = [p for m, p in proxy.requests if m in ("POST", "PUT")]
    assert len(uploads) == 3 and all("uploadType=multipart" in p for p in uploads)


def test_emulator_host_from_environment(gcs: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.server.url)
    store = GcsLogStore({"GOOGLE_CLOUD_PROJECT": "p"})
    assert store.anonymous and store.endpoint == gcs.server.url
    store.write(f"{gcs.root}/x.json", ["x"])
    assert list(gcs.store().read(f"{gcs.root}/x.json")) == ["x"]


def test_gcs_data_filesystem(gcs: Backend) -> None:
    fs = gcs.store().filesystem()
    assert isinstance(fs, pafs.GcsFileSystem)


def test_bad_service_account_key_does_not_echo_it() -> None:
    secret_json = '{"type": "service_account", "private_key": "-----BEGIN not really"}'
    store = GcsLogStore({"GOOGLE_SERVICE_ACCOUNT_KEY": secret_json})
    with pytest.raises(LogStoreConfigError) as info:
        store.read_bytes("gs://bucket/x.json")
    assert "BEGIN" not in str(info.value)
    assert "BEGIN" not in repr(store)
