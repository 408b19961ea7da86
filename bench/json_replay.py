"""JSON log replay (no checkpoint): deltalog vs delta-rs.

    python -m bench.json_replay --commits 2000 --adds 20

The table has ``--commits`` commit files of ``--adds`` adds each (every 10th commit also
removes a file) and no checkpoint, so every commit is parsed. Each side loads the table
and produces the Arrow table of active ``add`` actions in a fresh process (time and peak
RSS); best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from typing import Any

from bench.common import make_commit_table, print_table, run_isolated, write_results

DELTALOG_SETUP = "from deltalog.txn.delta_log import DeltaLog"
DELTALOG = """
t = DeltaLog.for_table({path!r}).update().files_table
assert t.num_rows == {n}, t.num_rows
"""
DELTARS_SETUP = "from deltalake import DeltaTable"
DELTARS = """
t = DeltaTable({path!r}).get_add_actions()
assert t.num_rows == {n}, t.num_rows
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, nargs="+", default=[2_000])
    parser.add_argument("--adds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    results = []
    for commits in args.commits:
        n = commits * args.adds - commits // 10
        path = tempfile.mkdtemp(prefix="deltalog-bench-")
        try:
            make_commit_table(path, commits, args.adds)
            ours = run_isolated(DELTALOG.format(path=path, n=n), args.repeat, DELTALOG_SETUP)
            theirs = run_isolated(DELTARS.format(path=path, n=n), args.repeat, DELTARS_SETUP)
        finally:
            shutil.rmtree(path, ignore_errors=True)
        ratio_t = ours["seconds"] / theirs["seconds"]
        ratio_m = ours["peak_mb"] / theirs["peak_mb"]
        rows.append(
            [
                commits,
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
            {
                "commits": commits,
                "adds_per_commit": args.adds,
                "files": n,
                "deltalog": ours,
                "delta_rs": theirs,
                "time_ratio": ratio_t,
                "memory_ratio": ratio_m,
            }
        )
    print_table(
        "JSON log replay -> Arrow add actions (no checkpoint)",
        [
            "commits",
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
    print("results:", write_results("json_replay", {"runs": results}))


# -- the ``python -m bench`` protocol (bench/report.py) -----------------------------------

SIZES = {"small": [200], "full": [2_000, 5_000]}
ADDS_PER_COMMIT = 20
TIME_TARGETS = {2_000: 1.0, 5_000: 1.0}


def workloads(size: str) -> list[str]:
    names = []
    for commits in SIZES[size]:
        label = f"JSON log replay to Arrow add actions, {commits:,} commits x {ADDS_PER_COMMIT} adds"
        names += [f"{label} (time)", f"{label} (peak memory)"]
    return names


WORKLOADS = tuple(workloads("small"))


def run(size: str = "small") -> list[Any]:
    from bench.report import Result

    results = []
    names = iter(workloads(size))
    for commits in SIZES[size]:
        n = commits * ADDS_PER_COMMIT - commits // 10
        path = tempfile.mkdtemp(prefix="deltalog-bench-")
        try:
            make_commit_table(path, commits, ADDS_PER_COMMIT)
            ours = run_isolated(DELTALOG.format(path=path, n=n), 2, DELTALOG_SETUP)
            theirs = run_isolated(DELTARS.format(path=path, n=n), 2, DELTARS_SETUP)
        finally:
            shutil.rmtree(path, ignore_errors=True)
        details = {"commits": commits, "adds_per_commit": ADDS_PER_COMMIT, "deltalog": ours, "delta_rs": theirs}
        results.append(
            Result(
                next(names),
                "s",
                ours["seconds"],
                theirs["seconds"],
                target_ratio=TIME_TARGETS.get(commits),
                details=details,
                notes="no checkpoint; fresh process per run, best of 2, imports excluded",
            )
        )
        results.append(Result(next(names), "MB", ours["peak_mb"], theirs["peak_mb"], details=details))
    return results


if __name__ == "__main__":
    main()
