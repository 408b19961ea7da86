"""Snapshot load to an Arrow table of add actions: deltalog vs delta-rs.

    python -m bench.snapshot_load --files 100000

Each measurement runs in a fresh process (time and peak RSS); best of ``--repeat``.
"""

from __future__ import annotations

from bench.common import FreshProcessComparison, make_checkpointed_table


def _build(path: str, files: int) -> int:
    make_checkpointed_table(path, files)
    return files


COMPARISON = FreshProcessComparison(
    name="snapshot_load",
    title="snapshot load -> Arrow add actions (checkpointed table)",
    size_name="files",
    label="snapshot load to Arrow add actions, {size:,} files",
    build=_build,
    deltalog=(
        "from deltalog.txn.delta_log import DeltaLog",
        "t = DeltaLog.for_table({path!r}).update().files_table\nassert t.num_rows == {n}\n",
    ),
    delta_rs=(
        "from deltalake import DeltaTable",
        "t = DeltaTable({path!r}).get_add_actions()\nassert t.num_rows == {n}\n",
    ),
    sizes={"small": [10_000], "full": [100_000, 1_000_000]},
    time_targets={100_000: 1.0, 1_000_000: 1.0},
    memory_targets={100_000: 1.0, 1_000_000: 0.8},
)
workloads = COMPARISON.workloads
run = COMPARISON.run
WORKLOADS = tuple(workloads("small"))

if __name__ == "__main__":
    COMPARISON.main(description=__doc__)
