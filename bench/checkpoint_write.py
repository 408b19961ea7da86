"""Checkpoint writing: deltalog vs delta-rs ``create_checkpoint()``.

    python -m bench.checkpoint_write --files 100000 1000000

Each side loads the table and writes a checkpoint in a fresh process (time, peak RSS).
"""

from __future__ import annotations

from bench.common import FreshProcessComparison, make_checkpointed_table


def _build(path: str, files: int) -> int:
    make_checkpointed_table(path, files)
    return files


COMPARISON = FreshProcessComparison(
    name="checkpoint_write",
    title="checkpoint write (load + write, fresh process)",
    size_name="files",
    label="checkpoint write, {size:,} files",
    build=_build,
    deltalog=("from deltalog.txn.delta_log import DeltaLog", "DeltaLog.for_table({path!r}).checkpoint()\n"),
    delta_rs=("from deltalake import DeltaTable", "DeltaTable({path!r}).create_checkpoint()\n"),
    sizes={"small": [10_000], "full": [100_000, 1_000_000]},
    time_targets={100_000: 1.0, 1_000_000: 1.0},
    memory_targets={100_000: 0.7, 1_000_000: 0.7},
    default_repeat=2,
)
workloads = COMPARISON.workloads
run = COMPARISON.run
WORKLOADS = tuple(workloads("small"))

if __name__ == "__main__":
    COMPARISON.main(description=__doc__)
