"""Benchmark: the Python data source read path (``spark.read.format("deltalog")``).

One Spark session (``local[2]``). Two tables of N rows (default 2 million; ``id``, an int
``k``, a double ``x``, a short string ``s``):

- ``partitioned``: written by ``format("deltalog")`` with ``partitionBy k`` (4 partitions,
  one file each): ``count()`` and ``sum(x)`` exercise the per-file constant columns;
- ``one file``: the same rows in a single Parquet file of 8 row groups (written with
  pyarrow, committed with deltalog): ``sum(x)`` with the default split target (one task)
  and with ``maxSplitBytes`` set to a half and an eighth of the file (row-group splits).

Each query is timed end to end, best of ``--repeat``. ``--baseline DIR`` (a checkout of
another commit, e.g. ``git worktree add DIR <commit>``) also registers that commit's data
source as ``format("deltalog_baseline")`` (its package copied as ``deltalog_baseline``)
and alternates the two in the same session, so machine load hits both alike::

    python bench/python_read.py [--rows 2000000] [--repeat 3] [--baseline DIR]

Not part of ``python -m bench`` (no ``run()``): it has no delta-rs or Parquet baseline,
only deltalog against itself across commits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any


def _one_file_table(path: str, rows: int, row_groups: int = 8) -> int:
    """``rows`` rows in one Parquet file of ``row_groups`` row groups, committed as version 0."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import AddFile, Metadata, Protocol, action_to_line

    os.makedirs(path)
    ids = np.arange(rows, dtype=np.int64)
    table = pa.table(
        {
            "id": ids,
            "k": (ids % 4).astype(np.int32),
            "x": np.random.default_rng(1).random(rows),
            "s": pa.array([f"name-{i % 5000}" for i in range(rows)]),
        }
    )
    name = "part-00000-one.snappy.parquet"
    pq.write_table(table, os.path.join(path, name), row_group_size=-(-rows // row_groups), compression="snappy")
    size = os.path.getsize(os.path.join(path, name))
    schema = {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": True, "metadata": {}}
            for n, t in (("id", "long"), ("k", "integer"), ("x", "double"), ("s", "string"))
        ],
    }
    metadata = Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(schema))
    add = AddFile(name, {}, size, int(time.time() * 1000), stats=json.dumps({"numRecords": rows}))
    log = DeltaLog.for_table(path)
    log.store.write(log.commit_uri(0), [action_to_line(a) for a in (Protocol(1, 2), metadata, add)])
    return size


def _baseline_package(checkout: str, work: str) -> str:
    """``checkout``'s ``deltalog`` package copied to ``work`` as ``deltalog_baseline``
    (imports renamed, data source named ``deltalog_baseline``); the directory to put on
    ``PYTHONPATH``."""
    import re

    target = os.path.join(work, "baseline", "deltalog_baseline")
    shutil.copytree(os.path.join(checkout, "deltalog"), target)
    for root, _, names in os.walk(target):
        for name in names:
            if name.endswith(".py"):
                file = os.path.join(root, name)
                with open(file, encoding="utf-8") as f:
                    text = f.read()
                # imports only: entry-point groups and option names keep their spelling
                text = re.sub(r"\b(from|import) deltalog\b", r"\1 deltalog_baseline", text)
                text = text.replace('return "deltalog"', 'return "deltalog_baseline"')
                with open(file, "w", encoding="utf-8") as f:
                    f.write(text)
    return os.path.dirname(target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", help="a checkout of another commit to compare with")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="deltalog-bench-pyread-")
    formats = ["deltalog"]
    if args.baseline:
        baseline_path = _baseline_package(args.baseline, work)
        sys.path.insert(0, baseline_path)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (baseline_path, os.environ.get("PYTHONPATH")) if p)
        formats.append("deltalog_baseline")
    from pyspark.sql import functions as F

    from bench.common import local_spark

    spark = local_spark()
    if args.baseline:
        from deltalog_baseline.contrib.spark.source import DeltaLogDataSource  # type: ignore[import-not-found]

        spark.dataSource.register(DeltaLogDataSource)
    try:
        partitioned = os.path.join(work, "partitioned")
        per_partition = max(1, args.rows // 4)
        (
            spark.range(args.rows, numPartitions=4)
            .withColumn("k", (F.col("id") / per_partition).cast("int"))
            .withColumn("x", F.rand(seed=1))
            .withColumn("s", F.concat(F.lit("name-"), (F.col("id") % 5000).cast("string")))
            .write.format("deltalog")
            .mode("append")
            .option("partitionBy", "k")
            .save(partitioned)
        )
        one = os.path.join(work, "one")
        size = _one_file_table(one, args.rows)

        def load(fmt: str, path: str, **options: str) -> Any:
            if fmt == "deltalog_baseline":  # the entry points name the current package's stores
                options["logStore"] = "deltalog_baseline.logstores.local:LocalLogStore"
            return spark.read.format(fmt).options(**options).load(path)

        queries: dict[str, Callable[[str], Any]] = {
            "partitioned: count()": lambda fmt: load(fmt, partitioned).count(),
            "partitioned: sum(x)": lambda fmt: load(fmt, partitioned).agg(F.sum("x")).collect(),
            "partitioned: sum(k) (partition column)": lambda fmt: load(fmt, partitioned).agg(F.sum("k")).collect(),
            "one file: sum(x), default split": lambda fmt: load(fmt, one).agg(F.sum("x")).collect(),
            "one file: sum(x), maxSplitBytes = size/2": lambda fmt: (
                load(fmt, one, maxSplitBytes=str(size // 2 + 1)).agg(F.sum("x")).collect()
            ),
            "one file: sum(x), maxSplitBytes = size/8": lambda fmt: (
                load(fmt, one, maxSplitBytes=str(size // 8 + 1)).agg(F.sum("x")).collect()
            ),
        }
        runs: dict[str, dict[str, list[float]]] = {fmt: {name: [] for name in queries} for fmt in formats}
        for fmt in formats:  # warm up (Python workers, JIT)
            for action in queries.values():
                action(fmt)
        for i in range(args.repeat):
            for name, action in queries.items():
                for fmt in formats if i % 2 == 0 else formats[::-1]:
                    start = time.perf_counter()
                    action(fmt)
                    runs[fmt][name].append(time.perf_counter() - start)
        report: dict[str, Any] = {"rows": args.rows, "repeat": args.repeat, "one_file_bytes": size}
        for fmt in formats:
            report[f"{fmt}_best_s"] = {name: round(min(r), 3) for name, r in runs[fmt].items()}
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return 0
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
