"""The main job: a PySpark pipeline on a local-disk Delta table written by deltalog.

Steps (each logs when it starts and how long it took, and checks its result):

1. build a table partitioned by ``day`` from a generated dataset;
2. run concurrent writers (threads of this driver, each its own Spark job) while an
   OPTIMIZE compacts the table: every writer and the OPTIMIZE commit, nothing is lost;
3. a streaming micro-batch sink, then replay a batch as after a crash: deltalog sees the
   batch's ``txn`` action in the log and skips it, so nothing is written twice;
4. a MERGE of updates and new rows;
5. print the table's history and a summary;
6. read the table back with delta-rs (``deltalake``): it is a standard Delta table.

Run with ``make main`` (or ``python examples/main_job.py [--rows N] [--path DIR] [--writers N]``).
Exits with status 1 and a message naming the step when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

log = logging.getLogger("main_job")

#: Where the table goes unless --path says otherwise: replaced on every run, kept after it
#: so it can be inspected with the deltalog command.
DEFAULT_TABLE = os.path.join(tempfile.gettempdir(), "deltalog-main-job", "events")


class CheckFailed(Exception):
    """A step's result is not what it must be."""


@contextlib.contextmanager
def step(number: int, title: str) -> Iterator[None]:
    log.info("step %d: %s ...", number, title)
    started = time.perf_counter()
    yield
    log.info("step %d: done in %.1fs", number, time.perf_counter() - started)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def start_spark() -> Any:
    import pyspark
    from pyspark.sql import SparkSession

    from deltalog.contrib.spark import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local job: no hostname warnings
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("deltalog-main-job")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)  # makes format("deltalog") available (and `spark` this thread's active session)
    return spark


def build_table(spark: Any, path: str, rows: int) -> None:
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    events = (
        spark.range(rows, numPartitions=4)
        .withColumn("day", F.concat(F.lit("2024-01-0"), (F.col("id") % 7 + 1).cast("string")))
        .withColumn("user", (F.col("id") % 1000).cast("int"))
        .withColumn("amount", F.round(F.rand(seed=7) * 100, 2))
    )
    events.write.format("deltalog").mode("append").option("partitionBy", "day").save(path)
    detail = DeltaTable.forPath(spark, path).detail().collect()[0]
    log.info("  %d rows in %d files, partitioned by %s", rows, detail.numFiles, list(detail.partitionColumns))
    check(detail.numFiles >= 7, f"expected at least one file per day, got {detail.numFiles}")


