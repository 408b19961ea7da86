"""What the engine itself does on the store, run through the engine: commits under the
commit lock the store gets, checkpoints (classic from the JSON log, classic built from a
previous checkpoint, multi-part, V2 with sidecars) with ``_last_checkpoint``, and
expired-log cleanup.

A store can pass every LogStore check and still fail here: the engine also writes whole
files through the data filesystem (checkpoints, sidecars) and deletes log files, and it
must never need an operation the store lacks (a rename on Azure Blob without
hierarchical namespace).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from deltalog.conformance.check import Check, expect, operation
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable
from deltalog.txn.protocol.file_names import checkpoint_file_singular, delta_file

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.delta_log import DeltaLog

__all__ = ["CHECKS", "KitTable"]

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
#: No post-commit checkpoint: the checks write theirs explicitly, to see the store's errors
#: (a post-commit checkpoint's error is only logged).
NO_AUTO_CHECKPOINT = "1000000"
WRITERS = 2
COMMITS_PER_WRITER = 4
DAY_MS = 86_400_000


class KitTable:
    """A Delta table in the check's directory; each :meth:`log` is a fresh ``DeltaLog``
    (nothing cached, so each snapshot is loaded from the store as another process would)."""

    def __init__(self, ctx: CheckContext, name: str, lock: str | CommitLock = "in-process", **config: str) -> None:
        # The kit is the only writer of its scratch tables: the in-process lock serves any
        # store (engine_commit passes the lock the store would get)
        self.lock = lock
        self.ctx = ctx
        self.store = ctx.store
        self.uri = ctx.store.resolve_path(ctx.directory(name))
        ctx.holds_log_files(f"{self.uri}/_delta_log")
        ctx.holds_log_files(f"{self.uri}/_delta_log/_sidecars")
        self.config = {"delta.checkpointInterval": NO_AUTO_CHECKPOINT, **config}

    def log(self) -> DeltaLog:
        from deltalog.txn.delta_log import DeltaLog

        return DeltaLog(self.uri, self.store)

    def transaction(self, log: DeltaLog | None = None) -> Any:
        return (log or self.log()).start_transaction(lock=self.lock, single_writer=True)

    def create(self) -> None:
        from deltalog.txn.commit.operations import CreateTable
        from deltalog.txn.protocol.actions import Metadata

        with operation(f"creating the table {self.uri} (commit 0 through the engine)"):
            txn = self.transaction()
            table_id = str(uuid.uuid4())
            txn.update_metadata(
                Metadata(id=table_id, schema_string=SCHEMA, partition_columns=("p",), configuration=self.config)
            )
            txn.commit([], CreateTable(partition_by=["p"]))

    def append(self, name: str, log: DeltaLog | None = None) -> int:
        return self.commit_on(self.transaction(log), name)

    def commit_on(self, txn: Any, name: str) -> int:
        """Commit an append of ``p=a/<name>.parquet`` in the open transaction ``txn``."""
        from deltalog.txn.commit.operations import Write
        from deltalog.txn.protocol.actions import AddFile

        add = AddFile(f"p=a/{name}.parquet", {"p": "a"}, 100, int(time.time() * 1000), stats='{"numRecords":1}')
        with operation(f"committing an append of {add.path} to {self.uri}"):
            version: int = txn.commit([add], Write())
            return version

    def remove(self, name: str) -> int:
        from deltalog.txn.commit.operations import Delete
        from deltalog.txn.protocol.actions import RemoveFile

        path = f"p=a/{name}.parquet"
        with operation(f"committing the removal of {path} from {self.uri}"):
            version: int = self.transaction().commit(
                [RemoveFile(path, int(time.time() * 1000), partition_values={"p": "a"}, size=100)], Delete([])
            )
            return version

    def checkpoint(self, what: str, **kwargs: Any) -> Any:
        log = self.log()
        with operation(f"loading {self.uri} for {what}"):
            snapshot = log.update()
        with operation(f"writing {what} of version {snapshot.version}"):
            return log.checkpoint(snapshot, **kwargs)

    def expect_files(self, expected: set[str], after: str) -> int:
        """Load the table afresh; its files must be ``expected``. Returns the checkpoint version."""
        with operation(f"loading {self.uri} after {after}"):
            snapshot = self.log().update()
            got = {add.path for add in snapshot.files}
        expect(
            got == expected,
            f"after {after} the table reads {len(got)} files, expected {len(expected)}: "
            f"missing {sorted(expected - got)[:3]}, extra {sorted(got - expected)[:3]}",
        )
        return -1 if snapshot.checkpoint_version is None else snapshot.checkpoint_version

    def log_names(self) -> list[str]:
        with operation(f"listing {self.uri}/_delta_log"):
            return self.ctx.list_dir(f"{self.uri}/_delta_log")


def _no_temp_files(table: KitTable) -> None:
    temps = [n for n in table.log_names() if n.endswith(".tmp")]
    expect(not temps, f"checkpoint writing left temp files in _delta_log: {temps[:3]}")


def _hint(table: KitTable) -> dict[str, Any]:
    with operation(f"reading {table.uri}/_delta_log/_last_checkpoint"):
        text = "\n".join(table.store.read(f"{table.uri}/_delta_log/_last_checkpoint"))
    from deltalog.txn.log.last_checkpoint import LastCheckpointInfo

    try:
        return LastCheckpointInfo.from_json(text).to_dict()
    except ValueError as exc:
        raise CheckFailed(f"_last_checkpoint reads back unusable ({exc}): {text[:120]!r}") from None


def checkpoints(ctx: CheckContext) -> str:
    table = KitTable(ctx, "classic")
    table.create()
    names = [f"f{i}" for i in range(4)]
    for name in names[:3]:
        table.append(name)
    first = table.checkpoint("the classic checkpoint (from the JSON log)")
    expect(first.version == 3, f"the first checkpoint has version {first.version}, expected 3")
    table.append(names[3])
    table.remove(names[0])
    # a fresh log streams its files from checkpoint 3: the path that needed a rename
    second = table.checkpoint("the classic checkpoint built from the previous checkpoint")
    expected = set(f"p=a/{n}.parquet" for n in names[1:])
    expect(table.expect_files(expected, "the second checkpoint") == second.version, "the checkpoint is not used")
    table.append("f4")
    expected.add("p=a/f4.parquet")
    multi = table.checkpoint("the multi-part checkpoint (2 actions per part)", part_size=2)
    expect(len(multi.paths) > 1, f"a multi-part checkpoint was asked for, {len(multi.paths)} part written")
    hint = _hint(table)
    expect(
        hint.get("version") == multi.version and hint.get("parts") == len(multi.paths),
        f"_last_checkpoint names version {hint.get('version')} in {hint.get('parts')} parts, "
        f"expected {multi.version} in {len(multi.paths)}",
    )
    used = table.expect_files(expected, "the multi-part checkpoint")
    expect(used == multi.version, f"a fresh load used checkpoint {used}, not the multi-part {multi.version}")
    _no_temp_files(table)
    return (
        f"checkpoints of versions {first.version} (from JSON), {second.version} (from checkpoint "
        f"{first.version}) and {multi.version} ({len(multi.paths)} parts) written through "
        f"{type(ctx.store.filesystem()).__name__} without a rename; _last_checkpoint and a fresh load agree"
    )


def checkpoint_v2_sidecars(ctx: CheckContext) -> str:
    table = KitTable(ctx, "v2", **{"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"})
    table.create()
    for i in range(4):
        table.append(f"f{i}")
    first = table.checkpoint("the V2 checkpoint with sidecars (Parquet)", part_size=2)
    table.append("f4")
    second = table.checkpoint("the V2 checkpoint (JSON) built from the previous one", part_size=3, v2_format="json")
    sidecars = [p for p in (*first.paths, *second.paths) if "/_sidecars/" in p]
    expect(len(sidecars) >= 4, f"expected sidecar files for both checkpoints, got {sidecars}")
    with operation(f"listing {table.uri}/_delta_log/_sidecars"):
        listed = set(ctx.list_dir(f"{table.uri}/_delta_log/_sidecars"))
    missing = [p.rsplit("/", 1)[1] for p in sidecars if p.rsplit("/", 1)[1] not in listed]
    expect(not missing, f"sidecars written but not listed: {missing}")
    hint = _hint(table)
    v2 = hint.get("v2Checkpoint") or {}
    expect(
        hint.get("version") == second.version and str(v2.get("path", "")).endswith(".json"),
        f"_last_checkpoint does not name the V2 checkpoint of version {second.version}: {hint}",
    )
    used = table.expect_files({f"p=a/f{i}.parquet" for i in range(5)}, "the V2 checkpoints")
    expect(used == second.version, f"a fresh load used checkpoint {used}, not the V2 one at {second.version}")
    _no_temp_files(table)
    return (
        f"V2 checkpoints of versions {first.version} (Parquet) and {second.version} (JSON) with "
        f"{len(sidecars)} sidecars in _delta_log/_sidecars; _last_checkpoint and a fresh load agree"
    )


def _past_the_second_of(table: KitTable, version: int) -> None:
    """On a store whose modification times have whole seconds (S3, Azure), wait until the
    next second after commit ``version``'s: a checkpoint written in that second counts as
    not newer than the commit before it, and Delta's cleanup (``BufferingLogDeletionIterator``)
    then deletes nothing before it. Times with milliseconds need no wait."""
    name = delta_file(version)
    with operation(f"listing {name} for its modification time"):
        status = next(s for s in table.store.list_from(f"{table.uri}/_delta_log/{name}") if s.name == name)
    if status.modification_time % 1000 == 0:
        time.sleep(min(2.0, max(0.0, (status.modification_time + 1050) / 1000 - time.time())))


def log_cleanup(ctx: CheckContext) -> str:
    table = KitTable(ctx, "cleanup", **{"delta.logRetentionDuration": "interval 1 days"})
    table.create()
    for i in range(3):
        table.append(f"f{i}")
    _past_the_second_of(table, 2)
    table.checkpoint("the checkpoint log cleanup keeps")
    table.append("f3")
    log = table.log()
    with operation("expired-log cleanup (listing _delta_log, deleting the files before the checkpoint)"):
        snapshot = log.update()
        deleted = log.cleanup_expired_logs(snapshot, now_ms=int(time.time() * 1000) + 3 * DAY_MS)
    names = table.log_names()
    left = sorted(n for n in names if n.endswith(".json") and n < delta_file(3))
    expect(not left, f"cleanup reported {deleted} deletions but {left} are still listed")
    expect(
        checkpoint_file_singular(3) in names and delta_file(4) in names,
        f"cleanup deleted the checkpoint or a newer commit: {names}",
    )
    table.expect_files({f"p=a/f{i}.parquet" for i in range(4)}, "log cleanup")
    return f"deleted {deleted} expired log files before checkpoint 3; the table still loads"


def _two_on_one_snapshot(table: KitTable) -> list[tuple[Any, str]]:
    """Two transactions opened on the same snapshot, each through its own DeltaLog."""
    return [(table.transaction(table.log()), "first"), (table.transaction(table.log()), "second")]


def engine_commit(ctx: CheckContext) -> str:
    from deltalog.errors import DeltaError
    from deltalog.txn.commit.locks.errors import UnsafeCommitLockError
    from deltalog.txn.commit.transaction import commit_lock_for

    try:
        lock = commit_lock_for(KitTable(ctx, "commits").log(), None, False)
    except UnsafeCommitLockError as exc:
        raise NotApplicable(f"the engine gets no commit lock for this store: {exc}") from None
    except DeltaError as exc:
        raise CheckFailed(f"choosing the commit lock from the storage options: {exc}") from None
    table = KitTable(ctx, "commits", lock=lock)
    table.create()
    # first, deterministically: two transactions read version 0, then commit one after the
    # other; the second must find version 1 taken and land at 2
    versions: list[int] = [table.commit_on(txn, name) for txn, name in _two_on_one_snapshot(table)]
    expect(
        versions == [1, 2],
        f"two transactions read version 0 and committed in turn: versions {versions}, expected [1, 2]",
    )
    errors: list[str] = []
    barrier = threading.Barrier(WRITERS)

    def writer(index: int) -> None:
        log = table.log()
        try:
            barrier.wait(timeout=60)
            for i in range(COMMITS_PER_WRITER):
                versions.append(table.append(f"w{index}-{i}", log=log))
        except Exception as exc:
            errors.append(f"writer {index}: {exc}")

    threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    expect(not errors, f"concurrent commits through the engine failed: {'; '.join(errors[:2])}")
    total = WRITERS * COMMITS_PER_WRITER + 2
    expect(
        sorted(versions) == list(range(1, total + 1)),
        f"{WRITERS} writers committed versions {sorted(versions)}, expected 1..{total} once each",
    )
    expected = {f"p=a/w{w}-{i}.parquet" for w in range(WRITERS) for i in range(COMMITS_PER_WRITER)}
    expected |= {"p=a/first.parquet", "p=a/second.parquet"}
    table.expect_files(expected, f"{total} concurrent commits")
    return (
        f"{total} commits by {WRITERS} concurrent writers through the engine with the "
        f"{lock.name or type(lock).__name__} commit lock: versions 1..{total} once each, no file lost"
    )


CHECKS = (
    Check(
        "engine_commit",
        "concurrent commits through the engine, with the commit lock the store gets, all land once",
        engine_commit,
    ),
    Check(
        "checkpoints",
        "classic checkpoints (from JSON, from a previous checkpoint, multi-part) and _last_checkpoint",
        checkpoints,
    ),
    Check(
        "checkpoint_v2_sidecars",
        "V2 checkpoints with sidecars (Parquet and JSON) and _last_checkpoint's v2Checkpoint",
        checkpoint_v2_sidecars,
    ),
    Check("log_cleanup", "expired-log cleanup deletes the commits before a checkpoint", log_cleanup),
)
