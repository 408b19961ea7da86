"""Collated string columns (Delta's ``collations`` writer feature): Spark sees each
column's collation on every read path and compares by it, and deltalog's own file
skipping never uses binary statistics or partition values for a collated comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark import DeltaTable, read_table
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Protocol

_LCASE = {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}


def _delta_written_table(path: Path, mapped: bool = False, feature: str = "collations") -> None:
    """A table as Delta (Databricks) writes one: ``name`` and the partition column ``p``
    collated ``UTF8_LCASE``, binary statistics, ``collations`` among the writer features
    only, the change data feed on (``mapped``: with column mapping by name). File 1's binary bounds ``["ABC", "BCD"]``
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
    features = ["domainMetadata", feature, "changeDataFeed", *(["columnMapping"] if mapped else [])]
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
    # Spark compares by the schema's collation; the change feed reads files its own way
    assert _ids(frames["changes"].where("name = 'ABC' or p = 'Y'")) == [0, 10, 20, 21]
    assert _ids(read_table(spark, path, where="name = 'abc'", native=False)) == [0, 10]
    assert _ids(read_table(spark, path, where="p = 'x' and name in ('BCD', 'zZ')")) == [11]
    assert _ids(read_table(spark, mapped, where="name > 'b'")) == [11, 20, 21]


def test_collated_columns_are_written_as_delta_writes_them(spark: Any, tmp_path: Path) -> None:
    """The ``collations`` writer feature (with ``domainMetadata``, reader version 1) comes
    with the first collated column; the schema keeps each collation (none for the default),
    statistics are binary (the RFC allows it); delta-rs reads the rows; ``replaceWhere`` on a
    collated column is refused. DML conditions and MERGE's target pruning compare by the
    collation; a preview table keeps its feature."""
    import deltalake
    from pyspark.sql.types import ArrayType, IntegerType, StringType, StructField, StructType

    path = str(tmp_path / "w")
    lcase = StringType("UTF8_LCASE")
    schema = StructType(
        [
            StructField("id", IntegerType()),
            StructField("name", lcase),
            StructField("u", StringType("UNICODE_CI")),
            StructField("tags", ArrayType(lcase)),
        ]
    )
    rows = [(1, "abc", "x", ["A"]), (2, "ABC", "X", ["b"]), (3, "b", "y", [])]
    spark.createDataFrame(rows, schema).coalesce(1).write.format("deltalog").mode("append").save(path)
    snapshot = DeltaLog.for_table(path).update()
    # Databricks' protocol: {"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":
    # ["domainMetadata","collations","appendOnly","invariants"]}
    assert snapshot.protocol == Protocol(1, 7, None, ("appendOnly", "collations", "domainMetadata", "invariants"))
    assert {f["name"]: f["metadata"] for f in json.loads(snapshot.metadata.schema_string)["fields"]} == {
        "id": {},
        "name": _LCASE,
        "u": {"__COLLATIONS": {"u": "icu.UNICODE_CI"}},
        "tags": {"__COLLATIONS": {"tags.element": "spark.UTF8_LCASE"}},
    }
    stats = json.loads(snapshot.files[0].stats or "{}")
    assert (stats["minValues"]["name"], stats["maxValues"]["name"]) == ("ABC", "b")
    plain = spark.createDataFrame([(4, "D", "z", None)], "id int, name string, u string, tags array<string>")
    plain.write.format("deltalog").mode("append").save(path)
    assert DeltaLog.for_table(path).update().metadata.schema_string == snapshot.metadata.schema_string
    with pytest.raises(Exception, match=r"InvalidWriteOptionError.*collated column"):  # it would compare binary
        plain.write.format("deltalog").mode("overwrite").option("replaceWhere", "id > 3 and u = 'Z'").save(path)
    by_rs = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["name"]) for r in by_rs) == [(1, "abc"), (2, "ABC"), (3, "b"), (4, "D")]

    built = str(tmp_path / "b")
    DeltaTable.create(spark).location(built).addColumn("id", "int").addColumn("name", lcase).execute()
    assert json.loads(DeltaLog.for_table(built).update().metadata.schema_string)["fields"][1] == {
        "name": "name",
        "type": "string",
        "nullable": True,
        "metadata": _LCASE,
    }

    table_path = tmp_path / "t"
    _delta_written_table(table_path, feature="collations-preview")
    table = DeltaTable.forPath(spark, str(table_path))
    table.delete("p = 'X'")  # partitions 'x' and 'X'
    source = spark.createDataFrame([("ZZ",)], StructType([StructField("name", lcase)]))
    # file 2's binary bounds ["Zed", "zz"] leave 'ZZ' out
    table.alias("t").merge(source.alias("s"), "t.name = s.name").whenMatchedDelete().execute()
    assert _ids(read_table(spark, str(table_path))) == [20]
    protocol = DeltaLog.for_table(str(table_path)).update().protocol
    assert protocol.writer_features == ("domainMetadata", "collations-preview", "changeDataFeed")
