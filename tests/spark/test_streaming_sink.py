"""``writeStream.format("deltalog")``: the streaming sink (Delta's ``DeltaSink``)."""

from __future__ import annotations

import pytest

from deltalog.contrib.spark.errors import InvalidWriteOptionError, SchemaMismatchError
from tests.spark.helpers import commits, operations

pytestmark = pytest.mark.spark


def _stream_once(spark, rows, table_path, tmp_path, **options):
    """Write ``rows`` as Parquet files and stream them once (``availableNow``) into the table
    at ``table_path`` with the sink's ``options``."""
    incoming = str(tmp_path / "incoming")
    rows.write.parquet(incoming)
    writer = spark.readStream.schema(rows.schema).parquet(incoming).writeStream.format("deltalog")
    for key, value in {"checkpointLocation": str(tmp_path / "ck"), **options}.items():
        writer = writer.option(key, value)
    writer.trigger(availableNow=True).start(table_path).awaitTermination()


def test_complete_mode_overwrite_schema(spark, table_path, tmp_path):
    """Complete mode replaces the table's rows each batch; with ``overwriteSchema`` it also
    replaces its schema (Delta's sink: ``canOverwriteSchema`` in complete mode only); a batch
    of another schema is refused otherwise, and a stream never takes ``replaceWhere`` or
    ``tableCreationMode``."""
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
    sink = DeltaLogDataSource({"path": table_path, "queryId": "q", "tableCreationMode": "createOrReplace"})
    with pytest.raises(InvalidWriteOptionError, match="tableCreationMode does not apply to a streaming write"):
        sink.streamWriter(table.schema, False)


def test_stream_casts_batch_to_table_types(spark, table_path, tmp_path):
    """As Delta's sink (``getWriteSchema`` with implicit conversions, ``castDataIfNeeded``):
    a batch's columns land with the table's types, struct fields cast by name; a value that
    does not fit fails the batch (ANSI cast) and commits nothing; a cast Spark does not make
    implicitly is refused when the query starts. A batch append still refuses other types."""
    import datetime as dt

    from pyspark.errors import StreamingQueryException

    from deltalog.contrib.spark.source import DeltaLogDataSource

    table_schema = "a long, f double, n int, t timestamp, s struct<x: long, y: string>"
    spark.createDataFrame([], table_schema).write.format("deltalog").mode("append").save(table_path)
    batch_schema = "a int, f float, n long, t date, s struct<y: string, x: int>"

    def stream(name, data):
        incoming = str(tmp_path / name)
        spark.createDataFrame(data, batch_schema).write.parquet(incoming)
        return (
            spark.readStream.schema(batch_schema)
            .parquet(incoming)
            .writeStream.format("deltalog")
            .option("checkpointLocation", str(tmp_path / f"ck-{name}"))
            .trigger(availableNow=True)
            .start(table_path)
        )

    day = dt.date(2024, 7, 25)
    stream("fits", [(1, 0.5, 2**31 - 1, day, ("y", 3)), (None, None, None, None, None)]).awaitTermination()
    table = spark.read.format("deltalog").load(table_path)
    assert [f.dataType.simpleString() for f in table.schema.fields] == [
        "bigint",
        "double",
        "int",
        "timestamp",
        "struct<x:bigint,y:string>",
    ]
    assert sorted(table.collect(), key=lambda r: r.a is None) == [
        (1, 0.5, 2**31 - 1, dt.datetime(2024, 7, 25), (3, "y")),
        (None, None, None, None, None),
    ]
    assert operations(table_path) == ["WRITE", "STREAMING UPDATE"]

    query = stream("overflow", [(2, 1.5, 2**31, day, None)])
    with pytest.raises(StreamingQueryException, match="CAST_OVERFLOW_IN_TABLE_INSERT"):
        query.awaitTermination()
    assert operations(table_path) == ["WRITE", "STREAMING UPDATE"]

    for refused in ("a boolean", "s array<int>", "a string"):
        sink = DeltaLogDataSource({"path": table_path, "queryId": "q"})
        with pytest.raises(SchemaMismatchError, match=refused.split()[0]):
            sink.streamWriter(spark.createDataFrame([], refused).schema, False)
    with pytest.raises(SchemaMismatchError):
        DeltaLogDataSource({"path": table_path}).writer(spark.createDataFrame([], "a int").schema, False)


