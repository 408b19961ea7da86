"""DELETE and UPDATE skip files by statistics and pass over the candidate files once, as
Delta's ``DeleteCommand``/``UpdateCommand``: one job finds the touched files (each candidate
read once), one job rewrites only those (each touched file read a second time), and the
metrics are Delta's. Reads are counted by a store that logs every data file it opens (the
executors build it from the table's store spec)."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from typing import Any

import pandas as pd
import pytest

from deltalog.contrib.spark.scan import plan_files
from deltalog.logstores.local import LocalLogStore
from deltalog.txn.commands.vacuum_listing import STAGING_PREFIX
from deltalog.txn.protocol.actions import AddFile, decode_path
from tests.spark.helpers import commits, delta_rs_rows

pytestmark = pytest.mark.spark

READ_LOG = "deltalog_test_read_log"


class ReadCountingStore(LocalLogStore):
    """The local store, appending the path of every file it opens for reading to the file
    named by the storage option ``deltalog_test_read_log`` (on the driver and executors)."""

    def filesystem(self) -> Any:
        import pyarrow.fs as pafs
        from fsspec.implementations.local import LocalFileSystem

        target = self.options[READ_LOG]

        class Handler(pafs.FSSpecHandler):
            def open_input_file(self, path: str) -> Any:
                with open(target, "a", encoding="utf-8") as fh:
                    fh.write(path + "\n")
                return super().open_input_file(path)

        return pafs.PyFileSystem(Handler(LocalFileSystem()))


def _reads(log_file: str, table: str) -> Counter[str]:
    """Data files opened since the last call, by path in the table (the log is emptied);
    not the footers of the files a native write just made in its staging directory."""
    if not os.path.exists(log_file):
        return Counter()
    with open(log_file, encoding="utf-8") as fh:
        paths = [os.path.relpath(line.strip(), table) for line in fh if line.strip()]
    os.remove(log_file)
    return Counter(p for p in paths if p.endswith(".parquet") and not p.startswith(("_delta_log", STAGING_PREFIX)))


def _last_commit(path: str) -> tuple[set[str], set[str], dict[str, str]]:
    last = commits(path)[-1]
    removed = {decode_path(a["remove"]["path"]) for a in last if "remove" in a}
    added = {decode_path(a["add"]["path"]) for a in last if "add" in a}
    info = next(a["commitInfo"] for a in last if "commitInfo" in a)
    return removed, added, info["operationMetrics"]


def _files(path: str) -> dict[str, tuple[int, int]]:
    """Live files by path: (size, numRecords)."""
    from deltalog.txn.delta_log import DeltaLog

    return {decode_path(f.path): (f.size, f.num_records() or 0) for f in DeltaLog.for_table(path).update().files}


def _four_files(spark: Any, path: str, **options: str) -> pd.DataFrame:
    """Ids 0-39 in four files of disjoint id ranges (0-9, 10-19, ...); the same rows in pandas."""
    data = [(i, f"v{i}", None if i % 3 == 0 else float(i)) for i in range(40)]
    rdd = spark.sparkContext.parallelize(data, 4)
    writer = spark.createDataFrame(rdd, "id long, v string, x double").write.format("deltalog")
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.mode("append").save(path)
    assert len(_files(path)) == 4
    return pd.DataFrame(data, columns=["id", "v", "x"])


def _file_of(path: str, id_: int, ranges: dict[str, int]) -> str:
    return next(name for name, low in ranges.items() if low <= id_ < low + 10)


def _ranges(path: str) -> dict[str, int]:
    """Each live file's lowest id (from its statistics)."""
    import json

    from deltalog.txn.delta_log import DeltaLog

    files = DeltaLog.for_table(path).update().files
    return {decode_path(f.path): json.loads(f.stats)["minValues"]["id"] for f in files}


def _same(path: str, expected: pd.DataFrame) -> None:
    got = delta_rs_rows(path, ["id"])[["id", "v", "x"]]
    want = expected.sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)


