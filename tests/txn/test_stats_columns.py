"""``delta.dataSkippingStatsColumns``: the columns a table's files get statistics for
(Delta's ``StatisticsCollection``), its validation when the property is set, and ALTER
TABLE RENAME/DROP COLUMN keeping it in step with the schema."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from typing import Any

import pyarrow as pa
import pytest

from deltalog.txn.commands import alter
from deltalog.txn.commit.operations import CreateTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.file_stats import StatsCollector, truncated_max_string
from deltalog.txn.protocol.properties import InvalidPropertyError
from deltalog.txn.protocol.schema import StructType, from_arrow
from deltalog.txn.protocol.stats_columns import InvalidStatsColumnsError, StatsColumns

KEY = "delta.dataSkippingStatsColumns"


def _field(name: str, type_: Any, physical: str | None = None, cid: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if physical is not None:
        meta = {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical}
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def _schema(mapped: bool = False) -> str:
    """id, name, flag boolean, s struct<x, `y.z`, ok boolean, t struct<u>>, tags array, p (partition)."""

    def f(name: str, type_: Any, cid: int) -> dict[str, Any]:
        return _field(name, type_, f"col-{cid}" if mapped else None, cid)

    t = {"type": "struct", "fields": [f("u", "integer", 8)]}
    s = {"type": "struct", "fields": [f("x", "long", 5), f("y.z", "string", 6), f("ok", "boolean", 7), f("t", t, 9)]}
    tags = {"type": "array", "elementType": "string", "containsNull": True}
    fields = [f("id", "long", 1), f("name", "string", 2), f("flag", "boolean", 3), f("s", s, 4), f("tags", tags, 10)]
    return json.dumps({"type": "struct", "fields": [*fields, f("p", "string", 11)]})


def _create(config: dict[str, str], mapped: bool = False) -> DeltaLog:
    log = DeltaLog.for_table(f"memory://stats-{uuid.uuid4().hex}")
    if mapped:
        config = {**config, "delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "11"}
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=_schema(mapped), partition_columns=("p",), configuration=config))
    txn.commit([], CreateTable(partition_by=["p"]))
    return log


def _columns(config: dict[str, str], mapped: bool = False) -> StatsColumns:
    return StatsColumns.for_schema(StructType.from_json(_schema(mapped)), ["p"], config)


# -- which columns ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "paths"),
    [
        ({}, [("id",), ("name",), ("flag",), ("s", "x"), ("s", "y.z"), ("s", "ok"), ("s", "t", "u"), ("tags",)]),
        # Delta counts leaf columns: a struct's fields one by one
        ({"delta.dataSkippingNumIndexedCols": "4"}, [("id",), ("name",), ("flag",), ("s", "x")]),
        ({"delta.dataSkippingNumIndexedCols": "0"}, []),
        # the list wins over the count; the schema's order, not the list's; names in any case
        ({KEY: "S.`Y.Z`, Id", "delta.dataSkippingNumIndexedCols": "1"}, [("id",), ("s", "y.z")]),
        # a struct stands for all its fields
        ({KEY: "s.t, name"}, [("name",), ("s", "t", "u")]),
        ({KEY: "s"}, [("s", "x"), ("s", "y.z"), ("s", "ok"), ("s", "t", "u")]),
        # a column the schema lacks (renamed by another engine, say) is skipped, as Delta skips it
        ({KEY: "gone, name, s.gone"}, [("name",)]),
        # partition columns are not in the files: never
        ({KEY: "p, id", "delta.dataSkippingNumIndexedCols": "-1"}, [("id",)]),
        ({KEY: ""}, []),
        # as Delta's filterSchema: s listed with s.x keeps s.x only (validation refuses the pair)
        ({KEY: "s, s.x"}, [("s", "x")]),
    ],
)
def test_which_columns_get_statistics(config: dict[str, str], paths: list[tuple[str, ...]]) -> None:
    assert list(_columns(config).logical_paths) == paths


def test_statistics_are_keyed_by_physical_names_under_column_mapping() -> None:
    columns = _columns({KEY: "name, s.t"}, mapped=True)
    assert columns.logical_paths == (("name",), ("s", "t", "u"))
    assert columns.physical_paths == (("col-2",), ("col-4", "col-9", "col-8"))
    assert columns.covers(["S"]) and columns.covers(["s", "T", "u"]) and not columns.covers(["id"])


def test_the_python_write_path_collects_what_the_table_asks_for() -> None:
    import pyarrow as pa

    log = _create({KEY: "name, s.`y.z`", "delta.dataSkippingNumIndexedCols": "1"})
    s_type = pa.struct(
        [("x", pa.int64()), ("y.z", pa.string()), ("ok", pa.bool_()), ("t", pa.struct([("u", pa.int32())]))]
    )
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "name": ["b", None],
            "flag": [True, False],
            "s": pa.array([{"x": 1, "y.z": "q", "ok": True, "t": {"u": 1}}, None], s_type),
            "tags": [["a"], []],
        }
    )
    stats = StatsCollector.for_table(log.update().metadata, data.schema)
    stats.update(data)
    parsed = json.loads(stats.to_json())
    assert parsed["minValues"] == parsed["maxValues"] == {"name": "b", "s": {"y.z": "q"}}
    assert parsed["nullCount"] == {"name": 1, "s": {"y.z": 1}}
    # a collector for no table keeps Delta's default: the first 32 leaf columns
    assert [p for p, _ in StatsCollector(data.schema).leaves][:2] == [("id",), ("name",)]


def test_a_variant_column_gets_a_null_count_and_no_bounds_from_its_rows_and_its_footer(tmp_path: Any) -> None:
    """Delta's ``StatisticsCollection`` counts a variant's nulls (a struct above it null
    counts too) and keeps no bounds; a footer's count is the ``metadata`` leaf's."""
    import pyarrow.parquet as pq

    from deltalog.txn.protocol.schema import PrimitiveType, to_arrow_type

    variant = to_arrow_type(PrimitiveType("variant"))
    value = {"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}  # the int8 1
    s = pa.array([{"w": value}, {"w": None}, None, {"w": value}], pa.struct([("w", variant)]))
    data = pa.table({"v": pa.array([value, None, value, value], variant), "s": s})
    fields = [_field("v", "variant"), _field("s", {"type": "struct", "fields": [_field("w", "variant")]})]
    schema = StructType.from_json(json.dumps({"type": "struct", "fields": fields}))
    columns = StatsColumns.for_schema(schema).physical_paths
    from_rows = StatsCollector(data.schema, columns)
    from_rows.update(data)
    pq.write_table(data, tmp_path / "f.parquet")
    from_footer = StatsCollector(data.schema, columns)
    from_footer.update_from_footer(pq.read_metadata(tmp_path / "f.parquet"))
    for stats in (from_rows, from_footer):
        parsed = json.loads(stats.to_json())
        assert parsed == {"numRecords": 4, "minValues": {}, "maxValues": {}, "nullCount": {"v": 1, "s": {"w": 2}}}


def test_a_value_delta_cannot_read_fails_writes_with_a_typed_error() -> None:
    with pytest.raises(InvalidPropertyError, match="not a comma-separated list"):
        _columns({KEY: "a,,b"})


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("nope", "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"),
        ("p.x", "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"),  # partition columns are not data columns
        ("tags.x", "DELTA_INCORRECT_ARRAY_ACCESS_BY_NAME"),
        ("s.nope", "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"),
        ("id.x", "DELTA_COLUMN_PATH_NOT_NESTED"),
        ("p", "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_PARTITIONED_COLUMN"),
        ("flag", "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_TYPE"),
        ("tags", "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_TYPE"),
        ("id, s, s.x", "DELTA_DUPLICATE_DATA_SKIPPING_COLUMNS"),
        ("id,,name", "not a comma-separated list"),
        ("id name", "not a comma-separated list"),
    ],
)
def test_a_table_is_not_created_with_stats_columns_delta_refuses(value: str, match: str) -> None:
    with pytest.raises(InvalidPropertyError, match=match):
        _create({KEY: value})


def test_the_error_names_delta_error_class_and_the_columns() -> None:
    with pytest.raises(InvalidStatsColumnsError) as caught:
        _create({KEY: "id, s.t.u, s.t"})
    assert (caught.value.error_class, caught.value.columns) == ("DELTA_DUPLICATE_DATA_SKIPPING_COLUMNS", ("s.t.u",))
    assert "list each column once" in str(caught.value)


@pytest.mark.parametrize(
    "value",
    [
        "s",  # its boolean field gets a null count only
        "s.ok",  # a nested field of a type without statistics: accepted, as Delta accepts it
        "tags.element",  # Delta's way into an array: accepted, yields no statistics
        "FLAG",  # Delta checks types only of names spelled as the schema spells them
        "name, NAME",  # nor duplicates
        "",
        " id , `name` /* comment */",
    ],
)
def test_stats_columns_delta_accepts_are_accepted(value: str) -> None:
    assert _create({KEY: value}).update().metadata.configuration[KEY] == value


def test_set_table_properties_refuses_a_partition_column_and_leaves_the_table_alone() -> None:
    log = _create({KEY: "name"})
    with pytest.raises(InvalidPropertyError, match="partition column 'p'"):
        alter.set_table_properties(log, {KEY: "name, p"})
    snapshot = log.update()
    assert (snapshot.version, snapshot.metadata.configuration[KEY]) == (0, "name")


# -- ALTER TABLE RENAME / DROP COLUMN ---------------------------------------------------------


def test_renaming_a_listed_column_renames_it_in_the_property() -> None:
    log = _create({KEY: "name, s.x, S.`y.z`"}, mapped=True)
    alter.rename_column(log, "s", "r")
    assert log.update().metadata.configuration[KEY] == "name,r.x,r.`y.z`"
    alter.rename_column(log, "name", "full name")
    assert log.update().metadata.configuration[KEY] == "`full name`,r.x,r.`y.z`"


def test_dropping_a_listed_column_drops_it_from_the_property() -> None:
    log = _create({KEY: "id, s.x, name"}, mapped=True)
    alter.drop_columns(log, ["S"])
    assert log.update().metadata.configuration[KEY] == "id,name"
    alter.drop_columns(log, ["id", "name"])
    # Delta keeps the property, empty: statistics for no column
    assert log.update().metadata.configuration[KEY] == ""


# Delta's StatsCollectionSuite "Truncate max string" (lengths count UTF-16 units, as Java's)
_MAX, _ASCII = "\U0010ffff", "\x7f"


@pytest.mark.parametrize(
    ("value", "expected", "prefix"),
    [
        ("abcd", None, 0),
        (f"a{_MAX}d", f"a{_MAX}{_ASCII}", 2),
        ("abcd", "abcd", 6),
        ("abcd\ufffdabcd", f"abcd\ufffda{_ASCII}", 6),
        ("abcdef\ufffd", f"abcdef{_MAX}", 6),
        ("abcdef-abcdef\ufffd", f"abcdef{_ASCII}", 6),
        ("abcde\ufffdabcdef\ufffdabcdef\ufffdabcdef", f"abcde\ufffd{_ASCII}", 6),
        ("\u6f22\u5b57\u4eee\u540d\ud55c\uae00\u0ba4\u0bae\u0bbf", f"\u6f22\u5b57\u4eee\u540d\ud55c\uae00{_MAX}", 6),
        ("abcdef\U0001f680", f"abcdef{_MAX}", 6),
        (_MAX * 4, None, 1),
        (_MAX * 4, _MAX * 4, 4),
        ("\ufffd" * 3, f"\ufffd{_MAX}", 1),
        (
            "abcdefghijklm\U0001f49e\U0001f609\U0001f495\n\U0001f940\U0001f339\U0001f490\U0001f33a\U0001f337"
            "\U0001f33c\U0001f33b\U0001f337\U0001f940",
            "abcdefghijklm\U0001f49e\U0001f609\U0001f495\n\U0001f940\U0001f339\U0001f490\U0001f33a\U0001f337"
            f"\U0001f33c{_MAX}",
            32,
        ),
    ],
)
def test_string_max_statistics_are_truncated_as_delta_truncates_them(value, expected, prefix):
    assert truncated_max_string(value, prefix) == expected


def test_long_string_and_far_future_maxima_are_written_as_delta_writes_them():
    """A max Delta would write is never left out: readers that take a missing max for no
    rows (delta-rs's pyarrow dataset) would drop the file. The max of a long string gets a
    tie-breaker; a timestamp max whose millisecond rounding would leave year 9999 is written
    truncated (Delta's readers widen it by 1 ms, saturating)."""
    long = "p" * 32
    top = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)
    table = pa.table({"s": [long + "\U0001f600", long + "a"], "t": pa.array([top, top], pa.timestamp("us", tz="UTC"))})
    collector = StatsCollector(table.schema)
    collector.update(table)
    stats = json.loads(collector.to_json())
    assert stats["minValues"] == {"s": "p" * 32, "t": "9999-12-31T23:59:59.999Z"}
    assert stats["maxValues"] == {"s": "p" * 32 + _MAX, "t": "9999-12-31T23:59:59.999Z"}


# -- delta.dataSkippingStringPrefixLength -------------------------------------------------------

PREFIX = "delta.dataSkippingStringPrefixLength"


def test_string_statistics_keep_the_table_string_prefix_length() -> None:
    """Delta's ``substring(min, 0, n)`` and ``truncateMaxStringAgg(n)`` with the table's
    prefix length; 0 keeps an empty minimum and no maximum, as Delta's do."""
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["abcdefgh", "zzzzz\u00e9\u00e9", None]})
    for prefix, low, high in [("5", "abcde", f"zzzzz{_MAX}"), ("0", "", None), ("8", "abcdefgh", "zzzzz\u00e9\u00e9")]:
        log = _create({PREFIX: prefix})
        stats = StatsCollector.for_table(log.update().metadata, data.schema)
        stats.update(data)
        parsed = json.loads(stats.to_json())
        assert (parsed["minValues"]["name"], parsed["maxValues"].get("name")) == (low, high)
    ascii_max = StatsCollector(data.schema, string_prefix_length=3)
    ascii_max.update(pa.table({"id": pa.array([1], pa.int64()), "name": ["abcd"]}))
    assert json.loads(ascii_max.to_json())["maxValues"]["name"] == f"abc{_ASCII}"
    assert StatsColumns.of(log.update().metadata, session_prefix_length=3).string_prefix_length == 8  # the table wins
    assert _columns({}).string_prefix_length == 32


