"""The data source on cloud storage, in ``local-cluster[2,1,1024]`` (issue 16, points 4 and 5).

Every backend the suite has a server for -- S3 (moto_server, conditional put), Azure Blob
(Azurite), GCS (fake-gcs-server) and S3 without conditional put plus the Redis commit
lock -- runs the core of the main job through ``format("deltalog")`` and ``DeltaTable``:
a partitioned append from the executors, a pruned read, DELETE, MERGE, OPTIMIZE, a
streaming micro-batch and its replay, time travel; delta-rs then reads the result. The
credentials reach the executors only as data source options: the test process (whose
environment the executor JVMs inherit) has none in its environment.

Then two Spark applications (two ``python`` processes, each its own ``local[1]``
session) append to one table per backend at the same time.

This file sorts after ``test_zz_cluster.py`` so the local-cluster session is reused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.backends.conftest import (  # noqa: F401 -- fixtures used by name
    Backend,
    azurite,
    fake_gcs,
    make_azure,
    make_gcs,
    make_s3,
    moto_server,
    redis_server,
    server_log_dir,
    subprocess_env,
)
from tests.servers.process import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Environment variables through which an SDK could find credentials, an endpoint or a lock.
CREDENTIAL_ENV_PREFIXES = (
    "AWS_ACCESS_KEY",
    "AWS_SECRET",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT",
    "AWS_PROFILE",
    "AZURE_",
    "GOOGLE_",
    "STORAGE_EMULATOR_HOST",
    "DELTALOG_COMMIT_LOCK",
)


@dataclass
class CloudTable:
    """A fresh table URI on one backend, the options Spark gets, and delta-rs's options."""

    name: str
    uri: str
    options: dict[str, str]  # storage options (+ logStore), as data source options
    delta_rs_options: dict[str, str]
    redis: Any = None  # the RedisServer of the commit lock, if the table uses one

    def lock_acquisitions(self) -> int:
        """How many ``SET`` commands (a lease is taken with ``SET NX``) Redis has run."""
        stats = self.redis.client().info("commandstats") if self.redis is not None else {}
        return int(stats.get("cmdstat_set", {}).get("calls", 0))


def _delta_rs_options(backend: Backend) -> dict[str, str]:
    if backend.name == "gcs":
        # object_store reaches fake-gcs-server through a service-account key that names
        # the base URL and turns OAuth off.
        key = {
            "gcs_base_url": backend.server.url,
            "disable_oauth": True,
            "client_email": "",
            "private_key": "",
            "private_key_id": "",
        }
        return {"google_service_account_key": json.dumps(key)}
    return backend.options_for(backend.server.url)


def _cloud_table(backend: Backend, name: str, redis: Any = None, **extra: str) -> CloudTable:
    return CloudTable(name, f"{backend.root}/events", backend.options(**extra), _delta_rs_options(backend), redis)


BACKENDS = ("s3", "azure", "gcs", "s3-no-conditional-put")


@pytest.fixture(params=BACKENDS)
def cloud_table(request: pytest.FixtureRequest) -> CloudTable:
    return _make_table(request, request.param)


def _make_table(request: pytest.FixtureRequest, name: str) -> CloudTable:
    makers: dict[str, tuple[str, Callable[[ServerProcess], Backend]]] = {
        "s3": ("moto_server", make_s3),
        "azure": ("azurite", make_azure),
        "gcs": ("fake_gcs", make_gcs),
        "s3-no-conditional-put": ("moto_server", make_s3),
    }
    fixture, make = makers[name]
    backend = make(request.getfixturevalue(fixture))
    if name == "s3-no-conditional-put":
        redis = request.getfixturevalue("redis_server")
        return _cloud_table(backend, name, redis, logStore=name, **{"deltalog.commitLock": redis.short_lease_url})
    return _cloud_table(backend, name)


def _credentials_in_env(env: Any) -> list[str]:
    return sorted(k for k in env if k.upper().startswith(CREDENTIAL_ENV_PREFIXES))


