"""Build Delta tables for tests by writing commits with the store and the actions codec."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from deltalog.logstores.local import LocalLogStore
from deltalog.txn.protocol.actions import Action, AddFile, CommitInfo, Metadata, Protocol, RemoveFile, action_to_line

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def metadata(config: dict[str, str] | None = None, partition_by: Sequence[str] = ()) -> Metadata:
    return Metadata(
        id="00000000-0000-0000-0000-000000000001",
        schema_string=SCHEMA,
        partition_columns=tuple(partition_by),
        configuration=dict(config or {}),
        created_time=1,
    )


def protocol() -> Protocol:
    return Protocol(1, 2)


def add(path: str, size: int = 10, pv: dict[str, str | None] | None = None, **kw: object) -> AddFile:
    return AddFile(
        path=path,
        partition_values=pv or {},
        size=size,
        modification_time=1,
        data_change=True,
        stats=json.dumps({"numRecords": 1}),
        **kw,
    )  # type: ignore[arg-type]


def remove(path: str, ts: int = 10**13, **kw: object) -> RemoveFile:
    return RemoveFile(path=path, deletion_timestamp=ts, data_change=True, **kw)  # type: ignore[arg-type]


def commit(table: str, version: int, actions: Sequence[Action], mtime_ms: int | None = None) -> str:
    store = LocalLogStore()
    path = f"{table}/_delta_log/{version:020d}.json"
    lines = [action_to_line(CommitInfo(timestamp=mtime_ms or 0, operation="WRITE"))]
    lines += [action_to_line(a) for a in actions]
    store.write(path, lines)
    if mtime_ms is not None:
        os.utime(path, (mtime_ms / 1000, mtime_ms / 1000))
    return path


def set_mtime(path: str, mtime_ms: int) -> None:
    os.utime(path, (mtime_ms / 1000, mtime_ms / 1000))


def create(table: str, config: dict[str, str] | None = None, files: Sequence[str] = ()) -> None:
    commit(table, 0, [protocol(), metadata(config), *[add(f) for f in files]])