def test_delete_and_update_read_only_the_files_their_condition_can_match(spark, table_path, tmp_path):
    from deltalog.contrib.spark import DeltaTable

    expected = _four_files(spark, table_path)
    log_file = str(tmp_path / "reads.log")
    table = DeltaTable.forPath(
        spark,
        table_path,
        storage_options={READ_LOG: log_file},
        logstore=f"{ReadCountingStore.__module__}:ReadCountingStore",
    )
    _reads(log_file, table_path)

    # DELETE id = 15: statistics leave one candidate; it is read to find the row, then rewritten
    ranges = _ranges(table_path)
    target = _file_of(table_path, 15, ranges)
    size, records = _files(table_path)[target]
    table.delete("id = 15")
    expected = expected[expected.id != 15]
    assert _reads(log_file, table_path) == {target: 2}
    removed, added, metrics = _last_commit(table_path)
    assert removed == {target} and len(added) == 1
    (new,) = added
    assert metrics["numRemovedFiles"] == "1" and metrics["numAddedFiles"] == "1"
    assert metrics["numDeletedRows"] == "1" and metrics["numCopiedRows"] == str(records - 1)
    assert metrics["numRemovedBytes"] == str(size)
    assert metrics["numAddedBytes"] == str(_files(table_path)[new][0])
    assert metrics["numAddedChangeFiles"] == "0"
    for timing in ("executionTimeMs", "scanTimeMs", "rewriteTimeMs"):
        assert int(metrics[timing]) >= 0
    assert int(metrics["executionTimeMs"]) >= int(metrics["scanTimeMs"]) + int(metrics["rewriteTimeMs"]) - 1

    # UPDATE id = 25 (and a null-count term): one file read twice
    ranges = _ranges(table_path)
    target = _file_of(table_path, 25, ranges)
    size, records = _files(table_path)[target]
    table.update("id = 25 AND x IS NOT NULL", {"v": "'changed'", "x": "x * 2"})
    expected.loc[expected.id == 25, ["v", "x"]] = ["changed", 50.0]
    assert _reads(log_file, table_path) == {target: 2}
    removed, added, metrics = _last_commit(table_path)
    assert removed == {target} and len(added) == 1
    assert metrics["numRemovedFiles"] == "1" and metrics["numAddedFiles"] == "1"
    assert metrics["numUpdatedRows"] == "1" and metrics["numCopiedRows"] == str(records - 1)
    assert metrics["numRemovedBytes"] == str(size) and int(metrics["numAddedBytes"]) > 0
    assert {"executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numAddedChangeFiles"} <= set(metrics)

    # no file can hold the row: nothing is read and nothing committed
    version = len(commits(table_path))
    table.delete("id > 1000")
    table.update("id < -5", {"v": "'never'"})
    assert _reads(log_file, table_path) == Counter() and len(commits(table_path)) == version

    # an OR skips as Delta's, by both sides: id < 20 leaves two files (id % 10 = 7 skips
    # nothing), v = 'none' one (the UPDATE above wrote 'changed' into 20-29): the three are
    # read to find the matches, the two touched ones again to rewrite them
    ranges = _ranges(table_path)
    touched = {_file_of(table_path, 7, ranges), _file_of(table_path, 17, ranges)}
    table.delete("id % 10 = 7 AND id < 20 OR v = 'none'")
    expected = expected[~((expected.id % 10 == 7) & (expected.id < 20))]
    assert _reads(log_file, table_path) == {**dict.fromkeys(touched, 2), _file_of(table_path, 25, ranges): 1}
    removed, added, metrics = _last_commit(table_path)
    assert removed == touched
    assert metrics["numDeletedRows"] == "2" and metrics["numRemovedFiles"] == "2"
    # a condition the skipping parser does not follow: every file is read once to find the
    # matches, and only the touched one again
    ranges = _ranges(table_path)
    touched = {_file_of(table_path, 33, ranges)}
    table.delete("CASE WHEN id = 33 THEN true ELSE false END")
    expected = expected[expected.id != 33]
    reads = _reads(log_file, table_path)
    assert set(reads) == set(ranges)
    assert {name: n for name, n in reads.items() if n == 2} == dict.fromkeys(touched, 2)

    _same(table_path, expected)