def test_stream_casts_integers_into_a_narrower_decimal(spark, table_path, tmp_path):
    """Delta's ``DeltaSinkImplicitCastSuite`` "implicit cast with schema evolution": a ``long``
    column streamed into a ``decimal(6,3)`` one is cast value by value (678 is 678.000), with
    ``mergeSchema`` adding the new column; a value the decimal cannot hold overflows."""
    import decimal

    import pyarrow as pa

    from deltalog.contrib.spark.errors import CastOverflowError
    from deltalog.contrib.spark.sink_cast import SinkCasts, cast_columns

    spark.createDataFrame([], "a decimal(6,3)").write.format("deltalog").mode("append").save(table_path)
    rows = spark.createDataFrame([(678, "abc"), (None, None)], "a long, b string")
    _stream_once(spark, rows, table_path, tmp_path, mergeSchema="true")
    table = spark.read.format("deltalog").load(table_path)
    assert table.schema.simpleString() == "struct<a:decimal(6,3),b:string>"
    assert sorted(table.collect(), key=lambda r: r.a is None) == [(decimal.Decimal("678.000"), "abc"), (None, None)]
    casts = SinkCasts((("a", '"integer"', '"decimal(6,3)"'),))
    with pytest.raises(CastOverflowError, match="decimal"):
        cast_columns(pa.table({"a": pa.array([1000], pa.int32())}), casts)
    # DeltaSinkImplicitCastSuite "write wider type - Decimal(10, 4) -> Decimal(6, 2)": rounded half
    # up as Spark's (Java's HALF_UP: a tie away from zero, also below zero)
    ties = pa.table({"a": pa.array([decimal.Decimal("-1.125"), decimal.Decimal("98.7654")], pa.decimal128(10, 4))})
    rounded = cast_columns(ties, SinkCasts((("a", '"decimal(10,4)"', '"decimal(6,2)"'),)))
    assert rounded.column("a").to_pylist() == [decimal.Decimal("-1.13"), decimal.Decimal("98.77")]


def test_stream_refuses_null_type_columns(spark, table_path, tmp_path):
    """Delta's ``DeltaSinkSuite`` "DeltaSink rejects streaming write with NullType column in
    batch schema" (and in a new table, at any depth) and "... to table with generated void
    column": ``DELTA_NULL_SCHEMA_IN_STREAMING_WRITE`` when the query starts, nothing written; a
    table's stored void column that is not generated takes nulls."""
    from deltalog.contrib.spark.errors import StreamWriteNullTypeError
    from deltalog.contrib.spark.source import DeltaLogDataSource

    def refused(path, schema):
        sink = DeltaLogDataSource({"path": path, "queryId": "q"})
        with pytest.raises(StreamWriteNullTypeError, match="DELTA_NULL_SCHEMA_IN_STREAMING_WRITE"):
            sink.streamWriter(spark.createDataFrame([], schema).schema, False)

    for schema in ("id int, v void", "id int, s struct<x: array<void>>"):
        refused(str(tmp_path / "new"), schema)
    assert not (tmp_path / "new").exists()
    spark.createDataFrame([], "id int, value int").write.format("deltalog").mode("append").save(table_path)
    refused(table_path, "id int, value void")
    from deltalog.contrib.spark import DeltaTable

    generated = str(tmp_path / "generated")
    DeltaTable.create(spark).location(generated).addColumn("id", "int").addColumn(
        "v", "void", generatedAlwaysAs="null"
    ).execute()
    refused(generated, "id int")


