"""``writeStream.format("deltalog")``: the streaming sink (Delta's ``DeltaSink``)."""

from __future__ import annotations

import pytest

from deltalog.contrib.spark.errors import InvalidWriteOptionError, SchemaMismatchError
from tests.spark.helpers import operations

pytestmark = pytest.mark.spark


def test_complete_mode_overwrite_schema(spark, table_path, tmp_path):
    """Complete mode replaces the table's rows each batch; with ``overwriteSchema`` it also
    replaces its schema (Delta's sink: ``canOverwriteSchema`` in complete mode only); a batch
    of another schema is refused otherwise, and a stream never takes ``replaceWhere``."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.source import DeltaLogDataSource

    source = str(tmp_path / "source")
    spark.createDataFrame([(i, i % 2) for i in range(4)], "id long, p long").write.format("deltalog").mode(
        "append"
    ).save(source)
    spark.createDataFrame([(0, 2)], "p long, count long").write.format("deltalog").mode("append").save(table_path)
    tops = spark.readStream.format("deltalog").load(source).groupBy("p").agg(F.max("id").alias("top"))
    for complete, options in ((True, {}), (False, {"overwriteSchema": "true"})):
        sink = DeltaLogDataSource({"path": table_path, "queryId": "q", **options})
        with pytest.raises(SchemaMismatchError, match="top"):
            sink.streamWriter(tops.schema, complete)
    query = (
        tops.writeStream.format("deltalog")
        .outputMode("complete")
        .option("overwriteSchema", "true")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start(table_path)
    )
    query.awaitTermination()
    table = spark.read.format("deltalog").load(table_path)
    assert table.columns == ["p", "top"] and sorted(tuple(r) for r in table.collect()) == [(0, 2), (1, 3)]
    assert operations(table_path) == ["WRITE", "STREAMING UPDATE"]
    sink = DeltaLogDataSource({"path": table_path, "queryId": "q", "replaceWhere": "p = 0"})
    with pytest.raises(InvalidWriteOptionError, match="replaceWhere"):
        sink.streamWriter(table.schema, True)
