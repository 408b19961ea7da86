"""A type-widening table built with the engine alone: Parquet files written with pyarrow
before and after ``alter_column_type``, so the reads must cast old files to the new types."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.txn.commands.type_widening import alter_column_type
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from deltalog.txn.protocol.file_stats import StatsCollector


def _field(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": True, "metadata": {}}


SCHEMA = {
    "type": "struct",
    "fields": [
        _field("id", "long"),
        _field("i", "integer"),
        _field("s", "short"),
        _field("f", "float"),
        _field("d", "date"),
        _field("m", "decimal(5,2)"),
        _field("arr", {"type": "array", "elementType": "integer", "containsNull": True}),
    ],
}

#: column -> the type it is widened to
WIDENINGS = {
    "i": "long",
    "s": "double",
    "f": "double",
    "d": "timestamp_ntz",
    "m": "decimal(10,4)",
    "arr.element": "long",
}

OLD_ARROW = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("s", pa.int16()),
        ("f", pa.float32()),
        ("d", pa.date32()),
        ("m", pa.decimal128(5, 2)),
        ("arr", pa.list_(pa.int32())),
    ]
)
NEW_ARROW = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int64()),
        ("s", pa.float64()),
        ("f", pa.float64()),
        ("d", pa.timestamp("us")),
        ("m", pa.decimal128(10, 4)),
        ("arr", pa.list_(pa.int64())),
    ]
)

OLD_ROWS = [
    {"id": 1, "i": 7, "s": 3, "f": 1.5, "d": dt.date(2024, 1, 2), "m": Decimal("123.45"), "arr": [1, 2]},
    {"id": 2, "i": None, "s": -4, "f": None, "d": None, "m": Decimal("-0.01"), "arr": None},
]
NEW_ROWS = [
    {
        "id": 3,
        "i": 2**40,
        "s": 0.25,
        "f": 1e300,
        "d": dt.datetime(2025, 3, 4, 5, 6, 7),
        "m": Decimal("123456.7891"),
        "arr": [2**33],
    },
]


def expected_rows() -> list[dict[str, Any]]:
    """Every row as the widened table gives it (old values converted)."""
    out = []
    for r in OLD_ROWS:
        out.append(
            {
                **r,
                "s": float(r["s"]),
                "d": None if r["d"] is None else dt.datetime.combine(r["d"], dt.time()),
                "m": r["m"].quantize(Decimal("0.0001")),
            }
        )
    return out + [dict(r) for r in NEW_ROWS]


def write_file(log: DeltaLog, rows: list[dict[str, Any]], schema: pa.Schema) -> AddFile:
    table = pa.Table.from_pylist(rows, schema=schema)
    name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    path = log.store.fs_path(f"{log.table_uri}/{name}")
    fs = log.store.filesystem()
    with fs.open_output_stream(path) as out:
        pq.write_table(table, out)
    stats = StatsCollector(schema)
    stats.update(table)
    return AddFile(name, {}, int(fs.get_file_info(path).size or 0), 1, True, stats.to_json())


def create(uri: str, enable: bool = True) -> DeltaLog:
    log = DeltaLog.for_table(uri)
    txn = log.start_transaction()
    # as Delta's TypeWideningTestMixin: timestampNtz supported, which date -> timestamp_ntz needs
    config = {"delta.enableTypeWidening": "true", "delta.feature.timestampNtz": "supported"} if enable else {}
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(SCHEMA), configuration=config))
    txn.commit([], CreateTable(properties=config))
    return log


def build(uri: str) -> DeltaLog:
    """Create, append the old rows, widen every column of :data:`WIDENINGS`, append new rows."""
    log = create(uri)
    log.start_transaction().commit([write_file(log, OLD_ROWS, OLD_ARROW)], Write())
    for column, new_type in WIDENINGS.items():
        alter_column_type(log, column, new_type)
    log.start_transaction().commit([write_file(log, NEW_ROWS, NEW_ARROW)], Write())
    return log
