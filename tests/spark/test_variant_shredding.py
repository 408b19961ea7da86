"""Shredded variant columns (``variantShredding``): written by Spark's own Parquet writer
(Delta's way, on tables with ``delta.enableVariantShredding``), read back exactly through
the Python data source, ``read_table`` and OPTIMIZE; refused where Delta refuses them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark import DeltaTable, read_table
from deltalog.contrib.spark.errors import VariantShreddingDisabledError
from deltalog.txn.commands.optimize import optimize
from deltalog.txn.delta_log import DeltaLog

pytestmark = pytest.mark.spark

_FORCE = "spark.sql.variant.forceShreddingSchemaForTest"
#: objects with shredded and residual fields, nested arrays and objects, variant null vs SQL
#: NULL, decimals, dates, timestamps, strings (short and long), binary
_ROWS = """
select id, case
  when id = 1 then to_variant_object(named_struct('a', 1, 's', 'x', 'arr', array(1, 2), 'extra', 'residual'))
  when id = 2 then to_variant_object(named_struct('a', 'not an int', 's', repeat('y', 70), 'arr', array(3, null),
    'n', 1.25bd, 'd', date'2024-02-29', 't', timestamp'2024-01-01 10:00:00.123456'))
  when id = 3 then parse_json('null')
  when id = 4 then null
  when id = 5 then parse_json('[1, {"a": 2}, [3, [4]]]')
  when id = 6 then to_variant_object(named_struct('o', named_struct('x', 7, 'y', 'z'), 'bin', X'00FF', 'a', 2147483647))
  else parse_json('{"arr": "not an array", "s": null, "big": 12345678901234567890.5}')
end v from range(1, 8) t(id)
"""
#: the same values nested in a struct (shredded inside it)
_NESTED = f"select id, v, named_struct('w', v) s from ({_ROWS})"
_SCHEMA = "struct<a: int, s: string, arr: array<bigint>, n: decimal(10,2), d: date, t: timestamp, o: struct<x: int>>"


@contextmanager
def _forced_shredding(spark: Any) -> Iterator[None]:
    """Spark's Parquet writer shreds every variant with :data:`_SCHEMA` meanwhile."""
    spark.conf.set(_FORCE, _SCHEMA)
    try:
        yield
    finally:
        spark.conf.unset(_FORCE)


def _json(df: Any) -> dict[int, Any]:
    """Each row's variant as JSON, which renders every type (decimal scale, dates, base64 binary)."""
    return {r.id: None if r.v is None else r.v.toJson() for r in df.collect()}


def test_shredded_variants_are_read_exactly_and_written_as_delta_does(spark: Any, tmp_path: Any) -> None:
    rows = spark.sql(_NESTED)
    expected = _json(rows)
    path = str(tmp_path / "shredded")
    rows.write.format("deltalog").mode("append").option("delta.enableVariantShredding", "true").save(path)
    protocol = DeltaLog.for_table(path).update().protocol
    assert "variantShredding-preview" in (protocol.reader_features or ())
    assert "variantType" in (protocol.writer_features or ())
    # Spark's writer shreds the rewritten rows (forced schema: every row's file is shredded)
    with _forced_shredding(spark):
        DeltaTable.forPath(spark, path).update("id > 0", {"id": "id + 10"})
    files = [os.path.join(path, f.path) for f in DeltaLog.for_table(path).update().files]
    assert all("typed_value" in pq.read_schema(f).field("v").type.names for f in files)  # type: ignore[attr-defined]
    # Spark's reader rebuilds the metadata too (its dictionary in another order), so the
    # values compare as JSON, which renders every type (decimal scale, dates, base64 binary)
    spark_own = _json(spark.read.schema("id long, v variant").parquet(*files))
    assert spark_own == {k + 10: v for k, v in expected.items()}
    assert _json(read_table(spark, path)) == spark_own  # natively (Spark 4.1+ reads shredded variants)
    # DML rewriting shredded rows into shredded files, then OPTIMIZE reading those
    # (unshredded output), keep every value
    with _forced_shredding(spark):
        DeltaTable.forPath(spark, path).update("id % 2 = 0", {"id": "id + 10"})
    moved = {k + 10 if k % 2 == 0 else k: v for k, v in spark_own.items()}
    rewritten = {os.path.join(path, f.path) for f in DeltaLog.for_table(path).update().files} - set(files)
    assert rewritten and all("typed_value" in pq.read_schema(f).field("v").type.names for f in rewritten)  # type: ignore[attr-defined]
    optimize(DeltaLog.for_table(path), min_files_per_bin=1)
    final = spark.read.format("deltalog").load(path).collect()
    assert {r.id: None if r.v is None else r.v.toJson() for r in final} == moved
    assert {r.id: None if r.s.w is None else r.s.w.toJson() for r in final} == moved


