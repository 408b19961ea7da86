"""OPTIMIZE: bin-packing per partition, dataChange=false commits, DV rows dropped, conflicts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deltalog.txn.commands import optimize as optimize_module
from deltalog.txn.commands.optimize import optimize
from deltalog.txn.commit.commit_errors import ConcurrentDeleteReadError
from deltalog.txn.commit.operations import CreateTable, Delete, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Action, AddFile, Metadata
from tests.ops.tables import append, create, deletion_vector_table, read_ids, write_file

NAME = re.compile(r"^(p=[ab]/)?part-00000-[0-9a-f-]{36}\.c000\.snappy\.parquet$")


def _fill(log: DeltaLog) -> list[int]:
    ids: list[int] = []
    for i in range(6):
        rows = list(range(i * 10, i * 10 + 10))
        append(log, rows, "a" if i % 2 else "b")
        ids += rows
    return sorted(ids)


def test_compacts_each_partition_into_one_file(table_uri: str) -> None:
    log = create(table_uri)
    ids = _fill(log)
    result = optimize(log)
    snap = log.update()
    assert result.version == snap.version == 7
    assert (result.num_files_removed, result.num_files_added, result.partitions_optimized) == (6, 2, 2)
    assert snap.num_files == 2
    assert read_ids(log) == ids
    for f in snap.files:
        assert NAME.match(f.path), f.path
        assert f.path.startswith(f"p={f.partition_values['p']}/")
        assert not f.data_change
        stats = json.loads(f.stats or "{}")
        assert stats["numRecords"] == 30
        assert stats["nullCount"] == {"id": 0, "name": 0}
        expected = [i for i in ids if (i // 10) % 2 == (1 if f.partition_values["p"] == "a" else 0)]
        assert stats["minValues"]["id"] == min(expected) and stats["maxValues"]["id"] == max(expected)
    actions = log.read_commit(7)
    info = actions[0]
    assert info.operation == "OPTIMIZE"  # type: ignore[union-attr]
    assert info.isolation_level == "SnapshotIsolation"  # type: ignore[union-attr]
    # Delta 3.2+ records clusterBy on every OPTIMIZE ("[]" when the table is not clustered)
    assert info.operation_parameters == {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": False}  # type: ignore[union-attr]
    metrics = info.operation_metrics  # type: ignore[union-attr]
    assert metrics["numAddedFiles"] == "2" and metrics["numRemovedFiles"] == "6"
    assert metrics["numRemovedBytes"] == str(result.bytes_removed)
    assert all(not a.data_change for a in actions[1:])  # type: ignore[union-attr]


def test_where_limits_the_partitions(table_uri: str) -> None:
    log = create(table_uri)
    ids = _fill(log)
    result = optimize(log, where=[("p", "=", "a")])
    files = log.update().files
    assert result.num_files_removed == 3 and result.num_files_added == 1
    assert sorted(f.partition_values["p"] for f in files) == ["a", "b", "b", "b"]
    assert log.read_commit(result.version or 0)[0].operation_parameters["predicate"] == "[\"(p = 'a')\"]"  # type: ignore[union-attr]
    assert read_ids(log) == ids


def test_target_size_and_min_files_per_bin(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), partitioned=False)
    for i in range(4):
        append(log, list(range(i * 100, i * 100 + 100)), None)
    sizes = sorted(f.size for f in log.update().files)
    # bins of at most two files each
    result = optimize(log, target_size=sizes[2] + sizes[3])
    assert (result.num_files_removed, result.num_files_added) == (4, 2)
    assert len(read_ids(log)) == 400
    # every file is now at or above the target: nothing to do, nothing committed
    version = log.update().version
    none = optimize(log, target_size=min(f.size for f in log.update().files))
    assert none.version is None and log.update().version == version
    # one more small file makes a bin of two only with min_files_per_bin=2: not enough with 3
    append(log, [1000], None)
    assert optimize(log, min_files_per_bin=4).version is None
    assert optimize(log, min_files_per_bin=3).num_files_removed == 3


def test_target_size_from_table_property(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), partitioned=False, config={"delta.targetFileSize": "1"})
    append(log, [1], None)
    append(log, [2], None)
    assert optimize(log).version is None  # every file is bigger than 1 byte: nothing is small


def test_deletion_vector_rows_are_dropped(tmp_path: Path) -> None:
    """Delta's ``groupFilesIntoBins``: a file with too many deleted rows is a candidate, but a
    bin of one file is rewritten only by REORG (or Z-order), not by OPTIMIZE; in a bin with
    another file its deleted rows are dropped."""
    log = deletion_vector_table(str(tmp_path / "t"))
    assert read_ids(log) == [2, 4]
    lone = optimize(log)
    assert (lone.version, lone.total_considered_files, lone.total_files_skipped) == (None, 1, 1)
    append(log, [7], "a")
    result = optimize(log)
    assert result.num_deletion_vectors_removed == 1 and (result.num_files_removed, result.num_files_added) == (2, 1)
    (f,) = log.update().files
    assert f.deletion_vector is None
    assert json.loads(f.stats or "{}")["numRecords"] == 3
    assert read_ids(log) == [2, 4, 7]


def test_concurrent_append_does_not_conflict(table_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    log = create(table_uri)
    ids = _fill(log)
    real = optimize_module._Compactor.write_bin
    other = DeltaLog.for_table(table_uri)

    def append_meanwhile(self: object, files: list[AddFile]) -> AddFile | None:
        if not getattr(append_meanwhile, "done", False):
            append_meanwhile.done = True  # type: ignore[attr-defined]
            append(other, [1000], "a")
        return real(self, files)  # type: ignore[arg-type]

    monkeypatch.setattr(optimize_module._Compactor, "write_bin", append_meanwhile)
    result = optimize(log)
    assert result.attempts == 1 and result.version == 8
    assert read_ids(log) == sorted([*ids, 1000])


def _dv_delete(log: DeltaLog, victim: AddFile) -> list[Action]:
    """A DELETE through a deletion vector (row 0 of ``victim``): ``victim`` re-added with it."""
    from dataclasses import replace

    from deltalog.txn.log.deletion_vector_writer import widen_stats
    from deltalog.txn.log.deletion_vectors import dv_absolute_path, write_dv_file, z85_encode
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    blob, [(offset, size, card)] = write_dv_file([[0]])
    dv = DeletionVectorDescriptor("u", z85_encode(uuid.uuid4().bytes), size, card, offset)
    with open(log.store.fs_path(dv_absolute_path(log.table_uri, dv)), "wb") as fh:
        fh.write(blob)
    return [victim.remove(1), replace(victim, deletion_vector=dv, stats=widen_stats(victim.stats, 10, 0))]


def _set_property(log: DeltaLog, _: AddFile) -> None:
    from dataclasses import replace

    from deltalog.txn.commit.operations import SetTableProperties

    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={**txn.metadata.configuration, "k": "v"}))
    txn.commit([], SetTableProperties({"k": "v"}))


def _winner(kind: str) -> Callable[[DeltaLog, AddFile], object]:
    def remove(log: DeltaLog, victim: AddFile) -> object:
        return log.start_transaction().commit([victim.remove(int(time.time() * 1000))], Delete(["x"]))

    def dv_delete(log: DeltaLog, victim: AddFile) -> object:
        return log.start_transaction().commit(_dv_delete(log, victim), Delete(["x"]))

    return {"remove": remove, "dv_delete": dv_delete, "set_property": _set_property}[kind]


@pytest.mark.parametrize(
    ("winner", "victim_compacted", "conflict"),
    [
        ("dv_delete", True, True),  # OptimizeConflictSuite: DELTA_CONCURRENT_DELETE_READ
        ("remove", True, True),
        ("remove", False, False),  # a file OPTIMIZE left alone is not read (trackFilesRead)
        ("set_property", True, False),  # a conflict, but the compacted files are all there: retried
    ],
)
def test_a_concurrent_commit_fails_optimize_only_when_a_compacted_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, winner: str, victim_compacted: bool, conflict: bool
) -> None:
    """Delta's ``OptimizeConflictSuite`` and ``OptimizeExecutor.commitAndRetry``: OPTIMIZE
    does not plan again. A concurrent commit that removed (or gave a deletion vector to) a
    file it compacts fails it with ``ConcurrentDeleteReadError``, the rewritten files
    deleted; otherwise its commit is retried as planned."""
    uri = str(tmp_path / "t")
    log = create(uri, config={"delta.enableDeletionVectors": "true"})
    _fill(log)
    big = write_file(log, list(range(100, 2000)), "a")
    log.start_transaction().commit([big], Write())
    small = next(f for f in log.update().files if f.partition_values["p"] == "a" and f is not big)
    victim = small if victim_compacted else big
    real = optimize_module._Compactor.write_bin
    other = DeltaLog.for_table(uri)

    def commit_meanwhile(self: object, files: list[AddFile]) -> AddFile | None:
        if not getattr(commit_meanwhile, "done", False):
            commit_meanwhile.done = True  # type: ignore[attr-defined]
            _winner(winner)(other, victim)
        return real(self, files)  # type: ignore[arg-type]

    monkeypatch.setattr(optimize_module._Compactor, "write_bin", commit_meanwhile)
    before = log.update().version
    if conflict:
        with pytest.raises(ConcurrentDeleteReadError):
            optimize(log, target_size=big.size)
        assert log.update().version == before + 1  # only the winner
        _assert_no_orphans(log)
    else:
        result = optimize(log, target_size=big.size)
        assert result.version == before + 2 and result.num_files_removed == 6
        # no conflict: committed from the read version; after one, from a new transaction's
        read_version = before + 1 if winner == "set_property" else before
        assert log.read_commit(before + 2)[0].read_version == read_version  # type: ignore[union-attr]
    assert read_ids(log) == read_ids(log, before + 1)  # the winner's rows: OPTIMIZE changes none


def test_conflict_on_the_last_attempt_raises_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = str(tmp_path / "t")
    log = create(uri)
    _fill(log)
    version_before = log.update().version
    victim = log.update().files[0]
    real = optimize_module._Compactor.write_bin
    other = DeltaLog.for_table(uri)

    def delete_meanwhile(self: object, files: list[AddFile]) -> AddFile | None:
        if not getattr(delete_meanwhile, "done", False):
            delete_meanwhile.done = True  # type: ignore[attr-defined]
            txn = other.start_transaction()
            txn.filter_files()
            txn.commit([victim.remove(int(time.time() * 1000))], Delete(["x"]))
        return real(self, files)  # type: ignore[arg-type]

    monkeypatch.setattr(optimize_module._Compactor, "write_bin", delete_meanwhile)
    with pytest.raises(ConcurrentDeleteReadError):
        optimize(log, max_attempts=1)
    assert log.update().version == version_before + 1  # only the concurrent delete
    _assert_no_orphans(log)


def _ids_of(log: DeltaLog, add: AddFile) -> set[int]:
    import pyarrow.parquet as pq

    return set(pq.read_table(log.store.fs_path(f"{log.table_uri}/{add.path}")).column("id").to_pylist())


def _assert_no_orphans(log: DeltaLog) -> None:
    """Every Parquet file on disk is active or tombstoned: nothing this run wrote is left."""
    root = log.store.fs_path(log.table_uri)
    on_disk = {
        os.path.relpath(os.path.join(d, n), root)
        for d, _, names in os.walk(root)
        if "_delta_log" not in d
        for n in names
        if n.endswith(".parquet")
    }
    snap = log.update()
    known = {f.path for f in snap.files} | {r.path for r in snap.tombstones}
    assert on_disk == known


WRITER = """
import sys
from tests.ops.tables import append
from deltalog.txn.delta_log import DeltaLog
log = DeltaLog.for_table(sys.argv[1])
base = int(sys.argv[2])
for i in range(15):
    append(log, [base + i], "a" if i % 2 else "b")