@pytest.mark.parametrize("value", ["-1", "five", "5.0"])
def test_a_string_prefix_length_delta_refuses_is_refused_and_the_table_left_alone(value: str) -> None:
    with pytest.raises(InvalidPropertyError, match=PREFIX):
        _create({PREFIX: value})
    log = _create({PREFIX: "5"})
    with pytest.raises(InvalidPropertyError, match="greater or equal to zero" if value == "-1" else "integer"):
        alter.set_table_properties(log, {PREFIX: value})
    snapshot = log.update()
    assert (snapshot.version, snapshot.metadata.configuration[PREFIX]) == (0, "5")


def test_a_timestamp_past_year_9999_leaves_its_bounds_out_instead_of_failing_the_write() -> None:
    """OptimizeGeneratedColumnSuite writes 12345-07-15 18:00: Spark and Arrow hold it, a
    Python datetime does not, and the task's statistics failed the write (OverflowError)."""
    day = 86_400_000_000
    late = ((dt.datetime(2345, 7, 15) - dt.datetime(1970, 1, 1)).days + 25 * 146_097) * day  # 12345-07-15
    data = pa.table({"id": [1, 2], "ts": pa.array([late, 0], pa.int64()).cast(pa.timestamp("us", tz="UTC"))})
    collector = StatsCollector(data.schema)
    collector.update(data)
    stats = json.loads(collector.to_json())
    assert stats["numRecords"] == 2 and stats["nullCount"]["ts"] == 0
    assert "ts" not in stats["minValues"] and stats["maxValues"]["id"] == 2


