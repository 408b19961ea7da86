"""Collated string columns (Delta's ``collations`` writer feature): Spark sees each
column's collation on every read path and compares by it, and deltalog's own file
skipping never uses binary statistics or partition values for a collated comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.contrib.spark import read_table

_LCASE = {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}


def _delta_written_table(path: Path, mapped: bool = False) -> None:
    """A table as Delta (Databricks) writes one: ``name`` and the partition column ``p``
    collated ``UTF8_LCASE``, binary statistics, ``collations`` among the writer features
    only (``mapped``: with column mapping by name). File 1's binary bounds ``["ABC", "BCD"]``
    exclude ``'abc'`` and ``'b' < x``."""
    (path / "_delta_log").mkdir(parents=True)
    fields = [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": _LCASE},
        {"name": "p", "type": "string", "nullable": True, "metadata": {"__COLLATIONS": {"p": "spark.UTF8_LCASE"}}},
    ]
    physical = {f["name"]: f"col-{f['name']}" if mapped else f["name"] for f in fields}
    for i, f in enumerate(fields):
        if mapped:
            f["metadata"] = {**f["metadata"], "delta.columnMapping.id": i + 1}
            f["metadata"]["delta.columnMapping.physicalName"] = physical[f["name"]]
    features = ["domainMetadata", "collations", *(["columnMapping"] if mapped else [])]
    protocol = {"minReaderVersion": 2 if mapped else 1, "minWriterVersion": 7, "writerFeatures": features}
    config = {"delta.enableChangeDataFeed": "true", **({"delta.columnMapping.mode": "name"} if mapped else {})}
    metadata = {
        "id": "c",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps({"type": "struct", "fields": fields}),
        "partitionColumns": ["p"],
        "configuration": config,
        "createdTime": 0,
    }
    lines = [{"protocol": protocol}, {"metaData": metadata}]
    for i, (names, p) in enumerate([(["abc", "b"], "x"), (["ABC", "BCD"], "X"), (["Zed", "zz"], "y")]):
        ids = [i * 10, i * 10 + 1]
        data = {physical["id"]: pa.array(ids, pa.int32()), physical["name"]: pa.array(names)}
        pq.write_table(pa.table(data), path / f"f{i}.parquet")
        stats = {
            "numRecords": 2,
            "minValues": {physical["id"]: ids[0], physical["name"]: min(names)},
            "maxValues": {physical["id"]: ids[1], physical["name"]: max(names)},
            "nullCount": {physical["id"]: 0, physical["name"]: 0},
        }
        size = (path / f"f{i}.parquet").stat().st_size
        add = {"path": f"f{i}.parquet", "partitionValues": {physical["p"]: p}, "size": size, "modificationTime": 0}
        lines.append({"add": {**add, "dataChange": True, "stats": json.dumps(stats)}})
    (path / "_delta_log" / "00000000000000000000.json").write_text("\n".join(map(json.dumps, lines)) + "\n")


def _ids(df: Any) -> list[int]:
    return sorted(r.id for r in df.collect())


def test_collated_columns_read_and_compare_by_their_collation(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import StringType

    path = str(tmp_path / "t")
    _delta_written_table(tmp_path / "t")
    mapped = str(tmp_path / "m")
    _delta_written_table(tmp_path / "m", mapped=True)
    frames = {
        "mapped": read_table(spark, mapped),
        "native": read_table(spark, path),
        "python": read_table(spark, path, native=False),
        "format": spark.read.format("deltalog").load(path),
        "changes": spark.read.format("deltalog")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .load(path),
        "stream": spark.readStream.format("deltalog").load(path),
    }
    for label, df in frames.items():
        assert df.schema["name"].dataType == StringType("UTF8_LCASE"), label
        assert df.schema["p"].dataType == StringType("UTF8_LCASE"), label
    for label, df in list(frames.items())[:5]:
        assert _ids(df.where("name = 'ABC'")) == [0, 10], label
        assert _ids(df.where("name > 'b' and id < 20")) == [11], label
        assert _ids(df.where("p = 'x'")) == [0, 1, 10, 11], label
    for native in (True, False):
        for where, expected in (("name = 'abc'", [0, 10]), ("name > 'b'", [11, 20, 21]), ("p = 'x'", [0, 1, 10, 11])):
            assert _ids(read_table(spark, path, where=where, native=native)) == expected, (where, native)
        assert _ids(read_table(spark, path, where="name in ('BCD', 'zZ')", native=native)) == [11, 21]
        assert _ids(read_table(spark, mapped, where="name = 'abc'", native=native)) == [0, 10]
