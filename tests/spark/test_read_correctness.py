"""Reads never give a wrong answer: no filter leaks between the scans of a DataFrame, tasks
read the planned snapshot, column-mapped partition values, Delta's data-skipping rules
(NaN, millisecond-truncated timestamps), and the change feed of deletion-vector commits."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import pickle
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark.scan import plan_files
from deltalog.contrib.spark.source import READ_PLANS_PER_SCAN, DeltaLogDataSource
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.deletion_vectors import serialize_bitmap, z85_encode
from deltalog.txn.protocol.actions import (
    AddFile,
    DeletionVectorDescriptor,
    Metadata,
    Protocol,
    RemoveFile,
    action_to_line,
)

pytestmark = pytest.mark.spark


def _write(spark, path, rows, mode="append"):
    df = spark.createDataFrame(rows, "id long, p long")
    df.write.format("deltalog").mode(mode).option("partitionBy", "p").save(path)


def test_pushed_filters_become_delta_skipping_terms():
    """The filters Spark pushes to the Python data source, as Delta's skipping takes them:
    NOT folded into the comparison it negates, StartsWith (LIKE 'prefix%') by prefix, and
    no term for a negation Delta does not skip by (NOT IN, NOT StartsWith, NOT <=>), nor for
    a column whose name has a dot (a term's column is a path: ``s.a`` is field ``a`` of ``s``)."""
    from pyspark.sql.datasource import (
        EqualNullSafe,
        EqualTo,
        GreaterThan,
        In,
        IsNull,
        LessThanOrEqual,
        Not,
        StringStartsWith,
    )

    from deltalog.contrib.spark.source import _terms

    x = ("x",)
    filters = [
        Not(EqualTo(x, 1)),
        Not(GreaterThan(x, 2)),
        Not(Not(LessThanOrEqual(x, 3))),
        Not(IsNull(("s", "a"))),
        StringStartsWith(("s",), "ap"),
        EqualNullSafe(x, None),
        Not(In(x, (1, 2))),
        Not(StringStartsWith(("s",), "ap")),
        Not(EqualNullSafe(x, 1)),
        EqualTo(("s.a",), 1),
        GreaterThan(("s", "a.b"), 1),
    ]
    assert _terms(filters) == [
        ("x", "!=", 1),
        ("x", "<=", 2),
        ("x", "<=", 3),
        ("s.a", "notnull", None),
        ("s", "startswith", "ap"),
        ("x", "isnull", None),
    ]


def test_filters_never_leak_between_scans_of_a_dataframe(spark, table_path):
    _write(spark, table_path, [(i, i % 3) for i in range(30)])
    d = spark.read.format("deltalog").load(table_path)
    assert d.count() == 30
    assert d.where("p = 1").count() == 10
    assert d.count() == 30  # not the 10 rows the previous query's filter selected
    # a self-join: both sides scan the same data source object, with different filters
    left = d.alias("a").join(d.where("p = 2").alias("b"), "id", "left")
    assert left.count() == 30
    assert sorted(r.id for r in d.alias("a").join(d.where("p = 2").alias("b"), "id").collect()) == list(range(2, 30, 3))
    # a cached filtered DataFrame does not shrink the base DataFrame's later scans
    cached = d.where("p = 0").cache()
    try:
        assert cached.count() == 10
        assert d.count() == 30
        assert d.where("p = 1").count() == 10
    finally:
        cached.unpersist()


def test_a_dataframe_reads_the_latest_version_at_each_filtered_action(spark, table_path):
    _write(spark, table_path, [(i, i % 2) for i in range(4)])
    d = spark.read.format("deltalog").load(table_path)
    assert d.where("p = 1").count() == 2
    _write(spark, table_path, [(10, 1)])
    assert d.where("p = 1").count() == 3
    pinned = spark.read.format("deltalog").option("versionAsOf", 0).load(table_path)
    assert pinned.where("p = 1").count() == 2 and pinned.count() == 4


def test_a_read_schema_the_table_cannot_give_is_refused(spark, table_path):
    """A schema given with ``.schema(...)`` names a column the table lacks, or types one
    differently: the files would give nulls for it, so the read is refused (Spark refuses
    Delta's DSv1 relation whose schema is not the one given); the table's own schema, or a
    column it gained since the DataFrame was made, reads as before."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    _write(spark, table_path, [(i, i % 2) for i in range(4)])
    for wrong in ("id long, p long, extra string", "id string, p long", "ident long, p long"):
        with pytest.raises(Exception, match="DELTA_READ_SOURCE_SCHEMA_CONFLICT") as info:
            spark.read.format("deltalog").schema(wrong).load(table_path).collect()
        assert "DeltaAnalysisError" in str(info.value) or isinstance(info.value, DeltaAnalysisError)
    same = spark.read.format("deltalog").schema("p long, id long").load(table_path)
    assert sorted(r.id for r in same.collect()) == [0, 1, 2, 3]
    before = spark.read.format("deltalog").load(table_path)
    more = spark.createDataFrame([(9, 1, "x")], "id long, p long, extra string")
    more.write.format("deltalog").mode("append").option("mergeSchema", "true").save(table_path)
    assert sorted(r.id for r in before.where("p = 1").collect()) == [1, 3, 9]


def test_a_read_schema_takes_columns_and_struct_fields_by_name(spark, tmp_path):
    """Columns and struct fields of the read's schema are the table's of that name, ignoring
    case as Spark's Parquet reader resolves them, wherever they stand: a schema given with
    ``.schema(...)`` that spells a column ``ID`` reads its values (not nulls), one that orders a
    struct's fields otherwise or leaves some out reads each by its name (not by position), and
    a DataFrame made before ``mergeSchema`` added a struct field reads the table's rows without
    it, as Delta's read of a table that only added columns."""
    path = str(tmp_path / "t")
    first = spark.createDataFrame([(1, "a", (5, "x"))], "id long, p string, s struct<a: int, b: string>")
    first.write.format("deltalog").mode("append").option("partitionBy", "p").save(path)
    before = spark.read.format("deltalog").load(path)
    more = spark.createDataFrame([(2, "b", (6, "y", 1.5))], "id long, p string, s struct<a: int, b: string, c: double>")
    more.write.format("deltalog").mode("append").option("mergeSchema", "true").save(path)
    assert sorted(tuple(r) for r in before.collect()) == [(1, "a", (5, "x")), (2, "b", (6, "y"))]
    given = spark.read.format("deltalog").schema("ID long, P string, s struct<C: double, b: string>").load(path)
    assert sorted(tuple(r) for r in given.collect()) == [(1, "a", (None, "x")), (2, "b", (1.5, "y"))]


@pytest.mark.xfail(
    not READ_PLANS_PER_SCAN,
    strict=True,
    reason="Spark up to 4.3 reuses the read a DataFrame planned for its scans without pushed filters",
)
def test_a_dataframe_reads_the_latest_version_at_each_action(spark, table_path):
    _write(spark, table_path, [(i, i % 2) for i in range(4)])
    d = spark.read.format("deltalog").load(table_path)
    assert d.count() == 4
    _write(spark, table_path, [(10, 1)])
    assert d.count() == 5


def test_tasks_read_the_planned_snapshot_without_the_log(spark, table_path):
    _write(spark, table_path, [(i, i % 2) for i in range(6)])
    source = DeltaLogDataSource({"path": table_path})
    reader = source.reader(source.schema())
    shipped = pickle.dumps(reader)  # Spark pickles the reader before it calls partitions()
    partitions = pickle.loads(pickle.dumps(reader.partitions()))
    assert {p.version for p in partitions} == {0}
    # a commit lands between planning and the tasks: it must not change what they read
    _write(spark, table_path, [(100, 0)], mode="overwrite")
    # and tasks never open the log: they read with the log gone
    os.rename(os.path.join(table_path, "_delta_log"), os.path.join(table_path, "_moved_log"))
    try:
        task_reader = pickle.loads(shipped)
        ids = [i for p in partitions for b in task_reader.read(p) for i in b.column("id").to_pylist()]
    finally:
        os.rename(os.path.join(table_path, "_moved_log"), os.path.join(table_path, "_delta_log"))
    assert sorted(ids) == list(range(6))


# -- column mapping ---------------------------------------------------------------------------


def _cm_field(name, type_, cm_id, physical):
    meta = {"delta.columnMapping.id": cm_id, "delta.columnMapping.physicalName": physical}
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def _column_mapped_table(path):
    """Two files in partitions p1 and p2 of a name-mapped table, as Delta Spark writes them:
    physical column names in the files, ``partitionValues`` and stats keyed by physical name."""
    schema = {
        "type": "struct",
        "fields": [_cm_field("id", "long", 1, "col-1b4e"), _cm_field("part", "string", 2, "col-2c9a")],
    }
    adds = []
    for n, part in enumerate(("p1", "p2")):
        rel = f"col-2c9a={part}/part-{n}.parquet"
        os.makedirs(os.path.join(path, os.path.dirname(rel)), exist_ok=True)
        ids = [n * 10 + i for i in range(3)]
        field = pa.field("col-1b4e", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
        pq.write_table(pa.table([pa.array(ids, pa.int64())], schema=pa.schema([field])), os.path.join(path, rel))
        stats = {"numRecords": 3, "minValues": {"col-1b4e": ids[0]}, "maxValues": {"col-1b4e": ids[-1]}}
        size = os.path.getsize(os.path.join(path, rel))
        adds.append(AddFile(rel, {"col-2c9a": part}, size, 1, stats=json.dumps(stats)))
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(schema),
        partition_columns=("part",),
        configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
    )
    log = DeltaLog.for_table(path)
    log.store.write(log.commit_uri(0), [action_to_line(a) for a in (Protocol(2, 5), metadata, *adds)])
    return log


def test_column_mapped_partition_values_are_read_by_physical_name(spark, table_path):
    import deltalake

    log = _column_mapped_table(table_path)
    d = spark.read.format("deltalog").load(table_path)
    got = sorted((r.id, r.part) for r in d.collect())
    assert got == [(0, "p1"), (1, "p1"), (2, "p1"), (10, "p2"), (11, "p2"), (12, "p2")]
    assert sorted(r.id for r in d.where("part = 'p1'").collect()) == [0, 1, 2]
    assert sorted(r.id for r in d.where("part = 'p2' and id > 10").collect()) == [11, 12]
    # delta-rs reads the same rows
    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(table_path)).execute("select * from t")
    assert sorted((r["id"], r["part"]) for r in pa.table(result.read_all()).to_pylist()) == got
    # file pruning looks partition values up by physical name too
    snapshot = log.update()
    plan = plan_files(
        snapshot.files,
        0,
        [("part", "=", "p1")],
        ["part"],
        {"id": "long", "part": "string"},
        {"id": "col-1b4e", "part": "col-2c9a"},
    )
    assert [f.partition_values for f in plan.files] == [{"col-2c9a": "p1"}]


