"""Generated columns, identity columns and column defaults in the protocol layer (no I/O):
expressions, filling and checking a batch, high-water marks, and partition filters derived
from filters on a generated partition column's source."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
import pytest

from deltalog.txn.protocol.actions import AddFile, Metadata, Protocol
from deltalog.txn.protocol.column_defaults import (
    UnsupportedDefaultExpressionError,
    plan_default_expressions,
)
from deltalog.txn.protocol.constraint_sql import evaluate, parse_expression
from deltalog.txn.protocol.generated_columns import (
    GeneratedColumnConstraintViolationError,
    UnsupportedGenerationExpressionError,
    derived_partition_terms,
    partition_expressions,
)
from deltalog.txn.protocol.identity import (
    HIGH_WATER_MARK,
    TASK_RANGE,
    IdentityColumnError,
    identity_columns,
    identity_commit_tags,
    is_identity_only_update,
    pop_high_water_marks,
    round_to_next,
    tag_high_water_marks,
    update_high_water_marks,
)
from deltalog.txn.protocol.protocol_requirements import active_features


def _field(name: str, type_: str, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def _metadata(*fields: dict[str, Any], partition_columns: tuple[str, ...] = ()) -> Metadata:
    return Metadata(
        schema_string=json.dumps({"type": "struct", "fields": list(fields)}), partition_columns=partition_columns
    )


def _ts(*args: int, tz: str = "UTC") -> pa.Array:
    return pa.array([dt.datetime(*args)], pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz=tz))


# -- expressions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("date(ts)", dt.date(2024, 3, 5)),
        ("CAST(ts AS DATE)", dt.date(2024, 3, 5)),
        ("to_date(ts)", dt.date(2024, 3, 5)),
        ("year(ts)", 2024),
        ("month(ts)", 3),
        ("day(ts)", 5),
        ("hour(ts)", 18),  # 23:30 UTC is 18:30 in New York: Spark's session time zone
        ("date_format(ts, 'yyyy-MM')", "2024-03"),
        ("trunc(ts, 'MM')", dt.date(2024, 3, 1)),
        ("concat(s, '-', CAST(year(ts) AS STRING))", "ab-2024"),
        ("substring(s, 2, 1)", "b"),
    ],
)
def test_generation_functions_follow_spark_in_the_data_time_zone(expr: str, expected: Any) -> None:
    data = pa.table({"ts": _ts(2024, 3, 5, 23, 30, tz="America/New_York"), "s": ["ab"]})
    value = evaluate(parse_expression(expr), data, expr)
    assert (value if isinstance(value, pa.Scalar) else value[0]).as_py() == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("yyyy-MM", ["+12345-07", "2024-03", "0999-01"]),
        ("MM/yyyy-dd-HH", ["07/+12345-15-18", "03/2024-05-23", "01/0999-01-00"]),
    ],
)
def test_date_format_signs_a_year_past_9999_as_spark(pattern: str, expected: list[str]) -> None:
    """OptimizeGeneratedColumnSuite "five digits year in a date_format yyyy-MM partition
    column": Java's ``yyyy`` prints a year of more than four digits with its sign
    (``+12345-07``); deltalog wrote ``12345-07``, a value Delta's check then refuses."""
    epoch = dt.datetime(1970, 1, 1)
    day = 86_400_000_000
    # 12345-07-15 18:00 (2345 plus 25 cycles of 400 years), 2024-03-05 23:30, 0999-01-01
    micros = [
        ((dt.datetime(2345, 7, 15, 18) - epoch).days + 25 * 146_097) * day + 18 * 3_600_000_000,
        (dt.datetime(2024, 3, 5, 23, 30) - epoch) // dt.timedelta(microseconds=1),
        (dt.datetime(999, 1, 1) - epoch) // dt.timedelta(microseconds=1),
    ]
    data = pa.table({"ts": pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))})
    expr = f"date_format(ts, '{pattern}')"
    assert evaluate(parse_expression(expr), data, expr).to_pylist() == expected