def test_stream_schema_evolution_commits_the_physical_names_written(spark, table_path, tmp_path):
    """Delta's ``DeltaSinkNameColumnMappingSuite`` "allow schema evolution after dropping
    column" (mergeSchema): under column mapping, a column added by a micro-batch (here again
    under a dropped column's name) is committed with the physical name its files were written
    with, so its values read back; the dropped column's old values stay unreadable."""
    from deltalog.contrib.spark import DeltaTable

    spark.createDataFrame([(1, 100)], "id int, value int").write.format("deltalog").mode("append").option(
        "delta.columnMapping.mode", "name"
    ).save(table_path)
    DeltaTable.forPath(spark, table_path).dropColumn("value")
    _stream_once(
        spark, spark.createDataFrame([(3, 300)], "id int, value int"), table_path, tmp_path, mergeSchema="true"
    )
    table = spark.read.format("deltalog").load(table_path)
    assert table.columns == ["id", "value"]
    assert sorted(map(tuple, table.collect())) == [(1, None), (3, 300)]
    assert operations(table_path)[-1] == "STREAMING UPDATE"


def test_stream_ignores_txn_options(spark, table_path, tmp_path):
    """Delta's ``DeltaSink`` records ``txn(queryId, batchId)`` whatever ``txnAppId`` /
    ``txnVersion`` say (they are ``WriteIntoDelta``'s): a stream given the ones a batch write
    already committed still commits its batch, under its own query id."""
    rows = spark.createDataFrame([(1,)], "value int")
    rows.write.format("deltalog").mode("append").option("txnAppId", "app").option("txnVersion", 5).save(table_path)
    incoming = spark.createDataFrame([(2,)], "value int")
    _stream_once(spark, incoming, table_path, tmp_path, queryId="q", txnAppId="app", txnVersion=5)
    assert sorted(r.value for r in spark.read.format("deltalog").load(table_path).collect()) == [1, 2]
    assert [a["txn"]["appId"] for a in commits(table_path)[-1] if "txn" in a] == ["q"]


def test_append_mode_commits_once_per_batch(spark, table_path, tmp_path):
    """Delta's ``DeltaSinkSuite`` "append mode", "SPARK-21167: encode and decode path
    correctly", "partitioned writing and batch reading" and "history includes user-defined
    metadata": each batch is one blind-append ``STREAMING UPDATE`` with ``txn(queryId,
    batchId)`` and ``operationParameters`` outputMode/queryId/epochId; a query restarted from
    its checkpoint writes only the new data; a partition value with a space round-trips."""
    import json

    incoming, ck = str(tmp_path / "incoming"), str(tmp_path / "ck")

    def run(value, options):
        spark.createDataFrame([(value, len(value))], "value string, len int").write.mode("append").parquet(incoming)
        spark.readStream.schema("value string, len int").parquet(incoming).writeStream.format("deltalog").option(
            "checkpointLocation", ck
        ).option("partitionBy", "value").options(**options).trigger(availableNow=True).start(
            table_path
        ).awaitTermination()

    run("hello world", {"userMetadata": "testMeta!"})
    # the session's userMetadata, when the stream starts (register() forwards it)
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "testMeta!")
    try:
        run("b", {})
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    with open(tmp_path / "ck" / "metadata", encoding="utf-8") as f:
        query_id = json.loads(f.readline())["id"]
    table = spark.read.format("deltalog").load(table_path)
    assert sorted(map(tuple, table.collect())) == [("b", 1), ("hello world", 11)]
    assert table.filter("value = 'hello world'").count() == 1
    for epoch, commit in enumerate(commits(table_path)):
        info = next(a["commitInfo"] for a in commit if "commitInfo" in a)
        assert info["operation"] == "STREAMING UPDATE" and info["isBlindAppend"] is True
        assert info["operationParameters"] == {"outputMode": "Append", "queryId": query_id, "epochId": str(epoch)}
        assert info["userMetadata"] == "testMeta!"
        assert [(a["txn"]["appId"], a["txn"]["version"]) for a in commit if "txn" in a] == [(query_id, epoch)]
    first_add = next(a["add"] for a in commits(table_path)[0] if "add" in a)
    assert first_add["path"].startswith("value=hello%20world/")
    assert first_add["partitionValues"] == {"value": "hello world"}