# -- data skipping ------------------------------------------------------------------------------


def _add(name, column, lo, hi):
    stats = {"numRecords": 2, "nullCount": {column: 0}, "minValues": {column: lo}, "maxValues": {column: hi}}
    return AddFile(name, {}, 1, 1, stats=json.dumps(stats))  # a float NaN is written as the bare NaN token


def _kept(files, term, type_name):
    column = term[0]
    return sorted(f.path for f in plan_files(files, 0, [term], [], {column: type_name}).files)


def test_nan_statistics_never_skip_a_file_with_matching_rows():
    nan = float("nan")
    files = [
        _add("nan-max.parquet", "x", 1.0, nan),  # holds 1.0 .. and NaN
        _add("nan-string.parquet", "x", 1.0, "NaN"),  # the same, NaN written as a string
        _add("all-nan.parquet", "x", nan, nan),
        _add("small.parquet", "x", 0.0, 2.0),
    ]
    every = ["all-nan.parquet", "nan-max.parquet", "nan-string.parquet", "small.parquet"]
    # Spark orders NaN above every number: NaN > 5 holds, so NaN-max files match; and a max
    # without NaN does not rule out NaN rows (delta-rs leaves NaN out of it, as Parquet does)
    assert _kept(files, ("x", ">", 5.0), "double") == every
    assert _kept(files, ("x", "=", nan), "double") == every
    assert _kept(files, ("x", ">=", 3), "double") == every
    assert _kept(files, ("x", "in", (7.0, nan)), "double") == every
    # a NaN row never equals a number nor is below one: the bounds skip
    assert _kept(files, ("x", "<", 1.0), "double") == ["small.parquet"]
    assert _kept(files, ("x", "=", 7.0), "double") == ["nan-max.parquet", "nan-string.parquet"]
    assert _kept(files, ("x", "in", (7.0, 8.0)), "double") == [
        "nan-max.parquet",
        "nan-string.parquet",
    ]