# -- which values: Delta's StatsCollectionSuite / DataSkippingDeltaTests, as StatisticsCollection writes them


def _collected(data: pa.Table, config: dict[str, str], partitions: tuple[str, ...] = ()) -> dict[str, Any]:
    columns = StatsColumns.for_schema(from_arrow(data.schema), partitions, config)
    files = data.select([n for n in data.column_names if n not in partitions])
    collector = StatsCollector(files.schema, columns.physical_paths, columns.string_prefix_length)
    collector.update(files)
    parsed: dict[str, Any] = json.loads(collector.to_json())
    return parsed


_MIXED = pa.table(
    {
        "cOl1": pa.array([*range(1, 11), None, -1, None], pa.int64()),
        "COL2": pa.array(
            [{"COL20": i, "CoL21": 10 * i} for i in range(1, 11)]
            + [{"COL20": None, "CoL21": None}, {"COL20": -1, "CoL21": -100}, {"COL20": None, "CoL21": None}],
            pa.struct([("COL20", pa.int32()), ("CoL21", pa.int64())]),
        ),
        "CoL3": pa.array([*range(1, 11), None, -1, None], pa.int64()),
    }
)
_TYPES = pa.table(
    {
        "p": ["x", "x"],
        "bin": pa.array([b"\x00", None], pa.binary()),
        "flag": [True, None],
        "tags": pa.array([[1, None], None], pa.list_(pa.int32())),
        "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
        "d": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-2.25")], pa.decimal128(5, 2)),
        "day": pa.array([dt.date(2024, 1, 1), dt.date(2023, 5, 6)]),
        "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 123000), dt.datetime(2023, 1, 1)], pa.timestamp("us", "UTC")),
        "none": pa.array([None, None], pa.string()),
    }
)
_LONG = pa.table({"strCol": ["a" * 1000, "b" * 1000, "c" * 1000]})
_WIDE = pa.table(
    {
        "p": [1],
        "a": [1],
        "s": pa.array([{"x": 2, "t": {"u": 3}}], pa.struct([("x", pa.int64()), ("t", pa.struct([("u", pa.int64())]))])),
        "b": [4],
    }
)


