"""Benchmark: native Spark reads (``read_table``) vs ``spark.read.parquet`` on the same files.

One Spark session (local[2]); a table of N rows (default 10 million) in 10 files, one per
partition of ``k`` (contiguous id ranges, so the log's stats can skip files). Each query
is timed end to end, planning included (snapshot load and file list for deltalog, the
directory listing for plain Parquet), alternating the two, best of ``--repeat``:
``count()``, ``sum(x)``, ``select(k, x).groupBy(k)``, one partition, a 1% id range.
Also: the same table with deletion vectors on 10% of its files, and a column-mapped
table, each against plain Parquet on the same files (without the DVs); and planning a
100k-file table (snapshot + the file list handed to Spark) against delta-rs listing
the same table's files.

    python bench/spark_read.py [--rows 10000000] [--repeat 3] [--planning-files 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

QUERIES = ("count()", "sum(x)", "select(k, x).groupBy(k)", "one partition", "1% id range")


def _queries(rows: int) -> dict[str, tuple[dict[str, str], Callable[[Any], Any]]]:
    """name -> (read_table options, action on the DataFrame)."""
    from pyspark.sql import functions as F

    lo, hi = rows // 2, rows // 2 + rows // 100
    return {
        "count()": ({}, lambda df: df.count()),
        "sum(x)": ({}, lambda df: df.agg(F.sum("x")).collect()),
        "select(k, x).groupBy(k)": ({}, lambda df: df.select("k", "x").groupBy("k").agg(F.sum("x")).collect()),
        "one partition": ({}, lambda df: df.filter("k = 3").agg(F.sum("x")).collect()),
        "1% id range": (
            {"where": f"id >= {lo} and id < {hi}"},
            lambda df: df.filter(f"id >= {lo} and id < {hi}").agg(F.sum("x")).collect(),
        ),
    }


def _best(runs: list[float]) -> float:
    return round(min(runs), 3)


def _add_deletion_vectors(path: str, fraction_of_files: float = 0.1, every: int = 10) -> int:
    """Delete every ``every``-th row of ``fraction_of_files`` of the table's files with deletion vectors."""
    import dataclasses

    from deltalog.txn.commit.operations import Delete
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.deletion_vector_writer import widen_stats
    from deltalog.txn.log.deletion_vectors import write_dv_file, z85_encode
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    log = DeltaLog.for_table(path)
    snapshot = log.update()
    chosen = sorted(snapshot.files, key=lambda a: a.path)[: max(1, int(snapshot.num_files * fraction_of_files))]
    actions: list[Any] = []
    deleted = 0
    for add in chosen:
        n = add.num_records() or 0
        rows = range(0, n, every)
        blob, [(offset, size, cardinality)] = write_dv_file([rows])
        file_uuid = uuid.uuid4()
        os.makedirs(os.path.join(path, "_dv"), exist_ok=True)  # hidden from spark.read.parquet's listing
        with open(os.path.join(path, "_dv", f"deletion_vector_{file_uuid}.bin"), "wb") as f:
            f.write(blob)
        dv = DeletionVectorDescriptor("u", "_dv" + z85_encode(file_uuid.bytes), size, cardinality, offset)
        actions.append(add.remove(int(time.time() * 1000)))
        # bounds counting the deleted rows are no longer tight (Delta's commit check)
        actions.append(dataclasses.replace(add, deletion_vector=dv, stats=widen_stats(add.stats, n, 0)))
        deleted += cardinality
    log.start_transaction().commit(actions, Delete(predicate=["dv bench"]))
    return deleted