def test_shredding_follows_the_table_property(spark: Any, tmp_path: Any) -> None:
    """Spark 4.3 shreds variants by default: Delta writes them unshredded unless the table
    sets delta.enableVariantShredding, and refuses a forced shredding schema there."""
    path = str(tmp_path / "plain")
    spark.sql(_ROWS).write.format("deltalog").mode("append").save(path)
    assert "variantShredding-preview" not in (DeltaLog.for_table(path).update().protocol.reader_features or ())
    table = DeltaTable.forPath(spark, path)
    table.update("id = 1", {"id": "11"})
    log = DeltaLog.for_table(path)
    files = [os.path.join(path, f.path) for f in log.update().files]
    assert not any("typed_value" in pq.read_schema(f).field("v").type.names for f in files)  # type: ignore[attr-defined]
    version = log.update().version
    with _forced_shredding(spark), pytest.raises(VariantShreddingDisabledError, match="SHREDDING_TABLE_PROPERTY"):
        table.update("id = 2", {"id": "12"})
    assert log.update().version == version
    assert sorted(_json(spark.read.format("deltalog").load(path))) == [2, 3, 4, 5, 6, 7, 11]


#: uniform objects, which Spark's writer shreds with the schema it infers
_UNIFORM = """select id, parse_json('{"a": ' || id || ', "b": "s' || id || '"}') v from range(100, 106) t(id)"""


def _shapes(select: str) -> str:
    """The variants of ``select`` at the top level, in a struct, an array and a map."""
    return f"select id, v, named_struct('w', v) s, array(v) a, map('k', v) m from ({select})"


def _variants(df: Any, raw: bool = False) -> dict[int, Any]:
    """Each row's variants as JSON (with ``raw``, as their value and metadata binaries)."""

    def one(x: Any) -> Any:
        return None if x is None else (bytes(x.value), bytes(x.metadata)) if raw else x.toJson()

    return {
        r.id: (one(r.v), one(r.s.w), [one(e) for e in r.a], {k: one(e) for k, e in r.m.items()}) for r in df.collect()
    }


def _stats(path: str) -> list[dict[str, Any]]:
    """Each file's minValues and nullCount, keyed by logical names (column mapping)."""
    snapshot = DeltaLog.for_table(path).update()

    def logical(stats: dict[str, Any], fields: list[dict[str, Any]]) -> dict[str, Any]:
        by_physical = {f["metadata"]["delta.columnMapping.physicalName"]: f for f in fields}
        return {
            by_physical[c]["name"]: logical(v, by_physical[c]["type"]["fields"]) if isinstance(v, dict) else v
            for c, v in stats.items()
        }

    fields = json.loads(snapshot.metadata.schema_string)["fields"]
    stats = [json.loads(f.stats or "{}") for f in snapshot.files]
    return [{k: logical(s.get(k) or {}, fields) for k in ("minValues", "nullCount")} for s in stats]