def test_partition_only_update_and_change_data_with_one_pass(spark, table_path, tmp_path):
    """A partition-only UPDATE rewrites the partition's files without a finding pass
    (Delta's case 2); a mixed condition prunes by partition and statistics; the change
    data feed still has the pre- and post-images."""
    from deltalog.contrib.spark import DeltaTable

    data = [(i, f"p{i % 2}", float(i)) for i in range(20)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(data, 2), "id long, p string, x double")
    writer = df.write.format("deltalog").option("partitionBy", "p").option("delta.enableChangeDataFeed", "true")
    writer.mode("append").save(table_path)
    expected = pd.DataFrame(data, columns=["id", "p", "x"])
    log_file = str(tmp_path / "reads.log")
    table = DeltaTable.forPath(
        spark, table_path, storage_options={READ_LOG: log_file}, logstore=f"{__name__}:ReadCountingStore"
    )
    files = _files(table_path)
    p1 = {name for name, part in _partitions(table_path).items() if part == "p1"}
    _reads(log_file, table_path)

    table.update("p = 'p1'", {"x": "x + 100"})
    expected.loc[expected.p == "p1", "x"] += 100
    reads = _reads(log_file, table_path)
    assert set(reads) == p1 and all(n == 1 for n in reads.values())  # read once: no finding pass
    removed, _, metrics = _last_commit(table_path)
    assert removed == p1
    assert metrics["numUpdatedRows"] == "10" and metrics["numCopiedRows"] == "0"
    assert metrics["numAddedChangeFiles"] != "0"

    # partition p0 and ids 10-19 (the second data file of p0 only): one file, read twice
    p0_files = set(files) - p1
    table.delete("p = 'p0' AND id = 12")
    expected = expected[expected.id != 12]
    reads = _reads(log_file, table_path)
    assert len(reads) == 1 and set(reads) <= p0_files and list(reads.values()) == [2]
    assert _last_commit(table_path)[2]["numDeletedRows"] == "1"

    changes = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1)
    got = sorted((r.id, r._change_type) for r in changes.load(table_path).collect())
    assert got.count((12, "delete")) == 1
    assert sum(1 for _, t in got if t == "update_preimage") == 10
    assert sum(1 for _, t in got if t == "update_postimage") == 10
    result = delta_rs_rows(table_path, ["id"])[["id", "p", "x"]].reset_index(drop=True)
    want = expected.sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(result, want, check_dtype=False)


def _partitions(path: str) -> dict[str, str | None]:
    from deltalog.txn.delta_log import DeltaLog

    return {decode_path(f.path): f.partition_values["p"] for f in DeltaLog.for_table(path).update().files}


def test_files_skipped_by_statistics_stay_in_the_read_the_transaction_records():
    """Delta's ``filterFiles(condition)``: the engine records the partition-level read, a
    superset of the files kept, so a concurrent add into the condition's partitions
    conflicts even when its statistics exclude the condition; one elsewhere does not."""
    import json
    import uuid

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.tablelog import start_transaction
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError
    from deltalog.txn.commit.operations import Delete, ManualUpdate
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import AddFile, Metadata

    uri = f"memory://dml-skipping-{uuid.uuid4().hex}"
    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in (("p", "string"), ("id", "long"))]
    metadata = Metadata(
        id="t",
        schema_string=json.dumps({"type": "struct", "fields": fields}),
        partition_columns=("p",),
        configuration={"delta.isolationLevel": "Serializable"},
    )

    def add(name: str, p: str, low: int, high: int) -> AddFile:
        stats = {"numRecords": 10, "minValues": {"id": low}, "maxValues": {"id": high}, "nullCount": {"id": 0}}
        return AddFile(name, {"p": p}, 1, 1, stats=json.dumps(stats))

    log = DeltaLog.for_table(uri)
    log.start_transaction().commit([metadata, add("a1", "a", 0, 9), add("a2", "a", 10, 19)], ManualUpdate())
    table = DeltaTable(None, uri)  # planning the candidates runs no Spark job

    def delete_beside(concurrent: AddFile) -> None:
        txn = start_transaction(log)
        candidates = table._candidates(txn, "p = 'a' AND id = 15")
        assert [f.path for f in candidates] == ["a2"]
        DeltaLog.for_table(uri).start_transaction().commit([concurrent], ManualUpdate())
        txn.commit([candidates[0].remove(1)], Delete(predicate=["p = 'a' AND id = 15"]))

    with pytest.raises(ConcurrentAppendError):
        delete_beside(add("a3", "a", 100, 200))
    delete_beside(add("b1", "b", 15, 15))
    assert {f.path for f in DeltaLog.for_table(uri).update().files} == {"a1", "a3", "b1"}


