"""What only the S3 stores do: pagination, the plain-put store, options."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs
import pytest

from deltalog.logstores.base import MutualExclusion
from deltalog.logstores.errors import FileAlreadyExistsError, LogStoreConfigError, LogStoreError
from deltalog.logstores.registry import logstore_for
from deltalog.logstores.s3 import S3LogStore, S3PlainPutLogStore
from tests.backends.conftest import Backend
from tests.backends.faultproxy import Fault


def test_listing_pages_with_start_after(s3: Backend, proxy_for) -> None:
    """Pages of 100 keys (the default page of 1,000 keys is crossed by the conformance kit's
    ``list_past_one_page`` on this store, in test_conformance)."""
    store = s3.store()
    log = f"{s3.root}/_delta_log"
    names = [f"{v:020d}.json" for v in range(250)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: store.write(f"{log}/{n}", [n]), names))
    store.write(f"{log}/sub/{names[0]}", ["nested, not listed"])

    proxy = proxy_for(s3)
    paged = S3LogStore(s3.options(proxy.url, DELTALOG_S3_LIST_PAGE_SIZE="100"))
    assert [s.name for s in paged.list_from(f"{log}/")] == names
    # 250 keys + the common prefix "sub/" (which counts against MaxKeys) = 3 pages
    assert proxy.count("GET", lambda p: "list-type=2" in p) == 3

    proxy.clear()
    tail = [s.name for s in paged.list_from(f"{log}/{150:020d}.json")]
    assert tail == names[150:]
    # StartAfter skips the first 150 keys: 100 keys + "sub/" need 2 pages, not 3
    assert proxy.count("GET", lambda p: "list-type=2" in p) == 2


def test_s3a_uris_keep_their_scheme(s3: Backend) -> None:
    store = s3.store()
    root = s3.root.replace("s3://", "s3a://")
    store.write(f"{root}/_delta_log/x.json", ["a"])
    assert [s.path for s in store.list_from(f"{root}/_delta_log/")] == [f"{root}/_delta_log/x.json"]
    assert list(store.read(f"{s3.root}/_delta_log/x.json")) == ["a"]
    assert store.resolve_path(root + "/") == root


def test_plain_put_store_declares_none_and_still_refuses_existing_files(s3: Backend) -> None:
    store = logstore_for(s3.root, s3.options(), logstore="s3-no-conditional-put")
    assert isinstance(store, S3PlainPutLogStore)
    assert store.semantics.mutual_exclusion is MutualExclusion.NONE
    assert store.describe()["mutual_exclusion"] == "NONE"
    path = f"{s3.root}/_delta_log/{0:020d}.json"
    store.write(path, ["one"])
    with pytest.raises(FileAlreadyExistsError):
        store.write(path, ["two"])
    assert list(store.read(path)) == ["one"]


def test_plain_put_store_sends_no_condition(s3: Backend, proxy_for) -> None:
    proxy = proxy_for(s3)
    # a service that rejects If-None-Match with 501 NotImplemented
    body = b"<Error><Code>NotImplemented</Code><Message>If-None-Match not supported</Message></Error>"
    path = f"{s3.root}/_delta_log/{0:020d}.json"
    conditional = S3LogStore(s3.options(proxy.url))
    proxy.add(Fault("status", method="PUT", times=1, status=501, body=body))
    with pytest.raises(LogStoreError) as info:
        conditional.write(path, ["x"])
    assert "s3-no-conditional-put" in str(info.value)
    S3PlainPutLogStore(s3.options(proxy.url)).write(path, ["x"])
    assert proxy.count("HEAD") == 1


def test_options_build_the_data_filesystem(s3: Backend) -> None:
    store = s3.store(AWS_RETRY_MODE="legacy", AWS_CONNECT_TIMEOUT="3s", AWS_READ_TIMEOUT="20s")
    fs = store.filesystem()
    assert isinstance(fs, pafs.S3FileSystem)
    assert fs.region == "us-east-1"
    store.write(f"{s3.root}/_delta_log/a.json", ["a"])
    assert fs.get_file_info(f"{s3.bucket}/t/_delta_log/a.json").size == 2


def test_addressing_styles() -> None:
    opts = {"AWS_ENDPOINT_URL": "https://minio.example:9000"}
    assert S3LogStore(opts).addressing_style == "path"
    assert S3LogStore({**opts, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"}).addressing_style == "virtual"
    assert S3LogStore({"aws_s3_addressing_style": "VIRTUAL"}).addressing_style == "virtual"
    assert S3LogStore({}).addressing_style == "auto"
    assert S3LogStore({**opts, "AWS_FORCE_PATH_STYLE": "false"}).addressing_style == "virtual"
    assert S3LogStore({"AWS_DEFAULT_REGION": "eu-west-3"}).region == "eu-west-3"
    assert S3LogStore(opts).region == "us-east-1"
    assert S3LogStore({"AWS_ENDPOINT_URL_S3": "https://a", "AWS_ENDPOINT_URL": "https://b"}).endpoint == "https://a"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9"}, "AWS_ALLOW_HTTP"),
        ({"AWS_ENDPOINT_URL": "127.0.0.1:9"}, "https://host"),
        ({"AWS_S3_ADDRESSING_STYLE": "sideways"}, "path, virtual or auto"),
        ({"AWS_RETRY_MODE": "eager"}, "standard, adaptive or legacy"),
        ({"AWS_MAX_ATTEMPTS": "0"}, ">= 1"),
        ({"DELTALOG_S3_LIST_PAGE_SIZE": "5000"}, "1..1000"),
        ({"AWS_READ_TIMEOUT": "soon"}, "duration"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(LogStoreConfigError) as info:
        store = S3LogStore(options)
        store.filesystem()
    assert message in str(info.value)


def test_uri_without_bucket_is_a_config_error() -> None:
    with pytest.raises(LogStoreConfigError):
        S3LogStore({}).resolve_path("s3:///x")
    with pytest.raises(LogStoreConfigError):
        S3LogStore({}).resolve_path("gs://b/x")


def test_missing_bucket_says_so_without_secrets(s3: Backend) -> None:
    # A ClientError that is not transient becomes a LogStoreError that says what to do.
    store = s3.store()
    with pytest.raises(LogStoreError) as info:
        store.read_bytes(f"s3://{s3.bucket}-nope/t/x.json")
    assert "does not exist" in str(info.value)
    assert s3.secret not in str(info.value)


def test_vacuum_keeps_a_file_an_add_names_through_the_s3a_alias(s3: Backend) -> None:
    """An add naming a file of the table absolutely as ``s3a://`` (Delta Spark's spelling of the
    same bucket) while the table is opened as ``s3://``: the same object the read opens, so VACUUM
    must keep it. Before, the scheme differed, the add counted as outside the table and VACUUM
    deleted a file the current version reads."""
    import time
    from dataclasses import replace

    from deltalog.txn.commands.vacuum import vacuum
    from deltalog.txn.commit.operations import Write
    from tests.ops.tables import create, write_file

    log = create(s3.root, partitioned=False, storage_options=s3.options())
    add = write_file(log, [7], None)
    aliased = replace(add, path=f"{s3.root.replace('s3://', 's3a://')}/{add.path}")
    log.start_transaction().commit([aliased], Write())
    later = int(time.time() * 1000) + 30 * 24 * 3600 * 1000
    assert vacuum(log, retention_hours=0, enforce_retention=False, now_ms=later).files == []
    where = log.store.fs_path(aliased.path)  # the object the read opens
    assert log.store.filesystem().get_file_info(where).type == pafs.FileType.File