def test_variant_tables_are_read_natively_with_null_counts_as_delta_writes_them(spark: Any, tmp_path: Any) -> None:
    """Spark 4.1+'s Parquet reader reads variant columns, shredded ones too: ``read_table``
    scans the Python writer's files, Spark's shredded ones, deletion vectors, column mapping
    and an older version natively, with the Python data source's values. Every writer
    records a variant's null count (no bounds), as Delta does, and ``IS NULL`` skips by it."""
    path = str(tmp_path / "t")
    config = {
        "delta.enableVariantShredding": "true",
        "delta.enableDeletionVectors": "true",
        "delta.columnMapping.mode": "name",
    }
    # the Python writer, SQL NULL variants inside the struct, the array and the map
    spark.sql(_shapes(_ROWS)).write.format("deltalog").mode("append").options(**config).save(path)
    spark.sql(_shapes(_UNIFORM)).write.format("deltalog").mode("append").save(path)
    table = DeltaTable.forPath(spark, path)
    table.update("id >= 100", {"id": "id + 100"})  # Spark's writer, shredding v and s.w
    table.delete("id = 2 or id = 203")
    snapshot = DeltaLog.for_table(path).update()
    assert any("typed_value" in str(pq.read_schema(os.path.join(path, f.path))) for f in snapshot.files)
    assert sum(f.deletion_vector is not None for f in snapshot.files) == 2
    assert not any("v" in s["minValues"] or "s" in s["minValues"] for s in _stats(path))
    counts = sorted((s["nullCount"]["v"], s["nullCount"]["s"]["w"]) for s in _stats(path))
    assert counts == [(0, 0)] * (len(counts) - 1) + [(1, 1)]  # Spark's files, then the Python writer's
    for options in ({}, {"versionAsOf": 1}):
        native = read_table(spark, path, **options)
        assert "FileScan parquet" in native._jdf.queryExecution().executedPlan().toString()
        python = read_table(spark, path, native=False, **options)
        assert _variants(native) == _variants(python)
        if options:  # no shredded file: the very binaries
            assert _variants(native, raw=True) == _variants(python, raw=True)
    for where, ids, files in (("v is null", [4], 1), ("s.w is null", [4], 1), ("v is not null", None, len(counts))):
        df = read_table(spark, path, where=where)
        assert len(df.inputFiles()) == files, where
        assert ids is None or sorted(r.id for r in df.collect()) == ids
    optimize(DeltaLog.for_table(path), min_files_per_bin=1)
    assert [(s["nullCount"]["v"], s["nullCount"]["s"]["w"], s["minValues"].get("v")) for s in _stats(path)] == [
        (1, 1, None)
    ]


def test_variant_tables_through_the_table_api_as_delta_variant_suite(spark: Any, tmp_path: Any) -> None:
    """DeltaVariantSuite through deltalog's table API: a new variant table's protocol, a
    variant refused as a partition, clustering or Z-order column with Delta's errors before
    anything is committed, a CHECK constraint on ``variant_get`` whose violation shows the
    variant as Delta does, and CONVERT TO DELTA of the (shredded) Parquet Spark writes."""
    from deltalog.contrib.spark import write_table
    from deltalog.errors import ClusteringColumnsError, ConstraintViolationError, InvalidMetadataError, OptimizeError

    path = str(tmp_path / "t")
    for refused, error, message in (
        (
            "partitionedBy",
            InvalidMetadataError,
            "DELTA_INVALID_PARTITION_COLUMN_TYPE: Using column 'v' of type variant",
        ),
        ("clusterBy", ClusteringColumnsError, "DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED"),
    ):
        builder = DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").addColumn("v", "VARIANT")
        with pytest.raises(error, match=message):
            getattr(builder, refused)("v").execute()
        assert not os.path.exists(os.path.join(path, "_delta_log"))
    table = DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").addColumn("v", "VARIANT").execute()
    protocol = DeltaLog.for_table(path).update().protocol
    assert (protocol.reader_features, protocol.writer_features) == (
        ("variantType",),
        ("appendOnly", "invariants", "variantType"),
    )
    table.setProperties({"delta.constraints.variantGTEZero": "variant_get(v, '$', 'INT') >= 0"})
    # checked with Spark SQL (outside the Python tasks' SQL subset), as Delta checks it in its write
    write_table(spark.sql("select id, parse_json(cast(id as string)) v from range(3)"), path)
    with pytest.raises(ConstraintViolationError, match=r"violated by row with values:\n - id : -1\n - v : -1\n"):
        write_table(spark.sql("select -1L id, parse_json('-1') v"), path)
    with pytest.raises(OptimizeError, match=r'"rangepartitionid\(v\)" .* cannot sort data type variant'):
        table.optimize().executeZOrderBy("v")
    assert DeltaLog.for_table(path).update().version == 2
    # Spark 4.3's Parquet writer shreds variants: CONVERT reads them as variants from the footer
    parquet = str(tmp_path / "parquet")
    spark.sql("select parse_json(cast(id as string)) v, named_struct('w', parse_json('[1]')) s from range(4)").coalesce(
        1
    ).write.parquet(parquet)
    DeltaTable.convertToDelta(spark, f"parquet.`{parquet}`")
    converted = DeltaLog.for_table(parquet).update()
    assert '"type":"variant"' in converted.metadata.schema_string and "variantType" in (
        converted.protocol.reader_features or ()
    )
    assert json.loads(converted.files[0].stats or "{}")["nullCount"] == {"v": 0, "s": {"w": 0}}
    rows = read_table(spark, parquet).selectExpr("v::int i", "to_json(s.w) w").collect()
    assert sorted((r.i, r.w) for r in rows) == [(i, "[1]") for i in range(4)]