"""


@pytest.mark.slow
def test_optimize_while_processes_append(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = create(uri)
    root = Path(__file__).resolve().parents[2]
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, uri, str(base)], cwd=root) for base in (1000, 2000)]
    runs = 0
    try:
        while any(w.poll() is None for w in writers) or runs < 2:
            optimize(log)
            runs += 1
    finally:
        codes = [w.wait(timeout=120) for w in writers]
    assert codes == [0, 0]
    optimize(log)
    expected = sorted([1000 + i for i in range(15)] + [2000 + i for i in range(15)])
    assert read_ids(log) == expected
    _assert_no_orphans(log)


def test_delta_rs_reads_the_compacted_table(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    uri = str(tmp_path / "t")
    log = create(uri)
    ids = _fill(log)
    optimize(log)
    table = DeltaTable(uri).to_pyarrow_table()
    assert sorted(table.column("id").to_pylist()) == ids
    assert DeltaTable(uri).history(1)[0]["operation"] == "OPTIMIZE"


def test_output_keeps_the_input_codec_and_encoding_and_is_not_bigger(tmp_path: Path) -> None:
    """Unique ids plain-encoded and gzip in the inputs: the compacted file is gzip, has no
    dictionary on ``id`` (a dictionary of unique values only adds bytes), one row group,
    and is no bigger than its inputs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    log = create(str(tmp_path / "t"), partitioned=False)
    fs = log.store.filesystem()
    for i in range(4):
        ids = list(range(i * 5000, (i + 1) * 5000))
        table = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{j % 7}" for j in ids]})
        name = f"part-00000-{uuid.uuid4()}.c000.gz.parquet"
        with fs.open_output_stream(log.store.fs_path(f"{log.table_uri}/{name}")) as out:
            pq.write_table(table, out, compression="gzip", use_dictionary=["name"], row_group_size=2000)
        size = fs.get_file_info(log.store.fs_path(f"{log.table_uri}/{name}")).size
        add = AddFile(
            path=name,
            partition_values={},
            size=size,
            modification_time=0,
            data_change=True,
            stats=json.dumps({"numRecords": 5000}),
        )
        log.start_transaction().commit([add], Write(mode="Append"))
    result = optimize(log)
    assert result.num_files_removed == 4 and result.num_files_added == 1
    assert result.bytes_added <= result.bytes_removed
    (out_file,) = log.update().files
    assert out_file.path.endswith(".c000.gz.parquet")
    with fs.open_input_file(log.store.fs_path(f"{log.table_uri}/{out_file.path}")) as handle:
        md = pq.ParquetFile(handle).metadata
    assert md.num_row_groups == 1
    chunks = {md.row_group(0).column(i).path_in_schema: md.row_group(0).column(i) for i in range(2)}
    assert {c.compression for c in chunks.values()} == {"GZIP"}
    assert not chunks["id"].has_dictionary_page and chunks["name"].has_dictionary_page
    assert read_ids(log) == list(range(20000))


