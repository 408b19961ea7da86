"""Benchmark: N rows (default 5 million) through the deltalog data source vs ``df.write.parquet``.

Both writes run in one Spark session (local[2]) on the same cached DataFrame; the report is
the wall time of each and the ratio (target: deltalog <= 1.15x plain Parquet).

    python bench/spark_write.py [--rows 5000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.parquet.compression.codec", "snappy")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    work = tempfile.mkdtemp(prefix="deltalog-bench-")
    try:
        df = (
            spark.range(args.rows, numPartitions=2)
            .withColumn("k", (F.col("id") % 100).cast("int"))
            .withColumn("x", F.rand(seed=1))
            .withColumn("s", F.concat(F.lit("name-"), (F.col("id") % 5000).cast("string")))
            .cache()
        )
        df.count()
        results: dict[str, list[float]] = {"parquet": [], "deltalog": []}
        for i in range(args.repeat):
            target = os.path.join(work, f"parquet-{i}")
            start = time.perf_counter()
            df.write.parquet(target)
            results["parquet"].append(time.perf_counter() - start)
            target = os.path.join(work, f"delta-{i}")
            start = time.perf_counter()
            df.write.format("deltalog").mode("append").save(target)
            results["deltalog"].append(time.perf_counter() - start)
        best = {k: min(v) for k, v in results.items()}
        report = {
            "rows": args.rows,
            "parquet_s": round(best["parquet"], 2),
            "deltalog_s": round(best["deltalog"], 2),
            "ratio": round(best["deltalog"] / best["parquet"], 3),
            "target_ratio": 1.15,
            "runs": results,
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return 0
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


# -- the ``python -m bench`` protocol (bench/report.py) -----------------------------------

WORKLOADS = ("PySpark local[2] write through the deltalog data source",)
SIZES = {"small": (100_000, 1), "full": (5_000_000, 2)}


def run(size: str) -> list[object]:
    """Run this script in a fresh process (its own Spark session) and report the ratio to
    ``df.write.parquet`` (delta-rs has no Spark writer, so plain Parquet is the baseline)."""
    import subprocess

    from bench.report import Result

    rows, repeat = SIZES[size]
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--rows", str(rows), "--repeat", str(repeat)],
        capture_output=True, text=True, check=True, timeout=3600,
    )
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    return [
        Result(
            WORKLOADS[0], "s", data["deltalog_s"], None, data["parquet_s"], target_ratio=1.15,
            baseline="parquet", details=data,
            notes=f"{rows:,} rows, best of {repeat}, vs df.write.parquet in the same Spark session",
        )
    ]


if __name__ == "__main__":
    sys.exit(main())