def test_stream_generates_identity_values_batch_after_batch(spark, table_path, tmp_path):
    """Delta's IdentityColumnIngestionSuite "streaming": a stream into a table with a
    ``GENERATED ALWAYS AS IDENTITY`` column generates distinct values in every micro-batch,
    past the high-water mark each batch moves."""
    from deltalog.contrib.spark import DeltaTable, register
    from deltalog.contrib.spark.table_builder import IdentityGenerator
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.identity import identity_columns

    register(spark)
    table = DeltaTable.create(spark).location(table_path)
    table.addColumn("id", "long", generatedAlwaysAs=IdentityGenerator(start=1, step=3)).addColumn("x", "long").execute()
    incoming = str(tmp_path / "incoming")

    for xs in ([1, 2], [3]):
        spark.createDataFrame([(x,) for x in xs], "x long").coalesce(1).write.mode("append").parquet(incoming)
    spark.readStream.schema("x long").option("maxFilesPerTrigger", 1).parquet(incoming).writeStream.format(
        "deltalog"
    ).option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(table_path).awaitTermination()
    rows = spark.read.format("deltalog").load(table_path).collect()
    ids = sorted(r.id for r in rows)
    assert sorted(r.x for r in rows) == [1, 2, 3] and len(set(ids)) == 3
    assert all((i - 1) % 3 == 0 for i in ids)
    assert identity_columns(DeltaLog.for_table(table_path).update().metadata)[0].high_water_mark == max(ids)
    assert [op for op in operations(table_path)][1:] == ["STREAMING UPDATE"] * 2


def test_stream_casts_a_date_to_midnight_in_the_session_time_zone(spark, table_path):
    """DeltaSinkImplicitCastSuite "implicit cast and missing column": a ``date`` streamed into a
    ``timestamp`` column (at any depth) is midnight of the session time zone, as Spark's cast of
    a date; the stream takes ``spark.sql.session.timeZone`` when it starts. So are Spark's
    implicit casts between ``timestamp`` and ``timestamp_ntz`` (a wall clock of that zone)."""
    import datetime as dt

    import pyarrow as pa
    from pyspark.sql.types import _parse_datatype_string

    from deltalog.contrib.spark.sink_cast import cast_columns
    from deltalog.contrib.spark.source import DeltaLogDataSource

    table = spark.createDataFrame([], "t timestamp, s struct<t: timestamp>, n timestamp_ntz, u timestamp")
    table.write.format("deltalog").mode("append").save(table_path)
    written = _parse_datatype_string("t date, s struct<t: date>, n timestamp, u timestamp_ntz")
    options = {"path": table_path, "queryId": "q", "spark.sql.session.timeZone": "America/Los_Angeles"}
    spec = DeltaLogDataSource(options).streamWriter(written, False).plan.spec
    day, zone = dt.date(2024, 7, 29), "America/Los_Angeles"
    midnight = dt.datetime(2024, 7, 29, 7, tzinfo=dt.timezone.utc)
    data = pa.table(
        {
            "t": pa.array([day, None]),
            "s": pa.array([{"t": day}, None], pa.struct([("t", pa.date32())])),
            "n": pa.array([midnight, None], pa.timestamp("us", tz=zone)),  # Spark's Arrow data: the session zone
            "u": pa.array([dt.datetime(2024, 7, 29), None], pa.timestamp("us")),
        }
    )
    assert cast_columns(data, spec.casts).to_pylist() == [
        {"t": midnight, "s": {"t": midnight}, "n": dt.datetime(2024, 7, 29), "u": midnight},
        {"t": None, "s": None, "n": None, "u": None},
    ]


