"""Many processes appending to one local table: commits/s, failed and lost commits.

    python -m bench.append_throughput [--size small|full]

``full`` is TARGETS.md's workload: 8 processes x 25 appends (1 row each, Parquet write
included) on one local table; ``small`` is 4 x 6. Every process waits at a barrier, then
appends in a loop; an append that raises counts as failed (delta-rs gives up after its
default 15 retries; deltalog after ``max_commit_attempts``). Afterwards the table is read
back: an acknowledged append whose row is missing (or present twice) is lost. Throughput
= acknowledged commits / wall time from the barrier to the last process's end.
Plain Parquet: the same processes writing files with no log at all (the ceiling).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from collections import Counter
from typing import Any

from bench.append_1row import create_deltalog_table, create_deltars_table, deltalog_append, one_row
from bench.report import Result

WORKLOADS = ("concurrent appends, one local table",)
SIZES = {"small": (4, 6), "full": (8, 25)}


def _append_loop(side: str, path: str, worker: int, count: int, barrier: Any, queue: Any) -> None:
    ok: list[int] = []
    failed: list[str] = []
    if side == "deltalog":
        from deltalog.txn.delta_log import DeltaLog

        log = DeltaLog.for_table(path)
        log.update()

        def append(i: int) -> None:
            deltalog_append(log, path, one_row(i))
    elif side == "delta-rs":
        from deltalake import DeltaTable, write_deltalake

        dt = DeltaTable(path)

        def append(i: int) -> None:
            write_deltalake(dt, one_row(i), mode="append")
    else:
        import uuid

        import pyarrow.parquet as pq

        def append(i: int) -> None:
            pq.write_table(one_row(i), os.path.join(path, f"part-{uuid.uuid4()}.snappy.parquet"))

    barrier.wait()
    start = time.time()
    for k in range(count):
        row = worker * 100_000 + k
        try:
            append(row)
            ok.append(row)
        except Exception as exc:
            failed.append(f"{type(exc).__name__}: {str(exc)[:200]}")
    queue.put({"worker": worker, "ok": ok, "failed": failed, "start": start, "end": time.time()})


def _rows(side: str, path: str) -> list[int]:
    if side == "delta-rs":
        from deltalake import DeltaTable

        return list(DeltaTable(path).to_pyarrow_table().column("id").to_pylist())
    import pyarrow.parquet as pq

    if side == "parquet":
        return list(pq.read_table(path).column("id").to_pylist())
    from deltalog.txn.delta_log import DeltaLog

    rows: list[int] = []
    for f in DeltaLog.for_table(path).update().files:
        rows += pq.read_table(os.path.join(path, f.path)).column("id").to_pylist()
    return rows


def measure(side: str, processes: int, appends: int) -> dict[str, Any]:
    base = tempfile.mkdtemp(prefix="deltalog-bench-")
    path = os.path.join(base, "t")
    try:
        if side == "deltalog":
            create_deltalog_table(path)
        elif side == "delta-rs":
            create_deltars_table(path)
        else:
            os.makedirs(path)
        ctx = mp.get_context("spawn")
        barrier = ctx.Barrier(processes)
        queue = ctx.Queue()
        procs = [
            ctx.Process(target=_append_loop, args=(side, path, w, appends, barrier, queue)) for w in range(processes)
        ]
        for p in procs:
            p.start()
        reports = [queue.get(timeout=900) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        acknowledged = [r for rep in reports for r in rep["ok"]]
        failures = [f for rep in reports for f in rep["failed"]]
        wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
        present = Counter(_rows(side, path))
        lost = sum(1 for r in acknowledged if present[r] != 1)
        return {
            "processes": processes,
            "appends_per_process": appends,
            "acknowledged": len(acknowledged),
            "failed": len(failures),
            "lost": lost,
            "wall_s": wall,
            "commits_per_s": len(acknowledged) / wall if wall > 0 else 0.0,
            "failure_examples": failures[:3],
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(size: str = "small") -> list[Result]:
    processes, appends = SIZES[size]
    ours = measure("deltalog", processes, appends)
    theirs = measure("delta-rs", processes, appends)
    plain = measure("parquet", processes, appends)
    total = processes * appends
    notes = (
        f"{processes} processes x {appends} 1-row appends. deltalog: {ours['failed']} of {total} failed, "
        f"{ours['lost']} lost; delta-rs: {theirs['failed']} of {total} failed, {theirs['lost']} lost."
    )
    if theirs["failure_examples"]:
        notes += f" delta-rs failure: {theirs['failure_examples'][0]}"
    return [
        Result(
            WORKLOADS[0],
            "commits/s",
            ours["commits_per_s"],
            theirs["commits_per_s"],
            plain["commits_per_s"],
            target_ratio=2.0,
            higher_is_better=True,
            conditions={"none failed": ours["failed"] == 0, "none lost": ours["lost"] == 0},
            notes=notes,
            details={"deltalog": ours, "delta_rs": theirs, "parquet": plain},
        )
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    args = parser.parse_args(argv)
    for r in run(args.size):
        print(json.dumps(r.to_dict()))


if __name__ == "__main__":
    main()