def test_a_column_widened_from_float_skips_by_double_bounds_beyond_a_float():
    """After ``float -> double`` widening, new files may hold doubles no float reaches (1e300):
    such a bound is the double's own, and the file is skipped or kept by it."""
    files = [_add("wide.parquet", "x", -1e300, 1e300), _add("narrow.parquet", "x", 0.5, 0.7)]

    def kept(term):
        plan = plan_files(files, 0, [term], [], {"x": "double"}, float_widened=("x",))
        return sorted(f.path for f in plan.files)

    assert kept(("x", "=", 2.0)) == ["wide.parquet"]
    assert kept(("x", "<", -1.0)) == ["wide.parquet"]
    assert kept(("x", "<=", 0.7)) == ["narrow.parquet", "wide.parquet"]
    assert kept(("x", "<", -1e301)) == []


def test_a_variant_column_skips_by_its_null_count_only():
    """Delta records a variant's null count; its min/max (parsed from shredded footers, Z85
    text) bound no SQL value: ``IS NULL``/``IS NOT NULL`` skip by the count, nothing by bounds."""
    files = [_add("no-nulls.parquet", "v", "0000", "0000")]
    stats = {"numRecords": 2, "nullCount": {"v": 2}}
    files.append(AddFile("all-null.parquet", {}, 1, 1, stats=json.dumps(stats)))
    assert _kept(files, ("v", "isnull", None), "variant") == ["all-null.parquet"]
    assert _kept(files, ("v", "notnull", None), "variant") == ["no-nulls.parquet"]
    assert _kept(files, ("v", "=", "1111"), "variant") == ["all-null.parquet", "no-nulls.parquet"]
    assert _kept(files, ("v", ">", "1111"), "variant") == ["all-null.parquet", "no-nulls.parquet"]