def _executor_credentials(_: object) -> list[list[str]]:
    return [_credentials_in_env(os.environ)]


def _delta_rs(table: CloudTable) -> tuple[int, list[int]]:
    """delta-rs's version of the table and its sorted ids."""
    import deltalake

    theirs = deltalake.DeltaTable(table.uri, storage_options=table.delta_rs_options)
    return theirs.version(), sorted(theirs.to_pyarrow_table().column("id").to_pylist())


def test_pipeline_on_cloud_storage(spark_cluster: Any, cloud_table: CloudTable, tmp_path: Any) -> None:
    from deltalog.contrib.spark import DeltaTable, source
    from deltalog.txn.delta_log import DeltaLog

    spark, uri, options = spark_cluster, cloud_table.uri, cloud_table.options
    assert _credentials_in_env(os.environ) == []  # executors inherit this environment
    storage = {k: v for k, v in options.items() if k != "logStore"}
    logstore = options.get("logStore")
    schema = "id long, day string, amount double"
    locks_before = cloud_table.lock_acquisitions()

    # 1. a partitioned append, written by the executors
    df = spark.createDataFrame([(i, f"d{i % 3}", float(i)) for i in range(30)], schema).repartition(3)
    df.write.format("deltalog").mode("append").options(**options).option("partitionBy", "day").save(uri)
    delta_log = DeltaLog.for_table(uri, storage, logstore=logstore)
    assert delta_log.update().num_files >= 3
    executors = spark.sparkContext.parallelize(range(2), 2).mapPartitions(_executor_credentials).collect()
    assert executors == [[], []]

    # 2. a filtered read (its partition filter prunes files where Spark plans each scan
    # separately; up to Spark 4.3 the reader plans the whole snapshot, see test_write_read)
    report = tmp_path / "scan.json"
    read = spark.read.format("deltalog").options(**options)
    day1 = read.option("scanReport", str(report)).load(uri).filter("day = 'd1'")
    assert sorted(r.id for r in day1.collect()) == [i for i in range(30) if i % 3 == 1]
    plan = json.loads(report.read_text())
    if source.READ_PLANS_PER_SCAN:
        assert 0 < len(plan["scannedFiles"]) < plan["totalFiles"], plan
    else:
        assert len(plan["scannedFiles"]) == plan["totalFiles"], plan

    # 3. DELETE, 4. MERGE, 5. OPTIMIZE through the table API
    table = DeltaTable.forPath(spark, uri, storage_options=storage, logstore=logstore)
    table.delete("id % 10 = 0")  # 0, 10, 20
    updates = spark.createDataFrame([(1, "d1", -1.0), (100, "d0", 100.0)], schema)
    (
        table.alias("t")
        .merge(updates.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"amount": "s.amount"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    metrics = table.optimize().executeCompaction().collect()[0].metrics
    assert metrics["numFilesRemoved"] > metrics["numFilesAdded"] > 0

    # 6. a streaming micro-batch, then the same batch again (as after a crash between the
    # table commit and Spark's commit marker): the replay is skipped
    incoming, progress = str(tmp_path / "incoming"), str(tmp_path / "progress")
    spark.createDataFrame([(200 + i, "d9", 1.0) for i in range(5)], schema).write.json(incoming)

    def run_stream() -> None:
        query = (
            spark.readStream.schema(schema)
            .json(incoming)
            .writeStream.format("deltalog")
            .options(**options)
            .option("checkpointLocation", progress)
            .trigger(availableNow=True)
            .start(uri)
        )
        query.awaitTermination()

    run_stream()
    streamed = delta_log.update()
    assert streamed.version == 4 and len(streamed.set_transactions) == 1
    for marker in ("0", ".0.crc"):
        os.remove(os.path.join(progress, "commits", marker))
    run_stream()
    assert delta_log.update().version == 4

    expected = sorted([i for i in range(30) if i % 10 != 0] + [100] + [200 + i for i in range(5)])
    final = spark.read.format("deltalog").options(**options).load(uri)
    assert sorted(r.id for r in final.collect()) == expected
    assert [r.amount for r in final.filter("id = 1").collect()] == [-1.0]
    assert [h.operation for h in table.history().orderBy("version").collect()] == [
        "WRITE",
        "DELETE",
        "MERGE",
        "OPTIMIZE",
        "STREAMING UPDATE",
    ]

    # 7. time travel
    first = spark.read.format("deltalog").options(**options).option("versionAsOf", 0).load(uri)
    assert sorted(r.id for r in first.collect()) == list(range(30))

    # delta-rs reads the result
    assert _delta_rs(cloud_table) == (4, expected)
    if cloud_table.redis is not None:  # each of the 5 commits (none for the replay) took the Redis lock
        assert cloud_table.lock_acquisitions() - locks_before >= 5


def _create_table(table: CloudTable) -> None:
    """Version 0, made here, so the two applications only append."""
    import uuid

    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import Metadata

    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in (("id", "long"), ("app", "string"))]
    storage = {k: v for k, v in table.options.items() if k != "logStore"}
    txn = DeltaLog.for_table(table.uri, storage, logstore=table.options.get("logStore")).start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=json.dumps({"type": "struct", "fields": fields})))
    assert txn.commit([], CreateTable()) == 0