def test_a_generated_column_is_computed_when_missing_and_checked_when_given() -> None:
    metadata = _metadata(_field("ts", "timestamp"), _field("d", "date", **{"delta.generationExpression": "date(ts)"}))
    fill = plan_default_expressions(metadata).for_task(0)
    data = pa.table({"ts": pa.concat_arrays([_ts(2024, 1, 1, 10), pa.nulls(1, pa.timestamp("us", tz="UTC"))])})
    assert fill(data).column("d").to_pylist() == [dt.date(2024, 1, 1), None]
    # given and equal (NULL <=> NULL holds)
    ok = data.append_column("d", pa.array([dt.date(2024, 1, 1), None], pa.date32()))
    assert fill(ok).column("d").to_pylist() == [dt.date(2024, 1, 1), None]
    for wrong in ([dt.date(2024, 1, 2), None], [dt.date(2024, 1, 1), dt.date(2024, 1, 1)]):
        bad = data.append_column("d", pa.array(wrong, pa.date32()))
        with pytest.raises(GeneratedColumnConstraintViolationError, match=r"Generated Column \(d <=> date\(ts\)\)"):
            fill(bad)


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("CASE WHEN x > 1 THEN 1 ELSE 0 END", "CASE"),
        ("current_date()", "not deterministic"),
        ("nope + 1", "unknown columns"),
        ("date_format(ts, 'EEE')", "date_format() with the pattern 'EEE'"),
    ],
)
def test_a_generation_expression_outside_the_subset_is_refused_by_name(expression: str, reason: str) -> None:
    metadata = _metadata(
        _field("x", "long"),
        _field("ts", "timestamp"),
        _field("g", "string", **{"delta.generationExpression": expression}),
    )
    with pytest.raises(UnsupportedGenerationExpressionError, match="generated column g") as err:
        plan_default_expressions(metadata)
    assert reason in str(err.value)


def test_column_defaults_fill_only_missing_columns() -> None:
    metadata = _metadata(
        _field("x", "long"),
        _field("status", "string", CURRENT_DEFAULT="'new'"),
        _field("n", "integer", CURRENT_DEFAULT="40 + 2"),
        _field("at", "date", CURRENT_DEFAULT="current_date()"),
    )
    assert "allowColumnDefaults" in active_features(metadata)
    fill = plan_default_expressions(metadata).for_task(0)
    out = fill(pa.table({"x": [1, 2], "n": pa.array([None, 7], pa.int32())}))
    assert out.column("status").to_pylist() == ["new", "new"]
    assert out.column("n").to_pylist() == [None, 7]  # given (NULL too): kept
    assert out.column("at").to_pylist() == [dt.datetime.now(dt.timezone.utc).date()] * 2
    with pytest.raises(UnsupportedDefaultExpressionError, match="cannot name a column"):
        plan_default_expressions(_metadata(_field("x", "long"), _field("y", "long", CURRENT_DEFAULT="x + 1")))


# -- identity ----------------------------------------------------------------------------


def _identity(name: str = "id", start: int = 1, step: int = 1, hwm: int | None = None, allow: bool = False) -> dict:
    meta: dict[str, Any] = {
        "delta.identity.start": start,
        "delta.identity.step": step,
        "delta.identity.allowExplicitInsert": allow,
    }
    if hwm is not None:
        meta[HIGH_WATER_MARK] = hwm
    return _field(name, "long", **meta)


def test_identity_values_continue_past_the_high_water_mark_in_per_task_ranges() -> None:
    metadata = _metadata(_identity(start=10, step=-3, hwm=4), _field("x", "long"))
    plan = plan_default_expressions(metadata)
    first, second = plan.for_task(0), plan.for_task(1)
    a = first(pa.table({"x": [1, 2]}))
    b = first(pa.table({"x": [3]}))
    c = second(pa.table({"x": [4]}))
    assert a.column("id").to_pylist() == [1, -2]
    assert b.column("id").to_pylist() == [-5]  # continues across the task's batches
    assert c.column("id").to_pylist() == [1 - 3 * TASK_RANGE]
    assert first.high_water_marks == {"id": -5}
    assert second.high_water_marks == {"id": 1 - 3 * TASK_RANGE}
    given = first(pa.table({"x": [5], "id": [99]}))
    assert given.column("id").to_pylist() == [99] and first.high_water_marks == {"id": -5}


def test_identity_overflow_and_inconsistent_metadata_are_refused() -> None:
    near_max = _metadata(_identity(start=(1 << 63) - 2, step=1), _field("x", "long"))
    with pytest.raises(IdentityColumnError, match="overflows a long"):
        plan_default_expressions(near_max).for_task(0)(pa.table({"x": [1, 2, 3]}))
    broken = _field("id", "long", **{"delta.identity.start": 1})
    with pytest.raises(IdentityColumnError, match="must have all of"):
        identity_columns(_metadata(broken))
    with pytest.raises(IdentityColumnError, match="step 0"):
        identity_columns(_metadata(_identity(step=0)))