@pytest.mark.parametrize(
    ("type_name", "max_stat", "value"),
    [
        ("timestamp", "2024-01-01T00:00:00.123Z", dt.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=dt.timezone.utc)),
        ("timestamp_ntz", "2024-01-01T00:00:00.123", dt.datetime(2024, 1, 1, 0, 0, 0, 123456)),
    ],
)
def test_timestamp_max_statistics_are_widened_by_one_millisecond(type_name, max_stat, value):
    # the file's max is really .123456; its statistic was truncated to milliseconds
    files = [_add("f.parquet", "t", "2024-01-01T00:00:00.000" + ("Z" if type_name == "timestamp" else ""), max_stat)]
    assert _kept(files, ("t", "=", value), type_name) == ["f.parquet"]
    assert _kept(files, ("t", ">", value - dt.timedelta(microseconds=1)), type_name) == ["f.parquet"]
    assert _kept(files, ("t", ">", value + dt.timedelta(milliseconds=1)), type_name) == []
    top = "9999-12-31T23:59:59.999" + ("Z" if type_name == "timestamp" else "")
    files = [_add("top.parquet", "t", top, top)]  # widening saturates instead of overflowing
    assert _kept(files, ("t", ">=", value.replace(year=9999, month=12, day=31, hour=23, minute=59)), type_name) == [
        "top.parquet"
    ]