def test_z_order_rewrites_every_file_of_the_partition_in_z_order(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.commands.optimize import OptimizeError
    from deltalog.txn.commands.z_order import z_order_indices

    log = create(str(tmp_path / "t"), config={"delta.dataSkippingNumIndexedCols": "1"})
    append(log, [5, 3, 1], "a")
    append(log, [4, 2, 0], "b")  # a partition of one file is rewritten too (Delta: all files)
    with pytest.raises(OptimizeError, match=r"^\[DELTA_ZORDERING_ON_PARTITION_COLUMN\] p is a partition column"):
        optimize(log, z_order_by=["p"])
    with pytest.raises(OptimizeError, match=r"^\[DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST\] .* nope does not exist"):
        optimize(log, z_order_by=["nope"])
    with pytest.raises(OptimizeError, match="do not collect stats"):
        optimize(log, z_order_by=["name"])  # only the first column has statistics
    assert log.update().version == 2
    result = optimize(log, z_order_by=["ID"])
    assert (result.num_files_removed, result.num_files_added) == (2, 2)
    assert log.read_commit(3)[0].operation_parameters["zOrderBy"] == '["ID"]'  # type: ignore[union-attr]  # as given, as Delta
    fs = log.store.filesystem()
    for f in log.update().files:
        with fs.open_input_file(log.store.fs_path(f"{log.table_uri}/{f.path}")) as handle:
            ids = pq.read_table(handle).column("id").to_pylist()
        assert ids == sorted(ids)
    # Z-values interleave bits, first column first (range ids: the test below)
    grid = pa.table({"x": [1, 1, 0, 0], "y": [1, 0, 1, 0]})
    assert z_order_indices(grid, ["x", "y"], 2).to_pylist() == [3, 2, 1, 0]


def test_optimize_collects_statistics_for_delta_data_skipping_stats_columns(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), config={"delta.dataSkippingStatsColumns": "name"})
    append(log, [1, 2], "a")
    append(log, [3], "a")
    optimize(log)
    (f,) = log.update().files
    stats = json.loads(f.stats or "{}")
    assert (stats["minValues"], stats["maxValues"], stats["nullCount"]) == ({"name": "n1"}, {"name": "n3"}, {"name": 0})


