"""delta-rs reads tables deltalog wrote on S3 (moto) and Azure (Azurite), and deltalog
reads tables delta-rs wrote there. delta-rs runs in a subprocess with the same options."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from tests.backends.conftest import Backend, subprocess_env

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "x", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def delta_rs(action: str, uri: str, options: dict[str, str]) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-m", "tests.backends.interop_worker", action, uri, json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=240,
        env=subprocess_env(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def write_with_deltalog(uri: str, options: dict[str, str]) -> None:
    log = DeltaLog.for_table(uri, options)
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",)))
    txn.commit([], CreateTable(partition_by=["p"]))
    fs = log.store.filesystem()
    for p, xs in (("a", [1, 2]), ("b", [3])):
        rel = f"p={p}/part-{uuid.uuid4().hex}.parquet"
        pq.write_table(pa.table({"x": pa.array(xs, pa.int64())}), log.store.fs_path(f"{uri}/{rel}"), filesystem=fs)
        size = fs.get_file_info(log.store.fs_path(f"{uri}/{rel}")).size
        stats = json.dumps(
            {"numRecords": len(xs), "minValues": {"x": min(xs)}, "maxValues": {"x": max(xs)}, "nullCount": {"x": 0}}
        )
        add = AddFile(rel, {"p": p}, size, int(time.time() * 1000), True, stats)
        log.start_transaction().commit([add], Write())


@pytest.fixture(params=["s3", "azure"])
def interop_backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_delta_rs_reads_what_deltalog_wrote(interop_backend: Backend) -> None:
    uri = f"{interop_backend.root}/by-deltalog"
    options = interop_backend.options()
    write_with_deltalog(uri, options)
    seen = delta_rs("read", uri, interop_backend.options_for(interop_backend.server.url))
    assert seen == {"version": 2, "rows": [[1, "a"], [2, "a"], [3, "b"]]}


@pytest.mark.slow
def test_deltalog_reads_what_delta_rs_wrote(interop_backend: Backend) -> None:
    uri = f"{interop_backend.root}/by-delta-rs"
    assert delta_rs("write", uri, interop_backend.options_for(interop_backend.server.url)) == {"version": 1}
    log = DeltaLog.for_table(uri, interop_backend.options())
    snapshot = log.update()
    assert snapshot.version == 1 and snapshot.num_files == 3
    assert snapshot.partition_columns == ("p",)
    fs = log.store.filesystem()
    rows = []
    for add in snapshot.files:
        table = pq.read_table(log.store.fs_path(f"{uri}/{add.path}"), filesystem=fs)
        rows += [(x, add.partition_values["p"]) for x in table.column("x").to_pylist()]
    assert sorted(rows) == [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