# -- Delta's DataSkippingDeltaTests against statistics as Delta Spark writes them ----------------

_DELTA_STATS = {
    # Delta writes a float's bounds as Jackson prints the Float: "0.1" is the float 0.1f
    "f": ("float", '{"numRecords":2,"minValues":{"f":0.1},"maxValues":{"f":0.1},"nullCount":{"f":0}}'),
    "g": ("float", '{"numRecords":1,"minValues":{"g":0.7},"maxValues":{"g":0.7},"nullCount":{"g":0}}'),
    "s": ("string", '{"numRecords":3,"minValues":{"s":"b"},"maxValues":{"s":"d"},"nullCount":{"s":1}}'),
    "n": ("long", '{"numRecords":2,"minValues":{},"maxValues":{},"nullCount":{"n":2}}'),
    "r": ("long", '{"numRecords":4}'),  # numRecords-only statistics
    "t": (
        "timestamp",
        '{"numRecords":1,"minValues":{"t":"2020-01-01T00:00:00.123Z"},'
        '"maxValues":{"t":"2020-01-01T00:00:00.123Z"},"nullCount":{"t":0}}',
    ),
}


@pytest.mark.parametrize(
    ("term", "kept"),
    [
        (("f", ">", 0.1), True),  # the row 0.1f is 0.10000000149 as a double: it matches
        (("f", "<", 0.1), False),
        (("f", ">=", 0.2), True),  # deltalog keeps it: a float max may leave NaN out (docs/spark.md)
        (("f", "=", 0.10000000149011612), True),
        (("g", "<", 0.6999999999), True),  # 0.7f is 0.69999998807907 as a double
        (("s", "=", "c"), True),
        (("s", ">", "d"), False),
        (("s", "in", ("a", "e")), False),
        (("s", "isnull", None), True),
        (("n", "notnull", None), False),
        (("n", "isnull", None), True),
        (("r", "=", 7), True),
        (("r", "isnull", None), True),
        (("t", ">", dt.datetime(2020, 1, 1, 0, 0, 0, 123500, tzinfo=dt.timezone.utc)), True),  # max + 1 ms
        (("t", ">", dt.datetime(2020, 1, 1, 0, 0, 0, 124000, tzinfo=dt.timezone.utc)), False),
    ],
)
def test_files_are_skipped_as_delta_skips_them_by_delta_written_statistics(term, kept):
    type_name, stats = _DELTA_STATS[term[0]]
    add = AddFile(path="part-0.parquet", partition_values={}, size=1, modification_time=0, stats=stats)
    plan = plan_files([add], 0, [term], [], {term[0]: type_name})
    assert (plan.files == [add]) is kept


# -- Delta's DataSkippingDeltaTests: predicates given as SQL text (a read's where, a DML condition)