@pytest.mark.parametrize(
    ("data", "config", "partitions", "expected"),
    [
        # StatsCollectionSuite "mix case column name": the list matched ignoring case, nested fields
        (
            _MIXED,
            {KEY: "coL1, COL2.col20, COL2.col21, cOl3"},
            (),
            {
                "numRecords": 13,
                "minValues": {"cOl1": -1, "COL2": {"COL20": -1, "CoL21": -100}, "CoL3": -1},
                "maxValues": {"cOl1": 10, "COL2": {"COL20": 10, "CoL21": 100}, "CoL3": 10},
                "nullCount": {"cOl1": 2, "COL2": {"COL20": 2, "CoL21": 2}, "CoL3": 2},
            },
        ),
        # binary, boolean, array and map: a null count only; decimals exact, dates, timestamps
        # in milliseconds (UTC); a column of nulls: no bounds (partition column p left out)
        (
            _TYPES,
            {},
            ("p",),
            {
                "numRecords": 2,
                "minValues": {"d": decimal.Decimal("-2.25"), "day": "2023-05-06", "ts": "2023-01-01T00:00:00.000Z"},
                "maxValues": {"d": decimal.Decimal("1.50"), "day": "2024-01-01", "ts": "2024-01-01T00:00:00.123Z"},
                "nullCount": {"bin": 1, "flag": 1, "tags": 1, "m": 1, "d": 0, "day": 0, "ts": 0, "none": 2},
            },
        ),
        # "Data-skipping-string-prefix-length delta table property override: basic"
        (
            _LONG,
            {PREFIX: "64"},
            (),
            {
                "numRecords": 3,
                "minValues": {"strCol": "a" * 64},
                "maxValues": {"strCol": "c" * 64 + _ASCII},
                "nullCount": {"strCol": 0},
            },
        ),
        # DataSkippingDeltaTests "number of indexed columns": nested fields count one by one,
        # partition columns not at all
        (
            _WIDE,
            {"delta.dataSkippingNumIndexedCols": "2"},
            ("p",),
            {
                "numRecords": 1,
                "minValues": {"a": 1, "s": {"x": 2}},
                "maxValues": {"a": 1, "s": {"x": 2}},
                "nullCount": {"a": 0, "s": {"x": 0}},
            },
        ),
        # no stats column (DataSkippingDeltaTests "number of indexed columns" with 0): numRecords
        # only; no column of a type with bounds: no minValues/maxValues (Delta's collectStats
        # gives null for an empty struct, which to_json leaves out)
        (_WIDE, {"delta.dataSkippingNumIndexedCols": "0"}, ("p",), {"numRecords": 1}),
        (_TYPES.select(["bin", "flag"]), {}, (), {"numRecords": 2, "nullCount": {"bin": 1, "flag": 1}}),
    ],
    ids=["mixed-case-list", "types", "prefix-64", "num-indexed-nested", "no-columns", "no-bounded-columns"],
)
def test_the_statistics_delta_records(
    data: pa.Table, config: dict[str, str], partitions: tuple[str, ...], expected: dict[str, Any]
) -> None:
    parsed = _collected(data, config, partitions)
    assert parsed == json.loads(json.dumps(expected, default=float))


