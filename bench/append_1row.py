"""One 1-row append including the Parquet write, local disk: deltalog vs delta-rs vs Parquet.

    python -m bench.append_1row [--size small|full]

- deltalog: write the row with pyarrow (``part-00000-<uuid>.c000.snappy.parquet``, with
  statistics) and commit its ``add`` through ``log.start_transaction().commit(...)``;
- delta-rs: ``write_deltalake(table, data, mode="append")`` on a loaded ``DeltaTable``;
- plain Parquet: ``pyarrow.parquet.write_table`` of the same row to a new file.

Both tables are already loaded (the steady state of a writer) and use the same
``delta.checkpointInterval``. Each side runs in its own fresh process; median and p95.

The append helpers here are shared by ``commit_latency`` and ``append_throughput``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from bench.report import Result

WORKLOADS = ("1-row append incl. Parquet write (median)", "1-row append incl. Parquet write (p95)")
ITERATIONS = {"small": 15, "full": 300}
WARMUP = 5
#: Each side runs in this many alternating rounds (fresh process each, same table), so both
#: see the same machine load over time.
ROUNDS = {"small": 1, "full": 5}
#: Both engines' tables use this, so their checkpoint policies are the same.
CONFIG = {"delta.checkpointInterval": "100"}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- shared helpers -------------------------------------------------------------------


def one_row(i: int) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array([i], pa.int64()), "value": pa.array([f"row-{i}"], pa.string())})


def create_deltalog_table(path: str) -> None:
    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.schema import from_arrow

    log = DeltaLog.for_table(path)
    txn = log.start_transaction()
    schema = from_arrow(one_row(0).schema)
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=schema.to_json(), configuration=dict(CONFIG)))
    txn.commit([], CreateTable())


def create_deltars_table(path: str) -> None:
    from deltalake import write_deltalake

    write_deltalake(path, one_row(0).slice(0, 0), mode="error", configuration=dict(CONFIG))


def write_data_file(table_path: str, data: Any) -> Any:
    """Write ``data`` as a new Parquet file of the table; its ``AddFile``."""
    import pyarrow.parquet as pq

    from deltalog.txn.protocol.actions import AddFile
    from deltalog.txn.protocol.file_stats import StatsCollector

    name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    full = os.path.join(table_path, name)
    pq.write_table(data, full, compression="snappy")
    stats = StatsCollector(data.schema)
    stats.update(data)
    return AddFile(name, {}, os.path.getsize(full), int(time.time() * 1000), True, stats.to_json())


def deltalog_append(log: Any, table_path: str, data: Any) -> int:
    """A whole deltalog append: the Parquet file, then the commit."""
    from deltalog.txn.commit.operations import Write

    add = write_data_file(table_path, data)
    version: int = log.start_transaction().commit([add], Write(mode="Append"))
    return version


def summarize(times_ms: list[float]) -> dict[str, float]:
    ordered = sorted(times_ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median": statistics.median(ordered), "p95": p95, "mean": statistics.fmean(ordered), "n": len(ordered)}


def exists(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "_delta_log"))


def run_rounds(module: str, sides: tuple[str, ...], n: int, rounds: int) -> dict[str, dict[str, Any]]:
    """Run each side's worker ``rounds`` times, alternating sides, ``n / rounds`` operations
    each, on one table per side; the summaries of all the times of each side."""
    bases = {side: tempfile.mkdtemp(prefix="deltalog-bench-") for side in sides}
    times: dict[str, list[float]] = {side: [] for side in sides}
    per_round = max(1, n // rounds)
    try:
        for _ in range(rounds):
            for side in sides:
                times[side] += run_worker(module, side, os.path.join(bases[side], "t"), per_round)["times"]
    finally:
        for base in bases.values():
            shutil.rmtree(base, ignore_errors=True)
    return {side: summarize(t) for side, t in times.items()}


def run_worker(module: str, side: str, path: str, n: int) -> dict[str, Any]:
    """Run ``python -m <module> --worker <side> <path> <n>`` in a fresh process; its JSON."""
    out = subprocess.run(
        [sys.executable, "-m", module, "--worker", side, path, str(n)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- this benchmark -------------------------------------------------------------------


def _worker(side: str, path: str, n: int) -> dict[str, Any]:
    times: list[float] = []
    if side == "deltalog":
        from deltalog.txn.delta_log import DeltaLog

        if not exists(path):
            create_deltalog_table(path)
        log = DeltaLog.for_table(path)
        log.update()
        for i in range(n + WARMUP):
            data = one_row(i)
            t0 = time.perf_counter()
            deltalog_append(log, path, data)
            times.append((time.perf_counter() - t0) * 1000)
    elif side == "delta-rs":
        from deltalake import DeltaTable, write_deltalake

        if not exists(path):
            create_deltars_table(path)
        dt = DeltaTable(path)
        for i in range(n + WARMUP):
            data = one_row(i)
            t0 = time.perf_counter()
            write_deltalake(dt, data, mode="append")
            times.append((time.perf_counter() - t0) * 1000)
    else:
        import pyarrow.parquet as pq

        os.makedirs(path, exist_ok=True)
        for i in range(n + WARMUP):
            data = one_row(i)
            t0 = time.perf_counter()
            pq.write_table(data, os.path.join(path, f"part-{uuid.uuid4()}.snappy.parquet"), compression="snappy")
            times.append((time.perf_counter() - t0) * 1000)
    return {"times": times[WARMUP:]}


def run(size: str = "small") -> list[Result]:
    n = ITERATIONS[size]
    sides = run_rounds("bench.append_1row", ("deltalog", "delta-rs", "parquet"), n, ROUNDS[size])
    ours, theirs, plain = sides["deltalog"], sides["delta-rs"], sides["parquet"]
    details = {"iterations": n, "deltalog": ours, "delta_rs": theirs, "parquet": plain}
    return [
        Result(
            WORKLOADS[0],
            "ms",
            ours["median"],
            theirs["median"],
            plain["median"],
            target_ratio=0.5,
            notes=f"{n} appends per engine in {ROUNDS[size]} alternating rounds (fresh process each, {WARMUP} "
            "warm-up appends per round not counted); tables loaded beforehand.",
            details=details,
        ),
        Result(WORKLOADS[1], "ms", ours["p95"], theirs["p95"], plain["p95"], details=details),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", choices=sorted(ITERATIONS), default="small")
    parser.add_argument("--worker", nargs=3, metavar=("SIDE", "PATH", "N"))
    args = parser.parse_args(argv)
    if args.worker:
        side, path, n = args.worker
        print(json.dumps(_worker(side, path, int(n))))
        return
    for r in run(args.size):
        print(json.dumps(r.to_dict()))


if __name__ == "__main__":
    main()
