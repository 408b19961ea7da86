"""Writers killed with SIGKILL during commits, checkpoints and log cleanup.

Each round forks writer processes (``crash_worker.write_commits``) on one local table
and kills them, either

* at a **deterministic crash point** (``CrashingLocalLogStore``: before/after each fsync,
  hard link, rename, unlink and Parquet write, chosen by the seeded RNG), or
* after a **random delay**, two concurrent writers at a time.

After every round: the table loads from scratch, every commit file is whole (no partial
version), versions are contiguous, every acknowledged commit is there with its txnId
exactly once and its files are live (or tombstoned by a later commit), and a fresh writer
commits the next version. At the end, leftover temp files are aged and log cleanup
removes them.

Seeded: the seed is printed; ``DELTALOG_CRASH_SEED=<seed>`` replays a run.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from deltalog.txn.commit.operations import Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile
from tests.reliability.crash_worker import create_table, write_commits

DETERMINISTIC_KILLS = 130
RANDOM_KILLS = 100
DETERMINISTIC_STEPS = 6
RANDOM_STEPS = 10
MAX_ROUNDS = 600


@pytest.fixture
def crash_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on tmpfs when there is one: a SIGKILL keeps the page cache, so fsync
    adds nothing to what these tests can observe, and tmpfs makes it free."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="deltalog-crash-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.reliability.crash_preload"])
    return ctx


@dataclass
class CrashTable:
    """A table under crash test, with everything the writers acknowledged."""

    root: Path
    seed: int
    kills: int = 0
    rounds: int = 0
    next_writer_commits: int = 0
    ack_files: list[Path] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return str(self.root / "table")

    def ack_file(self) -> Path:
        path = self.root / f"ack-{len(self.ack_files)}.jsonl"
        self.ack_files.append(path)
        return path

    def acks(self) -> list[dict[str, Any]]:
        out = []
        for path in self.ack_files:
            if path.exists():
                for line in path.read_bytes().split(b"\n"):
                    if line:
                        out.append(json.loads(line))
        return out

    def where(self) -> str:
        return f"(seed {self.seed}, round {self.rounds}; rerun with DELTALOG_CRASH_SEED={self.seed})"

    def verify(self) -> int:
        """Check every invariant; return the latest version."""
        where = self.where()
        log = DeltaLog.for_table(self.uri)
        snapshot = log.update()
        versions = log.list_commit_versions(0)
        assert versions, f"no commit left {where}"
        assert versions == list(range(versions[0], snapshot.version + 1)), f"versions not contiguous {where}"
        txn_at: dict[int, str] = {}
        for version in versions:
            raw = log.store.read_bytes(log.commit_uri(version))
            assert raw.endswith(b"\n"), f"partial commit {version} visible {where}"
            objects = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
            assert "commitInfo" in objects[0], f"commit {version} does not start with commitInfo {where}"
            txn_at[version] = objects[0]["commitInfo"]["txnId"]
        assert set(Counter(txn_at.values()).values()) == {1}, f"a txnId in two versions {where}"
        acks = self.acks()
        live = {f.path for f in snapshot.files}
        tombstoned = {r.path for r in snapshot.tombstones}
        removed = {path for ack in acks for path in ack["removes"]}
        for ack in acks:
            version = ack["version"]
            assert version <= snapshot.version, f"acknowledged version {version} lost {where}"
            if version in txn_at:
                assert txn_at[version] == ack["txn"], f"version {version} holds another commit {where}"
            for path in ack["adds"]:
                if path in removed:
                    assert path not in live, f"{path} was removed but is live {where}"
                else:
                    assert path in live or path in tombstoned, f"acknowledged {path} lost {where}"
        return snapshot.version

    def next_writer(self, latest: int) -> None:
        """A fresh writer commits normally, right after the crash."""
        txn = DeltaLog.for_table(self.uri).start_transaction()
        path = f"p=next/{self.rounds}.parquet"
        version = txn.commit([AddFile(path, {"p": "next"}, 1, 1)], Write())
        assert version == latest + 1, f"the next writer committed {version}, not {latest + 1} {self.where()}"
        with open(self.ack_file(), "w") as handle:
            handle.write(json.dumps({"version": version, "txn": txn.txn_id, "adds": [path], "removes": []}) + "\n")
        self.next_writer_commits += 1


def _start(
    ctx: Any,
    table: CrashTable,
    seed: int,
    steps: int,
    worker: int,
    crash_at: int | None,
    count_path: str | None = None,
    concurrent: bool = False,
) -> Any:
    process = ctx.Process(
        target=write_commits,
        args=(table.uri, str(table.ack_file()), seed, steps, worker, crash_at, count_path, concurrent),
    )
    process.start()
    return process


def _killed(process: Any, where: str) -> bool:
    process.join(60)
    assert process.exitcode is not None, f"writer hung {where}"
    assert process.exitcode in (0, -signal.SIGKILL), f"writer failed with {process.exitcode} {where}"
    return bool(process.exitcode == -signal.SIGKILL)


def _crash_points(ctx: Any, table: CrashTable, rng: random.Random, steps: int) -> int:
    """Crash points of one uncrashed round (the range crash points are drawn from)."""
    count_path = str(table.root / "points")
    process = _start(ctx, table, rng.randrange(2**31), steps, 0, None, count_path)
    assert not _killed(process, table.where())
    return int(Path(count_path).read_text())


def _leftover_temp_files(table: CrashTable) -> list[Path]:
    log_dir = Path(table.uri) / "_delta_log"
    return [p for p in log_dir.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


@pytest.mark.slow
def test_sigkill_at_crash_points_and_random_moments_loses_nothing(crash_dir: Path, crash_seed: int) -> None:
    rng = random.Random(crash_seed)
    table = CrashTable(crash_dir, crash_seed)
    create_table(table.uri)
    ctx = _context()

    # 1. deterministic crash points inside commits, checkpoints and cleanup
    points = _crash_points(ctx, table, rng, DETERMINISTIC_STEPS)
    deterministic = 0
    while deterministic < DETERMINISTIC_KILLS and table.rounds < MAX_ROUNDS:
        table.rounds += 1
        crash_at = rng.randint(1, points)
        process = _start(ctx, table, rng.randrange(2**31), DETERMINISTIC_STEPS, 0, crash_at)
        deterministic += _killed(process, table.where())
        table.next_writer(table.verify())

    # 2. random moments, two writers at once
    started = time.monotonic()
    dry = [_start(ctx, table, rng.randrange(2**31), RANDOM_STEPS, w, None, concurrent=True) for w in (0, 1)]
    for process in dry:
        assert not _killed(process, table.where())
    duration = time.monotonic() - started
    at_random = 0
    while at_random < RANDOM_KILLS and table.rounds < MAX_ROUNDS:
        table.rounds += 1
        writers = [_start(ctx, table, rng.randrange(2**31), RANDOM_STEPS, w, None, concurrent=True) for w in (0, 1)]
        t0 = time.monotonic()
        for process, delay in sorted(
            zip(writers, [rng.uniform(0, duration) for _ in writers]), key=lambda pair: pair[1]
        ):
            time.sleep(max(0.0, delay - (time.monotonic() - t0)))
            try:
                if process.exitcode is None:
                    os.kill(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it finished first (not counted as a kill: its exit code is 0)
        at_random += sum(_killed(p, table.where()) for p in writers)
        table.next_writer(table.verify())

    table.kills = deterministic + at_random
    acks = table.acks()
    print(
        f"crash summary: seed={crash_seed} kills={table.kills} (crash points {deterministic}, "
        f"random {at_random}) rounds={table.rounds} acknowledged={len(acks)} "
        f"next-writer commits={table.next_writer_commits} lost=0"
    )
    assert deterministic >= DETERMINISTIC_KILLS and at_random >= RANDOM_KILLS, table.where()

    # 3. temp files left by the kills are harmless (verified above) and cleaned by maintenance
    leftovers = _leftover_temp_files(table)
    log = DeltaLog.for_table(table.uri)
    snapshot = log.update()
    log.cleanup_expired_logs(snapshot)  # young temp files stay: a writer may still use them
    assert set(_leftover_temp_files(table)) == set(leftovers)
    old = time.time() - 2 * 3600
    for path in leftovers:
        os.utime(path, (old, old))
    log.cleanup_expired_logs(snapshot)
    assert _leftover_temp_files(table) == []
    assert table.verify() == snapshot.version
