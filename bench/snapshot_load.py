"""Snapshot load to an Arrow table of add actions: deltalog vs delta-rs.

    python -m bench.snapshot_load --files 100000

Each measurement runs in a fresh process (time and peak RSS); best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from typing import Any

from bench.common import make_checkpointed_table, print_table, run_isolated, write_results

DELTALOG_SETUP = "from deltalog.txn.delta_log import DeltaLog"
DELTALOG = """
t = DeltaLog.for_table({path!r}).update().files_table
assert t.num_rows == {n}
"""
DELTARS_SETUP = "from deltalake import DeltaTable"
DELTARS = """
t = DeltaTable({path!r}).get_add_actions()
assert t.num_rows == {n}
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=[100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    results = []
    for n in args.files:
        path = tempfile.mkdtemp(prefix="deltalog-bench-")
        try:
            make_checkpointed_table(path, n)
            ours = run_isolated(DELTALOG.format(path=path, n=n), args.repeat, DELTALOG_SETUP)
            theirs = run_isolated(DELTARS.format(path=path, n=n), args.repeat, DELTARS_SETUP)
        finally:
            shutil.rmtree(path, ignore_errors=True)
        ratio_t = ours["seconds"] / theirs["seconds"]
        ratio_m = ours["peak_mb"] / theirs["peak_mb"]
        rows.append(
            [
                n,
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
            {"files": n, "deltalog": ours, "delta_rs": theirs, "time_ratio": ratio_t, "memory_ratio": ratio_m}
        )
    print_table(
        "snapshot load -> Arrow add actions (checkpointed table)",
        [
            "files",
            "deltalog s",
            "delta-rs s",
            "ratio",
            "deltalog s+imports",
            "delta-rs s+imports",
            "deltalog MB",
            "delta-rs MB",
            "mem ratio",
        ],
        rows,
    )
    print("results:", write_results("snapshot_load", {"runs": results}))


# -- the ``python -m bench`` protocol (bench/report.py) -----------------------------------

SIZES = {"small": [10_000], "full": [100_000, 1_000_000]}
TIME_TARGETS = {100000: 1.0, 1000000: 1.0}
MEMORY_TARGETS = {100000: 1.0, 1000000: 0.8}


def workloads(size: str) -> list[str]:
    names = []
    for n in SIZES[size]:
        label = f"snapshot load to Arrow add actions, {n:,} files"
        names += [f"{label} (time)", f"{label} (peak memory)"]
    return names


WORKLOADS = tuple(workloads("small"))


def run(size: str = "small") -> list[Any]:
    from bench.report import Result

    results = []
    names = iter(workloads(size))
    for n in SIZES[size]:
        path = tempfile.mkdtemp(prefix="deltalog-bench-")
        try:
            make_checkpointed_table(path, n)
            ours = run_isolated(DELTALOG.format(path=path, n=n), 2, DELTALOG_SETUP)
            theirs = run_isolated(DELTARS.format(path=path, n=n), 2, DELTARS_SETUP)
        finally:
            shutil.rmtree(path, ignore_errors=True)
        details = {"files": n, "deltalog": ours, "delta_rs": theirs}
        results.append(Result(next(names), "s", ours["seconds"], theirs["seconds"],
                              target_ratio=TIME_TARGETS.get(n), details=details,
                              notes="fresh process per run, best of 2, imports excluded"))
        results.append(Result(next(names), "MB", ours["peak_mb"], theirs["peak_mb"],
                              target_ratio=MEMORY_TARGETS.get(n), details=details))
    return results


if __name__ == "__main__":
    main()