def test_stream_casts_by_the_session_store_assignment_policy(spark, table_path):
    """DeltaSinkImplicitCastSuite "write wider type - long -> int - overflow with
    storeAssignmentPolicy=LEGACY/STRICT": the sink casts as the session's
    ``spark.sql.storeAssignmentPolicy`` says (taken when the stream starts). LEGACY does not fail
    a value that does not fit: an integer wraps (``Long.MaxValue`` is -1), a fraction saturates
    (NaN is 0), a decimal overflow is null; STRICT refuses when the query starts a cast that may
    lose data (``CANNOT_UP_CAST_DATATYPE``), at any depth, and takes one that cannot."""
    import decimal

    import pyarrow as pa
    from pyspark.sql.types import _parse_datatype_string

    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.session_writes import session_defaults
    from deltalog.contrib.spark.sink_cast import cast_columns
    from deltalog.contrib.spark.source import DeltaLogDataSource

    spark.createDataFrame([], "n int, b byte, d decimal(4,1), s struct<x: int>").write.format("deltalog").mode(
        "append"
    ).save(table_path)

    def plan(policy: str, schema: str):
        options = {"path": table_path, "queryId": "q", "spark.sql.storeAssignmentPolicy": policy}
        return DeltaLogDataSource(options).streamWriter(_parse_datatype_string(schema), False).plan.spec

    spec = plan("legacy", "n long, b double, d decimal(6,2), s struct<x: long>")
    data = pa.table(
        {
            "n": pa.array([2**63 - 1, 5], pa.int64()),
            "b": pa.array([float("nan"), 1e10]),
            "d": pa.array([decimal.Decimal("1234.56"), decimal.Decimal("1.25")], pa.decimal128(6, 2)),
            "s": pa.array([{"x": 2**32 + 1}, None], pa.struct([("x", pa.int64())])),
        }
    )
    assert cast_columns(data, spec.casts).to_pylist() == [
        {"n": -1, "b": 0, "d": None, "s": {"x": 1}},
        {"n": 5, "b": -1, "d": decimal.Decimal("1.3"), "s": None},  # 1e10 saturates to 2**31 - 1, then a byte
    ]
    for refused in ("n long", "s struct<x: long>", "d decimal(6,2)", "n double"):
        with pytest.raises(DeltaAnalysisError, match=r"^CANNOT_UP_CAST_DATATYPE: Cannot up cast "):
            plan("STRICT", refused)
    assert plan("STRICT", "n short, b byte, d decimal(3,1), s struct<x: byte>").casts
    spark.conf.set("spark.sql.storeAssignmentPolicy", "LEGACY")
    try:
        assert session_defaults(spark, {})["spark.sql.storeAssignmentPolicy"] == "LEGACY"
    finally:
        spark.conf.unset("spark.sql.storeAssignmentPolicy")


def test_sink_cast_rules_are_sparks(spark):
    """Which casts the sink makes (Delta's ``SchemaMergingUtils`` with implicit conversions:
    Spark's ``TypeCoercion.implicitCast``) and which STRICT takes (Spark's ``Cast.canUpCast``),
    asked of Spark itself for every pair of these atomic types."""
    import json

    from deltalog.contrib.spark.sink_cast import implicitly_castable
    from deltalog.contrib.spark.sink_policies import up_castable

    catalyst = spark._jvm.org.apache.spark.sql.catalyst
    coercion, literal, cast = catalyst.analysis.TypeCoercion, catalyst.expressions.Literal, catalyst.expressions.Cast
    names = ["byte", "short", "integer", "long", "float", "double", "decimal(2,0)", "decimal(10,0)", "decimal(19,0)"]
    names += ["decimal(20,0)", "decimal(6,2)", "string", "boolean", "date", "timestamp", "timestamp_ntz", "binary"]
    parsed = {n: spark._jsparkSession.parseDataType(json.dumps(n)) for n in names}
    ours, sparks = [], []
    for data in names:
        for table in (n for n in names if n != data):  # the same type is never cast
            ours.append((data, table, implicitly_castable(data, table), up_castable(data, table)))
            implicit = coercion.implicitCast(literal.default(parsed[data]), parsed[table]).isDefined()
            sparks.append((data, table, implicit, cast.canUpCast(parsed[data], parsed[table])))
    assert [o for o, s in zip(ours, sparks) if o != s] == []


