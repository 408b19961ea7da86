"""Shredded variant columns (``variantShredding``): written by Spark's own Parquet writer
(Delta's way, on tables with ``delta.enableVariantShredding``), read back exactly through
the Python data source, ``read_table`` and OPTIMIZE; refused where Delta refuses them."""

from __future__ import annotations

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
    assert _json(read_table(spark, path)) == spark_own  # falls back to the Python data source
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