def test_nested_and_case_insensitive_columns_skip_by_their_own_type():
    """A term on a nested field is compared as the field's type, never as text: ``st.i >
    '9'`` is a number comparison in Spark (text would put '9' above '11' and skip the file)."""
    struct = {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": True, "metadata": {"delta.columnMapping.physicalName": f"col-{n}"}}
            for n, t in (("i", "integer"), ("f", "double"), ("ts", "timestamp"))
        ],
    }
    stats = {
        "numRecords": 3,
        "minValues": {"col-st": {"col-i": 9, "col-f": 9.0, "col-ts": "2024-01-01T00:00:00.000Z"}, "id": 1},
        "maxValues": {"col-st": {"col-i": 11, "col-f": 10.0, "col-ts": "2024-01-02T00:00:00.000Z"}, "id": 3},
        "nullCount": {"col-st": {"col-i": 0, "col-f": 0, "col-ts": 0}, "id": 0},
    }
    files = [AddFile("f.parquet", {}, 1, 0, stats=json.dumps(stats))]
    types = {"id": "long", "st": json.dumps(struct)}

    # compared as text ('9' > '11'), the first would skip the file holding the matching rows
    unmapped = [
        AddFile(
            "g.parquet", {}, 1, 0, stats=json.dumps({"minValues": {"st": {"i": 9}}, "maxValues": {"st": {"i": 11}}})
        )
    ]
    assert len(plan_files(unmapped, 0, [("st.i", ">", "9")], [], types, {}).files) == 1
    assert len(plan_files(unmapped, 0, [("st.i", ">", 11)], [], types, {}).files) == 0

    def kept(*terms, physical=None):
        return len(plan_files(files, 0, list(terms), [], types, physical or {"st": "col-st"}).files)

    # column mapping: the statistics name nested fields by their physical names too
    assert kept(("st.i", ">", "9")) == kept(("st.i", "=", "10")) == kept(("st.f", "=", "9.5")) == 1
    assert kept(("st.ts", "=", "2024-01-01 00:00:00")) == 1
    # typed values skip by the nested statistics (physical names under column mapping), and
    # column names resolve case-insensitively as in Spark
    assert kept(("st.i", ">", 11)) == kept(("ST.I", "<", 9)) == kept(("ID", ">", 3)) == 0
    assert kept(("st.f", "=", 9.5)) == kept(("St.i", "=", 10)) == 1
    assert kept(("st.missing", "=", 1)) == kept(("nope", "=", 1)) == 1


# -- change data feed over deletion vectors ------------------------------------------------------


def _inline_dv(rows):
    bitmap = serialize_bitmap(rows)
    return DeletionVectorDescriptor("i", z85_encode(bitmap + b"\0" * (-len(bitmap) % 4)), len(bitmap), len(rows))


def test_change_feed_diffs_deletion_vectors(spark, table_path):
    os.makedirs(table_path)
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), os.path.join(table_path, "a.parquet"))
    size = os.path.getsize(os.path.join(table_path, "a.parquet"))
    stats = '{"numRecords":10}'
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(
            {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
        ),
        configuration={"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
    )
    protocol = Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "changeDataFeed"))
    first, second = _inline_dv([2, 5]), _inline_dv([5, 7])

    a0 = AddFile("a.parquet", {}, size, 1, stats=stats)
    a1 = AddFile("a.parquet", {}, size, 1, stats=stats, deletion_vector=first)
    a2 = AddFile("a.parquet", {}, size, 1, stats=stats, deletion_vector=second)
    commits = [
        [protocol, metadata, a0],
        # a DELETE of ids 2 and 5 with a deletion vector, as Delta Spark writes it
        [RemoveFile("a.parquet", 2, True, True, {}, size, stats), a1],
        # a RESTORE-like change: 2 is back, 7 is deleted
        [RemoveFile("a.parquet", 3, True, True, {}, size, stats, deletion_vector=first), a2],
    ]
    log = DeltaLog.for_table(table_path)
    for version, actions in enumerate(commits):
        log.store.write(log.commit_uri(version), [action_to_line(a) for a in actions])
    cdf = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1).load(table_path)
    got = sorted((r._commit_version, r._change_type, r.id) for r in cdf.collect())
    assert got == [(1, "delete", 2), (1, "delete", 5), (2, "delete", 7), (2, "insert", 2)]
    assert sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect()) == [0, 1, 2, 3, 4, 6, 8, 9]


def test_a_struct_that_gained_fields_still_reads_as_before():
    from deltalog.contrib.spark.source import _reads_as

    def struct(*fields):
        return {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
        }

    before, after = struct(("x", "long")), struct(("x", "long"), ("y", "string"))
    assert _reads_as(before, after) and not _reads_as(after, before)
    assert _reads_as(
        {"type": "array", "elementType": before, "containsNull": True},
        {"type": "array", "elementType": after, "containsNull": False},
    )
    assert not _reads_as(struct(("x", "integer")), before) and not _reads_as("decimal(10,2)", "decimal(12,2)")


