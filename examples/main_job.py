"""The main job: a PySpark pipeline on a local-disk Delta table written by deltalog.

Steps (each logs a line as it goes):
1. build a partitioned table from a generated dataset;
2. run concurrent writers (threads, each its own Spark job) and an OPTIMIZE at the same time;
3. a streaming micro-batch sink, with one batch replayed (it must not be written twice);
4. a MERGE of updates and new rows;
5. print the table's history and a summary;
6. read the table back with delta-rs (``deltalake``) to show it is a standard Delta table.

Run with ``make main`` (or ``python examples/main_job.py [--rows N] [--path DIR]``).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time

log = logging.getLogger("main_job")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--path", default=None, help="table directory (default: a fresh temp dir)")
    parser.add_argument("--writers", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    import pyspark
    from pyspark import InheritableThread
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable, register

    os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
    work = tempfile.mkdtemp(prefix="deltalog-main-")
    path = args.path or os.path.join(work, "events")
    started = time.time()
    log.info("step 0: starting Spark local[2]; table at %s", path)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("deltalog-main-job")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        log.info("step 1: generating %d rows and writing a table partitioned by day", args.rows)
        events = (
            spark.range(args.rows)
            .withColumn("day", F.concat(F.lit("2024-01-0"), (F.col("id") % 7 + 1).cast("string")))
            .withColumn("user", (F.col("id") % 1000).cast("int"))
            .withColumn("amount", F.round(F.rand(seed=7) * 100, 2))
        )
        events.write.format("deltalog").mode("append").option("partitionBy", "day").save(path)
        table = DeltaTable.forPath(spark, path)
        log.info("step 1: done, %d files", table.detail().collect()[0].numFiles)

        log.info("step 2: %d concurrent writers plus an OPTIMIZE", args.writers)
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                register(spark)  # the registration is seen per thread on the JVM side
                batch = spark.range(1000).select(
                    (F.col("id") + args.rows + n * 1000).alias("id"),
                    F.lit(f"2024-01-0{n % 7 + 1}").alias("day"),
                    F.lit(n).cast("int").alias("user"),
                    F.lit(1.0).alias("amount"),
                )
                batch.write.format("deltalog").mode("append").save(path)
                log.info("step 2: writer %d committed", n)
            except BaseException as exc:
                errors.append(exc)

        # InheritableThread carries the session (and its registered data sources) to the thread.
        threads = [InheritableThread(target=writer, args=(n,)) for n in range(args.writers)]
        for t in threads:
            t.start()
        metrics = table.optimize().executeCompaction().collect()[0].metrics
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        log.info(
            "step 2: OPTIMIZE removed %s files, added %s", metrics.get("numRemovedFiles"), metrics.get("numAddedFiles")
        )

        log.info("step 3: streaming micro-batches into the table, then replaying one")
        source = os.path.join(work, "incoming")
        checkpoint = os.path.join(work, "checkpoint")
        os.makedirs(source)
        for b in range(2):
            spark.range(500).select(
                (F.col("id") + 10_000_000 + b * 500).alias("id"),
                F.lit("2024-01-08").alias("day"),
                F.lit(-1).cast("int").alias("user"),
                F.lit(0.5).alias("amount"),
            ).write.mode("append").json(source)

            q = (
                spark.readStream.schema("id long, day string, user int, amount double")
                .json(source)
                .writeStream.format("deltalog")
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start(path)
            )
            q.awaitTermination()
            log.info("step 3: micro-batch %d committed", b)
        for name in ("1", ".1.crc"):
            p = os.path.join(checkpoint, "commits", name)
            if os.path.exists(p):
                os.remove(p)
        q = (
            spark.readStream.schema("id long, day string, user int, amount double")
            .json(source)
            .writeStream.format("deltalog")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(path)
        )
        q.awaitTermination()
        streamed = spark.read.format("deltalog").load(path).filter("day = '2024-01-08'").count()
        log.info("step 3: batch 1 replayed; rows from the stream: %d (expected 1000, no duplicates)", streamed)
        if streamed != 1000:
            raise SystemExit(f"the replayed batch was written twice: {streamed} rows")

        log.info("step 4: MERGE of updates and new users")
        updates = (
            spark.range(0, 2000, 100)
            .select(
                F.col("id"),
                F.lit("2024-01-01").alias("day"),
                F.lit(0).cast("int").alias("user"),
                F.lit(999.0).alias("amount"),
            )
            .union(spark.createDataFrame([(-1, "2024-01-09", 0, 1.0)], "id long, day string, user int, amount double"))
        )
        (
            table.alias("t")
            .merge(updates.alias("s"), "t.id = s.id")
            .whenMatchedUpdate(set={"amount": "s.amount"})
            .whenNotMatchedInsertAll()
            .execute()
        )

        log.info("step 5: history")
        for r in table.history().orderBy("version").collect():
            log.info("  v%-3d %-17s %s", r.version, r.operation, dict(sorted((r.operationMetrics or {}).items())))
        df = table.toDF()
        total = df.count()
        summary = df.groupBy("day").count().orderBy("day").collect()
        log.info(
            "summary: %d rows, %d files, per day: %s",
            total,
            table.detail().collect()[0].numFiles,
            {r.day: r["count"] for r in summary},
        )

        log.info("step 6: reading the table with delta-rs")
        import deltalake

        theirs = deltalake.DeltaTable(path)
        n = theirs.to_pyarrow_table().num_rows
        log.info("delta-rs: version %d, %d rows, %d files", theirs.version(), n, len(theirs.file_uris()))
        if n != total:
            raise SystemExit(f"delta-rs reads {n} rows, Spark reads {total}")
        log.info("done in %.0fs: %s is a standard Delta table", time.time() - started, path)
        return 0
    finally:
        spark.stop()
        if args.path is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
