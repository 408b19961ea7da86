"""Imported once by the fork server of the crash tests: loads every lazily imported
module (and warms caches) so that each forked writer starts working at once."""

from __future__ import annotations

import shutil
import tempfile
import time

from tests.reliability.crash_worker import create_table, write_commits


def _warm_up() -> None:
    directory = tempfile.mkdtemp(prefix="deltalog-crash-warmup-")
    try:
        uri = f"{directory}/t"
        create_table(uri)
        write_commits(uri, f"{directory}/ack", 3, 8, 0, None)
        from deltalog.txn.delta_log import DeltaLog

        log = DeltaLog.for_table(uri)
        log.checkpoint()
        log.cleanup_expired_logs(now_ms=int(time.time() * 1000) + 3 * 24 * 3600 * 1000)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


_warm_up()
