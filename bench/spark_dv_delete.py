"""Benchmark: DELETE of 1% of the rows of one 1M-row file, deletion vectors vs copy-on-write.

One Spark session (local[2]); a table with ``delta.enableDeletionVectors=true`` whose data
is one Parquet file of N rows (default 1 million). Each run copies that table and runs
``DeltaTable.delete("id % 100 = 7")`` (1% of the rows, spread over the whole file): with
deletion vectors (merge-on-read: one job finds the rows' positions, one small DV file is
written) and with ``spark.databricks.delta.delete.deletionVectors.persistent=false``
(copy-on-write: the file is read to find the rows, read again and rewritten without
them). Alternating, best of ``--repeat``. The report is each wall time and the ratio
(target: the DV delete takes at most 1/3 of the copy-on-write one). Each run also checks
what was written: the DV delete adds no data file, the copy-on-write one rewrites it,
and both leave the same rows.

    python bench/spark_dv_delete.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any

PERSISTENT = "spark.databricks.delta.delete.deletionVectors.persistent"
CONDITION = "id % 100 = 7"


def _data_files(path: str) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, n), path)
        for d, _, names in os.walk(path)
        for n in names
        if n.endswith(".parquet") and "_delta_log" not in d
    }


def _seed_table(spark: Any, path: str, rows: int) -> None:
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "long")
        .addColumn("k", "int")
        .addColumn("x", "double")
        .addColumn("s", "string")
        .property("delta.enableDeletionVectors", "true")
        .execute()
    )
    df = (
        spark.range(rows, numPartitions=1)
        .withColumn("k", (F.col("id") % 100).cast("int"))
        .withColumn("x", F.rand(seed=1))
        .withColumn("s", F.concat(F.lit("name-"), (F.col("id") % 5000).cast("string")))
    )
    df.write.format("deltalog").mode("append").save(path)
    if len(_data_files(path)) != 1:
        raise AssertionError(f"the seed table should be one data file, got {_data_files(path)}")


def _delete(spark: Any, seed: str, target: str, dv: bool) -> tuple[float, int, int]:
    """Copy the seed table to ``target`` and time the DELETE there; (seconds, data files
    written, rows left)."""
    from deltalog.contrib.spark import DeltaTable

    shutil.copytree(seed, target)
    before = _data_files(target)
    spark.conf.set(PERSISTENT, "true" if dv else "false")
    try:
        start = time.perf_counter()
        DeltaTable.forPath(spark, target).delete(CONDITION)
        elapsed = time.perf_counter() - start
    finally:
        spark.conf.unset(PERSISTENT)
    written = len(_data_files(target) - before)
    left = DeltaTable.forPath(spark, target).toDF().count()
    return elapsed, written, left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from bench.common import spark_workspace

    with spark_workspace("deltalog-bench-dv-") as (spark, work):
        seed = os.path.join(work, "seed")
        _seed_table(spark, seed, args.rows)
        expected = args.rows - len(range(7, args.rows, 100))
        runs: dict[str, list[float]] = {"dv": [], "cow": []}
        checks = {"dv writes no data file": True, "copy-on-write rewrites the file": True, "same rows": True}
        _delete(spark, seed, os.path.join(work, "warm-up"), dv=True)  # JVM and Python workers warm
        for i in range(args.repeat):
            for name in ("dv", "cow") if i % 2 == 0 else ("cow", "dv"):
                elapsed, written, left = _delete(spark, seed, os.path.join(work, f"{name}-{i}"), dv=name == "dv")
                runs[name].append(elapsed)
                if name == "dv":
                    checks["dv writes no data file"] &= written == 0
                else:
                    checks["copy-on-write rewrites the file"] &= written == 1
                checks["same rows"] &= left == expected
        best = {k: round(min(v), 3) for k, v in runs.items()}
        report = {
            "rows": args.rows,
            "deleted_rows": args.rows - expected,
            "dv_s": best["dv"],
            "cow_s": best["cow"],
            "ratio": round(best["dv"] / best["cow"], 3),
            "speedup": round(best["cow"] / best["dv"], 2),
            "target_ratio": round(1 / 3, 3),
            "checks": checks,
            "runs": {k: [round(x, 3) for x in v] for k, v in runs.items()},
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return 0


# -- the ``python -m bench`` protocol (bench/report.py) -----------------------------------

WORKLOADS = ("PySpark DELETE 1% of a 1M-row file: deletion vectors vs copy-on-write",)
SIZES = {"small": (50_000, 1), "full": (1_000_000, 3)}


def run(size: str) -> list[object]:
    """Run this script in a fresh process (its own Spark session); the baseline is the
    copy-on-write DELETE on the same table (delta-rs writes no deletion vectors)."""
    from bench.common import run_script
    from bench.report import Result

    rows, repeat = SIZES[size]
    data = run_script(__file__, "--rows", str(rows), "--repeat", str(repeat))
    return [
        Result(
            WORKLOADS[0],
            "s",
            data["dv_s"],
            None,
            data["cow_s"],
            target_ratio=1 / 3,
            target_text="<= 0.333x (DV >= 3x faster)",
            conditions=data["checks"],
            baseline="parquet",
            details=data,
            notes=(
                f"{rows:,} rows in one file, {data['deleted_rows']:,} deleted, best of {repeat}; "
                f"the 'parquet' column is the copy-on-write DELETE; DV {data['speedup']}x faster"
            ),
        )
    ]


if __name__ == "__main__":
    sys.exit(main())
