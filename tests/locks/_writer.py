"""A writer process for the lock tests: ``python -m tests.locks._writer ARGS``.

Commits ``--count`` markers ``<name>-<i>`` through the Redis lock to a plain-put (NONE)
store, retrying on FileAlreadyExistsError, optionally pausing itself with SIGSTOP once at
a chosen point, and prints one JSON line per outcome: ``{"marker", "version"}`` or
``{"marker", "error", "type", "mro"}`` (any other error ends that marker's attempts).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from deltalog.contrib.redis_lock import RedisCommitLock, RedisLockConfig
from deltalog.txn.commit.locks.base import CommitLock
from tests.locks.plain_store import PausingPlainStore
from tests.locks.writer_loop import commit_once


class PausingRedisLock(RedisCommitLock):
    """Fault injection: SIGSTOP right after the claim, before it is checked and published."""

    pause_after_claim = False

    def _publish(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if self.pause_after_claim:
            self.pause_after_claim = False
            os.kill(os.getpid(), signal.SIGSTOP)
        return super()._publish(*args, **kwargs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", required=True, help="the full lock URI, parameters included")
    parser.add_argument("--log-uri", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--pause-at", choices=["temp", "claimed", "publish"], default=None)
    args = parser.parse_args()
    config = RedisLockConfig.from_uri(args.redis)
    lock: CommitLock = PausingRedisLock(config)
    lock.pause_after_claim = args.pause_at == "claimed"  # type: ignore[attr-defined]
    store = PausingPlainStore(args.pause_at if args.pause_at in ("temp", "publish") else None)
    for i in range(args.count):
        marker = f"{args.name}-{i}"
        try:
            version = commit_once(lock, store, args.log_uri, marker)
            print(json.dumps({"marker": marker, "version": version}), flush=True)
        except Exception as exc:
            print(
                json.dumps(
                    {
                        "marker": marker,
                        "error": str(exc),
                        "type": type(exc).__name__,
                        "mro": [c.__name__ for c in type(exc).__mro__],
                    }
                ),
                flush=True,
            )
    lock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