_LONG_A, _LONG_C = "A" * 1000, "C" * 1000
# (name, the rows of the one file, hits: the file is read, misses: the file is skipped)
_SKIPPING_CASES = [
    (
        "top level, single 1",
        [{"a": 1}],
        ["a = 1", "a <=> 1", "a >= 1", "a <= 2", "1 = a", "1 <=> a", "2 >= a", "0 <= a", "NOT a <=> 2"],
        ["NOT a = 1", "NOT a <=> 1", "a = 2", "a <=> 2", "a != 1", "2 = a", "1 != a", "a > 1", "1 < a", "0 >= a"],
    ),
    ("long strings - long min", [{"a": _LONG_A}, {"a": "B"}, {"a": "C"}], ["a like 'A%'", f"a = '{_LONG_A}'"], []),
    ("long strings - long min 2", [{"a": _LONG_A}, {"a": "B"}, {"a": "C"}], ["a > 'BA'", "a < 'AB'"], ["a < 'AA'"]),
    ("long strings - long max", [{"a": "A"}, {"a": "B"}, {"a": _LONG_C}], ["a like 'C%'", f"a = '{_LONG_C}'"], []),
    ("long strings - long max 2", [{"a": "A"}, {"a": _LONG_C}], ["a > 'CC'", "a like 'A%'"], ["a >= 'D'", "a > 'CD'"]),
    (
        "starts with",
        [{"a": "apple"}, {"a": "microsoft"}],
        ["a like 'a%'", "a like 'ap%'", "a like 'm%'", "a like 'mic%'", "a like '%'"],
        ["a like 'xyz%'", "a like 'zz%'", "a like 'aa%'"],
    ),
    (
        "and statements - two fields",
        [{"a": 1, "b": "2017-09-01"}, {"a": 2, "b": "2017-08-31"}],
        ["a > 0 AND b = '2017-09-01'", "a = 2 AND b >= '2017-08-30'", "a >= 2 AND b like '2017-08-%'"],
        ["a > 0 AND b like '2016-%'"],
    ),
    (
        "and statements - one side unsupported",
        [{"a": 10, "b": 10}, {"a": 20, "b": 20}],
        ["a % 100 < 10 AND b % 100 > 20"],
        ["a < 10 AND b % 100 > 20", "a % 100 < 10 AND b > 20"],
    ),
    ("or statements - simple", [{"a": 1}, {"a": 2}], ["a > 0 or a < -3", "a >= 2 or a < -1"], ["a > 5 or a < -2"]),
    (
        "or statements - two fields",
        [{"a": 1, "b": "2017-09-01"}, {"a": 2, "b": "2017-08-31"}],
        ["a < 0 or b = '2017-09-01'", "a = 2 or b < '2017-08-30'", "a >= 2 or b like '2016-08-%'"],
        ["a < 0 or b like '2016-%'"],
    ),
    (
        "or statements - one side unsupported",
        [{"a": 10, "b": 10}, {"a": 20, "b": 20}],
        ["a % 100 < 10 OR b > 20", "a < 10 OR b % 100 > 20"],
        ["a < 10 OR b > 20"],
    ),
    ("not statements - simple", [{"a": 1}, {"a": 2}], ["not a < 0", "a not between 3 and 4"], ["not a > 0"]),
    (
        "not statements - and",
        [{"a": 10, "b": 10}, {"a": 20, "b": 20}],
        ["NOT(a % 100 >= 10 AND b % 100 <= 20)", "NOT(a >= 10 AND b % 100 <= 20)", "NOT(a % 100 >= 10 AND b <= 20)"],
        ["NOT(a >= 10 AND b <= 20)", "a not between 5 and 25", "a not in (7) and a between 30 and 40"],
    ),
    (
        "not statements - or",
        [{"a": 1, "b": 10}, {"a": 2, "b": 20}],
        ["NOT(a < 1 OR b > 20)", "NOT(a % 100 >= 1 OR b % 100 <= 20)", "a not like 'x%'", "a not in (1, 2)"],
        ["NOT(a >= 1 OR b <= 20)", "NOT(a % 100 >= 1 OR b <= 20)", "NOT(a >= 1 OR b % 100 <= 20)"],
    ),
    (
        "missing stats columns",  # indexedCols = 1: b has no statistics
        [{"a": 1, "b": 10}, {"a": 2, "b": 20}],
        ["b < 10", "a < 1 OR b < 10", "a < 1 OR (a >= 1 AND b < 10)", "CASE WHEN a < 0 AND b < 0 THEN true END"],
        ["a < 1 AND b < 10", "a < 1 OR (a > 10 AND b < 10)", "lower(b) = 'x' AND (a IN (5, 6) OR a IS NULL)"],
    ),
]