def test_decimal_statistics_keep_every_digit():
    """A decimal(38, 18) bound written or read as a double loses digits: the max rounds
    below the largest value and the file holding it is skipped. Delta writes (and reads)
    the exact number."""
    from deltalog.txn.log.checkpoint_rows import parse_stats
    from deltalog.txn.log.deletion_vector_writer import widen_stats
    from deltalog.txn.protocol.file_stats import StatsCollector
    from deltalog.txn.protocol.schema import DecimalType, StructField, StructType
    from deltalog.txn.protocol.stats_columns import StatsColumns

    lo, hi = (
        decimal.Decimal("12345678901234567890.123456789012345678"),
        decimal.Decimal("12345678901234567890.123456789012345679"),
    )
    collector = StatsCollector(pa.schema([pa.field("d", pa.decimal128(38, 18))]))
    collector.update(pa.table({"d": pa.array([lo, hi], pa.decimal128(38, 18))}))
    written = collector.to_json()
    assert '"minValues":{"d":12345678901234567890.123456789012345678}' in written
    assert '"maxValues":{"d":12345678901234567890.123456789012345679}' in written
    delta = f'{{"numRecords":1,"minValues":{{"d":0}},"maxValues":{{"d":{hi}}},"nullCount":{{"d":0}}}}'
    # ours, and Delta Spark's spelling of the same bounds: both read exactly
    files = [AddFile("ours.parquet", {}, 1, 1, stats=written), AddFile("delta.parquet", {}, 1, 1, stats=delta)]
    assert _kept(files, ("d", "=", hi), "decimal(38,18)") == ["delta.parquet", "ours.parquet"]
    assert _kept(files, ("d", ">", lo), "decimal(38,18)") == ["delta.parquet", "ours.parquet"]
    assert _kept(files, ("d", ">", hi), "decimal(38,18)") == []
    # so do the wide bounds a deletion vector leaves, and a checkpoint's stats_parsed
    assert widen_stats(written, 2, 0).startswith(written[:-1])
    columns = StatsColumns.for_schema(StructType([StructField("d", DecimalType(38, 18))]))
    parsed = parse_stats(pa.array([written]), columns).to_pylist()[0]
    assert (parsed["minValues"]["d"], parsed["maxValues"]["d"]) == (lo, hi)


def test_fraction_literals_are_compared_with_decimals_as_decimals():
    """Spark reads ``0.1`` as the decimal 0.1, not as the double nearest to it: compared
    with a decimal column's bounds as that double, ``dec = 0.1`` skipped the file holding
    0.1 (``read_table`` returned nothing, DELETE deleted nothing)."""
    files = [_add("f.parquet", "x", 0.1, 0.1)]
    for op in ("=", "<=", "in"):
        assert _kept(files, ("x", op, (0.1,) if op == "in" else 0.1), "decimal(10,2)") == ["f.parquet"]
    assert _kept(files, ("x", "<", 0.1), "decimal(10,2)") == []
    assert _kept(files, ("x", ">", 0.1), "decimal(10,2)") == []


def test_fraction_literals_keep_every_digit():
    """Spark reads ``9007199254740993.0`` as an exact decimal and ``1e3`` as a double: read
    as the double nearest to it, ``id = 9007199254740993.0`` compared ``...992.0`` with the
    bounds and skipped the file holding that id (a read or DELETE lost the row)."""
    from deltalog.contrib.spark.merge_pruning import condition_terms
    from deltalog.contrib.spark.predicates import parse_partition_predicate

    big = 9007199254740993
    files = [_add("f.parquet", "id", big, big)]
    (term,) = parse_partition_predicate(f"id = {big}.0")
    assert term[2] == decimal.Decimal(f"{big}.0")
    assert _kept(files, term, "long") == ["f.parquet"]
    (in_term,) = parse_partition_predicate(f"id in ({big}.0, 1.5)")
    assert _kept(files, in_term, "long") == ["f.parquet"]
    assert parse_partition_predicate("x > 1e3")[0][2] == 1000.0
    assert isinstance(parse_partition_predicate("x > 1e3")[0][2], float)
    # a merge condition's literal compared with a long target column, as Spark does
    found = condition_terms(f"t.id = {big}.0 AND t.id = s.id", "t", {"id": "long"}, ["id"])
    assert all(_kept(files, t, "long") == ["f.parquet"] for t in found.literal_terms)


