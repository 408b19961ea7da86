"""Requests per blind append on S3 (moto), by HTTP method: deltalog vs delta-rs.

    python -m bench.s3_requests [--size small|full]

Both engines append one row (one Parquet file plus one commit) to an already loaded table
on the same moto server, through a counting proxy on 127.0.0.1. The workload's number is
the requests on ``_delta_log`` (the commit protocol), whose floor is one LIST to learn
the latest version plus one conditional PUT of the commit. deltalog's post-commit
checksum file (``N.crc``, one PUT; Delta Spark writes it too, delta-rs does not) is a
post-commit step like a checkpoint, counted apart in the notes (turned off with
``deltalog.writeChecksumFile.enabled=false``). The notes give every request by method,
the Parquet upload included (pyarrow's S3 output stream uses a multipart
upload: POST, PUT, POST). Table setup and loading are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from typing import Any

from bench.report import Result

WORKLOADS = ("S3 requests per 1-row append (moto)",)
APPENDS = {"small": 5, "full": 20}
CONFIG = {"delta.checkpointInterval": "1000"}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _row(i: int) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array([i], pa.int64()), "value": pa.array([f"row-{i}"], pa.string())})


def _counted(proxy: Any, since: int) -> Counter[str]:
    """Requests since ``since`` by method, ``log`` / ``log METHOD`` for the commit protocol
    on ``_delta_log``, and ``crc METHOD`` for the post-commit checksum file ``N.crc``."""
    counts: Counter[str] = Counter()
    for method, path in proxy.requests[since:]:
        counts[method] += 1
        if "_delta_log" in path and path.split("?")[0].endswith(".crc"):
            counts[f"crc {method}"] += 1
        elif "_delta_log" in path:
            counts["log"] += 1
            counts[f"log {method}"] += 1
    return counts


def _deltalog_appends(uri: str, options: dict[str, str], proxy: Any, n: int) -> list[Counter[str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.commit.operations import CreateTable, Write
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import AddFile, Metadata
    from deltalog.txn.protocol.file_stats import StatsCollector
    from deltalog.txn.protocol.schema import from_arrow

    log = DeltaLog.for_table(uri, options)
    txn = log.start_transaction()
    schema = from_arrow(_row(0).schema).to_json()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=schema, configuration=dict(CONFIG)))
    txn.commit([], CreateTable())
    log.update()
    fs = log.store.filesystem()
    per_append = []
    for i in range(n):
        start = len(proxy.requests)
        data = _row(i)
        name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        path = log.store.fs_path(f"{uri}/{name}")
        buffer = pa.BufferOutputStream()
        pq.write_table(data, buffer, compression="snappy")
        payload = buffer.getvalue()
        with fs.open_output_stream(path) as out:
            out.write(payload)
        stats = StatsCollector(data.schema)
        stats.update(data)
        size = payload.size
        add = AddFile(name, {}, size, int(time.time() * 1000), True, stats.to_json())
        log.start_transaction().commit([add], Write())
        per_append.append(_counted(proxy, start))
    return per_append


def _deltars_appends(uri: str, options: dict[str, str], proxy: Any, n: int) -> list[Counter[str]]:
    from deltalake import DeltaTable, write_deltalake

    write_deltalake(uri, _row(-1), storage_options=options, configuration=dict(CONFIG))
    table = DeltaTable(uri, storage_options=options)
    per_append = []
    for i in range(n):
        start = len(proxy.requests)
        write_deltalake(table, _row(i), mode="append")
        per_append.append(_counted(proxy, start))
    return per_append


def _summary(per_append: list[Counter[str]]) -> dict[str, float]:
    keys = sorted({k for c in per_append for k in c})
    out = {k: float(statistics.median(c.get(k, 0) for c in per_append)) for k in keys}
    out["total"] = float(
        statistics.median(sum(v for k, v in c.items() if not k.startswith(("log", "crc"))) for c in per_append)
    )
    out.setdefault("log", 0.0)
    return out


def measure(size: str) -> dict[str, dict[str, float]]:
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from tests.backends.faultproxy import FaultProxy
    from tests.servers.s3 import s3_options, start_moto

    n = APPENDS[size]
    with tempfile.TemporaryDirectory() as logs:
        server = start_moto(logs)
        try:
            proxy = FaultProxy(server.url).start()
            try:
                options = s3_options(proxy.url)
                from deltalog.logstores.s3 import S3LogStore

                bucket = f"bench-{uuid.uuid4().hex[:12]}"
                S3LogStore(options).client.create_bucket(Bucket=bucket)
                ours = _deltalog_appends(f"s3://{bucket}/deltalog", options, proxy, n)
                theirs = _deltars_appends(f"s3://{bucket}/delta-rs", options, proxy, n)
            finally:
                proxy.stop()
        finally:
            server.stop()
    return {"deltalog": _summary(ours), "delta-rs": _summary(theirs)}


def run(size: str) -> list[Result]:
    found = measure(size)
    ours, theirs = found["deltalog"], found["delta-rs"]

    def methods(d: dict[str, float]) -> str:
        log = ", ".join(f"{k[4:]} {v:g}" for k, v in d.items() if k.startswith("log "))
        crc = ", ".join(f"{k[4:]} {v:g}" for k, v in d.items() if k.startswith("crc ")) or "none"
        every = ", ".join(f"{k} {v:g}" for k, v in d.items() if not k.startswith(("log", "crc")) and k != "total")
        return f"log: {log}; post-commit .crc: {crc}; all: {every} (total {d['total']:g})"

    return [
        Result(
            workload=WORKLOADS[0],
            unit="log requests",
            deltalog=ours["log"],
            delta_rs=theirs["log"],
            target_ratio=1.0,
            target_text="<= delta-rs; floor 2 (LIST + conditional PUT)",
            conditions={"deltalog at the floor": ours["log"] <= 2},
            notes=f"median per append. deltalog {methods(ours)}. delta-rs {methods(theirs)}",
            details=found,
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(APPENDS), default="small")
    args = parser.parse_args()
    print(json.dumps(measure(args.size), indent=2))


if __name__ == "__main__":
    main()