def test_two_spark_applications_append_to_one_table(request: pytest.FixtureRequest, tmp_path: Any) -> None:
    from deltalog.txn.delta_log import DeltaLog
    from tests.spark.cloud_app import INTERLEAVED_ROUNDS, ROUNDS, ROWS

    assert _credentials_in_env(os.environ) == []  # the applications inherit this environment
    tables = [_make_table(request, name) for name in BACKENDS]
    for table in tables:
        _create_table(table)
    payload = json.dumps([{"name": t.name, "uri": t.uri, "options": t.options} for t in tables])
    barriers = str(tmp_path / "barriers")
    os.makedirs(barriers)
    logs = {role: tmp_path / f"app-{role}.log" for role in ("a", "b")}
    apps = {}
    try:
        for role, log in logs.items():
            with open(log, "w", encoding="utf-8") as out:
                apps[role] = subprocess.Popen(
                    [sys.executable, "-m", "tests.spark.cloud_app", role, barriers],
                    stdin=subprocess.PIPE,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    env=subprocess_env(),
                    start_new_session=True,  # its own process group: the JVM it starts goes with it
                )
            assert apps[role].stdin is not None
            apps[role].stdin.write(payload)
            apps[role].stdin.close()
        deadline = time.monotonic() + 540  # under pytest's 600 s, so the logs can be shown
        for app in apps.values():
            app.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass  # killed below; the assertion shows its log
    finally:
        for app in apps.values():
            if app.poll() is None:
                os.killpg(app.pid, signal.SIGKILL)
                app.wait()
    for role, app in apps.items():
        assert app.returncode == 0, f"application {role} failed:\n{logs[role].read_text()[-4000:]}"

    interleaved = [f"{role}{k}" for k in range(INTERLEAVED_ROUNDS) for role in ("b", "a")]
    raced = {f"{role}{k}" for k in range(INTERLEAVED_ROUNDS, ROUNDS) for role in ("a", "b")}
    expected_ids = sorted(offset + i for offset in (0, 1000) for i in range(ROUNDS * ROWS))
    for table in tables:
        storage = {k: v for k, v in table.options.items() if k != "logStore"}
        history = sorted(
            DeltaLog.for_table(table.uri, storage, logstore=table.options.get("logStore")).history(),
            key=lambda r: r.version,
        )
        assert [r.version for r in history] == list(range(1 + 2 * ROUNDS)), table.name  # contiguous, none lost
        writes = [r.commit_info.user_metadata for r in history[1:] if r.commit_info is not None]
        assert writes[: len(interleaved)] == interleaved, table.name  # every write of a spans a commit of b
        assert set(writes[len(interleaved) :]) == raced, table.name
        assert _delta_rs(table) == (2 * ROUNDS, expected_ids), table.name