def test_double_literals_are_compared_with_integral_and_decimal_columns_as_doubles():
    """Spark compares a ``long`` or decimal column with a double literal (``1e3``) as doubles: ``l =
    9.007199254740992e15`` holds for 9007199254740993 (the same double), and ``l < NaN`` for
    every value (NaN sorts above every number). Compared exactly, the file was skipped."""
    from deltalog.contrib.spark.skipping_terms import skipping_terms

    big = 9007199254740993
    files = [_add("f.parquet", "l", big, big)]
    for where in ("l = 9.007199254740992e15", "l IN (1, 9.007199254740992e15)", "NOT l != 9.007199254740992e15"):
        (term,) = skipping_terms(where)
        assert _kept(files, term, "long") == ["f.parquet"], where
    assert _kept(files, ("l", "<", float("nan")), "long") == ["f.parquet"]
    assert _kept(files, ("l", "!=", 9.007199254740992e15), "long") == []  # every value is that double
    assert _kept(files, ("l", ">", 9.007199254740992e15), "integer") == []
    # a decimal column too: Spark casts it to double to compare with a double
    assert _kept(files, ("l", "=", 9.007199254740992e15), "decimal(20,0)") == ["f.parquet"]
    assert _kept(files, ("l", "in", (9.007199254740992e15,)), "decimal(20,0)") == ["f.parquet"]


def test_fraction_literals_never_prune_an_integer_partition_by_truncation():
    """``p < 1.5`` on an integer partition column holds for 1 (Spark compares as decimals):
    a filter that truncated 1.5 to 1 pruned partition 1 away; ``p = 5.0`` is ``p = 5``."""
    from deltalog.contrib.spark.merge_pruning import condition_terms
    from deltalog.contrib.spark.predicates import exact_partition_filter, parse_partition_predicate

    (lt,) = parse_partition_predicate("p < 1.5")
    assert not exact_partition_filter("integer", *lt[1:])
    (eq,) = parse_partition_predicate("p = 5.0")
    assert exact_partition_filter("integer", *eq[1:])
    found = condition_terms("t.p < 1.5 AND t.q = 5.0 AND t.id = s.id", "t", {"p": "integer", "q": "integer"}, ["id"])
    assert found.literal_terms == [("q", "=", 5)]


def test_a_merge_condition_column_named_with_a_dot_is_not_an_alias_and_a_column():
    """```t.x` = 5`` names the source column ``t.x``, not column ``x`` of the target aliased
    ``t``: taken for the target's, it pruned the target to the files where ``x`` may be 5,
    and the MERGE missed the matches in every other file."""
    from deltalog.contrib.spark.merge_pruning import condition_terms

    types = {"id": "long", "x": "long", "t.x": "long"}
    found = condition_terms("`t.x` = 5 AND t.id = s.id", "t", types, ["id", "t.x"])
    assert found.literal_terms == [] and found.key_pairs == [("id", "id")]
    own = condition_terms("t.id = s.id AND `t.x` = 7", "t", types, ["id"])  # the target's column t.x
    assert own.key_pairs == [("id", "id")] and own.literal_terms == [("t.x", "=", 7)]


def test_file_columns_spelled_in_another_case_are_read_as_the_table_columns(spark, tmp_path):
    """Spark's Parquet reader matches a file's columns and nested fields to the table's
    ignoring case (spark.sql.caseSensitive=false), so Delta reads a file that spells `s.x` as
    `S.X` (written by an engine that did not normalize names, or by deltalog before it did):
    both read paths give its values, not nulls."""
    from deltalog.contrib.spark import read_table

    path = str(tmp_path / "t")
    os.makedirs(path)
    field = {"name": "x", "type": "long", "nullable": True, "metadata": {}}
    s = {"name": "s", "type": {"type": "struct", "fields": [field]}, "nullable": True, "metadata": {}}
    schema = {"type": "struct", "fields": [{**field, "name": "id"}, s]}
    data = pa.table({"ID": [1, 2], "S": pa.array([{"X": 10}, None], pa.struct([("X", pa.int64())]))})
    pq.write_table(data, os.path.join(path, "part-0.parquet"))
    add = AddFile("part-0.parquet", {}, os.path.getsize(os.path.join(path, "part-0.parquet")), 1)
    metadata = Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(schema))
    log = DeltaLog.for_table(path)
    log.store.write(log.commit_uri(0), [action_to_line(a) for a in (Protocol(1, 2), metadata, add)])
    for native in (False, True):
        got = sorted((r.id, r.s and r.s.x) for r in read_table(spark, path, native=native).collect())
        assert got == [(1, 10), (2, None)], native
