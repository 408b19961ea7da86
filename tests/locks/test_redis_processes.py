"""The Redis lock with real processes: a holder paused with SIGSTOP whose lease expires,
four writers racing on a store without mutual exclusion, and Redis restarted or stopped
while a writer is mid-commit. Each test reads every version back: contiguous, one commit
per file, every acknowledged commit present exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.locks.plain_store import PlainPutLogStore
from tests.locks.test_redis_lock import PREFIX, commit_files, make_lock, table, temp_files
from tests.locks.writer_loop import commit_lines, commit_once, read_markers
from tests.servers.redis import RedisServer

REPO = Path(__file__).resolve().parents[2]


def lock_uri(server: RedisServer, lease_ttl: str = "1s") -> str:
    return f"{server.url}?lease_ttl={lease_ttl}&acquire_timeout=60s&key_prefix={PREFIX}"


def spawn(uri: str, log_uri: str, name: str, count: int = 1, pause_at: str | None = None) -> subprocess.Popen[str]:
    command = [
        sys.executable,
        "-m",
        "tests.locks._writer",
        "--redis",
        uri,
        "--log-uri",
        log_uri,
        "--name",
        name,
        "--count",
        str(count),
    ]
    if pause_at:
        command += ["--pause-at", pause_at]
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_stopped(proc: subprocess.Popen[str]) -> None:
    """Until the child has stopped itself with SIGSTOP (the deadline only bounds a hang)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the writer exited before pausing: {proc.communicate()}")
        with open(f"/proc/{proc.pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        if state == "T":
            return
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("the writer never paused")


def outcomes(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def assert_log_is_sound(log_uri: str, acknowledged: dict[str, int]) -> dict[int, list[str]]:
    """Contiguous versions, exactly one commit per file, each acknowledged commit exactly
    once and where its writer was told it is; no stray files."""
    store = PlainPutLogStore()
    markers = read_markers(store, log_uri)
    assert sorted(markers) == list(range(len(markers)))
    assert commit_files(log_uri) == [f"{v:020d}.json" for v in range(len(markers))]
    assert all(len(found) == 1 for found in markers.values()), markers
    everything = [found[0] for found in markers.values()]
    assert len(everything) == len(set(everything))
    for marker, version in acknowledged.items():
        assert markers[version] == [marker]
    assert not [n for n in os.listdir(log_uri) if n.endswith(".put")]
    return markers


@pytest.mark.parametrize("pause_at", ["temp", "claimed", "publish"])
def test_paused_holder_whose_lease_expired_never_publishes_a_second_file(
    redis_server: RedisServer, tmp_path: Path, pause_at: str
) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    lock = make_lock(redis_server.url)
    lock.write_commit(store, log_uri, 0, commit_lines("init"))
    paused = spawn(lock_uri(redis_server), log_uri, "paused", pause_at=pause_at)
    try:
        wait_stopped(paused)  # it holds the lease, mid-commit
        # The lease (1s) runs out while the holder is stopped; this writer proceeds.
        other_version = commit_once(lock, store, log_uri, "other")
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    results = outcomes(paused)
    assert [r.get("type") for r in results] == [None], results
    acknowledged = {"init": 0, "other": other_version, "paused-0": results[0]["version"]}
    markers = assert_log_is_sound(log_uri, acknowledged)
    if pause_at == "temp":  # paused before claiming: the other writer took version 1
        assert markers == {0: ["init"], 1: ["other"], 2: ["paused-0"]}
    else:  # paused after claiming: version 1 was repaired from the paused writer's temp file
        assert markers == {0: ["init"], 1: ["paused-0"], 2: ["other"]}
    assert temp_files(log_uri) == []
    lock.close()


def test_four_processes_commit_through_redis_on_a_store_without_exclusion(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    log_uri = table(tmp_path)
    writers = [spawn(lock_uri(redis_server, "5s"), log_uri, f"p{n}", count=25) for n in range(4)]
    results = [r for proc in writers for r in outcomes(proc)]
    assert [r for r in results if "error" in r] == []
    acknowledged = {r["marker"]: r["version"] for r in results}
    assert len(acknowledged) == 100
    markers = assert_log_is_sound(log_uri, acknowledged)
    assert sorted(markers) == list(range(100))
    assert temp_files(log_uri) == []


@pytest.fixture
def own_redis(tmp_path: Path) -> Any:
    server = RedisServer(str(tmp_path / "redis-logs")).start()
    try:
        yield server
    finally:
        server.stop()


def test_redis_restarted_after_a_claim_gives_lock_lost_and_publishes_nothing(
    own_redis: RedisServer, tmp_path: Path
) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    lock = make_lock(own_redis.url)
    lock.write_commit(store, log_uri, 0, commit_lines("init"))
    paused = spawn(lock_uri(own_redis), log_uri, "paused", pause_at="claimed")
    try:
        wait_stopped(paused)
        own_redis.restart()  # every key is gone, the claim too
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    results = outcomes(paused)
    assert [r["type"] for r in results] == ["LockLostError"], results
    assert "nothing was published" in results[0]["error"]
    assert commit_files(log_uri) == ["00000000000000000000.json"]
    assert temp_files(log_uri) == []
    other = commit_once(lock, store, log_uri, "after")
    assert assert_log_is_sound(log_uri, {"init": 0, "after": other}) == {0: ["init"], 1: ["after"]}
    lock.close()


def test_redis_restarted_while_publishing_is_a_success_counted_once(own_redis: RedisServer, tmp_path: Path) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    lock = make_lock(own_redis.url)
    lock.write_commit(store, log_uri, 0, commit_lines("init"))
    paused = spawn(lock_uri(own_redis), log_uri, "paused", pause_at="publish")
    try:
        wait_stopped(paused)  # its claim was checked; it is about to write N.json
        own_redis.restart()
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    results = outcomes(paused)
    assert [r.get("version") for r in results] == [1], results
    other = commit_once(lock, store, log_uri, "after")
    markers = assert_log_is_sound(log_uri, {"init": 0, "paused-0": 1, "after": other})
    assert markers == {0: ["init"], 1: ["paused-0"], 2: ["after"]}
    lock.close()


def test_redis_down_after_a_claim_is_an_ambiguous_error_never_a_second_file(
    own_redis: RedisServer, tmp_path: Path
) -> None:
    store, log_uri = PlainPutLogStore(), table(tmp_path)
    lock = make_lock(own_redis.url)
    lock.write_commit(store, log_uri, 0, commit_lines("init"))
    paused = spawn(lock_uri(own_redis), log_uri, "paused", pause_at="claimed")
    try:
        wait_stopped(paused)
        own_redis.stop()
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    results = outcomes(paused)
    assert [r["type"] for r in results] == ["CommitOutcomeUnknownError"], results
    assert {"LockUnavailableError", "AmbiguousWriteError"} <= set(results[0]["mro"])
    assert commit_files(log_uri) == ["00000000000000000000.json"]
    own_redis.start()  # back, empty: the claim is gone, so the commit never appears
    other = commit_once(lock, store, log_uri, "after")
    assert assert_log_is_sound(log_uri, {"init": 0, "after": other}) == {0: ["init"], 1: ["after"]}
    assert len(temp_files(log_uri)) == 1  # the dead claimant's temp file: harmless, never published
    lock.close()