def test_optimize_keeps_the_string_prefix_length_of_the_table(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), config={"delta.dataSkippingStringPrefixLength": "5"})
    append(log, [1234567, 1234568], "a")
    append(log, [1234569], "a")
    optimize(log)
    (f,) = log.update().files
    stats = json.loads(f.stats or "{}")
    # the minimum cut to 5 characters, the maximum too plus Delta's ASCII tie-breaker
    assert (stats["minValues"]["name"], stats["maxValues"]["name"]) == ("n1234", "n1234\x7f")


def test_z_order_needs_statistics_by_delta_data_skipping_stats_columns(tmp_path: Path) -> None:
    from deltalog.txn.commands.optimize import OptimizeError

    config = {"delta.dataSkippingNumIndexedCols": "1", "delta.dataSkippingStatsColumns": "name"}
    log = create(str(tmp_path / "t"), config=config)
    append(log, [5, 3, 1], "a")
    with pytest.raises(OptimizeError, match="do not collect stats"):
        optimize(log, z_order_by=["id"])  # the list, not the first column, has statistics
    assert optimize(log, z_order_by=["NAME"]).num_files_added == 1


def test_z_order_by_nested_fields_as_deltas(tmp_path: Path) -> None:
    """OptimizeZOrderSuite "Zorder on a nested column" and "ZOrder on a column without
    stats": a nested field orders the rewritten rows; nested fields without statistics are
    refused together, by their dotted names; a missing field is refused by name."""
    import deltalake
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.commands.optimize import OptimizeError

    path = str(tmp_path / "t")
    ids = [*range(0, 80, 3), *range(40, 80, 5), *range(79, 60, -2)]
    for chunk in (ids[::2], ids[1::2]):
        rows = [{"id": i, "nested": {"sub": {"b": i + 2, "c": -i}, "d": i}} for i in chunk]
        deltalake.write_deltalake(path, pa.Table.from_pylist(rows), mode="append")
    log = DeltaLog.for_table(path)
    result = optimize(log, z_order_by=["nested.SUB.c"])
    assert (result.num_files_removed, result.num_files_added) == (2, 1)
    assert log.read_commit(2)[0].operation_parameters["zOrderBy"] == '["nested.SUB.c"]'  # type: ignore[union-attr]
    (f,) = log.update().files
    with log.store.filesystem().open_input_file(log.store.fs_path(f"{log.table_uri}/{f.path}")) as handle:
        values = [r["sub"]["c"] for r in pq.read_table(handle).column("nested").to_pylist()]
    assert values == sorted(values) and len(values) == len(ids)
    with pytest.raises(OptimizeError, match="does not exist"):
        optimize(log, z_order_by=["nested.sub.missing"])
    import dataclasses

    txn = log.start_transaction()
    metadata = log.update().metadata
    config = {**metadata.configuration, "delta.dataSkippingNumIndexedCols": "1"}
    txn.update_metadata(dataclasses.replace(metadata, configuration=config))
    txn.commit([], Write(mode="Append"))
    with pytest.raises(OptimizeError, match=re.escape("Z-Ordering on ['nested.sub.c', 'nested.d']")):
        optimize(log, z_order_by=["id", "nested.sub.c", "nested.d"])


