"""JSON log replay (no checkpoint): deltalog vs delta-rs.

    python -m bench.json_replay --commits 2000

The table has ``--commits`` commit files of 20 adds each (every 10th commit also removes a
file) and no checkpoint, so every commit is parsed. Each side loads the table and produces
the Arrow table of active ``add`` actions in a fresh process (time and peak RSS); best of
``--repeat``.
"""

from __future__ import annotations

from bench.common import FreshProcessComparison, make_commit_table

ADDS_PER_COMMIT = 20


def _build(path: str, commits: int) -> int:
    make_commit_table(path, commits, ADDS_PER_COMMIT)
    return commits * ADDS_PER_COMMIT - commits // 10


COMPARISON = FreshProcessComparison(
    name="json_replay",
    title="JSON log replay -> Arrow add actions (no checkpoint)",
    size_name="commits",
    label="JSON log replay to Arrow add actions, {size:,} commits x " + str(ADDS_PER_COMMIT) + " adds",
    build=_build,
    deltalog=(
        "from deltalog.txn.delta_log import DeltaLog",
        "t = DeltaLog.for_table({path!r}).update().files_table\nassert t.num_rows == {n}, t.num_rows\n",
    ),
    delta_rs=(
        "from deltalake import DeltaTable",
        "t = DeltaTable({path!r}).get_add_actions()\nassert t.num_rows == {n}, t.num_rows\n",
    ),
    sizes={"small": [200], "full": [2_000, 5_000]},
    time_targets={2_000: 1.0, 5_000: 1.0},
    notes="no checkpoint; fresh process per run, imports excluded",
)
workloads = COMPARISON.workloads
run = COMPARISON.run
WORKLOADS = tuple(workloads("small"))

if __name__ == "__main__":
    COMPARISON.main(description=__doc__)