def _column_mapped_copy(spark: Any, source: str, target: str) -> None:
    """The source table's rows as a column-mapped (name mode) table, written by hand."""
    import glob

    from pyspark.sql import functions as F

    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import AddFile, Metadata, Protocol, action_to_line

    names = {
        "id": ("long", "col-5f1a"),
        "k": ("integer", "col-7c2e"),
        "x": ("double", "col-9d3b"),
        "s": ("string", "col-b4e6"),
    }
    df = spark.read.parquet(source)
    df.select(*[F.col(n).alias(p) for n, (_, p) in names.items()]).write.parquet(target)
    fields = [
        {
            "name": n,
            "type": t,
            "nullable": True,
            "metadata": {"delta.columnMapping.id": i + 1, "delta.columnMapping.physicalName": p},
        }
        for i, (n, (t, p)) in enumerate(names.items())
    ]
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps({"type": "struct", "fields": fields}),
        configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": str(len(fields))},
    )
    adds = [
        AddFile(os.path.basename(f), {}, os.path.getsize(f), int(os.path.getmtime(f) * 1000))
        for f in sorted(glob.glob(os.path.join(target, "*.parquet")))
    ]
    log = DeltaLog.for_table(target)
    log.store.write(log.commit_uri(0), [action_to_line(a) for a in (Protocol(2, 5), metadata, *adds)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--planning-files", type=int, default=100_000)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from bench.common import make_checkpointed_table, spark_workspace
    from deltalog.contrib.spark import read_table

    with spark_workspace("deltalog-bench-read-") as (spark, work):
        table = os.path.join(work, "table")
        per_partition = max(1, args.rows // 10)
        data = (
            spark.range(args.rows, numPartitions=10)
            .withColumn("k", (F.col("id") / per_partition).cast("int"))
            .withColumn("x", F.rand(seed=1))
            .withColumn("s", F.concat(F.lit("name-"), (F.col("id") % 5000).cast("string")))
        )
        data.write.format("deltalog").mode("append").option("partitionBy", "k").option(
            "delta.enableDeletionVectors", "true"
        ).save(table)
        queries = _queries(args.rows)
        results: dict[str, dict[str, list[float]]] = {q: {"native": [], "parquet": []} for q in QUERIES}

        def timed(kind: str, path: str, options: dict[str, str], action: Callable[[Any], Any]) -> float:
            start = time.perf_counter()
            df = read_table(spark, path, **options) if kind == "native" else spark.read.parquet(path)
            action(df)
            return time.perf_counter() - start

        for name in QUERIES:  # warm up both paths (JIT, caches)
            options, action = queries[name]
            timed("native", table, options, action)
            timed("parquet", table, {}, action)
        for i in range(args.repeat):
            for name in QUERIES:
                options, action = queries[name]
                order = ("native", "parquet") if i % 2 == 0 else ("parquet", "native")
                for kind in order:
                    results[name][kind].append(timed(kind, table, options if kind == "native" else {}, action))
        report: dict[str, Any] = {"rows": args.rows, "files": 10, "repeat": args.repeat, "queries": {}}
        for name in QUERIES:
            native, parquet = _best(results[name]["native"]), _best(results[name]["parquet"])
            report["queries"][name] = {"native_s": native, "parquet_s": parquet, "ratio": round(native / parquet, 3)}

        # deletion vectors on 10% of the files vs plain Parquet on the same files (no DVs)
        deleted = _add_deletion_vectors(table)
        sum_x = queries["sum(x)"][1]
        dv_runs: dict[str, list[float]] = {"native": [], "parquet": []}
        timed("native", table, {}, sum_x)
        for _ in range(args.repeat):
            dv_runs["native"].append(timed("native", table, {}, sum_x))
            dv_runs["parquet"].append(timed("parquet", table, {}, sum_x))
        assert read_table(spark, table).count() == args.rows - deleted
        report["deletion_vectors"] = {
            "native_s": _best(dv_runs["native"]),
            "parquet_s": _best(dv_runs["parquet"]),
            "deleted_rows": deleted,
        }

        # a column-mapped copy vs plain Parquet on its files
        mapped = os.path.join(work, "mapped")
        _column_mapped_copy(spark, table, mapped)
        cm_runs: dict[str, list[float]] = {"native": [], "parquet": []}

        def group_native(df: Any) -> Any:
            return df.select("k", "x").groupBy("k").agg(F.sum("x")).collect()

        def group_physical(df: Any) -> Any:
            return df.select("col-7c2e", "col-9d3b").groupBy("col-7c2e").agg(F.sum("col-9d3b")).collect()

        timed("native", mapped, {}, group_native)
        for _ in range(args.repeat):
            cm_runs["native"].append(timed("native", mapped, {}, group_native))
            cm_runs["parquet"].append(timed("parquet", mapped, {}, group_physical))
        report["column_mapping"] = {"native_s": _best(cm_runs["native"]), "parquet_s": _best(cm_runs["parquet"])}

        # planning a 100k-file table: snapshot + file list handed to Spark (no data read)
        many = os.path.join(work, "many")
        make_checkpointed_table(many, args.planning_files)
        planning = []
        for _ in range(max(2, args.repeat)):
            start = time.perf_counter()
            df = read_table(spark, many)
            planning.append(time.perf_counter() - start)
            assert "FileScan parquet" in df._jdf.queryExecution().executedPlan().toString()
        import deltalake

        rs = []
        for _ in range(max(2, args.repeat)):
            start = time.perf_counter()
            uris = deltalake.DeltaTable(many).file_uris()
            rs.append(time.perf_counter() - start)
            assert len(uris) == args.planning_files
        report["planning"] = {
            "files": args.planning_files,
            "native_s": _best(planning),
            "first_s": round(planning[0], 3),
            "delta_rs_s": _best(rs),
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return 0


# -- the ``python -m bench`` protocol (bench/report.py) -----------------------------------

WORKLOADS = (
    *(f"PySpark native read: {q}" for q in QUERIES),
    "PySpark native read: sum(x), DVs on 10% of files",
    "PySpark native read: column-mapped table",
    "PySpark native read: planning a many-file table (100k files at size full)",
)
SIZES = {"small": (50_000, 1, 2_000), "full": (10_000_000, 3, 100_000)}


def run(size: str) -> list[object]:
    """Run this script in a fresh process (its own Spark session) and report each query's
    ratio to ``spark.read.parquet`` on the same files."""
    from bench.common import run_script
    from bench.report import Result

    rows, repeat, planning_files = SIZES[size]
    data = run_script(__file__, "--rows", str(rows), "--repeat", str(repeat), "--planning-files", str(planning_files))
    note = f"{rows:,} rows in 10 files, best of {repeat}, planning included, vs spark.read.parquet on the same files"
    out: list[object] = [
        Result(
            f"PySpark native read: {q}",
            "s",
            d["native_s"],
            None,
            d["parquet_s"],
            target_ratio=1.25,
            baseline="parquet",
            details=d,
            notes=note,
        )
        for q, d in data["queries"].items()
    ]
    dv, cm, plan = data["deletion_vectors"], data["column_mapping"], data["planning"]
    out.append(
        Result(
            WORKLOADS[5],
            "s",
            dv["native_s"],
            None,
            dv["parquet_s"],
            target_ratio=1.5,
            baseline="parquet",
            details=dv,
            notes=f"{dv['deleted_rows']:,} rows deleted by DVs; Parquet reads them all",
        )
    )
    out.append(
        Result(
            WORKLOADS[6],
            "s",
            cm["native_s"],
            None,
            cm["parquet_s"],
            target_ratio=1.5,
            baseline="parquet",
            details=cm,
            notes="select(k, x).groupBy(k) by logical names vs physical names in Parquet",
        )
    )
    out.append(
        Result(
            WORKLOADS[7],
            "s",
            plan["native_s"],
            plan["delta_rs_s"],
            target_text="< 2 s",
            conditions={"under 2 s": plan["native_s"] < 2.0},
            details=plan,
            notes=f"{plan['files']:,} files: snapshot load + file list to Spark (warm JVM; first call "
            f"{plan['first_s']} s); delta-rs: DeltaTable(...).file_uris()",
        )
    )
    return out


if __name__ == "__main__":
    sys.exit(main())