@pytest.mark.parametrize(
    ("start", "step", "value", "expected"),
    [(1, 3, 6, 7), (1, 3, 7, 7), (10, 3, 9, 10), (1, -3, -4, -5), (-1, -3, -2, -4), (5, 5, -7, -5)],
)
def test_round_to_next_is_deltas(start: int, step: int, value: int, expected: int) -> None:
    assert round_to_next(start, step, value) == expected


def test_round_to_next_is_exact_for_large_offsets_and_refuses_overflow() -> None:
    """IdentityColumn.roundToNext divides longs exactly (a double is exact only up to 53
    bits) and throws ArithmeticException (Math.subtractExact/addExact) past a long."""
    assert round_to_next(0, 3, (1 << 62) + 1) == (1 << 62) + 2
    assert round_to_next(-(1 << 62), 7, (1 << 62) - 3) == -(1 << 62) + 7 * (((1 << 63) - 3) // 7 + 1)
    with pytest.raises(IdentityColumnError, match="overflows a long"):
        round_to_next(-(1 << 63) + 1, 7, (1 << 63) - 2)  # value - start overflows
    with pytest.raises(IdentityColumnError, match="overflows a long"):
        round_to_next(0, 1 << 62, (1 << 63) - 1)  # the next multiple overflows


def test_values_are_refused_past_a_high_water_mark_off_the_start_and_step() -> None:
    """PartitionIdentityValueGenerator's require((highWaterMark - start) % step == 0)
    (GenerateIdentityValuesSuite "invalid high water mark"): generating from it would
    give values that do not follow start and step."""
    metadata = _metadata(_identity(start=1, step=2, hwm=4), _field("x", "long"))
    with pytest.raises(IdentityColumnError, match="high-water mark 4"):
        plan_default_expressions(metadata).for_task(0)(pa.table({"x": [1]}))
    given = plan_default_expressions(metadata).for_task(0)(pa.table({"x": [1], "id": [5]}))
    assert given.column("id").to_pylist() == [5]  # explicit values need no generation


def test_high_water_marks_only_move_forward_and_mark_an_identity_only_update() -> None:
    metadata = _metadata(_identity(start=1, step=2, hwm=9), _field("x", "long"))
    assert update_high_water_marks(metadata, {"id": [3, 5]}) is metadata  # behind the mark: kept
    moved = update_high_water_marks(metadata, {"id": [13, 20]})  # 20 rounds up to 21
    assert identity_columns(moved)[0].high_water_mark == 21
    assert is_identity_only_update(metadata, moved)
    assert identity_commit_tags(metadata, moved) == {"tags": {"delta.identity.schemaUpdate": "true"}}
    renamed = Metadata(schema_string=moved.schema_string.replace('"x"', '"y"'))
    assert not is_identity_only_update(metadata, renamed)
    assert identity_commit_tags(metadata, None) == {}


def test_task_high_water_marks_travel_on_add_tags_and_never_reach_the_log() -> None:
    add = AddFile("a.parquet", {}, size=1, modification_time=0, tags={"keep": "1"})
    tagged = tag_high_water_marks(add, {"id": 7})
    other = tag_high_water_marks(AddFile("b.parquet", {}, size=1, modification_time=0), {"id": 3})
    adds, marks = pop_high_water_marks([tagged, other])
    assert marks == {"id": [7, 3]}
    assert [a.tags for a in adds] == [{"keep": "1"}, None]


# -- partition filters from the source column -------------------------------------------


def _partition_table(expression: str, source_type: str = "timestamp", part_type: str = "date") -> Metadata:
    return _metadata(
        _field("ts", source_type),
        _field("p", part_type, **{"delta.generationExpression": expression}),
        partition_columns=("p",),
    )


def test_filters_on_a_timestamp_derive_date_partition_filters() -> None:
    ntz = partition_expressions(_partition_table("CAST(ts AS DATE)", "timestamp_ntz"), None)
    when = dt.datetime(2024, 1, 2, 10)
    assert derived_partition_terms([("ts", ">=", when)], ntz) == [("p", ">=", dt.date(2024, 1, 2))]
    assert derived_partition_terms([("ts", "<", when)], ntz) == [("p", "<=", dt.date(2024, 1, 2))]
    assert derived_partition_terms([("ts", "=", "2024-01-02 10:00:00")], ntz) == [("p", "=", dt.date(2024, 1, 2))]
    assert derived_partition_terms([("ts", "isnull", None)], ntz) == [("p", "isnull", None)]
    assert derived_partition_terms([("other", "=", when)], ntz) == []
    # a timestamp with a zone: the partition holds the date in the writer's session time zone,
    # unknown here, so the bounds widen by the largest zone offset
    ltz = partition_expressions(_partition_table("date(ts)"), None)
    aware = dt.datetime(2024, 1, 2, 10, tzinfo=dt.timezone.utc)
    assert derived_partition_terms([("ts", "=", aware)], ltz) == [
        ("p", ">=", dt.date(2024, 1, 1)),
        ("p", "<=", dt.date(2024, 1, 3)),
    ]


def test_text_compared_with_a_date_source_is_the_date_spark_casts_it_to() -> None:
    """OptimizeGeneratedColumnSuite "DatePartitionExpr from cast(date)": Spark compares a date
    column with text cast to a date (``eventDate < '2021-01-01 18:00:00'`` is ``< DATE
    '2021-01-01'``), and Delta derives ``date <= DATE '2021-01-01'`` from it."""
    year = partition_expressions(_partition_table("year(ts)", "date", "integer"), None)
    assert derived_partition_terms([("ts", "<", "2021-01-01 18:00:00"), ("ts", ">=", "2021-01-01")], year) == [
        ("p", "<=", 2021),
        ("p", ">=", 2021),
    ]
    assert derived_partition_terms([("ts", "=", "2021-13-01"), ("ts", "=", "soon")], year) == []


def test_with_the_session_time_zone_the_derived_filters_are_exact() -> None:
    ltz = partition_expressions(_partition_table("date(ts)"), None)
    text = "2024-01-02 00:30:00"  # Spark reads it in the session time zone
    assert derived_partition_terms([("ts", ">=", text)], ltz, "UTC") == [("p", ">=", dt.date(2024, 1, 2))]
    aware = dt.datetime(2024, 1, 2, 3, tzinfo=dt.timezone.utc)  # Jan 1st, 22:00 in New York
    assert derived_partition_terms([("ts", "<", aware)], ltz, "America/New_York") == [("p", "<=", dt.date(2024, 1, 1))]
    # a session zone given as an offset (Spark takes "-08:00" as ZoneId.of does): exact too,
    # 03:00 UTC is the 1st, 19:00 at -08:00
    assert derived_partition_terms([("ts", "=", aware)], ltz, "-08:00") == [("p", "=", dt.date(2024, 1, 1))]
    assert derived_partition_terms([("ts", "=", aware)], ltz, "GMT+05:30") == [("p", "=", dt.date(2024, 1, 2))]
    # a name no zone database knows: the bounds widen as for no zone
    assert derived_partition_terms([("ts", "=", aware)], ltz, "Mars/Olympus") == [
        ("p", ">=", dt.date(2024, 1, 1)),
        ("p", "<=", dt.date(2024, 1, 2)),
    ]


def test_substring_and_copied_partition_columns_derive_filters_as_deltas() -> None:
    """OptimizeGeneratedColumnSuite's SubstringPartitionExpr and IdentityPartitionExpr: a
    filter on ``value`` prunes by ``substr = SUBSTRING(value, pos, len)`` (``=`` at any
    position; ``>``/``>=`` only from the first character, where truncation keeps the order;
    ``<``/``<=`` from the first character too, keeping the null partition an empty string
    writes: ``OR IS NULL``) and by ``part = value`` with the filter itself."""
    substr = partition_expressions(_partition_table("SUBSTRING(ts, 2, 3)", "string", "string"), None)
    assert derived_partition_terms([("ts", "=", "abcdef")], substr) == [("p", "=", "bcd")]
    assert derived_partition_terms([("ts", ">=", "abcdef")], substr) == []  # not from the start
    assert derived_partition_terms([("ts", "isnull", None)], substr) == [("p", "isnull", None)]
    head = partition_expressions(_partition_table("substr(ts, 0, 2)", "string", "string"), None)
    assert derived_partition_terms([("ts", ">", "abc"), ("ts", "<", "b")], head) == [
        ("p", ">=", "ab"),
        ("", "or", ((("p", "<=", "b"),), (("p", "isnull", None),))),
    ]
    from deltalog.contrib.spark.scan import plan_files

    files = [AddFile(f"f-{v}", {"p": v}, 1, 0) for v in ("ab", "bc", "cd", None)]
    kept = plan_files(files, 1, [("ts", "<=", "bc")], ["p"], {"ts": "string", "p": "string"}, generated=head).files
    assert [f.path for f in kept] == ["f-ab", "f-bc", "f-None"]  # "" is in the null partition
    assert derived_partition_terms([("ts", "=", "é€x")], head) == [("p", "=", "é€")]  # characters, not bytes
    assert derived_partition_terms([("ts", "=", "")], head) == []  # the partition is null
    # Delta takes any position (SUBSTRING(value, -2, 2) of a table Delta wrote); deltalog does
    # not evaluate negative ones: the filter prunes nothing instead of failing the read
    tail = partition_expressions(_partition_table("SUBSTRING(ts, -2, 2)", "string", "string"), None)
    assert derived_partition_terms([("ts", "=", "abc"), ("ts", "isnull", None)], tail) == []
    # Spark's UTF8String.substringSQL: position 0 starts at the first character, as 1 does
    data = pa.table({"s": ["abc"]})
    assert evaluate(parse_expression("substr(s, 0, 2)"), data, "").to_pylist() == ["ab"]
    assert evaluate(parse_expression("substring(s, 1, 2)"), data, "").to_pylist() == ["ab"]
    copied = partition_expressions(_partition_table("ts", "long", "long"), None)
    terms = [("ts", "<", 5), ("ts", "=", 3), ("ts", "isnull", None)]
    assert derived_partition_terms(terms, copied) == [("p", "<", 5), ("p", "=", 3), ("p", "isnull", None)]
    assert partition_expressions(_partition_table("ts", "double", "integer"), None) == []  # a cast: not a copy
    # a copied string: '' is written as a null partition value, which Delta keeps with
    # OR part IS NULL (a comparison alone pruned the partition of the rows with '')
    text = partition_expressions(_partition_table("ts", "string", "string"), None)
    terms = [("ts", "<", "foo"), ("ts", "=", "")]
    assert derived_partition_terms(terms, text) == [
        ("", "or", ((("p", "<", "foo"),), (("p", "isnull", None),))),
        ("", "or", ((("p", "=", ""),), (("p", "isnull", None),))),
    ]
    from deltalog.contrib.spark.scan import plan_files

    files = [AddFile(f"f-{v}", {"p": v}, 1, 0) for v in ("a", "zz", None)]
    types = {"ts": "string", "p": "string"}
    for term, kept in ((("ts", "<", "foo"), ["f-a", "f-None"]), (("ts", "=", ""), ["f-None"])):
        assert [f.path for f in plan_files(files, 1, [term], ["p"], types, generated=text).files] == kept


def test_non_monotonic_parts_derive_only_exact_equalities() -> None:
    ntz_hour = partition_expressions(_partition_table("hour(ts)", "timestamp_ntz", "integer"), None)
    when = dt.datetime(2024, 1, 2, 10, 30)
    assert derived_partition_terms([("ts", "=", when)], ntz_hour) == [("p", "=", 10)]
    assert derived_partition_terms([("ts", ">", when)], ntz_hour) == []
    ltz_hour = partition_expressions(_partition_table("hour(ts)", "timestamp", "integer"), None)
    assert derived_partition_terms([("ts", "=", when)], ltz_hour) == []  # zone unknown
    fmt = partition_expressions(_partition_table("date_format(ts, 'yyyy-MM')", "timestamp_ntz", "string"), None)
    assert derived_partition_terms([("ts", "<=", when)], fmt) == [("p", "<=", "2024-01")]
    assert partition_expressions(_partition_table("CAST(ts AS STRING)", "timestamp_ntz", "string"), None) == []
    # Delta's DateFormatPartitionExpr takes only yyyy-MM, yyyy-MM-dd and yyyy-MM-dd-HH: the
    # strings of 'MM-yyyy' (or 'HH') do not sort as time: a range pruned partitions of matching
    # rows; other patterns derive exact equalities only
    for pattern in ("MM-yyyy", "dd-MM-yyyy", "HH", "yyyy-dd-MM", "yyyyMMdd"):
        table = _partition_table(f"date_format(ts, '{pattern}')", "timestamp_ntz", "string")
        other = partition_expressions(table, None)
        assert derived_partition_terms([("ts", "<=", when), ("ts", ">", when)], other) == [], pattern
        assert len(derived_partition_terms([("ts", "=", when)], other)) == 1, pattern


def test_year_month_day_partitions_prune_by_a_range_as_deltas() -> None:
    """OptimizeGeneratedColumnSuite's YearMonthDayPartitionExpr: ``ts >= t`` keeps ``year >
    Y OR (year = Y AND month > M) OR (year = Y AND month = M AND day >= D)``; ``ts < t`` the
    mirror with ``<=`` (the partition of t holds earlier rows too); ``=`` both."""
    from deltalog.contrib.spark.scan import plan_files

    parts = {"y": "year(ts)", "m": "month(ts)", "d": "day(ts)"}
    fields = [_field(c, "integer", **{"delta.generationExpression": e}) for c, e in parts.items()]
    metadata = _metadata(_field("ts", "timestamp_ntz"), *fields, partition_columns=("y", "m", "d"))
    generated = partition_expressions(metadata, None)
    when = dt.datetime(2024, 3, 15, 10)
    (at_least,) = [t for t in derived_partition_terms([("ts", ">=", when)], generated) if t[1] == "or"]
    assert at_least == (
        "",
        "or",
        ((("y", ">", 2024),), (("y", "=", 2024), ("m", ">", 3)), (("y", "=", 2024), ("m", "=", 3), ("d", ">=", 15))),
    )
    days = [(2023, 12, 31), (2024, 2, 20), (2024, 3, 14), (2024, 3, 15), (2024, 3, 16), (2024, 4, 1), (2025, 1, 1)]
    files = [AddFile(f"{y}-{m}-{d}", {"y": str(y), "m": str(m), "d": str(d)}, 1, 0) for y, m, d in days]
    types = {"ts": "timestamp_ntz", "y": "integer", "m": "integer", "d": "integer"}

    def kept(*terms: tuple[str, str, Any]) -> list[str]:
        return [f.path for f in plan_files(files, 1, list(terms), ["y", "m", "d"], types, generated=generated).files]

    assert kept(("ts", ">=", when)) == ["2024-3-15", "2024-3-16", "2024-4-1", "2025-1-1"]
    assert kept(("ts", ">", when)) == ["2024-3-15", "2024-3-16", "2024-4-1", "2025-1-1"]
    assert kept(("ts", "<", when)) == ["2023-12-31", "2024-2-20", "2024-3-14", "2024-3-15"]
    assert kept(("ts", "=", when)) == ["2024-3-15"]
    assert kept(("ts", ">=", dt.datetime(2024, 3, 1)), ("ts", "<", dt.datetime(2024, 4, 1))) == [
        "2024-3-14",
        "2024-3-15",
        "2024-3-16",
        "2024-4-1",
    ]


def test_plan_files_skips_partitions_by_a_filter_on_the_source_column() -> None:
    from deltalog.contrib.spark.scan import plan_files

    metadata = _partition_table("CAST(ts AS DATE)", "timestamp_ntz")
    files = [
        AddFile(f"p={day}/f.parquet", {"p": day}, size=1, modification_time=0)
        for day in ("2024-01-01", "2024-01-02", "2024-01-03")
    ]
    types = {"ts": "timestamp_ntz", "p": "date"}
    terms = [("ts", ">=", dt.datetime(2024, 1, 2, 12))]
    plan = plan_files(files, 1, terms, ["p"], types, generated=partition_expressions(metadata, None))
    assert [f.path for f in plan.files] == ["p=2024-01-02/f.parquet", "p=2024-01-03/f.parquet"]
    assert len(plan_files(files, 1, terms, ["p"], types).files) == 3  # without the derivation
    # Delta's generatePartitionFilters: only where the protocol enforces generated columns
    assert partition_expressions(metadata, Protocol(1, 2)) == []
    assert len(partition_expressions(metadata, Protocol(1, 4))) == 1


def test_date_trunc_partitions_hold_instants_of_the_local_truncation() -> None:
    """OptimizeGeneratedColumnSuite's TimestampTruncPartitionExpr: ``date_trunc`` truncates
    the local time of the session and its timestamp partition holds that local time as an
    instant; a bound compared as a UTC wall-clock time pruned the partitions of matching rows
    (``ts = '2021-01-01 00:00:00'`` in Los Angeles is in the partition 08:00 UTC). Delta does
    not optimize a ``timestamp_ntz``."""
    from deltalog.contrib.spark.scan import plan_files

    utc, la = dt.timezone.utc, "America/Los_Angeles"
    hour = partition_expressions(_partition_table("date_trunc('HOUR', ts)", "timestamp", "timestamp"), None)
    at = dt.datetime(2021, 1, 1, 8, tzinfo=utc)
    assert derived_partition_terms([("ts", "=", "2021-01-01 00:00:00")], hour, la) == [("p", "=", at)]
    files = [AddFile(f"f{h}", {"p": f"2021-01-01T{h:02}:00:00.000000Z"}, 1, 0) for h in (0, 7, 8, 9, 16)]
    types = {"ts": "timestamp", "p": "timestamp"}

    def kept(generated: Any, term: tuple[str, str, Any], zone: str | None = la) -> list[str]:
        return [f.path for f in plan_files(files, 1, [term], ["p"], types, generated=generated, time_zone=zone).files]

    assert kept(hour, ("ts", "=", "2021-01-01 00:00:00")) == ["f8"]
    assert kept(hour, ("ts", "<=", "2021-01-01 00:30:00")) == ["f0", "f7", "f8"]
    assert kept(hour, ("ts", ">", "2021-01-01 08:30:00")) == ["f16"]
    # without the session's zone the bounds widen by the zone's offset on top of the truncation's
    year = partition_expressions(_partition_table("date_trunc('YEAR', ts)", "timestamp", "timestamp"), None)
    assert kept(year, ("ts", "<=", dt.datetime(2021, 6, 1, tzinfo=utc)), None) == ["f0", "f7", "f8", "f9"]
    assert kept(year, ("ts", "<=", dt.datetime(2021, 6, 1, tzinfo=utc))) == ["f0", "f7", "f8"]
    # a date source's midnight: Delta writes the session zone's, deltalog UTC's; both are kept
    day = partition_expressions(_partition_table("date_trunc('DD', ts)", "date", "timestamp"), None)
    assert kept(day, ("ts", "=", dt.date(2021, 1, 1))) == ["f0", "f7", "f8", "f9"]
    assert kept(day, ("ts", "=", dt.date(2021, 1, 1)), None) == ["f0", "f7", "f8", "f9"]
    assert partition_expressions(_partition_table("date_trunc('HOUR', ts)", "timestamp_ntz", "timestamp"), None) == []


def test_a_lower_bound_on_a_date_format_partition_keeps_years_past_9999() -> None:
    """OptimizeGeneratedColumnSuite "end-to-end test of behaviors of write/read null on
    partition column": ``date_format`` writes a year past 9999 with its sign (``+12345-07``),
    text that sorts before every four-digit year; Delta compares parsed times, so ``ts >=
    '2021-06-01'`` reads that row. A text bound alone pruned its partition."""
    from deltalog.contrib.spark.scan import plan_files

    fmt = partition_expressions(_partition_table("date_format(ts, 'yyyy-MM')", "timestamp_ntz", "string"), None)
    files = [AddFile(v, {"p": v}, 1, 0) for v in ("2021-01", "2021-07", "+12345-07")]
    types = {"ts": "timestamp_ntz", "p": "string"}
    for op in (">", ">="):
        term = ("ts", op, dt.datetime(2021, 6, 1))
        assert [f.path for f in plan_files(files, 1, [term], ["p"], types, generated=fmt).files] == [
            "2021-07",
            "+12345-07",
        ]


def test_a_generated_column_violation_shows_the_nested_field_it_reads_not_its_struct() -> None:
    # as Delta's DELTA_VIOLATE_CONSTRAINT_WITH_VALUES: " - s.a.b : 2", the field's value
    b = _field("b", "integer")
    a = {"name": "a", "type": {"type": "struct", "fields": [b]}, "nullable": True, "metadata": {}}
    s = {"name": "s", "type": {"type": "struct", "fields": [a]}, "nullable": True, "metadata": {}}
    metadata = _metadata(s, _field("g", "integer", **{"delta.generationExpression": "s.a.b * 2"}))
    fill = plan_default_expressions(metadata).for_task(0)
    data = pa.table({"s": pa.array([{"a": {"b": 2}}]), "g": pa.array([5], pa.int32())})
    with pytest.raises(GeneratedColumnConstraintViolationError) as info:
        fill(data)
    assert info.value.values == {"g": 5, "s.a.b": 2}
    assert " - s.a.b : 2\n" in str(info.value)