def _from_rows_and_footer(metadata: Any, data: pa.Table, tmp_path: Any) -> tuple[StatsCollector, StatsCollector]:
    """Two collectors of ``data``'s statistics: one fed its rows, one the footer of a file of it."""
    import pyarrow.parquet as pq

    pq.write_table(data, tmp_path / "f.parquet")
    from_rows = StatsCollector.for_table(metadata, data.schema)
    from_rows.update(data)
    from_footer = StatsCollector.for_table(metadata, data.schema)
    from_footer.update_from_footer(pq.ParquetFile(tmp_path / "f.parquet").metadata)
    return from_rows, from_footer


def test_a_stats_column_the_file_lacks_counts_as_null_in_every_row(tmp_path: Any) -> None:
    """Delta's ``statsCollector`` counts ``count(*)`` nulls for a stats column missing from the
    written data (DataSkippingDeltaTests "data skipping with missing columns in DataFrame":
    ``c is not null`` skips the file), from the rows and from a footer alike; no bounds."""
    metadata = _create({}).update().metadata
    s_type = pa.struct([("x", pa.int64())])
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": pa.array([{"x": 1}, None, {"x": 3}], s_type)})
    for collector in _from_rows_and_footer(metadata, data, tmp_path):
        parsed = json.loads(collector.to_json())
        assert parsed["nullCount"] == {
            "id": 0,
            "name": 3,
            "flag": 3,
            "s": {"x": 1, "y.z": 3, "ok": 3, "t": {"u": 3}},
            "tags": 3,
        }
        assert parsed["minValues"] == {"id": 1, "s": {"x": 1}} and parsed["maxValues"] == {"id": 3, "s": {"x": 3}}


def test_a_file_column_spelled_in_another_case_is_the_table_column(tmp_path: Any) -> None:
    """A DataFrame's ``S struct<Y, X>`` written into ``s struct<x, y>`` (Spark resolves names
    ignoring case) has its statistics under the table's names, from the rows and from a
    footer; it is not taken for a missing column, which would count it all null and skip
    ``s.x = 4`` wrongly."""
    metadata = _create({}).update().metadata
    s_type = pa.struct([("T", pa.struct([("U", pa.int32())])), ("X", pa.int64())])
    data = pa.table({"ID": pa.array([2], pa.int64()), "S": pa.array([{"T": {"U": 5}, "X": 4}], s_type)})
    for collector in _from_rows_and_footer(metadata, data, tmp_path):
        parsed = json.loads(collector.to_json())
        assert parsed["minValues"] == {"id": 2, "s": {"x": 4, "t": {"u": 5}}}
        assert parsed["nullCount"]["s"] == {"x": 0, "y.z": 1, "ok": 1, "t": {"u": 0}}