def test_metrics_follow_delta_optimize_metrics(tmp_path: Path) -> None:
    """Delta's OptimizeMetricsSuite / OptimizeCompactionSuite: an empty table and a table of
    lone files commit nothing (one batch, every file skipped); the commit's percentiles are
    FileSizeStatsWithHistogram's (index count * q / 4 of the sorted sizes)."""
    log = create(str(tmp_path / "t"), config={"delta.dataSkippingNumIndexedCols": "2"})
    empty = optimize(log)
    assert (empty.version, empty.num_batches, empty.num_bins, empty.total_considered_files) == (None, 1, 0, 0)
    append(log, [1], "a")
    lone = optimize(log)
    assert (lone.version, lone.total_considered_files, lone.total_files_skipped) == (None, 1, 1)
    for part, n in (("a", 10), ("b", 40), ("c", 200), ("d", 900)):  # four outputs of different sizes
        append(log, list(range(n)), part)
        if part != "a":
            append(log, [n], part)
    result = optimize(log)
    sizes = sorted(f.size for f in log.update().files)
    assert len(set(sizes)) == 4 and sorted(result.added_file_sizes) == sizes
    metrics = log.read_commit(result.version or 0)[0].operation_metrics  # type: ignore[union-attr]
    quantiles = [metrics[k] for k in ("minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize")]
    assert quantiles == [str(s) for s in (sizes[0], sizes[1], sizes[2], sizes[3], sizes[3])]
    assert (result.num_bins, result.num_batches, result.partitions_optimized) == (4, 1, 4)
    assert (result.num_table_columns, result.num_table_columns_with_stats) == (3, 2)
    assert len(result.removed_file_sizes) == 8 and sum(result.removed_file_sizes) == result.bytes_removed


