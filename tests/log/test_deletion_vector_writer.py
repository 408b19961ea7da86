"""Writing deletion vectors (engine level): files, inline vectors, merging, metrics, and
delta-rs reading what deltalog wrote."""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from deltalog.txn.commit.operations import Delete
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.deletion_vector_writer import (
    mark_rows_deleted,
    random_prefix_length,
    widen_stats,
)
from deltalog.txn.log.deletion_vectors import dv_absolute_path, read_deletion_vector
from deltalog.txn.protocol.actions import AddFile, RemoveFile
from deltalog.txn.protocol.errors import InvalidTableStateError
from tests.ops.tables import append, create, read_ids

DV = {"delta.enableDeletionVectors": "true"}


def _delete(log: DeltaLog, marks: dict[str, list[int]], **kwargs: int) -> tuple[int, object]:
    txn = log.start_transaction()
    files = {f.path: f for f in txn.filter_files()}
    result = mark_rows_deleted(
        log.store,
        log.table_uri,
        log.update().metadata.configuration,
        [(files[p], np.array(rows)) for p, rows in marks.items()],
        int(time.time() * 1000),
        **kwargs,
    )
    version = txn.commit(result.actions, Delete(["test"], user_metrics=result.metrics()))
    return version, result


def _deltars_ids(uri: str) -> list[int]:
    """delta-rs's rows (its DataFusion reader applies deletion vectors)."""
    import deltalake
    import pyarrow as pa

    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute("select id from t")
    return sorted(pa.table(result.read_all()).column("id").to_pylist())


def test_table_created_with_the_property_has_the_feature(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), config=DV)
    proto = log.update().protocol
    assert "deletionVectors" in (proto.reader_features or ()) and "deletionVectors" in (proto.writer_features or ())


