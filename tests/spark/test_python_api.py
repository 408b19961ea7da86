"""``DeltaTable`` against delta-spark's own Python API tests (``python/delta/tests/test_deltatable.py``):
the argument forms it accepts, the exception types it raises for bad arguments (checked in
``delta/tables.py`` before the JVM is called) and the values it returns."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.spark


def _table(spark, path):
    from deltalog.contrib.spark import DeltaTable

    df = spark.createDataFrame([("a", 1), ("b", 2), ("c", 3), ("d", 4)], "key string, value long")
    df.write.format("deltalog").mode("overwrite").save(path)
    return DeltaTable.forPath(spark, path)


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def test_merge_returns_delta_sparks_output_and_takes_its_argument_forms(spark, table_path):
    """test_merge: ``execute()`` returns Delta's one-row output (affected, updated, deleted,
    inserted, non-nullable longs); SQL text, Columns and positional clause arguments act alike."""
    from pyspark.sql.functions import col, expr

    dt = _table(spark, table_path)
    source = spark.createDataFrame([("a", -1), ("b", 0), ("e", -5), ("f", -6)], ["k", "v"])
    out = (
        dt.merge(source, expr("key = k"))
        .whenMatchedUpdate("k = 'a'", {"value": col("v") + 0})
        .whenMatchedDelete(expr("k = 'b'"))
        .whenNotMatchedInsert(values={"key": "k", "value": "v + 0"})
        .whenNotMatchedBySourceUpdate(set={"value": "value + 0"})
        .execute()
    )
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in out.schema.fields] == [
        ("num_affected_rows", "bigint", False),
        ("num_updated_rows", "bigint", False),
        ("num_deleted_rows", "bigint", False),
        ("num_inserted_rows", "bigint", False),
    ]
    assert _rows(out) == [(6, 3, 1, 2)]  # a, c, d updated (c, d by source), b deleted, e, f inserted
    assert _rows(dt.toDF()) == [("a", -1), ("c", 3), ("d", 4), ("e", -5), ("f", -6)]


# (call, exception type, message regex): delta-spark's checks in delta/tables.py
_DML_CASES = [
    (lambda dt, s: dt.delete(condition=1), TypeError, "must be a Spark SQL Column or a string"),
    (lambda dt, s: dt.update({"value": "200"}), ValueError, "cannot be None"),
    (lambda dt, s: dt.update(condition="a"), ValueError, "cannot be None"),
    (lambda dt, s: dt.update(set=1), TypeError, "must be a dict"),
    (lambda dt, s: dt.update(1, {}), TypeError, "must be a Spark SQL Column or a string"),
    (lambda dt, s: dt.update(set={"value": 1}), TypeError, "Values of dict in .* must contain only"),
    (lambda dt, s: dt.update(set={1: ""}), TypeError, "Keys of dict in .* must contain only"),
    (lambda dt, s: dt.merge(1, "key = k"), TypeError, "must be DataFrame"),
    (lambda dt, s: dt.merge(s, 1), TypeError, "must be a Spark SQL Column or a string"),
    (lambda dt, s: dt.merge(s, "key = k").whenMatchedUpdate(1), ValueError, "cannot be None"),
    (lambda dt, s: dt.merge(s, "key = k").whenMatchedUpdate(1, {"value": "v"}), TypeError, "Column or a string"),
    (lambda dt, s: dt.merge(s, "key = k").whenMatchedUpdate("k = 'a'", 1), TypeError, "must be a dict"),
    (lambda dt, s: dt.merge(s, "key = k").whenMatchedUpdate(set={1: ""}), TypeError, "Keys of dict"),
    (lambda dt, s: dt.merge(s, "key = k").whenMatchedDelete(1), TypeError, "Column or a string"),
    (lambda dt, s: dt.merge(s, "key = k").whenNotMatchedInsert(1), ValueError, "cannot be None"),
    (lambda dt, s: dt.merge(s, "key = k").whenNotMatchedInsert(values={"value": 1}), TypeError, "Values of dict"),
    (lambda dt, s: dt.merge(s, "key = k").whenNotMatchedBySourceUpdate("key = 'a'", 1), TypeError, "a dict"),
    (lambda dt, s: dt.merge(s, "key = k").whenNotMatchedBySourceDelete(1), TypeError, "Column or a string"),
    (lambda dt, s: dt.restoreToVersion("0"), ValueError, re.escape("version needs to be an int but got '<class")),
    (lambda dt, s: dt.restoreToTimestamp(12342323232), ValueError, "timestamp needs to be a string but got"),
    (lambda dt, s: dt.clone(10), ValueError, "target needs to be a string"),
    (lambda dt, s: dt.clone("x", isShallow=10), ValueError, "isShallow needs to be a boolean"),
    (lambda dt, s: dt.cloneAtVersion("0", "x"), ValueError, "version needs to be an int"),
    (lambda dt, s: dt.clone("x", True, False, {"key": 10}), ValueError, "All property values including 10"),
    (lambda dt, s: dt.dropFeatureSupport(12345), ValueError, "featureName needs to be a string"),
    (
        lambda dt, s: dt.optimize().where("key = 'a'").executeCompaction(),
        ValueError,
        re.escape("Predicate references non-partition column 'key'. Only the partition columns may be referenced: []"),
    ),
    (lambda dt, s: dt.addFeatureSupport([]), ValueError, "featureName needs to be a string"),
    (lambda dt, s: dt.addFeatureSupport("abc"), ValueError, "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG"),
    (lambda dt, s: dt.dropFeatureSupport("appendOnly", []), ValueError, "truncateHistory needs to be a boolean"),
]


def test_table_methods_refuse_bad_arguments_as_delta_spark(spark, table_path):
    """test_delete, test_update, test_merge, test_restore_invalid_inputs, test_clone_invalid_inputs,
    test_dropFeatureSupport: the same exception type and message, nothing committed."""
    dt = _table(spark, table_path)
    source = spark.createDataFrame([("a", -1)], ["k", "v"])
    for i, (call, error, message) in enumerate(_DML_CASES):
        with pytest.raises(error, match=message):
            call(dt, source)
            pytest.fail(f"case {i} raised nothing")
    assert dt.history().count() == 1


_BUILDER_CASES = [
    (lambda b: b.tableName(1), TypeError),
    (lambda b: b.location(1), TypeError),
    (lambda b: b.comment(1), TypeError),
    (lambda b: b.addColumn(1, "int"), TypeError),
    (lambda b: b.addColumn("a", 1), TypeError),
    (lambda b: b.addColumn("a", "int", comment=1), TypeError),
    (lambda b: b.addColumn("a", "int", generatedAlwaysAs=1), TypeError),
    (lambda b: b.addColumn("a", "bigint", generatedByDefaultAs=""), TypeError),
    (lambda b: b.addColumn("a", "int", nullable=1), TypeError),
    (lambda b: b.addColumns(1), TypeError),
    (lambda b: b.addColumns([_field(), 1]), TypeError),
    (lambda b: b.partitionedBy(1, "1"), TypeError),
    (lambda b: b.partitionedBy([1]), TypeError),
    (lambda b: b.clusterBy(1), TypeError),
    (lambda b: b.property(1, "1"), TypeError),
    (lambda b: b.property("1", 1), TypeError),
    (lambda b: b.addColumn("a", "bigint", generatedAlwaysAs="", generatedByDefaultAs=_identity()), ValueError),
    (lambda b: b.addColumn("a", "bigint", generatedAlwaysAs=_identity(step=0)), ValueError),
]


def _field():
    from pyspark.sql.types import IntegerType, StructField

    return StructField("1", IntegerType())


def _identity(step=1):
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    return IdentityGenerator(step=step)


@pytest.mark.parametrize("index", range(len(_BUILDER_CASES)))
def test_table_builder_refuses_bad_arguments_as_delta_spark(spark, table_path, index):
    """test_delta_table_builder_with_bad_args, test_cluster_by_bad_args: delta-spark's exception types."""
    from deltalog.contrib.spark import DeltaTable

    call, error = _BUILDER_CASES[index]
    with pytest.raises(error):
        call(DeltaTable.create(spark).location(table_path))


def test_table_builder_takes_a_list_of_struct_fields(spark, table_path):
    """test_create_table_with_existing_schema: ``addColumns`` takes a StructType or a list of
    StructFields; ``partitionedBy`` names or one list of names."""
    from deltalog.contrib.spark import DeltaTable

    df = spark.createDataFrame([("a", 1)], ["key", "value"])
    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumns(df.schema.fields)
        .addColumn("value2", dataType="int")
        .partitionedBy(["VALUE2", "value"])  # names resolve as Spark's CREATE TABLE (CaseSensitivitySuite)
        .execute()
    )
    assert [(f.name, f.dataType.simpleString()) for f in table.toDF().schema.fields] == [
        ("key", "string"),
        ("value", "bigint"),
        ("value2", "int"),
    ]
    assert table.detail().first().partitionColumns == ["value2", "value"]
    spark.createDataFrame([("b", 2, 3)], "KEY string, VALUE long, Value2 int").write.format("deltalog").mode(
        "append"
    ).save(table_path)
    assert [tuple(r) for r in table.toDF().collect()] == [("b", 2, 3)]