def test_rewritten_files_go_under_a_random_prefix_where_the_table_randomizes_them(tmp_path: Path) -> None:
    """Delta's OPTIMIZE writes through ``TransactionalWrite.getCommitter``: with
    ``delta.randomizeFilePrefixes`` its files go under a random directory of
    ``delta.randomPrefixLength`` characters, not the partition's; partition values stay in the log."""
    log = create(str(tmp_path / "t"), config={"delta.randomizeFilePrefixes": "true", "delta.randomPrefixLength": "5"})
    ids = _fill(log)
    optimize(log)
    snap = log.update()
    assert snap.num_files == 2 and read_ids(log) == ids
    for f in snap.files:
        directory, name = f.path.split("/")
        assert re.fullmatch(r"[A-Za-z0-9]{5}", directory) and name.startswith("part-00000-"), f.path
        assert f.partition_values["p"] in ("a", "b")


def test_row_limiter_splits_batches_into_files_of_at_most_the_limit() -> None:
    """Spark's maxRecordsPerFile split of one output: batches are sliced where a file fills."""
    import pyarrow as pa

    from deltalog.txn.commands.optimize import RowLimiter

    def split(sizes: list[int], limit: int) -> list[list[int]]:
        start = 0
        batches = []
        for n in sizes:
            batches.append(pa.record_batch({"x": list(range(start, start + n))}))
            start += n
        return [[v for b in f for v in b.column("x").to_pylist()] for f in RowLimiter(iter(batches), limit).files()]

    assert split([3, 0, 4], 2) == [[0, 1], [2, 3], [4, 5], [6]]
    assert split([5], 5) == [[0, 1, 2, 3, 4]]
    assert split([2, 2], 0) == [[0, 1, 2, 3]]  # no limit: one file
    assert split([], 3) == []