def test_stream_casts_decimals_exactly_as_spark():
    """The sink casts a decimal as Spark's ``Decimal``: into a ``float``/``double`` the nearest
    value to the exact decimal (``BigDecimal.doubleValue``: 0.3 is 0.3, not 0.30000000000000004);
    rounding up into a scale that needs one more integer digit (999.99 into ``decimal(10,0)`` is
    1000, 0.999 into ``decimal(5,2)`` is 1.00) and a ``decimal(3,3)`` into an integer (0) are no
    overflow; a ``double`` of 2^63 into a ``long`` is ``Long.MaxValue``, as Spark's ANSI cast
    (its bound check compares with ``Long.MaxValue`` as a double)."""
    import decimal

    import pyarrow as pa

    from deltalog.contrib.spark.sink_cast import SinkCasts, cast_columns

    def cast(values: list[object], arrow: pa.DataType, data: str, table: str) -> list[object]:
        casts = SinkCasts((("a", f'"{data}"', f'"{table}"'),))
        return cast_columns(pa.table({"a": pa.array(values, arrow)}), casts).column("a").to_pylist()

    d = decimal.Decimal
    assert cast([d("0.30"), d("127.99")], pa.decimal128(5, 2), "decimal(5,2)", "double") == [0.3, 127.99]
    assert cast([d("0.10")], pa.decimal128(5, 2), "decimal(5,2)", "float") == [pa.scalar(0.1, pa.float32()).as_py()]
    assert cast([d("999.99"), d("-999.99")], pa.decimal128(5, 2), "decimal(5,2)", "decimal(10,0)") == [1000, -1000]
    assert cast([d("0.999"), d("-0.5")], pa.decimal128(3, 3), "decimal(3,3)", "decimal(5,2)") == [d("1.00"), d("-0.50")]
    assert cast([d("0.999"), d("-0.999")], pa.decimal128(3, 3), "decimal(3,3)", "integer") == [0, 0]
    assert cast([2.0**63, -(2.0**63)], pa.float64(), "double", "long") == [2**63 - 1, -(2**63)]
    wide = [d("127.999999999999999999"), d("-2.5")]  # more digits than a long: through a double, as Spark
    assert cast(wide, pa.decimal128(38, 18), "decimal(38,18)", "integer") == [128, -2]
    legacy = SinkCasts((("a", '"decimal(5,2)"', '"decimal(10,0)"'),), policy="LEGACY")
    data = pa.table({"a": pa.array([d("999.99")], pa.decimal128(5, 2))})
    assert cast_columns(data, legacy).column("a").to_pylist() == [1000]


def test_a_stream_takes_its_checkpoint_from_the_session_root(spark, table_path, tmp_path):
    """Spark's ``spark.sql.streaming.checkpointLocation`` is a root: a query without its own
    ``checkpointLocation`` keeps its progress in ``<root>/<queryName>``, and Delta's sink runs
    there. The sink's ``txn`` appId is that query's id, so a restart writes only new data."""
    import json

    incoming, root = str(tmp_path / "incoming"), str(tmp_path / "root")

    def run(value):
        spark.createDataFrame([(value,)], "value int").write.mode("append").parquet(incoming)
        stream = spark.readStream.schema("value int").parquet(incoming).writeStream.format("deltalog")
        stream.queryName("ingest").trigger(availableNow=True).start(table_path).awaitTermination()

    spark.conf.set("spark.sql.streaming.checkpointLocation", root)
    try:
        run(1)
        run(2)
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    with open(tmp_path / "root" / "ingest" / "metadata", encoding="utf-8") as f:
        query_id = json.loads(f.readline())["id"]
    assert sorted(r.value for r in spark.read.format("deltalog").load(table_path).collect()) == [1, 2]
    assert [a["txn"]["appId"] for c in commits(table_path) for a in c if "txn" in a] == [query_id, query_id]


def test_write_stream_partition_by_partitions_the_table_it_creates(spark, table_path, tmp_path):
    """``writeStream.partitionBy("p")`` (or ``start(partitionBy=...)``): Spark drops the columns
    for a Python data source; the driver hands them to the sink, which creates the table
    partitioned by them, as Delta's sink does."""
    incoming = str(tmp_path / "incoming")
    spark.createDataFrame([(1, "a"), (2, "b")], "value int, p string").write.parquet(incoming)
    source = spark.readStream.schema("value int, p string").parquet(incoming)
    writer = source.writeStream.format("deltalog").partitionBy("p").option("checkpointLocation", str(tmp_path / "ck"))
    writer.trigger(availableNow=True).start(table_path).awaitTermination()
    metadata = next(a["metaData"] for a in commits(table_path)[0] if "metaData" in a)
    assert metadata["partitionColumns"] == ["p"]
    assert sorted(tuple(r) for r in spark.read.format("deltalog").load(table_path).collect()) == [(1, "a"), (2, "b")]