def concurrent_writers_and_optimize(spark: Any, path: str, rows: int, writers: int) -> int:
    """``writers`` threads append 1000 rows each while this thread runs OPTIMIZE."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable, register

    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            # Spark finds Python data sources through the JVM thread's *active* session;
            # a new thread has none until register() (or activate()) sets it.
            register(spark)
            batch = spark.range(1000, numPartitions=2).select(
                (F.col("id") + rows + n * 1000).alias("id"),
                F.lit(f"2024-01-0{n % 7 + 1}").alias("day"),
                F.lit(n).cast("int").alias("user"),
                F.lit(1.0).alias("amount"),
            )
            batch.write.format("deltalog").mode("append").save(path)
            log.info("  writer %d committed", n)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,), name=f"writer-{n}") for n in range(writers)]
    for t in threads:
        t.start()
    metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0].metrics
    log.info("  OPTIMIZE committed: %s files compacted into %s", metrics["numFilesRemoved"], metrics["numFilesAdded"])
    for t in threads:
        t.join()
    if errors:
        raise CheckFailed(f"a concurrent writer failed: {errors[0]!r}")
    check(metrics["numFilesRemoved"] > 0, "OPTIMIZE compacted nothing")
    expected = rows + writers * 1000
    got = spark.read.format("deltalog").load(path).count()
    check(got == expected, f"after the concurrent writes the table has {got} rows, expected {expected}")
    log.info("  table has %d rows: every writer and the OPTIMIZE committed", got)
    return expected


def streaming_with_replay(spark: Any, path: str, work: str) -> None:
    from pyspark.sql import functions as F

    from deltalog.txn.delta_log import DeltaLog

    source = os.path.join(work, "incoming")
    checkpoint = os.path.join(work, "checkpoint")
    os.makedirs(source)
    delta_log = DeltaLog.for_table(path)

    def run_stream() -> None:
        q = (
            spark.readStream.schema("id long, day string, user int, amount double")
            .json(source)
            .writeStream.format("deltalog")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(path)
        )
        q.awaitTermination()

    for b in range(2):
        spark.range(500, numPartitions=1).select(
            (F.col("id") + 10_000_000 + b * 500).alias("id"),
            F.lit("2024-01-08").alias("day"),
            F.lit(-1).cast("int").alias("user"),
            F.lit(0.5).alias("amount"),
        ).write.mode("append").json(source)
        run_stream()
        log.info("  micro-batch %d committed as version %d", b, delta_log.update().version)
    # A crash after the table commit but before Spark recorded it: forget batch 1 in the
    # checkpoint, so the restarted query runs batch 1 again.
    for name in ("1", ".1.crc"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(checkpoint, "commits", name))
    before = delta_log.update()
    run_stream()
    after = delta_log.update()
    app_id = next(iter(after.set_transactions))
    batch = after.txn_version(app_id)
    log.info(
        "  batch 1 replayed: table still at version %d (txn %s already at batch %s), so it was skipped",
        after.version,
        app_id,
        batch,
    )
    check(after.version == before.version, f"the replayed batch committed version {after.version}")
    streamed = spark.read.format("deltalog").load(path).filter("day = '2024-01-08'").count()
    check(streamed == 1000, f"the stream wrote {streamed} rows, expected 1000 (a replayed batch written twice?)")


def merge(spark: Any, path: str) -> int:
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    updates = spark.range(0, 2000, 100).select(
        F.col("id"),
        F.lit("2024-01-01").alias("day"),
        F.lit(0).cast("int").alias("user"),
        F.lit(999.0).alias("amount"),
    )
    new_rows = spark.createDataFrame([(-1, "2024-01-09", 0, 1.0)], "id long, day string, user int, amount double")
    table = DeltaTable.forPath(spark, path)
    (
        table.alias("t")
        .merge(updates.union(new_rows).alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"amount": "s.amount"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    metrics = table.history(1).collect()[0].operationMetrics
    log.info(
        "  MERGE: %s rows updated, %s inserted, %s files rewritten",
        metrics["numTargetRowsUpdated"],
        metrics["numTargetRowsInserted"],
        metrics["numTargetFilesRemoved"],
    )
    check(metrics["numTargetRowsUpdated"] == "20", f"MERGE updated {metrics['numTargetRowsUpdated']} rows, not 20")
    check(metrics["numTargetRowsInserted"] == "1", f"MERGE inserted {metrics['numTargetRowsInserted']} rows, not 1")
    updated = spark.read.format("deltalog").load(path).filter("amount = 999.0").count()
    check(updated == 20, f"{updated} rows carry the merged amount, expected 20")
    return 1


def history_and_summary(spark: Any, path: str) -> int:
    from deltalog.contrib.spark import DeltaTable

    table = DeltaTable.forPath(spark, path)
    for r in table.history().orderBy("version").collect():
        metrics = r.operationMetrics or {}
        shown = {k: metrics[k] for k in sorted(metrics) if k.startswith(("num", "total")) and metrics[k] != "0"}
        log.info("  v%-3d %-17s %s", r.version, r.operation, shown)
    df = table.toDF()
    total = int(df.count())
    per_day = {r.day: r["count"] for r in df.groupBy("day").count().orderBy("day").collect()}
    detail = table.detail().collect()[0]
    log.info(
        "  summary: %d rows, %d files, %d bytes; rows per day: %s", total, detail.numFiles, detail.sizeInBytes, per_day
    )
    return total


def read_with_delta_rs(path: str, total: int) -> None:
    import deltalake

    from deltalog.txn.delta_log import DeltaLog

    theirs = deltalake.DeltaTable(path)
    n = theirs.to_pyarrow_table().num_rows
    ours = DeltaLog.for_table(path).update().version
    log.info("  delta-rs: version %d, %d rows, %d files", theirs.version(), n, len(theirs.file_uris()))
    check(theirs.version() == ours, f"delta-rs sees version {theirs.version()}, deltalog {ours}")
    check(n == total, f"delta-rs reads {n} rows, Spark reads {total}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the generated dataset")
    parser.add_argument(
        "--path",
        default=None,
        help=f"table directory (default: {DEFAULT_TABLE}, replaced on every run and kept afterwards)",
    )
    parser.add_argument("--writers", type=int, default=3, help="concurrent writer threads in step 2")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    logging.getLogger("deltalog").setLevel(logging.WARNING)  # the steps say what happens
    warnings.filterwarnings("ignore", category=FutureWarning)  # pyspark's pandas-version notice
    work = tempfile.mkdtemp(prefix="deltalog-main-")  # streaming checkpoints and scratch
    path = args.path or DEFAULT_TABLE
    if args.path is None:
        shutil.rmtree(DEFAULT_TABLE, ignore_errors=True)  # the previous run's table
    elif os.path.exists(os.path.join(path, "_delta_log")):
        log.error("%s already holds a Delta table; give a new --path", path)
        return 2
    started = time.perf_counter()
    current = "starting Spark"
    spark = None
    try:
        with step(0, "starting Spark local[2]"):
            spark = start_spark()
        log.info("table: %s", path)
        current = "build"
        with step(1, f"writing {args.rows} generated rows, partitioned by day"):
            build_table(spark, path, args.rows)
        current = "concurrent writers"
        with step(2, f"{args.writers} concurrent writers and an OPTIMIZE"):
            concurrent_writers_and_optimize(spark, path, args.rows, args.writers)
        current = "streaming"
        with step(3, "streaming micro-batches, then a replayed batch"):
            streaming_with_replay(spark, path, work)
        current = "merge"
        with step(4, "MERGE of 20 updates and 1 new row"):
            merge(spark, path)
        current = "history"
        with step(5, "history and summary"):
            total = history_and_summary(spark, path)
        current = "delta-rs"
        with step(6, "reading the table back with delta-rs"):
            read_with_delta_rs(path, total)
    except CheckFailed as exc:
        log.error("FAILED at %s: %s", current, exc)
        return 1
    except Exception as exc:
        log.error("FAILED at %s: %s: %s", current, type(exc).__name__, exc, exc_info=True)
        return 1
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    log.info("all steps passed in %.0fs: %s is a standard Delta table", time.perf_counter() - started, path)
    log.info("look inside: .venv/bin/deltalog describe %s   (also: history, files, vacuum --dry-run)", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