def test_z_order_by_a_column_spark_cannot_sort_is_refused_before_any_rewrite(tmp_path: Path) -> None:
    """DeltaVariantSuite "Zorder is not supported for Variant": Delta's ``RangePartitionId``
    refuses a variant (or a struct holding one) as Spark's DATATYPE_MISMATCH, after the
    statistics check and before anything is rewritten."""
    from deltalog.txn.commands.optimize import OptimizeError

    def field(name: str, data_type: Any) -> dict[str, Any]:
        return {"name": name, "type": data_type, "nullable": True, "metadata": {}}

    holder = {"type": "struct", "fields": [field("w", "variant"), field("x", "long")]}
    schema = {"type": "struct", "fields": [field("id", "long"), field("v", "variant"), field("s", holder)]}
    log = DeltaLog.for_table(str(tmp_path / "t"))
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(schema)))
    txn.commit([], CreateTable())
    for column, type_name in (("v", "variant"), ("s", "struct<w:variant,x:long>"), ("s.w", "variant")):
        message = f'"rangepartitionid({column})" due to data type mismatch: cannot sort data type {type_name}'
        with pytest.raises(
            OptimizeError, match=re.escape(f"[DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT] Cannot resolve {message}")
        ):
            optimize(log, z_order_by=["id", column])
    assert optimize(log, z_order_by=["s.x"]).num_files_added == 0
    assert log.update().version == 0


@pytest.mark.parametrize(("config", "tight"), [({}, None), ({"delta.feature.deletionVectors": "supported"}, True)])
def test_rewritten_files_say_tight_bounds_only_where_the_protocol_supports_deletion_vectors(
    tmp_path: Path, config: dict[str, str], tight: bool | None
) -> None:
    """Delta's ``statsCollector`` adds ``tightBounds: true`` to a new file's statistics when the
    protocol supports deletion vectors (``deletionVectorsSupported``), enabled or not, and
    no ``tightBounds`` otherwise; OPTIMIZE writes through it."""
    log = create(str(tmp_path / "t"), config=config)
    append(log, [1, 2], "a")
    append(log, [3], "a")
    optimize(log)
    (f,) = log.update().files
    assert json.loads(f.stats or "{}").get("tightBounds") == tight


def test_z_order_by_a_struct_or_an_array_orders_as_spark_sorts_them(tmp_path: Path) -> None:
    """Spark sorts structs field by field and arrays element by element (a shorter prefix
    first, nulls first), so Delta's ``range_partition_id`` ranks such a column; Z-order by
    one column orders the rewritten rows by it. Before, the rewrite failed in pyarrow."""
    import deltalake
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "t")
    structs = [{"x": 2, "y": "b"}, None, {"x": 1, "y": "z"}, {"x": 2, "y": "a"}, {"x": None, "y": "c"}]
    arrays = [[3], [1, 2], None, [1], [1, None]]
    rows = [{"id": i, "s": s, "a": a} for i, (s, a) in enumerate(zip(structs, arrays))]
    for chunk in (rows[:3], rows[3:]):
        deltalake.write_deltalake(path, pa.Table.from_pylist(chunk), mode="append")
    log = DeltaLog.for_table(path)

    def order() -> list[int]:
        (f,) = log.update().files
        with log.store.filesystem().open_input_file(log.store.fs_path(f"{log.table_uri}/{f.path}")) as handle:
            return [int(i) for i in pq.read_table(handle).column("id").to_pylist()]

    optimize(log, z_order_by=["s"])
    assert order() == [1, 4, 2, 3, 0]  # null, (null, c), (1, z), (2, a), (2, b)
    optimize(log, z_order_by=["a"])
    assert order() == [2, 3, 4, 1, 0]  # null, [1], [1, null], [1, 2], [3]