@pytest.mark.parametrize(("name", "rows", "hits", "misses"), _SKIPPING_CASES, ids=[c[0] for c in _SKIPPING_CASES])
def test_sql_predicates_skip_files_as_delta_skips_them(name, rows, hits, misses):
    """Delta's ``constructDataFilters``: AND skips by either side, OR by both, NOT folds into
    the comparison it negates (De Morgan through AND/OR), LIKE 'prefix%' skips as
    StartsWith, a side that is not a column compared with a literal skips nothing."""
    import pyarrow as pa

    from deltalog.contrib.spark.data_skipping import where_terms
    from deltalog.txn.protocol.file_stats import StatsCollector

    data = pa.Table.from_pylist(rows)
    collector = StatsCollector(data.schema, [("a",)] if name == "missing stats columns" else None)
    collector.update(data)
    add = AddFile(path="part-0.parquet", partition_values={}, size=1, modification_time=0, stats=collector.to_json())
    types = {f.name: "long" if pa.types.is_integer(f.type) else "string" for f in data.schema}
    read = {p: bool(plan_files([add], 0, where_terms(p), [], types).files) for p in [*hits, *misses]}
    assert read == {**dict.fromkeys(hits, True), **dict.fromkeys(misses, False)}


def test_disjunctions_and_prefixes_prune_partitions_file_by_file():
    """An OR over a partition and a data column, and LIKE 'prefix%' on a partition column,
    test each file's partition value (Delta's partition-like skipping of the same filters)."""
    from deltalog.contrib.spark.data_skipping import where_terms

    def add(name, p, lo, hi):
        stats = f'{{"numRecords":2,"minValues":{{"x":{lo}}},"maxValues":{{"x":{hi}}},"nullCount":{{"x":0}}}}'
        return AddFile(path=name, partition_values={"p": p}, size=1, modification_time=0, stats=stats)

    files = [add("a1", "apple", 1, 5), add("m1", "melon", 6, 9), add("n1", None, 1, 9)]
    types = {"p": "string", "x": "long"}

    def read(where):
        return sorted(f.path for f in plan_files(files, 0, where_terms(where), ["p"], types).files)

    assert read("p LIKE 'ap%'") == ["a1"]
    assert read("p = 'melon' OR x < 2") == ["a1", "m1", "n1"]
    assert read("p = 'melon' OR x > 7") == ["m1", "n1"]
    assert read("NOT (p = 'apple' OR p IS NULL)") == ["m1"]
    assert read("p NOT LIKE 'ap%'") == ["a1", "m1", "n1"]  # NOT LIKE skips nothing, as in Delta
    assert read("(p = 'apple' AND x > 5) OR (p IS NULL AND x <= 1)") == ["n1"]


def test_dml_conditions_prune_partitions_inside_or_and_never_guess_a_time_zone(tmp_path):
    """A DML condition's OR over partition values skips the other partitions' files; a
    literal compared with a ``timestamp`` partition column skips nothing when the session
    time zone is unknown, and is read in it when it is known."""
    import json

    from deltalog.contrib.spark.data_skipping import data_skipped_files
    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import Metadata

    fields = [("p", "string"), ("ts", "timestamp"), ("x", "long")]
    schema = {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]}
    log = DeltaLog.for_table(str(tmp_path / "t"))
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=json.dumps(schema), partition_columns=("p", "ts")))
    files = [
        AddFile(f"f{i}", {"p": p, "ts": ts}, 1, 0, data_change=True)
        for i, (p, ts) in enumerate([("a", "2024-01-01 00:00:00"), ("b", "2024-01-01 05:00:00"), ("c", None)])
    ]
    txn.commit(files, CreateTable())
    snapshot = log.update()

    def kept(condition, time_zone=None):
        return [f.path for f in data_skipped_files(snapshot, list(snapshot.files), condition, "t", time_zone)]

    assert kept("t.p = 'a' OR p = 'c'") == ["f0", "f2"]
    assert kept("NOT (p = 'a' OR x > 5)") == ["f1", "f2"]
    assert kept("ts = '2024-01-01 05:00:00'") == ["f0", "f1", "f2"]  # no time zone: no guess
    assert kept("ts = '2024-01-01 05:00:00'", "UTC") == ["f1"]
    assert kept("ts = '2024-01-01 06:00:00'", "Europe/Paris") == ["f1"]  # 05:00 UTC
