"""CONVERT TO DELTA at the engine level (no Spark): a Parquet directory becomes a table
that delta-rs reads; a directory that cannot be converted is left untouched."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.errors import ConvertToDeltaError
from deltalog.txn.commands.convert import convert_to_delta, plan_convert
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.schema import PrimitiveType, StructField, StructType
from tests.spark.helpers import delta_rs_rows


def _write(root: Path, rel: str, ids: list[int]) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    pq.write_table(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=schema), path)


def _log_lines(root: Path) -> list[dict[str, object]]:
    with open(root / "_delta_log" / f"{0:020d}.json", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_convert_a_partitioned_parquet_directory(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    _write(root, "day=2024-01-01/part-0.parquet", [1, 2])
    _write(root, "day=2024-01-02/part-1.parquet", [3])
    _write(root, "day=__HIVE_DEFAULT_PARTITION__/part-2.parquet", [4])
    _write(root, "_temporary/day=2024-01-03/part-9.parquet", [99])  # hidden: not converted
    (root / "_SUCCESS").write_text("")

    assert convert_to_delta(str(root), {"day": "date"}) == 0

    rows = delta_rs_rows(str(root), ["id"])
    assert rows["id"].tolist() == [1, 2, 3, 4]
    assert rows["day"].tolist()[:3] == [dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
    assert rows["day"].isna().tolist() == [False, False, False, True]
    snapshot = DeltaLog.for_table(str(root)).update()
    assert snapshot.metadata.partition_columns == ("day",)
    assert [f.name for f in snapshot.schema.fields] == ["id", "name", "day"]
    assert all(f.nullable for f in snapshot.schema.fields)  # asNullable, as Delta
    lines = _log_lines(root)
    assert lines[0]["commitInfo"]["operation"] == "CONVERT"  # type: ignore[index]
    assert lines[0]["commitInfo"]["operationParameters"]["sourceFormat"] == "parquet"  # type: ignore[index]
    assert lines[0]["commitInfo"]["operationMetrics"] == {"numConvertedFiles": "3"}  # type: ignore[index]
    stats = sorted(json.loads(a["add"]["stats"])["numRecords"] for a in lines if "add" in a)  # type: ignore[index]
    assert stats == [1, 1, 2]


def test_a_partition_column_the_files_also_hold_is_the_partitions(tmp_path: Path) -> None:
    """Files that also carry the partition column (written by a tool that keeps it) convert
    with the partition schema's column, as Delta's ``mergeDataAndPartitionSchema`` makes it,
    instead of failing on a duplicate column."""
    root = tmp_path / "plain"
    (root / "p=a").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1], "p": ["a"]}), root / "p=a" / "part-0.parquet")
    assert convert_to_delta(str(root), "p string") == 0
    snapshot = DeltaLog.for_table(str(root)).update()
    assert [f.name for f in snapshot.schema.fields] == ["id", "p"]
    assert snapshot.metadata.partition_columns == ("p",)


def test_convert_unpartitioned_with_a_struct_type_schema_and_storage_options(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    _write(root, "a.parquet", [1])
    _write(root, "b.parquet", [2, 3])
    convert_to_delta(str(root), StructType(()), storage_options={})
    assert delta_rs_rows(str(root), ["id"])["id"].tolist() == [1, 2, 3]
    with pytest.raises(ConvertToDeltaError, match="already a Delta table"):
        convert_to_delta(str(root))


@pytest.mark.parametrize(
    ("files", "partitions", "message"),
    [
        ([], None, "no Parquet files"),
        (
            ["p=a/0.parquet"],
            None,
            r"expecting 0 partition column\(s\): \[\], but found 1 partition column\(s\): \['p'\]",
        ),
        (["0.parquet"], {"p": "string"}, r"expecting 1 partition column\(s\): \['p'\], but found 0"),
        (["a=1/b=2/0.parquet"], "b string, a string", "expecting partition column b, but found partition column a"),
        (["n=1/0.parquet", "n=x/1.parquet"], StructType((StructField("n", PrimitiveType("integer")),)), "'x'"),
    ],
)
def test_a_directory_that_cannot_be_converted_is_left_untouched(
    tmp_path: Path, files: list[str], partitions: object, message: str
) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    for rel in files:
        _write(root, rel, [1])
    with pytest.raises(ConvertToDeltaError, match=message):
        convert_to_delta(str(root), partitions)  # type: ignore[arg-type]
    assert not os.path.exists(root / "_delta_log")


def test_convert_collects_statistics_from_the_footers(tmp_path: Path) -> None:
    """As Delta's CONVERT (statistics collected unless ``NO STATISTICS``), every ``add``
    gets ``minValues``/``maxValues``/``nullCount``, here from the Parquet footers (no row is
    read); a float column gets no bounds (a footer's skip NaN). ``collect_stats=False`` is Delta's ``NO STATISTICS``."""
    root = tmp_path / "plain"
    (root / "p=a").mkdir(parents=True)
    big = pa.array([2**63 + 1, 3], pa.uint64())  # past a long: no bounds, never a wrong one
    pq.write_table(
        pa.table({"id": [1, 5], "name": ["x", None], "score": [0.5, float("nan")], "big": big}),
        root / "p=a" / "0.parquet",
    )
    pq.write_table(pa.table({"id": [10, 12], "name": ["y", "z"], "score": [1.0, 2.0]}), root / "p=a" / "1.parquet")
    convert_to_delta(str(root), "p string")
    snapshot = DeltaLog.for_table(str(root)).update()
    stats = {f.path: json.loads(f.stats or "{}") for f in snapshot.files}
    assert stats["p=a/0.parquet"] == {
        "numRecords": 2,
        "minValues": {"id": 1, "name": "x"},
        "maxValues": {"id": 5, "name": "x"},
        "nullCount": {"id": 0, "name": 1, "score": 0, "big": 0},
    }
    assert stats["p=a/1.parquet"]["minValues"] == {"id": 10, "name": "y"}
    assert _log_lines(root)[0]["commitInfo"]["operationParameters"]["collectStats"] is True  # type: ignore[index]

    bare = tmp_path / "bare"
    _write(bare, "0.parquet", [1, 2])
    convert_to_delta(str(bare), collect_stats=False)
    (add,) = DeltaLog.for_table(str(bare)).update().files
    assert add.stats is None  # as Delta's NO STATISTICS: not even numRecords
    assert _log_lines(bare)[0]["commitInfo"]["operationParameters"]["collectStats"] is False  # type: ignore[index]


def test_files_of_byte_short_and_int_convert_to_the_widest(tmp_path: Path) -> None:
    """Delta's ``mergeSchemasInParallel`` merges the footers with ``mergeSchemas``: byte,
    short and int (all INT32 in Parquet) merge to the widest, in any file order; int and
    long do not merge."""
    root = tmp_path / "plain"
    root.mkdir()
    for name, values, arrow_type in (("a", [1], pa.int8()), ("b", [300], pa.int16()), ("c", [70000], pa.int32())):
        pq.write_table(pa.table({"x": pa.array(values, arrow_type)}), root / f"{name}.parquet")
    assert convert_to_delta(str(root)) == 0
    assert DeltaLog.for_table(str(root)).update().schema.field("x").type == PrimitiveType("integer")
    assert delta_rs_rows(str(root), ["x"])["x"].tolist() == [1, 300, 70000]
    bad = tmp_path / "bad"
    bad.mkdir()
    for name, arrow_type in (("a", pa.int32()), ("b", pa.int64())):
        pq.write_table(pa.table({"x": pa.array([1], arrow_type)}), bad / f"{name}.parquet")
    with pytest.raises(ConvertToDeltaError, match="DELTA_FAILED_TO_MERGE_FIELDS"):
        convert_to_delta(str(bad))


def test_the_files_delta_lists_and_the_schema_it_builds(tmp_path: Path) -> None:
    """As Delta's ``ManualListingFileManifest`` and ``mergeDataAndPartitionSchema``
    (ConvertToDeltaSuiteBase): every visible file is converted, whatever its name ("allow file
    names to not have .parquet suffix"); a ``_``/``.`` directory is hidden unless it is a
    partition's ("partition column name starting with underscore and dot"); partition columns
    match the directories case-insensitively; a partition column the files also hold keeps
    its place in the files' column order ("overlapping partition and data columns"); a file
    that is not Parquet is refused unless ignored ("filter non-parquet files"), and so is a
    partition value of another type."""
    root = tmp_path / "plain"
    for i, rel in enumerate(("_k=1/.d=x/unknown_suffix", "_k=2/.d=y/0.parquet", "_tmp/_k=3/.d=z/9.parquet")):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [i], "_K": ["in-file"], "v": ["a"]}), path)
    convert_to_delta(str(root), "_K int, `.d` string")
    snapshot = DeltaLog.for_table(str(root)).update()
    assert [f.name for f in snapshot.schema.fields] == ["id", "_K", "v", ".d"]
    assert snapshot.schema.field("_K").type == PrimitiveType("integer")
    assert sorted(f.partition_values["_K"] or "" for f in snapshot.files) == ["1", "2"]

    mixed = tmp_path / "mixed"
    _write(mixed, "p=1/0.parquet", [1])
    (mixed / "p=2").mkdir()
    (mixed / "p=2" / "part-0.json").write_text('{"id": 2}')
    with pytest.raises(ConvertToDeltaError, match=r"p=2/part-0.json is not a Parquet file"):
        convert_to_delta(str(mixed), "p string")
    plan = plan_convert(DeltaLog.for_table(str(mixed)), "p string", ignore_corrupt_files=True)
    assert [f.path for f in plan.files] == ["p=1/0.parquet"]
    # "negative case: failed to cast partition value", unless convert.partitionValues.ignoreCastFailure
    _write(mixed, "p=x/1.parquet", [3])
    with pytest.raises(ConvertToDeltaError, match="DELTA_FAILED_CAST_PARTITION_VALUE"):
        plan_convert(DeltaLog.for_table(str(mixed)), "p int", ignore_corrupt_files=True)
    plan = plan_convert(
        DeltaLog.for_table(str(mixed)), "p int", ignore_corrupt_files=True, ignore_partition_cast_failure=True
    )
    assert [f.partition_values for f in plan.files] == [{"p": "1"}, {"p": None}]


def test_a_streaming_sinks_directory_converts_the_files_its_log_names(tmp_path: Path) -> None:
    """Delta's ``MetadataLogFileManifest`` ("convert a streaming parquet path: use metadata"):
    the files the ``_spark_metadata`` log names (latest compaction and the batches after it,
    deletes applied), not a file something else wrote there; or, with the log not used,
    every file."""
    root = tmp_path / "sink"
    for name, ids in (("a", [1]), ("b", [2]), ("c", [3]), ("other", [99])):
        _write(root, f"part-{name}.parquet", ids)
    log_dir = root / "_spark_metadata"
    log_dir.mkdir()

    def entry(name: str, action: str = "add") -> str:
        path = root / f"part-{name}.parquet"
        size = os.path.getsize(path)
        return json.dumps(
            {"path": path.as_uri(), "size": size, "isDir": False, "modificationTime": 7, "action": action}
        )

    (log_dir / "0").write_text("v1\n" + entry("a") + "\n")  # superseded by the compaction
    (log_dir / "1.compact").write_text("v1\n" + entry("a") + "\n" + entry("b") + "\n")
    (log_dir / "2").write_text("v1\n" + entry("c") + "\n" + entry("a", "delete") + "\n")
    plan = plan_convert(DeltaLog.for_table(str(root)))
    assert [f.path for f in plan.files] == ["part-b.parquet", "part-c.parquet"]
    assert (plan.files[0].size, plan.files[0].modification_time) == (os.path.getsize(root / "part-b.parquet"), 7)
    listed = plan_convert(DeltaLog.for_table(str(root)), use_metadata_log=False)
    assert len(listed.files) == 4


def test_variant_columns_spark_wrote_convert_to_variants_with_null_counts_only(tmp_path: Path) -> None:
    """DeltaVariantSuite "Convert to Delta from parquet": Spark types a column by the schema its
    writer left in the footer, so the groups it wrote for variants (plain ``struct<value,
    metadata>``, or shredded with ``typed_value``; at the top level and nested) are ``variant``
    columns, which need ``variantType``; their statistics are a null count, no bounds (Delta
    computes them from the rows). Groups without that footer schema stay structs."""
    root = tmp_path / "variants"
    root.mkdir()
    one = b"\x0c\x01"  # the variant 1 (int8), with the empty metadata
    empty = b"\x01\x00\x00"
    plain = pa.StructArray.from_arrays([pa.array([one, None]), pa.array([empty, empty])], names=["value", "metadata"])
    plain = pa.StructArray.from_arrays(plain.flatten(), names=["value", "metadata"], mask=pa.array([False, True]))
    shredded = pa.StructArray.from_arrays(
        [pa.array([empty, empty]), pa.array([None, b"\x00"]), pa.array([7, None], pa.int64())],
        names=["metadata", "value", "typed_value"],
    )
    nested = pa.StructArray.from_arrays([shredded, pa.array([1, 2], pa.int64())], names=["w", "x"])
    table = pa.table({"v": plain, "s": nested, "a": pa.array([[one], []], pa.list_(pa.binary())), "g": plain})

    def field(name: str, data_type: object) -> dict[str, object]:
        return {"name": name, "type": data_type, "nullable": True, "metadata": {}}

    inner = {"type": "struct", "fields": [field("w", "variant"), field("x", "long")]}
    binaries = {"type": "array", "elementType": "binary", "containsNull": True}
    struct = {"type": "struct", "fields": [field("value", "binary"), field("metadata", "binary")]}
    spark_schema = {
        "type": "struct",
        "fields": [field("v", "variant"), field("s", inner), field("a", binaries), field("g", struct)],
    }
    metadata = {b"org.apache.spark.sql.parquet.row.metadata": json.dumps(spark_schema).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), root / "part-0.parquet")

    convert_to_delta(str(root))
    snapshot = DeltaLog.for_table(str(root)).update()
    fields = {f.name: f.type for f in snapshot.schema.fields}
    assert fields["v"] == PrimitiveType("variant")
    assert isinstance(fields["s"], StructType) and fields["s"].fields[0].type == PrimitiveType("variant")
    assert isinstance(fields["g"], StructType)  # the footer schema says no variant
    assert snapshot.protocol.reader_features == ("variantType",)
    (add,) = snapshot.files
    stats = json.loads(add.stats or "{}")
    assert stats["nullCount"] == {"v": 1, "s": {"w": 0, "x": 0}, "g": {"value": 1, "metadata": 1}}
    assert stats["minValues"] == {"s": {"x": 1}}  # no variant bounds (binaries have none either)
