"""The writer process of the crash tests (run in a forked child, killed with SIGKILL).

:func:`write_commits` commits a seeded mix of appends, deletes-with-appends and table
property changes to a local table through :class:`CrashingLocalLogStore`, runs explicit
checkpoints and log cleanup in between, and after every acknowledged commit appends one
JSON line (version, txnId, paths added and removed) to an *ack file*, fsynced before it
goes on. Whatever the kill leaves behind, every line of the ack file is a promise the
table must keep.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from typing import Any

from deltalog.errors import DeltaError
from deltalog.txn.commit.operations import CreateTable, Delete, SetTableProperties, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from tests.reliability.crash_store import CrashingLocalLogStore, CrashPoints, install_os_hooks

_REAL_FSYNC = os.fsync  # acks are fsynced without counting as crash points

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)
TABLE_PROPERTIES = {
    "delta.checkpointInterval": "3",
    "delta.logRetentionDuration": "interval 1 hours",
}
#: explicit log cleanup of a lone writer runs as if it were this much later (everything is
#: expired then). Not with two writers: expiring commits that are seconds old lets the other,
#: seconds-stale writer publish a version that cleanup just deleted, below the newer
#: checkpoint -- the hazard Delta's 30-day delta.logRetentionDuration exists to rule out.
CLEANUP_SKEW_MS = 3 * 24 * 3600 * 1000


def create_table(uri: str) -> None:
    """Create the table (in the parent, not crashed)."""
    txn = DeltaLog.for_table(uri).start_transaction()
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",), configuration=dict(TABLE_PROPERTIES)
        )
    )
    txn.commit([], CreateTable(partition_by=["p"]))


def _ack(ack_path: str, record: dict[str, Any]) -> None:
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
        _REAL_FSYNC(fd)
    finally:
        os.close(fd)


def write_commits(
    uri: str,
    ack_path: str,
    seed: int,
    steps: int,
    worker: int,
    crash_at: int | None,
    count_path: str | None = None,
    concurrent: bool = False,
) -> None:
    """Run ``steps`` seeded steps; SIGKILL self at crash point ``crash_at`` (None: never).
    With ``count_path``, write the number of crash points passed there at the end.
    ``concurrent``: another writer works on the table too, so a step may lose a race."""
    points = CrashPoints(crash_at)
    install_os_hooks(points)
    rng = random.Random(seed)
    log = DeltaLog.for_table(uri, logstore=CrashingLocalLogStore(points=points))
    part = f"w{worker}"
    for step in range(steps):
        try:
            _step(log, ack_path, rng, seed, step, part, 0 if concurrent else CLEANUP_SKEW_MS)
        except (DeltaError, OSError):
            # A race with the other writer: a conflict, or its checkpoint replaced the one this
            # writer's snapshot was loaded from. Not acknowledged, so nothing was promised.
            # Alone, any error fails the round.
            if not concurrent:
                raise
    if count_path is not None:
        with open(count_path, "w") as handle:
            handle.write(str(points.count))


def _step(
    log: DeltaLog, ack_path: str, rng: random.Random, seed: int, step: int, part: str, cleanup_skew_ms: int
) -> None:
    roll = rng.random()
    if roll < 0.08:
        log.checkpoint()
        return
    if roll < 0.14:
        log.cleanup_expired_logs(now_ms=int(time.time() * 1000) + cleanup_skew_ms)
        return
    txn = log.start_transaction()
    adds = [f"p={part}/{seed}-{step}-{i}.parquet" for i in range(rng.randint(1, 2))]
    actions: list[Any] = [AddFile(a, {"p": part}, 100 + i, 1_700_000_000_000) for i, a in enumerate(adds)]
    removes: list[str] = []
    if roll < 0.30:
        ours = sorted(f.path for f in txn.filter_files([("p", "=", part)]))
        if ours:
            victim = rng.choice(ours)
            removes.append(victim)
            file = next(f for f in txn.snapshot.files if f.path == victim)
            actions.insert(0, file.remove(int(time.time() * 1000)))
        operation: Any = Delete(predicate=[f"p = '{part}'"])
    elif roll < 0.34:
        txn.update_metadata(_with_property(txn.metadata, "deltalog.test.step", f"{seed}-{step}"))
        actions, adds = [], []
        operation = SetTableProperties({"deltalog.test.step": f"{seed}-{step}"})
    else:
        operation = Write()
    version = txn.commit(actions, operation)
    _ack(ack_path, {"version": version, "txn": txn.txn_id, "adds": adds, "removes": removes})


def _with_property(metadata: Metadata | None, key: str, value: str) -> Metadata:
    from dataclasses import replace

    assert metadata is not None
    return replace(metadata, configuration={**metadata.configuration, key: value})
