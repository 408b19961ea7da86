"""The legacy-calendar rebase against Spark's own rebase table (read from the installed
PySpark) and Spark's rules for which files need it."""

from __future__ import annotations

import datetime
import random

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.txn.log.calendar_rebase import (
    RebaseSpec,
    _before_the_table,
    _Rebaser,
    _spark_rebase_table,
    julian_to_gregorian_days,
    rebase_spec,
    rebase_table,
)


def test_which_files_spark_rebases() -> None:
    assert rebase_spec(None) is None and rebase_spec({b"writer": b"delta-rs"}) is None
    assert rebase_spec({b"org.apache.spark.version": b"2.4.8"}) == RebaseSpec(True, True, "UTC")
    assert rebase_spec({b"org.apache.spark.version": b"3.0.1"}) == RebaseSpec(False, True, "UTC")
    assert rebase_spec({b"org.apache.spark.version": b"3.5.0"}) is None
    legacy = {b"org.apache.spark.version": b"4.3.0", b"org.apache.spark.legacyDateTime": b""}
    assert rebase_spec({**legacy, b"org.apache.spark.timeZone": b"Asia/Kolkata"}) == RebaseSpec(
        True, False, "Asia/Kolkata"
    )


def test_day_and_fixed_zone_arithmetic_equals_spark_table() -> None:
    # days Spark returned for Julian 0001-01-01, 1000-02-29 (no such Gregorian day) and 1582-10-04
    assert [julian_to_gregorian_days(d) for d in (-719164, -354221, -141428, -141427)] == [
        -719162,
        -354226,
        -141438,
        -141427,
    ]
    table = _spark_rebase_table()
    assert table is not None
    switches, diffs = table["UTC"]
    utc = _Rebaser(RebaseSpec(True, True, "UTC"), "f")
    rng = random.Random(7)
    points = [s * 1_000_000 + d for s in switches for d in (-1, 0, 1)]
    points += [rng.randint(switches[0], switches[-1] + 86400) * 1_000_000 for _ in range(2000)]
    for micros in points:
        i = max(i for i, s in enumerate(switches) if i == 0 or micros // 1_000_000 >= s)
        assert utc._micros(micros) == micros + diffs[i] * 1_000_000, micros
    # before a region zone's table, Spark's local rebase: consistent with the table's first span
    for zone, (switches, diffs) in table.items():
        micros = rng.randint(switches[0], switches[1] - 1) * 1_000_000
        assert _before_the_table(micros, switches, diffs) == micros + diffs[0] * 1_000_000, zone


def test_nested_values_and_nulls_are_rebased(tmp_path: object) -> None:
    dates = pa.array([-719164, None, 0], pa.date32())
    table = pa.table(
        {"s": pa.StructArray.from_arrays([dates], ["d"]), "a": pa.array([[-719164], None, []], pa.list_(pa.date32()))}
    )
    path = f"{tmp_path}/f.parquet"
    pq.write_table(table, path)
    out = rebase_table(pq.read_table(path), pq.ParquetFile(path), RebaseSpec(True, False, "UTC"), path)
    assert out.column("s").combine_chunks().field("d").cast(pa.int32()).to_pylist() == [-719162, None, 0]
    assert out.column("a").to_pylist()[1:] == [None, []]
    assert out.column("a").combine_chunks().values.cast(pa.int32()).to_pylist() == [-719162]
    sliced = rebase_table(pq.read_table(path).slice(1), pq.ParquetFile(path), RebaseSpec(True, False, "UTC"), path)
    assert sliced.column("a").to_pylist() == [None, []]  # a slice of a list column rebuilds from offsets


def test_footer_bounds_of_a_legacy_file_skip_no_row_group(tmp_path: object) -> None:
    from deltalog.contrib.spark.row_groups import row_groups_may_match

    path = f"{tmp_path}/legacy.parquet"
    legacy = {b"org.apache.spark.version": b"4.3.0", b"org.apache.spark.legacyDateTime": b""}
    table = pa.table({"d": pa.array([-354222], pa.date32())})  # Julian 1000-02-28
    pq.write_table(table.replace_schema_metadata(legacy), path)
    term = ("d", "=", datetime.date(1000, 2, 28))  # proleptic -354227: outside the footer's bounds
    assert row_groups_may_match(pq.read_metadata(path), [0], [term], {"d": "date"}) == [0]
    pq.write_table(table, path)
    assert row_groups_may_match(pq.read_metadata(path), [0], [term], {"d": "date"}) == []
