"""The constraint evaluator: a SQL subset compiled to pyarrow.compute, Delta's NULL rule."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from deltalog.errors import DeltaError
from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.constraints import (
    Constraint,
    ConstraintViolationError,
    UnsupportedConstraintError,
    check_constraints,
    compile_constraints,
    table_constraints,
)

ROWS = pa.table(
    {
        "id": pa.array([1, 2, 3, None], pa.int64()),
        "small": pa.array([1, 2, 3, 4], pa.int16()),
        "price": pa.array([1.5, 2.0, None, 10.25], pa.float64()),
        "amount": pa.array([Decimal("1.10"), Decimal("2.00"), Decimal("3.50"), None], pa.decimal128(10, 2)),
        "name": pa.array(["alice", "Bob", "carol_x", None], pa.string()),
        "flag": pa.array([True, False, True, None], pa.bool_()),
        "day": pa.array([dt.date(2024, 1, 1), dt.date(2024, 6, 30), dt.date(2025, 1, 1), None], pa.date32()),
        "at": pa.array(
            [dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 6, 30), dt.datetime(2025, 1, 1, 0, 0, 1), None],
            pa.timestamp("us", tz="UTC"),
        ),
        "Weird Col": pa.array([10, 20, 30, 40], pa.int32()),
        "addr": pa.array(
            [
                {"city": "Paris", "zip": {"code": 75001}},
                {"city": "Lyon", "zip": {"code": 69001}},
                {"city": None, "zip": None},
                None,
            ],
            pa.struct([("city", pa.string()), ("zip", pa.struct([("code", pa.int64())]))]),
        ),
    }
)


def values(expr: str, data: pa.Table = ROWS) -> list[bool | None]:
    (compiled,) = compile_constraints([Constraint("c", expr, "check")])
    return compiled.evaluate(data).to_pylist()


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # comparisons, three-valued
        ("id > 1", [False, True, True, None]),
        ("id >= 2", [False, True, True, None]),
        ("id = 2", [False, True, False, None]),
        ("id == 2", [False, True, False, None]),
        ("id != 2", [True, False, True, None]),
        ("id <> 2", [True, False, True, None]),
        ("id < 2 OR id > 2", [True, False, True, None]),
        ("2 < id", [False, False, True, None]),
        ("small * 10 = `Weird Col`", [True, True, True, True]),
        # logic with NULL: FALSE AND NULL is FALSE, TRUE OR NULL is TRUE
        ("id > 5 AND price > 0", [False, False, False, None]),
        ("id > 0 OR price > 0", [True, True, True, True]),
        ("NOT flag", [False, True, False, None]),
        ("NOT (id = 1) AND NOT id = 3", [False, True, False, None]),
        # IS [NOT] NULL
        ("id IS NULL", [False, False, False, True]),
        ("price IS NOT NULL", [True, True, False, True]),
        ("id IS NULL OR id > 0", [True, True, True, True]),
        # IN
        ("id IN (1, 3)", [True, False, True, None]),
        ("id NOT IN (1, 3)", [False, True, False, None]),
        ("id IN (1, NULL)", [True, None, None, None]),
        # null-safe equality
        ("id <=> 1", [True, False, False, False]),
        ("id <=> NULL", [False, False, False, True]),
        ("price <=> small / 2", [False, False, False, False]),
        ("NOT (addr.city <=> 'Paris')", [False, True, True, True]),
        ("name IN ('alice', 'Bob')", [True, True, False, None]),
        ("id IN (small, 99)", [True, True, True, None]),
        # BETWEEN
        ("id BETWEEN 2 AND 3", [False, True, True, None]),
        ("id NOT BETWEEN 2 AND 3", [True, False, False, None]),
        ("price BETWEEN 1 AND 2.0", [True, True, None, False]),
        # LIKE
        ("name LIKE 'a%'", [True, False, False, None]),
        ("name LIKE '_ob'", [False, True, False, None]),
        ("name NOT LIKE '%x'", [True, True, False, None]),
        ("name LIKE 'carol\\_%'", [False, False, True, None]),
        # arithmetic
        ("id + 1 = 2", [True, False, False, None]),
        ("id - small = 0", [True, True, True, None]),
        ("-id < 0", [True, True, True, None]),
        ("id * 2 >= 4", [False, True, True, None]),
        ("id / 2 = 0.5", [True, False, False, None]),
        ("id % 2 = 1", [True, False, True, None]),
        ("-7 % 3 = -1", [True, True, True, True]),
        ("id / 0 IS NULL", [True, True, True, True]),
        ("id % 0 IS NULL", [True, True, True, True]),
        ("(id + 1) * 2 = 4", [True, False, False, None]),
        ("price * 2 > 3.5", [False, True, None, True]),
        ("amount > 2", [False, False, True, None]),
        ("amount + 1 >= 3.0", [False, True, True, None]),
        # functions
        ("length(name) = 5", [True, False, False, None]),
        ("LENGTH(name) > 2", [True, True, True, None]),
        ("lower(name) = 'bob'", [False, True, False, None]),
        ("upper(name) = 'ALICE'", [True, False, False, None]),
        ("abs(-id) = id", [True, True, True, None]),
        ("coalesce(id, 0) >= 0", [True, True, True, True]),
        ("coalesce(price, id, 0) > 1", [True, True, True, True]),
        # literals
        ("TRUE", [True, True, True, True]),
        ("FALSE OR flag", [True, False, True, None]),
        ("NULL", [None, None, None, None]),
        ("1.5e1 > id", [True, True, True, None]),
        ('name = "alice"', [True, False, False, None]),
        ("name != 'it''s'", [True, True, True, None]),
        ("day >= DATE '2024-06-30'", [False, True, True, None]),
        ("day < '2024-06-30'", [True, False, False, None]),
        ("at > TIMESTAMP '2024-06-30 00:00:00'", [False, False, True, None]),
        ("at <= '2024-01-01T12:00:00Z'", [True, False, False, None]),
        # nested and quoted columns, case-insensitive names
        ("addr.city IS NOT NULL", [True, True, False, False]),
        ("addr.zip.code > 70000", [True, False, None, None]),
        ("`addr`.`city` = 'Paris'", [True, False, None, None]),
        ("ID = 1", [True, False, False, None]),
        ("ADDR.CITY = 'Lyon'", [False, True, None, None]),
        ("`Weird Col` > 15", [False, True, True, True]),
        # a column the data lacks is NULL (as in Delta's checker)
        ("missing IS NULL", [True, True, True, True]),
        ("missing > 1", [None, None, None, None]),
        ("addr.nope IS NULL", [True, True, True, True]),
    ],
)
def test_expressions(expr, expected):
    assert values(expr) == expected


@pytest.mark.parametrize(
    ("expr", "construct"),
    [
        ("CASE WHEN id > 1 THEN TRUE ELSE FALSE END", "CASE"),
        ("CAST(id AS DECIMAL(10, 2)) = 1", "CAST to DECIMAL"),
        ("reverse(name) = 'ax'", "the function reverse()"),
        ("name || 'x' = 'ax'", "the operator '||'"),
        ("name RLIKE '^a'", "RLIKE"),
        ("id IN (SELECT 1)", "a subquery"),
        ("id IS TRUE", "IS TRUE"),
        ("name LIKE name", "LIKE with a pattern that is not a string literal"),
        ("length(name, 2) = 1", "length() with 2 argument(s)"),
        ("id > ", "the end of the expression"),
        ("id > 1 extra", "'extra' at position 7"),
        ("id # 1", "the character '#' at position 3"),
        ("", "an empty expression"),
        ("a.b(1)", "the function a.b()"),
        ("DATE 'not a date' > day", "the DATE literal 'not a date'"),
    ],
)
def test_unsupported_constructs_fail_at_compile_time(expr, construct):
    with pytest.raises(UnsupportedConstraintError) as err:
        compile_constraints([Constraint("c", expr, "check")])
    assert construct in str(err.value)
    assert isinstance(err.value, DeltaError)
    assert err.value.expression == expr


def test_non_boolean_and_mistyped_expressions_are_refused_on_evaluation():
    with pytest.raises(UnsupportedConstraintError, match="values of type int64, not a boolean"):
        check_constraints(ROWS, [Constraint("c", "id + 1", "check")])
    with pytest.raises(UnsupportedConstraintError, match=r"CAST_INVALID_INPUT.*alice.*BIGINT"):
        check_constraints(ROWS, [Constraint("c", "name + 1 > 0", "check")])
    with pytest.raises(UnsupportedConstraintError, match="no arithmetic bool"):
        check_constraints(ROWS, [Constraint("c", "flag + 1 > 0", "check")])
    with pytest.raises(UnsupportedConstraintError, match="not a boolean"):
        check_constraints(ROWS, [Constraint("c", "id AND flag", "check")])


def test_violation_names_constraint_expression_and_row():
    constraints = [
        Constraint("positive", "id IS NULL OR id > 0", "check"),
        Constraint("short_name", "length(name) < 5", "check"),
    ]
    with pytest.raises(ConstraintViolationError) as err:
        check_constraints(ROWS, constraints)
    e = err.value
    assert e.constraint.name == "short_name"
    assert e.violations == 3  # 'alice', 'carol_x' and NULL (NULL violates, as in Delta)
    assert e.row_index == 0
    assert e.values == {"name": "alice"}
    message = str(e)
    assert message.startswith("CHECK constraint short_name (length(name) < 5) violated by row with values:\n")
    assert "(3 of 4 row(s) break it, false or NULL; that one is row 0.)" in message
    assert " - name : alice\n" in message  # Delta's DELTA_VIOLATE_CONSTRAINT_WITH_VALUES: the value's text


def test_violation_values_read_as_deltas_sorted_by_column():
    """InvariantEnforcementSuite ("reject write on top level expression invariant when field is
    null": `` - value : null``; "CHECK constraint is enforced if somehow created": `` - valueA :
    100``): Delta lists the values sorted by column name, as their text, NULL as ``null``."""
    rows = pa.table({"b": pa.array([None], pa.int64()), "a": ["x"], "c": [True]})
    with pytest.raises(ConstraintViolationError) as err:
        check_constraints(rows, [Constraint("ck", "c AND b > 0 AND a = 'y'", "check")])
    assert "violated by row with values:\n - a : x\n - b : null\n - c : true\n(1 of 1 row" in str(err.value)


def test_null_result_is_a_violation_like_delta():
    with pytest.raises(ConstraintViolationError) as err:
        check_constraints(ROWS, [Constraint("p", "price > 0", "check")])
    assert err.value.row_index == 2 and err.value.values == {"price": None}
    check_constraints(ROWS, [Constraint("p", "price IS NULL OR price > 0", "check")])


def test_nested_values_in_the_reported_row():
    with pytest.raises(ConstraintViolationError) as err:
        check_constraints(ROWS, [Constraint("zip", "addr.zip.code < 70000 AND `Weird Col` > 0", "check")])
    assert err.value.row_index == 0
    assert err.value.values == {"addr.zip.code": 75001, "Weird Col": 10}


def test_record_batches_strings_and_empty_data():
    batch = ROWS.to_batches()[0]
    check_constraints(batch, ["id IS NULL OR id < 10"])
    with pytest.raises(ConstraintViolationError, match="id < 3"):
        check_constraints(batch, ["id < 3"])
    check_constraints(ROWS.slice(0, 0), ["id > 100"])
    check_constraints(ROWS, [])


def test_chunked_tables():
    table = pa.concat_tables([ROWS.slice(0, 2), ROWS.slice(2, 1)])
    assert table.column("id").num_chunks == 2
    check_constraints(table, ["id > 0"])
    with pytest.raises(ConstraintViolationError) as err:
        check_constraints(table, ["id < 3"])
    assert err.value.row_index == 2 and err.value.values == {"id": 3}


def _metadata(config: dict[str, str], schema: dict) -> Metadata:
    return Metadata(
        id="m", schema_string=json.dumps(schema), partition_columns=(), configuration=config, created_time=1
    )


def test_table_constraints_and_invariants_from_metadata():
    schema = {
        "type": "struct",
        "fields": [
            {
                "name": "id",
                "type": "long",
                "nullable": True,
                "metadata": {"delta.invariants": json.dumps({"expression": {"expression": "id < 100"}})},
            },
            {
                "name": "addr",
                "type": {
                    "type": "struct",
                    "fields": [
                        {
                            "name": "city",
                            "type": "string",
                            "nullable": True,
                            "metadata": {
                                "delta.invariants": json.dumps({"expression": {"expression": "addr.city != 'X'"}})
                            },
                        },
                    ],
                },
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    md = _metadata({"delta.constraints.has_name": "name IS NOT NULL OR id IS NULL"}, schema)
    assert [c.kind for c in table_constraints(md)] == ["check", "invariant", "invariant"]
    data = pa.table({"id": [1, 50], "name": ["a", "b"], "addr": [{"city": "P"}, {"city": "L"}]})
    check_constraints(data, md)
    bad = pa.table({"id": [1, 500], "name": ["a", "b"], "addr": [{"city": "P"}, {"city": "L"}]})
    with pytest.raises(
        ConstraintViolationError,
        match=r"invariant id \(id < 100\) violated by row with values:\n - id : 500\n\(1 of 2 row",
    ) as err:
        check_constraints(bad, md)
    assert err.value.values == {"id": 500}
    bad_city = pa.table({"id": [1], "name": ["a"], "addr": [{"city": "X"}]})
    with pytest.raises(ConstraintViolationError, match=r"invariant addr\.city"):
        check_constraints(bad_city, md)


def test_compile_once_evaluate_many():
    compiled = compile_constraints([Constraint("c", "id IS NULL OR id BETWEEN 1 AND 3", "check")])
    for start in range(4):
        check_constraints(ROWS.slice(start, 1), compiled)
    assert compiled[0].columns == (("id",),)


def test_a_comparison_of_a_collated_column_is_refused():
    from deltalog.contrib.spark.constraints import UncheckableConstraintsError, plan_constraints

    """Delta compares a collated string by its collation (``'BAD' <> 'bad'`` is false under
    UTF8_LCASE); the evaluator compares binary, so a constraint that compares such a column is
    refused up front rather than letting 'BAD' in. A null test does not compare."""
    lcase = {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}
    schema = {"type": "struct", "fields": [{"name": "name", "type": "string", "nullable": True, "metadata": lcase}]}
    rows = pa.table({"name": ["BAD"]})
    for expression in ("name <> 'bad'", "upper(name) = 'BAD' or name is null"):
        metadata = Metadata(id="x", schema_string=json.dumps(schema), configuration={"delta.constraints.c": expression})
        with pytest.raises(UnsupportedConstraintError, match="collat"):
            check_constraints(rows, metadata)
        # the Spark data source's write plan refuses it (the table API checks with Spark SQL)
        with pytest.raises(UncheckableConstraintsError, match="collated column name"):
            plan_constraints(metadata, "t")
        assert plan_constraints(metadata, "t", spark_fallback=True) == ()
    metadata = Metadata(
        id="x", schema_string=json.dumps(schema), configuration={"delta.constraints.c": "name is not null"}
    )
    check_constraints(rows, metadata)


def test_zone_free_timestamp_texts_are_times_of_the_session_time_zone():
    """Spark reads a zone-free timestamp text or ``TIMESTAMP`` literal, and a date, met with a
    ``timestamp`` (an instant) in the session time zone, and compares a ``timestamp_ntz`` by wall
    clock; a text naming its zone is that instant. Without a time zone: UTC, as before."""
    rows = pa.table(
        {
            "ts": pa.array([dt.datetime(2024, 1, 1, 4, tzinfo=dt.timezone.utc)], pa.timestamp("us", tz="UTC")),
            "ntz": pa.array([dt.datetime(2024, 1, 1, 4)], pa.timestamp("us")),
        }
    )

    def holds(expr: str, zone: str | None) -> bool | None:
        (compiled,) = compile_constraints([Constraint("c", expr, "check")], zone)
        result: bool | None = compiled.evaluate(rows).to_pylist()[0]
        return result

    la = "America/Los_Angeles"  # 04:00 UTC is 2023-12-31 20:00 there
    for expr in ("ts >= '2024-01-01 00:00:00'", "ts >= TIMESTAMP '2024-01-01 00:00:00'", "ts >= DATE '2024-01-01'"):
        assert (holds(expr, None), holds(expr, la)) == (True, False), expr
    assert holds("ntz >= '2024-01-01 00:00:00'", la) is True
    assert holds("ts >= '2024-01-01T04:00:00Z'", la) is True and holds("ts > '2024-01-01T04:00:00Z'", la) is False


def test_nan_compares_as_in_spark():
    """Spark orders NaN above every other value and NaN = NaN (SQL's NaN semantics); IEEE
    comparisons (NaN > 1.5 false) made a replaceWhere keep a NaN row Delta replaces."""
    data = pa.table(
        {"d": pa.array([float("nan"), 1.0, None, float("inf")]), "f": pa.array([1.0, 1.0, 1.0, 1.0], pa.float32())}
    )
    assert values("d > 1.5", data) == [True, False, None, True]
    assert values("d >= CAST('NaN' AS DOUBLE)", data) == [True, False, None, False]
    assert values("d = CAST('NaN' AS DOUBLE)", data) == [True, False, None, False]
    assert values("d != CAST('NaN' AS DOUBLE)", data) == [False, True, None, True]
    assert values("d < CAST('NaN' AS DOUBLE)", data) == [False, True, None, True]
    assert values("d <= 1.0", data) == [False, True, None, False]
    assert values("d <=> CAST('NaN' AS DOUBLE)", data) == [True, False, False, False]
    assert values("d IN (CAST('NaN' AS DOUBLE), 1.0)", data) == [True, True, None, False]
    assert values("d BETWEEN 0 AND CAST('NaN' AS DOUBLE)", data) == [True, True, None, True]
    assert values("d / 0 IS NULL AND d > f", data) == [True, False, None, True]


def test_decimal_literals_and_columns_compare_exactly_as_in_spark():
    """Spark reads ``12345678901234567.01`` as a decimal and compares decimals exactly; as
    doubles, both rows below equalled it (a replaceWhere would have replaced both)."""
    data = pa.table(
        {
            "a": pa.array([Decimal("12345678901234567.01"), Decimal("12345678901234567.02")], pa.decimal128(20, 2)),
            "id": pa.array([Decimal("12345678901234567890"), Decimal("12345678901234567891")], pa.decimal128(38, 0)),
            "l": pa.array([9007199254740993, 9007199254740992], pa.int64()),
        }
    )
    assert values("a = 12345678901234567.01", data) == [True, False]
    assert values("a > 12345678901234567.01", data) == [False, True]
    assert values("a IN (12345678901234567.02, 1)", data) == [False, True]
    assert values("id = 12345678901234567891", data) == [False, True]
    assert values("id - 1 = 12345678901234567889", data) == [True, False]
    assert values("l = 9007199254740993.0", data) == [True, False]
    assert values("l = 9007199254740993e0", data) == [True, True]  # a double, as in Spark
    assert values("a * 2 > 24691357802469134.03", data) == [False, True]


def test_decimal_arithmetic_has_spark_result_type_rounding_and_overflow():
    """Spark computes decimal arithmetic exactly, rounds it half up to the result type of its
    ``DecimalPrecision`` rules (38 digits at most) and, without ANSI mode, gives NULL where the
    result does not fit; a 39-digit difference used to be kept exactly (a CHECK constraint
    passed, a replaceWhere replaced the row, where Spark's NULL does neither), and a decimal
    quotient was a double (``0.3 / 0.1`` was ``2.9999999999999996``)."""
    data = pa.table(
        {
            "dz": pa.array([Decimal("9" * 38), Decimal("5")], pa.decimal128(38, 0)),
            "l": pa.array([-(2**63), 1], pa.int64()),
            "a": pa.array([Decimal("0.30"), Decimal("1.23")], pa.decimal128(10, 2)),
            "b": pa.array([Decimal("0.10"), Decimal("0.00")], pa.decimal128(10, 2)),
            "w": pa.array([Decimal("0.0000000001"), Decimal("1.0000005")], pa.decimal128(38, 10)),
        }
    )
    assert values("l - dz IS NULL", data) == [True, False]
    assert values("l - dz < 0", data) == [None, True]
    assert values("dz * dz IS NULL", data) == [True, False]
    assert values("a / b = 3", data) == [True, None]
    assert values("a % b = 0", data) == [True, None]
    assert values("a / 3 = 0.1", data) == [True, False]
    assert values("w * w = 0", data) == [True, False]  # decimal(38, 6): 1e-20 rounds to 0
    assert values("w * w = 1.000001", data) == [False, True]


def test_timestamp_ntz_and_date_columns_meet_an_instant_in_the_session_time_zone():
    """Spark casts a ``timestamp_ntz`` (or date) column it compares with a ``timestamp`` to the
    instant of its wall-clock time in the session time zone; it was read as UTC, so ``ntz =
    TIMESTAMP '2024-01-01T00:00:00Z'`` held for the ntz 2024-01-01 00:00 in Los Angeles."""
    rows = pa.table(
        {
            "ntz": pa.array([dt.datetime(2024, 1, 1), dt.datetime(2023, 12, 31, 16)], pa.timestamp("us")),
            "d": pa.array([dt.date(2024, 1, 1), dt.date(2023, 12, 31)], pa.date32()),
            "ts": pa.array([dt.datetime(2024, 1, 1, 8, tzinfo=dt.timezone.utc)] * 2, pa.timestamp("us", tz="UTC")),
        }
    )

    def holds(expr: str) -> list[bool | None]:
        (compiled,) = compile_constraints([Constraint("c", expr, "check")], "America/Los_Angeles")
        result: list[bool | None] = compiled.evaluate(rows).to_pylist()
        return result

    assert holds("ntz = TIMESTAMP '2024-01-01T00:00:00Z'") == [False, True]
    assert holds("ntz IN (TIMESTAMP '2024-01-01T08:00:00Z')") == [True, False]
    assert holds("CAST(ntz AS timestamp) <= TIMESTAMP '2024-01-01T00:00:00Z'") == [False, True]
    assert holds("ntz = ts") == [True, False]
    assert holds("d = ts") == [True, False]
    assert holds("d < TIMESTAMP '2024-01-01T00:00:00Z'") == [False, True]


def test_decimals_wider_than_38_digits_compare_at_the_scale_spark_keeps():
    """Spark compares two decimals whose common type needs more than 38 digits in
    ``decimal(38, s)`` keeping the integer digits (``boundedPreferIntegralDigits``): the
    literal is rounded half up to that scale, so ``a = 1.23`` holds for the ``decimal(38, 0)``
    value 1 in Delta (a replaceWhere replaces it); deltalog compared exactly."""
    data = pa.table(
        {
            "a": pa.array([Decimal(1), Decimal(2)], pa.decimal128(38, 0)),
            "c": pa.array([Decimal("1.0000000000"), Decimal("1.0000000001")], pa.decimal128(38, 10)),
        }
    )
    assert values("a = 1.23", data) == [True, False]
    assert values("a = 1.5", data) == [False, True]
    assert values("a < 1.4", data) == [False, False]
    assert values("a IN (1.23)", data) == [True, False]
    assert values("a BETWEEN 1.2 AND 1.3", data) == [True, False]
    assert values("c = 1.00000000004", data) == [True, False]
    assert values("c = 1.00000000005", data) == [False, True]


def test_a_float_read_as_text_is_refused():
    """Spark writes a float as Java does (``-0.0``, ``1.0E10``), Arrow as ``-0``, ``1e+10``:
    ``-f NOT LIKE '__'`` was false for 0.0, where Spark's ``'-0.0'`` makes it true. A float or
    double where text is wanted is refused, as ``CAST(f AS STRING)`` already was."""
    data = pa.table({"f": pa.array([0.0, 1e10], pa.float64())})
    for expr in ("-f NOT LIKE '__'", "length(f) = 3", "lower(f) = '1.0e10'"):
        with pytest.raises(UnsupportedConstraintError, match="text form differs"):
            values(expr, data)


def test_nan_against_null_is_null():
    """``NaN > NULL`` is NULL in Spark; the NaN ordering answered FALSE (so ``NOT (i > d)``
    held where Spark's NULL makes a CHECK fail and a replaceWhere keep the row)."""
    data = pa.table({"i": pa.array([None, 1], pa.int32()), "d": pa.array([float("nan"), float("nan")])})
    assert values("NOT (i > d)", data) == [None, True]
    assert values("d < i", data) == [None, False]
    assert values("i < d", data) == [None, True]
    assert values("d >= i", data) == [None, True]
    assert values("d = i", data) == [None, False]


def test_remainder_and_division_of_doubles_and_longs_as_in_spark():
    """Spark's ``%`` of doubles is Java's (``fmod``): ``0 % inf`` is 0 where ``a - b *
    trunc(a / b)`` gave NaN; a long beyond 2**53 divides as the nearest double instead of
    failing; a decimal(1, 1) literal meets a decimal(38, 0) column (``0.9`` rounds to 1)."""
    data = pa.table(
        {
            "s": pa.array([0, 7], pa.int16()),
            "d": pa.array([float("inf"), 2.5]),
            "l": pa.array([2**63 - 1, 4], pa.int64()),
            "dz": pa.array([Decimal(1), Decimal(0)], pa.decimal128(38, 0)),
        }
    )
    assert values("s % d = 0", data) == [True, False]
    assert values("s % d = 2", data) == [False, True]
    assert values("d % 2 IS NULL", data) == [False, False]
    assert values("l / 2 > 4e18", data) == [True, False]
    assert values("dz = 0.9", data) == [True, False]


def test_an_integer_overflow_is_a_typed_refusal():
    """``-i`` of the smallest int overflows (Spark wraps it without ANSI mode, fails with it):
    a typed :class:`UnsupportedConstraintError`, not pyarrow's ``ArrowInvalid``. An integer
    literal is an INT where it fits and integers widen to the wider type, as in Spark: ``i - 1``
    overflows as an int (it was computed as a long, true where Spark's is not)."""
    data = pa.table({"i": pa.array([-(2**31), 1], pa.int32()), "b": pa.array([127, 1], pa.int8())})
    for expr in ("-i < 0", "abs(i) > 0", "i * i > 0", "i - 1 < i"):  # 1 is an INT, as Spark types it
        with pytest.raises(UnsupportedConstraintError, match="integer overflow"):
            values(expr, data)
    assert values("b + 1 = 128", data) == [True, False]  # a tinyint widens to the literal's INT
    assert values("i - 2147483648 < 0", data) == [True, True]  # a BIGINT literal


def test_text_is_cast_to_a_number_as_spark_casts_it():
    """Spark trims blanks and control characters and takes a sign before casting text to a
    number (``' 1 '``, ``'+2'``, ``'1d'`` as a double, ``'NaN'``, ``'-inf'``); Arrow's cast
    refused them, so a CHECK on such text refused rows Spark accepts. Text Spark cannot read
    (``'1.5'`` as an integer, ``'1_0'``) still fails, as Spark's ANSI cast does."""
    data = pa.table({"s": pa.array([" 1 ", "+2", "\t3\n", None], pa.string())})
    assert values("s = 1", data) == [True, False, False, None]
    assert values("CAST(s AS INT) + 1 = 3", data) == [False, True, False, None]
    floats = pa.table({"s": pa.array(["1d", " .5", "NaN", "-inf", "1e2F"], pa.string())})
    assert values("s > 0.75", floats) == [True, False, True, False, True]
    assert values("CAST(s AS DOUBLE) = 100", floats) == [False, False, False, False, True]
    assert values("s = 2147483648", pa.table({"s": pa.array(["2147483648"])})) == [True]  # a long, not an INT
    # Spark's cast functions are CASTs: double(s) is CAST(s AS DOUBLE)
    assert values("double(s) = 100 OR int(1.9) = 2", floats) == [False, False, False, False, True]
    assert values("bigint(' 7') = 7 AND string(1) = '1' AND boolean('true')", floats) == [True] * 5
    with pytest.raises(UnsupportedConstraintError, match=r"int\(\) with 2 argument"):
        values("int(s, 1) = 1", floats)
    for expr, text in (("s = 1", "1.5"), ("s = 1.5", "1_0"), ("s = 1", "99999999999999999999")):
        with pytest.raises(UnsupportedConstraintError, match="cannot be cast"):
            values(expr, pa.table({"s": pa.array([text], pa.string())}))