def test_z_order_range_ids_are_deltas_range_partition_ids(tmp_path: Path) -> None:
    """OptimizeZOrderSuite "optimize command: interleaving": Delta's ``range_partition_id`` is
    Spark's ``RangePartitioner`` (bounds at every ``rows / num_ranges`` rows of the sorted
    non-null values, a value's id the number of bounds below it), so 100 distinct values get
    ids 0..99, not ranks scaled to 1000; the four files Z-ordered by (c1, c2, c3) hold Delta's
    exact ranges."""
    import deltalake
    import pyarrow as pa

    from deltalog.txn.commands.z_order import range_ids

    path = str(tmp_path / "t")
    ids = list(range(100))
    columns = {"c1": ids, "c2": [99 - i for i in ids], "c3": [(i + 50) % 100 for i in ids]}
    deltalake.write_deltalake(path, pa.table({k: pa.array(v, pa.int64()) for k, v in columns.items()}))
    log = DeltaLog.for_table(path)
    result = optimize(log, z_order_by=["c1", "c2", "c3"], target_size=log.update().files[0].size // 4)
    assert (result.num_files_removed, result.num_files_added) == (1, 4)
    ranges = []
    for f in log.update().files:
        stats = json.loads(f.stats or "{}")
        bounds = [tuple(stats[side][c] for c in ("c1", "c2", "c3")) for side in ("minValues", "maxValues")]
        ranges.append((stats["numRecords"], *bounds))
    assert sorted(ranges) == [
        (25, (0, 50, 50), (49, 99, 99)),
        (25, (16, 20, 18), (79, 83, 85)),
        (25, (36, 36, 0), (63, 63, 96)),
        (25, (64, 0, 14), (99, 35, 49)),
    ]
    # a value equal to a bound takes the range below it; nulls are not sampled: range 0
    assert range_ids(pa.array([5, None, 1, 5]), 4).tolist() == [1, 0, 0, 1]
    assert range_ids(pa.array([4, 3, 2, 1]), 2).tolist() == [1, 1, 0, 0]
    assert range_ids(pa.array([3, 3, 3, 3, 1, 2]), 2).tolist() == [0] * 6  # the one bound: 3


@pytest.mark.parametrize(
    ("type_name", "values"),
    [
        ("integer", ["1", "01", "+1"]),
        ("timestamp", ["2000-01-01 12:00:00", "2000-01-01T12:00:00.000000Z"]),
        # AddFileSuite: leading zeroes missing, an offset, a zone id (Spark's cast of the text)
        ("timestamp", ["2000-01-01 01:02:03", "2000-01-01 1:2:3", "2000-01-01 06:32:03+0530", "2000-01-01 2:2:3 CET"]),
        ("date", ["2000-01-01", "2000-1-1"]),
    ],
)
def test_groups_files_by_their_typed_partition_values(tmp_path: Path, type_name: str, values: list[str]) -> None:
    """OptimizeCompactionSuite "optimize groups files correctly by normalized partition values":
    Delta's OPTIMIZE groups files by ``normalizedPartitionValues`` (each value parsed to its
    column's type), so one partition written as different texts is compacted into one file.
    The Spark layer reads each text as that one value too (AddFileSuite)."""
    from deltalog.contrib.spark.partitioning import typed_partition_value
    from tests.ops.tables import SCHEMA

    schema = json.loads(SCHEMA)
    schema["fields"][2]["type"] = type_name
    log = DeltaLog.for_table(str(tmp_path / "t"))
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(schema), partition_columns=("p",)))
    txn.commit([], CreateTable(partition_by=("p",)))
    for i, value in enumerate(values * 2):
        log.start_transaction().commit([write_file(log, [i], value)], Write(mode="Append"))
    result = optimize(log)
    assert (result.num_files_removed, result.num_files_added, result.partitions_optimized) == (2 * len(values), 1, 1)
    assert [f.num_records() for f in log.update().files] == [2 * len(values)]
    assert len({typed_partition_value(v, type_name) for v in values}) == 1
