"""Blind appends through the transaction engine, run in worker processes by the tests."""

from __future__ import annotations

import json
import uuid

from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)


def create_table(uri: str, options: dict[str, str], logstore: str | None = None, lock: str | None = None) -> int:
    log = DeltaLog.for_table(uri, options, logstore=logstore)
    txn = log.start_transaction(lock=lock)
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",)))
    return int(txn.commit([], CreateTable(partition_by=["p"])))


def append(
    uri: str,
    options: dict[str, str],
    worker: int,
    commits: int,
    logstore: str | None = None,
    lock: str | None = None,
) -> list[tuple[int, str]]:
    log = DeltaLog.for_table(uri, options, logstore=logstore)
    acknowledged = []
    for i in range(commits):
        path = f"p=w{worker}/w{worker}-{i}.parquet"
        version = log.start_transaction(lock=lock).commit([AddFile(path, {"p": f"w{worker}"}, 1, 1)], Write())
        acknowledged.append((int(version), path))
    return acknowledged
