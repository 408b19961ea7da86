"""Benchmark: N rows (default 5 million) through the deltalog data source vs ``df.write.parquet``.

The writes run in one Spark session (local[2]) on the same cached DataFrame, alternating,
best of ``--repeat``; the report is the wall time of each and the ratio (target: deltalog
<= 1.15x plain Parquet). It also times a Python data source whose tasks only consume the
Arrow batches (``transfer_s``): the cost of Spark handing rows to Python, which every Python
data source pays and deltalog cannot remove; and the same write through ``write_table``
(``write_table_s``), whose rows Spark's own Parquet writer writes (no Python hand-off).

    python bench/spark_write.py [--rows 5000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--max-records-per-batch",
        type=int,
        default=None,
        help="spark.sql.execution.arrow.maxRecordsPerBatch (Spark's default: 10000)",
    )
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    from bench.common import spark_workspace
    from deltalog.contrib.spark import write_table

    class TransferOnly(DataSource):
        """Tasks consume the Arrow batches and write nothing."""

        @classmethod
        def name(cls) -> str:
            return "deltalog_bench_transfer"

        def writer(self, schema: object, overwrite: bool) -> DataSourceArrowWriter:
            return TransferWriter()

    class TransferWriter(DataSourceArrowWriter):
        def write(self, iterator: object) -> WriterCommitMessage:
            for _ in iterator:  # type: ignore[attr-defined]
                pass
            return WriterCommitMessage()

    conf = {
        "spark.sql.parquet.compression.codec": "snappy",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(args.max_records_per_batch or 10000),
    }
    with spark_workspace("deltalog-bench-", **conf) as (spark, work):
        spark.dataSource.register(TransferOnly)
        df = (
            spark.range(args.rows, numPartitions=2)
            .withColumn("k", (F.col("id") % 100).cast("int"))
            .withColumn("x", F.rand(seed=1))
            .withColumn("s", F.concat(F.lit("name-"), (F.col("id") % 5000).cast("string")))
            .cache()
        )
        df.count()
        results: dict[str, list[float]] = {"parquet": [], "deltalog": [], "transfer": [], "write_table": []}

        def timed(name: str, target: str) -> None:
            start = time.perf_counter()
            if name == "parquet":
                df.write.parquet(target)
            elif name == "deltalog":
                df.write.format("deltalog").mode("append").save(target)
            elif name == "write_table":
                write_table(df, target)
            else:
                df.write.format("deltalog_bench_transfer").mode("append").save(target)
            results[name].append(time.perf_counter() - start)

        for i in range(args.repeat):
            order = ["parquet", "deltalog", "write_table", "transfer"]
            if i % 2:
                order = ["write_table", "deltalog", "parquet", "transfer"]
            for name in order:
                timed(name, os.path.join(work, f"{name}-{i}"))
        best = {k: min(v) for k, v in results.items()}
        sizes = {
            name: sum(
                os.path.getsize(os.path.join(d, f))
                for d, _, files in os.walk(os.path.join(work, f"{name}-0"))
                for f in files
                if f.endswith(".parquet")
            )
            for name in ("parquet", "deltalog", "write_table")
        }
        report = {
            "rows": args.rows,
            "max_records_per_batch": args.max_records_per_batch or 10000,
            "parquet_s": round(best["parquet"], 2),
            "deltalog_s": round(best["deltalog"], 2),
            "transfer_s": round(best["transfer"], 2),
            "write_table_s": round(best["write_table"], 2),
            "ratio": round(best["deltalog"] / best["parquet"], 3),
            "write_table_ratio": round(best["write_table"] / best["parquet"], 3),
            "transfer_ratio": round(best["transfer"] / best["parquet"], 3),
            "target_ratio": 1.15,
            "parquet_bytes": sizes["parquet"],
            "deltalog_bytes": sizes["deltalog"],
            "write_table_bytes": sizes["write_table"],
            "runs": {k: [round(x, 2) for x in v] for k, v in results.items()},
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return 0


# -- the ``python -m bench`` protocol (bench/report.py) -----------------------------------

WORKLOADS = (
    "PySpark local[2] write through the deltalog data source",
    "PySpark local[2] write_table (Spark's own Parquet writer)",
)
SIZES = {"small": (50_000, 1), "full": (5_000_000, 3)}


def run(size: str) -> list[object]:
    """Run this script in a fresh process (its own Spark session) and report the ratio to
    ``df.write.parquet`` (delta-rs has no Spark writer, so plain Parquet is the baseline)."""
    from bench.common import run_script
    from bench.report import Result

    rows, repeat = SIZES[size]
    data = run_script(__file__, "--rows", str(rows), "--repeat", str(repeat))
    return [
        Result(
            WORKLOADS[0],
            "s",
            data["deltalog_s"],
            None,
            data["parquet_s"],
            target_ratio=1.15,
            baseline="parquet",
            details=data,
            notes=(
                f"{rows:,} rows, best of {repeat}, vs df.write.parquet in the same Spark session; "
                f"Spark->Python transfer alone: {data['transfer_ratio']}x"
            ),
        ),
        Result(
            WORKLOADS[1],
            "s",
            data["write_table_s"],
            None,
            data["parquet_s"],
            target_ratio=1.15,
            baseline="parquet",
            details=data,
            notes=f"{rows:,} rows, best of {repeat}, the same DataFrame as the row above",
        ),
    ]


if __name__ == "__main__":
    sys.exit(main())
