"""Helpers shared by the benchmarks.

- :func:`make_checkpointed_table` builds a table of ``n`` files fast: commit 0 (protocol and
  metadata) and a checkpoint at version 1 written straight from Arrow arrays.
- :func:`make_commit_table` builds a checkpoint-less table of many small commits (JSON replay).
- :func:`run_isolated` runs a snippet in a fresh Python process and returns its wall time
  and peak RSS (``resource.getrusage``), so runs do not share caches or memory.
- :func:`print_table` and :func:`write_results` print a small table and save JSON under
  ``bench/results/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

RESULTS_DIR = os.path.join(os.path.dirname(__file__), "results")

_SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def make_checkpointed_table(path: str, n_files: int, partitions: int = 100) -> None:
    """A table with ``n_files`` active files and a checkpoint at version 1 (no data files)."""
    import pyarrow as pa

    from deltalog.logstores.local import LocalLogStore
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.replay import ADD_SCHEMA, LogState
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import Metadata, Protocol, action_to_line

    proto = Protocol(1, 2)
    md = Metadata(id="bench-0000", schema_string=_SCHEMA, partition_columns=("part",), configuration={}, created_time=1)
    store = LocalLogStore()
    log_dir = os.path.join(path, "_delta_log")
    store.write(f"{log_dir}/{0:020d}.json", [action_to_line(proto), action_to_line(md)])
    store.write(f"{log_dir}/{1:020d}.json", ['{"commitInfo":{"operation":"WRITE","timestamp":1}}'])
    idx = pa.array(range(n_files), pa.int64())
    parts = pa.compute.cast(pa.compute.divide(idx, max(1, n_files // partitions)), pa.string())
    paths = pa.compute.binary_join_element_wise(
        "part=", parts, "/part-", pa.compute.cast(idx, pa.string()), "-c000.snappy.parquet", ""
    )
    keys = pa.array(["part"] * n_files)
    offsets = pa.array(range(0, n_files + 1), pa.int32())
    pv = pa.MapArray.from_arrays(offsets, keys, parts)
    stats = pa.compute.binary_join_element_wise(
        '{"numRecords":1000,"minValues":{"id":',
        pa.compute.cast(idx, pa.string()),
        '},"maxValues":{"id":',
        pa.compute.cast(pa.compute.add(idx, 999), pa.string()),
        '},"nullCount":{"id":0}}',
        "",
    )
    cols = {
        "path": paths,
        "partitionValues": pv,
        "size": pa.repeat(pa.scalar(1024 * 1024), n_files),
        "modificationTime": pa.repeat(pa.scalar(1_700_000_000_000), n_files),
        "dataChange": pa.repeat(pa.scalar(False), n_files),
        "stats": stats,
    }
    arrays = [cols[f.name] if f.name in cols else pa.nulls(n_files, f.type) for f in ADD_SCHEMA]
    adds = pa.Table.from_arrays([a.cast(f.type) for a, f in zip(arrays, ADD_SCHEMA)], schema=ADD_SCHEMA)
    state = LogState.from_checkpoint(proto, md, {}, {}, adds, _empty_removes())
    log = DeltaLog.for_table(path)
    snap = Snapshot(log.table_uri, 1, state, 1)
    log.checkpoint(snap)


def make_commit_table(path: str, commits: int, adds_per_commit: int = 20, partitions: int = 100) -> None:
    """A checkpoint-less table: commit 0 (protocol, metadata) then ``commits`` commits of
    ``adds_per_commit`` adds each (every 10th commit also removes one earlier file)."""
    from deltalog.txn.protocol.actions import Metadata, Protocol, action_to_line

    proto = Protocol(1, 2)
    md = Metadata(id="bench-0000", schema_string=_SCHEMA, partition_columns=("part",), configuration={}, created_time=1)
    log_dir = os.path.join(path, "_delta_log")
    os.makedirs(log_dir, exist_ok=True)
    with open(os.path.join(log_dir, f"{0:020d}.json"), "w") as fh:
        fh.write(action_to_line(proto) + "\n" + action_to_line(md) + "\n")
    n = 0
    for version in range(1, commits + 1):
        lines = [
            json.dumps(
                {
                    "commitInfo": {
                        "timestamp": 1_700_000_000_000 + version,
                        "operation": "WRITE",
                        "operationParameters": {"mode": "Append"},
                        "isBlindAppend": True,
                    }
                }
            )
        ]
        for _ in range(adds_per_commit):
            part = n % partitions
            stats = {"numRecords": 1000, "minValues": {"id": n}, "maxValues": {"id": n + 999}, "nullCount": {"id": 0}}
            lines.append(
                json.dumps(
                    {
                        "add": {
                            "path": f"part={part}/part-{n}-c000.snappy.parquet",
                            "partitionValues": {"part": str(part)},
                            "size": 1024 * 1024,
                            "modificationTime": 1_700_000_000_000,
                            "dataChange": True,
                            "stats": json.dumps(stats),
                        }
                    }
                )
            )
            n += 1
        if version % 10 == 0:
            victim = n - adds_per_commit * 5
            lines.append(
                json.dumps(
                    {
                        "remove": {
                            "path": f"part={victim % partitions}/part-{victim}-c000.snappy.parquet",
                            "deletionTimestamp": 1_700_000_000_000 + version,
                            "dataChange": True,
                            "partitionValues": {"part": str(victim % partitions)},
                            "size": 1024 * 1024,
                        }
                    }
                )
            )
        with open(os.path.join(log_dir, f"{version:020d}.json"), "w") as fh:
            fh.write("\n".join(lines) + "\n")


def _empty_removes() -> Any:
    from deltalog.txn.log.replay import REMOVE_SCHEMA
    from deltalog.txn.protocol.arrow_build import empty_table

    return empty_table(REMOVE_SCHEMA)


def run_isolated(code: str, repeat: int = 3, setup: str = "") -> dict[str, float]:
    """Run ``setup`` then ``code`` in fresh processes; best wall time (s) of ``code`` (and,
    separately, including ``setup``: the imports) and peak RSS (MB) over ``repeat`` runs."""
    wrapper = (
        "import time, resource, json\n"
        "_t00 = time.perf_counter()\n" + setup + "\n"
        "_t0 = time.perf_counter()\n" + code + "\n"
        "_t1 = time.perf_counter()\n"
        # Peak RSS of this process only: VmHWM (ru_maxrss would also count the parent's RSS,
        # which Linux carries over into the child's maxrss across fork + exec).
        "def _peak_mb():\n"
        "    try:\n"
        "        for _line in open('/proc/self/status'):\n"
        "            if _line.startswith('VmHWM:'):\n"
        "                return int(_line.split()[1]) / 1024\n"
        "    except OSError:\n"
        "        pass\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps({'seconds': _t1 - _t0, 'with_imports': _t1 - _t00, "
        "'peak_mb': _peak_mb()}))\n"
    )
    best: dict[str, float] | None = None
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", wrapper],
            check=True,
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    assert best is not None
    return best


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    widths = [max(len(str(h)), *(len(_fmt(r[i])) for r in rows)) for i, h in enumerate(header)]
    print(title)
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(_fmt(v).ljust(w) for v, w in zip(r, widths)))


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def write_results(name: str, payload: dict[str, Any]) -> str:
    os.makedirs(RESULTS_DIR, exist_ok=True)
    payload = {**payload, "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = os.path.join(RESULTS_DIR, f"{name}.json")
    with open(path, "w") as fh:
        json.dump(payload, fh, indent=2)
    return path


class FreshProcessComparison:
    """One workload measured the same way for deltalog and delta-rs: a table is built per
    size, then each engine runs its code in fresh processes (best wall time, with and
    without imports, and peak memory). ``main`` is the module's command line and
    ``workloads``/``run`` its ``python -m bench`` protocol (bench/report.py)."""

    def __init__(
        self,
        *,
        name: str,
        title: str,
        size_name: str,
        label: str,
        build: Any,
        deltalog: tuple[str, str],
        delta_rs: tuple[str, str],
        sizes: dict[str, list[int]],
        time_targets: dict[int, float] | None = None,
        memory_targets: dict[int, float] | None = None,
        notes: str = "fresh process per run, imports excluded",
        default_repeat: int = 3,
    ) -> None:
        self.name = name
        self.title = title
        self.size_name = size_name
        self.label = label  # format string with {size}
        self.build = build  # build(path, size) -> expected number of active files
        self.deltalog = deltalog  # (setup, code) with {path} and {n}
        self.delta_rs = delta_rs
        self.sizes = sizes
        self.time_targets = time_targets or {}
        self.memory_targets = memory_targets or {}
        self.notes = notes
        self.default_repeat = default_repeat

    def measure(self, size: int, repeat: int) -> tuple[int, dict[str, float], dict[str, float]]:
        import shutil
        import tempfile

        path = tempfile.mkdtemp(prefix="deltalog-bench-")
        try:
            n = self.build(path, size)
            ours = run_isolated(self.deltalog[1].format(path=path, n=n), repeat, self.deltalog[0])
            theirs = run_isolated(self.delta_rs[1].format(path=path, n=n), repeat, self.delta_rs[0])
        finally:
            shutil.rmtree(path, ignore_errors=True)
        return n, ours, theirs

    def main(self, argv: list[str] | None = None, description: str | None = None) -> None:
        import argparse

        parser = argparse.ArgumentParser(description=description)
        parser.add_argument(f"--{self.size_name}", type=int, nargs="+", default=self.sizes["full"][:1])
        parser.add_argument("--repeat", type=int, default=self.default_repeat)
        args = parser.parse_args(argv)
        rows, results = [], []
        for size in getattr(args, self.size_name):
            n, ours, theirs = self.measure(size, args.repeat)
            ratio_t = ours["seconds"] / theirs["seconds"]
            ratio_m = ours["peak_mb"] / theirs["peak_mb"]
            rows.append(
                [
                    size,
                    ours["seconds"],
                    theirs["seconds"],
                    ratio_t,
                    ours["with_imports"],
                    theirs["with_imports"],
                    ours["peak_mb"],
                    theirs["peak_mb"],
                    ratio_m,
                ]
            )
            results.append(
                {
                    self.size_name: size,
                    "files": n,
                    "deltalog": ours,
                    "delta_rs": theirs,
                    "time_ratio": ratio_t,
                    "memory_ratio": ratio_m,
                }
            )
        header = [
            self.size_name,
            "deltalog s",
            "delta-rs s",
            "ratio",
            "deltalog s+imports",
            "delta-rs s+imports",
            "deltalog MB",
            "delta-rs MB",
            "mem ratio",
        ]
        print_table(self.title, header, rows)
        print("results:", write_results(self.name, {"runs": results}))

    def workloads(self, size: str) -> list[str]:
        names = []
        for value in self.sizes[size]:
            label = self.label.format(size=value)
            names += [f"{label} (time)", f"{label} (peak memory)"]
        return names

    def run(self, size: str = "small") -> list[Any]:
        from bench.report import Result

        results = []
        names = iter(self.workloads(size))
        for value in self.sizes[size]:
            n, ours, theirs = self.measure(value, 2)
            details = {self.size_name: value, "files": n, "deltalog": ours, "delta_rs": theirs}
            results.append(
                Result(
                    next(names),
                    "s",
                    ours["seconds"],
                    theirs["seconds"],
                    target_ratio=self.time_targets.get(value),
                    details=details,
                    notes=f"{self.notes}, best of 2",
                )
            )
            results.append(
                Result(
                    next(names),
                    "MB",
                    ours["peak_mb"],
                    theirs["peak_mb"],
                    target_ratio=self.memory_targets.get(value),
                    details=details,
                )
            )
        return results


def local_spark(**conf: str) -> Any:
    """A ``local[2]`` SparkSession for the Spark benchmarks, with the deltalog data source
    registered: no UI, no progress bars, UTC, 4 shuffle partitions, plus ``conf``."""
    from pyspark.sql import SparkSession

    from deltalog.contrib.spark import register

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


@contextmanager
def spark_workspace(prefix: str, **conf: str) -> Iterator[tuple[Any, str]]:
    """:func:`local_spark` (with ``conf``) and a fresh temporary directory named ``prefix...``;
    the session is stopped and the directory deleted afterwards. Under :data:`SHARED_JVM_ENV`
    the session is kept for the next script (its Python workers stay warm): ``conf`` is unset
    and the cache cleared instead."""
    shared = os.environ.get(SHARED_JVM_ENV) == "1"
    spark = local_spark(**conf)
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        yield spark, work
    finally:
        if shared:
            spark.catalog.clearCache()
            for key in conf:
                spark.conf.unset(key)
        else:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)


#: Set (to ``1``) by ``python -m bench --shared-jvm``: :func:`run_script` runs each Spark
#: script in this process, one after another, so they share one JVM and one SparkSession
#: (:func:`spark_workspace` keeps it). Cheaper by a JVM start and a worker warm-up per
#: script, for smoke runs; the measured runs keep a fresh process per script.
SHARED_JVM_ENV = "DELTALOG_BENCH_SHARED_JVM"


def run_script(path: str, *args: str) -> Any:
    """Run the benchmark script ``path`` with ``args`` in a fresh Python process (its own
    Spark session), with this repository on ``PYTHONPATH``, and return the JSON object it
    prints last (in this process instead when :data:`SHARED_JVM_ENV` is set)."""
    if os.environ.get(SHARED_JVM_ENV) == "1":
        return _run_script_here(path, *args)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pythonpath = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, os.path.abspath(path), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )
    return json.loads(proc.stdout[proc.stdout.index("{") :])


def _run_script_here(path: str, *args: str) -> Any:
    """:func:`run_script` in this process: the script's ``main()`` with ``args`` as its
    command line and its printed output captured."""
    import importlib.util
    import io
    from contextlib import redirect_stdout

    spec = importlib.util.spec_from_file_location(f"_bench_script_{os.path.basename(path)[:-3]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = io.StringIO()
    saved = sys.argv
    sys.argv = [path, *args]
    try:
        with redirect_stdout(out):
            status = module.main()
    finally:
        sys.argv = saved
    if status:
        raise RuntimeError(f"{os.path.basename(path)} exited with status {status}")
    text = out.getvalue()
    return json.loads(text[text.index("{") :])