def test_delete_marks_rows_in_one_dv_file_and_delta_rs_reads_it(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = create(uri, config=DV)
    append(log, list(range(10)), "a")
    append(log, list(range(100, 110)), "b")
    a, b = sorted(log.update().files, key=lambda f: str(f.partition_values["p"]))
    data_before = {f.path: os.path.getmtime(log.store.fs_path(f"{uri}/{f.path}")) for f in (a, b)}
    version, result = _delete(log, {a.path: [0, 3], b.path: [9]})
    actions = log.read_commit(version)
    adds = [x for x in actions if isinstance(x, AddFile)]
    removes = [x for x in actions if isinstance(x, RemoveFile)]
    # the same paths come back with a DV; no data file is written or touched
    assert sorted(x.path for x in adds) == sorted(x.path for x in removes) == sorted([a.path, b.path])
    assert all(x.data_change and x.deletion_vector is None for x in removes)
    for x in adds:
        assert x.data_change and x.deletion_vector is not None and x.deletion_vector.storage_type == "u"
        stats = json.loads(x.stats or "{}")
        assert stats["tightBounds"] is False and stats["numRecords"] == 10
    assert {f.path: os.path.getmtime(log.store.fs_path(f"{uri}/{f.path}")) for f in (a, b)} == data_before
    data_files = [p for _, _, names in os.walk(uri) for p in names if p.endswith(".parquet")]
    assert len(data_files) == 2
    # both DVs in one file: version byte, then size + bitmap + CRC at each offset
    dvs = [x.deletion_vector for x in adds if x.deletion_vector is not None]
    assert len({d.path_or_inline_dv for d in dvs}) == 1 and len(dvs[0].path_or_inline_dv) == 20
    path = dv_absolute_path(uri, dvs[0])
    assert os.path.basename(path).startswith("deletion_vector_") and path.endswith(".bin")
    blob = Path(log.store.fs_path(path)).read_bytes()
    assert blob[:1] == b"\x01"
    for d in dvs:
        assert d.offset is not None
        (size,) = struct.unpack_from(">i", blob, d.offset)
        data = blob[d.offset + 4 : d.offset + 4 + size]
        assert size == d.size_in_bytes and struct.unpack_from(">I", blob, d.offset + 4 + size)[0] == zlib.crc32(data)
    assert result.metrics() == {  # type: ignore[attr-defined]
        "numDeletionVectorsAdded": "2",
        "numDeletionVectorsRemoved": "0",
        "numDeletionVectorsUpdated": "0",
    }
    expected = [1, 2, 4, 5, 6, 7, 8, 9, *range(100, 109)]
    assert read_ids(log) == expected
    assert _deltars_ids(uri) == expected


def test_second_delete_merges_with_the_existing_dv(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = create(uri, partitioned=False, config=DV)
    append(log, list(range(10)), None)
    (f,) = log.update().files
    _delete(log, {f.path: [1, 2]})
    (first,) = log.update().files
    version, result = _delete(log, {first.path: [2, 5]})  # row 2 is already deleted
    (second,) = log.update().files
    assert second.deletion_vector is not None and second.deletion_vector.cardinality == 3
    assert read_deletion_vector(log.store, uri, second.deletion_vector).to_pylist() == [1, 2, 5]
    remove = next(x for x in log.read_commit(version) if isinstance(x, RemoveFile))
    assert remove.deletion_vector == first.deletion_vector  # the old (path, DV) pair leaves
    assert result.num_modified_rows == 1  # type: ignore[attr-defined]
    assert result.metrics() == {  # type: ignore[attr-defined]
        "numDeletionVectorsAdded": "1",
        "numDeletionVectorsRemoved": "1",
        "numDeletionVectorsUpdated": "1",
    }
    assert read_ids(log) == [0, 3, 4, 6, 7, 8, 9] == _deltars_ids(uri)
    # a checkpoint carries the DV descriptors: a fresh reader of it sees the same rows
    log.checkpoint()
    (from_checkpoint,) = DeltaLog.for_table(uri).update().files
    assert from_checkpoint.deletion_vector == second.deletion_vector
    assert read_ids(DeltaLog.for_table(uri)) == [0, 3, 4, 6, 7, 8, 9] == _deltars_ids(uri)


def test_deleting_every_remaining_row_removes_the_file(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = create(uri, partitioned=False, config=DV)
    append(log, [1, 2, 3], None)
    (f,) = log.update().files
    _delete(log, {f.path: [0]})
    (g,) = log.update().files
    version, result = _delete(log, {g.path: [1, 2]})
    actions = log.read_commit(version)
    assert not [x for x in actions if isinstance(x, AddFile)]
    assert result.num_removed_files == 1 and not result.writer.written  # type: ignore[attr-defined]
    assert log.update().files == [] and _deltars_ids(uri) == []


def test_inline_and_prefixed_dvs_read_back(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    config = {**DV, "delta.randomizeFilePrefixes": "true", "delta.randomPrefixLength": "3"}
    assert random_prefix_length(config) == 3 and random_prefix_length(DV) == 0
    log = create(uri, partitioned=False, config=config)
    append(log, list(range(20)), None)
    append(log, list(range(100, 120)), None)
    files = sorted(log.update().files, key=lambda f: f.path)
    _delete(log, {files[0].path: [0], files[1].path: list(range(0, 20, 2))}, max_inline_bytes=40)
    dvs = {f.path: f.deletion_vector for f in log.update().files}
    kinds = sorted(d.storage_type for d in dvs.values() if d is not None)
    assert kinds == ["i", "u"]  # one row (34 bytes) is inlined, ten rows (52) are not
    on_disk = next(d for d in dvs.values() if d is not None and d.storage_type == "u")
    prefix = on_disk.path_or_inline_dv[:-20]
    assert len(prefix) == 3 and prefix.isalnum()
    assert os.path.isfile(log.store.fs_path(dv_absolute_path(uri, on_disk)))
    assert os.path.dirname(dv_absolute_path(uri, on_disk)) == f"{uri}/{prefix}"
    assert read_ids(log) == _deltars_ids(uri) and len(read_ids(log)) == 29


def test_a_row_index_outside_the_file_is_refused_and_the_table_is_untouched(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = create(uri, partitioned=False, config=DV)
    append(log, [1, 2], None)
    (f,) = log.update().files
    with pytest.raises(InvalidTableStateError, match="outside"):
        mark_rows_deleted(log.store, uri, {}, [(f, np.array([2]))], 0)
    assert log.update().version == 1 and read_ids(log) == [1, 2]


def test_widened_stats_keep_all_null_counts_true() -> None:
    tight = json.dumps({"numRecords": 4, "nullCount": {"a": 3, "b": {"c": 1}}, "tightBounds": True})
    # one row already deleted and every live value of "a" null: after more deletes the
    # physical count (4) stays a true upper bound
    assert json.loads(widen_stats(tight, 4, 1)) == {
        "numRecords": 4,
        "nullCount": {"a": 4, "b": {"c": 1}},
        "tightBounds": False,
    }
    assert json.loads(widen_stats(None, 7, 0)) == {"numRecords": 7, "tightBounds": False}


def test_optimize_takes_files_over_the_deleted_ratio_and_purge_takes_every_dv(tmp_path: Path) -> None:
    from deltalog.txn.commands.optimize import optimize

    uri = str(tmp_path / "t")
    log = create(uri, partitioned=False, config=DV)
    for start in (0, 100, 200):
        append(log, list(range(start, start + 100)), None)
    few, *many = sorted(log.update().files, key=lambda f: f.path)
    _delete(log, {few.path: [0], **{f.path: list(range(10)) for f in many}})  # 1%, 10% and 10% deleted
    expected = read_ids(log)
    # OPTIMIZE (no file small enough to compact by size): the two files over 5% deleted, in one bin
    result = optimize(log, min_file_size=1)
    assert (result.num_files_removed, result.num_files_added, result.num_deletion_vectors_removed) == (2, 1, 2)
    assert sorted(f.deletion_vector is None for f in log.update().files) == [False, True]
    # REORG ... APPLY (PURGE): every file with a DV, committed as REORG
    result = optimize(log, min_file_size=1, purge=True)
    assert result.num_files_removed == 1 and result.num_deletion_vectors_removed == 1
    assert all(f.deletion_vector is None for f in log.update().files)
    info = log.history(1)[0].commit_info
    assert info is not None and info.operation == "REORG"
    assert (info.operation_parameters or {}).get("applyPurge") in (True, "true")
    assert read_ids(log) == expected == _deltars_ids(uri)
    assert optimize(log, purge=True).version is None  # nothing left to purge


def test_enabling_the_property_on_an_existing_table_upgrades_the_protocol(tmp_path: Path) -> None:
    from dataclasses import replace

    from deltalog.txn.commit.operations import SetTableProperties

    log = create(str(tmp_path / "t"), partitioned=False)
    assert "deletionVectors" not in (log.update().protocol.writer_features or ())
    txn = log.start_transaction()
    metadata = log.update().metadata
    txn.update_metadata(replace(metadata, configuration={**metadata.configuration, **DV}))
    txn.commit([], SetTableProperties(DV))
    proto = log.update().protocol
    assert "deletionVectors" in (proto.reader_features or ()) and "deletionVectors" in (proto.writer_features or ())


def test_two_deletes_marking_the_same_file_conflict(tmp_path: Path) -> None:
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError

    uri = str(tmp_path / "t")
    log = create(uri, partitioned=False, config=DV)
    append(log, list(range(10)), None)
    first, second = log.start_transaction(), log.start_transaction()
    (f,) = first.filter_files()
    (g,) = second.filter_files()
    config = log.update().metadata.configuration
    mine = mark_rows_deleted(log.store, uri, config, [(f, np.array([1]))], 0)
    theirs = mark_rows_deleted(log.store, uri, config, [(g, np.array([2]))], 0)
    second.commit(theirs.actions, Delete(["id = 2"]))
    # the winner re-added the file this one read (with its DV): Delta checks added files
    # first, so this is its ConcurrentAppendException, before the delete/delete check
    with pytest.raises(ConcurrentAppendError):
        first.commit(mine.actions, Delete(["id = 1"]))
    mine.writer.discard()
    assert read_ids(log) == [0, 1, *range(3, 10)] == _deltars_ids(uri)


def test_deleting_more_rows_of_a_delta_spark_dv_table(tmp_path: Path) -> None:
    """Delta's golden table with deletion vectors written by Delta Spark (and a checkpoint):
    deltalog merges new deleted rows into Delta Spark's DVs, and delta-rs, a fresh deltalog
    reader and the checkpoint path all see the same rows."""
    import shutil

    import deltalake
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.protocol.actions import absolute_path

    golden = Path(__file__).parent / "golden" / "dv-partitioned-with-checkpoint"
    uri = str(tmp_path / "t")
    shutil.copytree(golden, uri)
    log = DeltaLog.for_table(uri)

    def live_rows(log: DeltaLog) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for f in log.update().files:
            data = pq.read_table(log.store.fs_path(absolute_path(log.table_uri, f.path)))
            deleted = (
                set()
                if f.deletion_vector is None
                else set(read_deletion_vector(log.store, log.table_uri, f.deletion_vector).to_pylist())
            )
            part = int(f.partition_values["part"] or 0)
            out += [(part, v) for i, v in enumerate(data.column("col1").to_pylist()) if i not in deleted]
        return sorted(out)

    def delta_rs_rows() -> list[tuple[int, int]]:
        result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute("select part, col1 from t")
        table = pa.table(result.read_all())
        return sorted(zip(table.column("part").to_pylist(), table.column("col1").to_pylist()))

    before = live_rows(log)
    assert before == delta_rs_rows()
    with_dv = next(f for f in log.update().files if f.deletion_vector is not None)
    data = pq.read_table(log.store.fs_path(absolute_path(log.table_uri, with_dv.path)))
    already = set(read_deletion_vector(log.store, uri, with_dv.deletion_vector).to_pylist())  # type: ignore[arg-type]
    victim = next(i for i in range(data.num_rows) if i not in already)
    _delete(log, {with_dv.path: [victim]})

    (after,) = [f for f in log.update().files if f.path == with_dv.path]
    assert after.deletion_vector is not None
    assert after.deletion_vector.cardinality == with_dv.deletion_vector.cardinality + 1  # type: ignore[union-attr]
    part = int(with_dv.partition_values["part"] or 0)
    expected = sorted([*before])
    expected.remove((part, data.column("col1")[victim].as_py()))
    assert live_rows(DeltaLog.for_table(uri)) == expected == delta_rs_rows()
    log.checkpoint()
    assert live_rows(DeltaLog.for_table(uri)) == expected


def test_a_file_without_statistics_gets_them_from_its_footer_with_wide_bounds(tmp_path: Path) -> None:
    """TightBoundsSuite "DML operations fetch stats on tables with partial stats": a file
    whose add has no statistics gets, with its first DV, Delta's recomputed statistics
    (numRecords, bounds and null counts of the table's columns, tightBounds=false), not
    ``numRecords`` alone; its remove keeps the add as it was."""
    from dataclasses import replace

    log = create(str(tmp_path / "t"), partitioned=False, config=DV)
    append(log, [50, 51, 52, 99], None)
    (f,) = log.update().files
    bare = replace(f, stats=None)
    result = mark_rows_deleted(log.store, log.table_uri, {}, [(bare, np.array([0]))], 0, metadata=log.update().metadata)
    remove, add = result.actions
    assert isinstance(remove, RemoveFile) and remove.stats is None
    # the unpartitioned table's column p, which the file lacks, is null in all its rows
    # (Delta reads the file with the table's schema); the helper's stats left it out
    own = json.loads(f.stats or "{}")
    assert isinstance(add, AddFile) and json.loads(add.stats or "{}") == {
        **own,
        "nullCount": {**own["nullCount"], "p": 4},
        "tightBounds": False,
    }
