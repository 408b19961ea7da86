"""Interop with delta-rs (``deltalake``), both ways."""

from __future__ import annotations

import datetime as dt

import deltalake
import pyarrow as pa

from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.schema import PrimitiveType
from tests.log.helpers import add, commit, create, remove


def _same_state(path: str) -> None:
    table = deltalake.DeltaTable(path)
    snap = DeltaLog.for_table(path).update()
    assert snap.version == table.version()
    ours = sorted(f.path for f in snap.files)
    theirs = sorted(a["path"] for a in pa.table(table.get_add_actions(flatten=True)).to_pylist())
    assert [p for p in ours] == theirs or sorted(map(_unq, ours)) == sorted(map(_unq, theirs))
    proto = table.protocol()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (
        proto.min_reader_version,
        proto.min_writer_version,
    )
    md = table.metadata()
    assert snap.metadata.id == md.id and list(snap.partition_columns) == list(md.partition_columns)
    assert dict(snap.metadata.configuration) == dict(md.configuration)


def _unq(p: str) -> str:
    from urllib.parse import unquote

    return unquote(p)


def test_deltars_tables_load_with_same_state(tmp_path):
    path = str(tmp_path / "t")
    data = pa.table({"id": [1, 2, 3, 4], "p": ["a b", "x/y%z", None, "é=1"]})
    deltalake.write_deltalake(path, data, partition_by=["p"])
    for _ in range(12):
        deltalake.write_deltalake(path, data, partition_by=["p"], mode="append")
    _same_state(path)
    deltalake.DeltaTable(path).create_checkpoint()
    deltalake.write_deltalake(path, data, partition_by=["p"], mode="append")
    deltalake.DeltaTable(path).delete("id = 1")
    _same_state(path)
    deltalake.write_deltalake(path, data, partition_by=["p"], mode="overwrite")
    _same_state(path)
    snap = DeltaLog.for_table(path).update()
    values = {f.partition_values["p"] for f in snap.files}
    assert values == {"a b", "x/y%z", None, "é=1"}
    # time travel agrees with delta-rs
    old = DeltaLog.for_table(path).snapshot(version=3)
    t3 = deltalake.DeltaTable(path, version=3)
    assert sorted(map(_unq, (f.path for f in old.files))) == sorted(
        map(_unq, (a["path"] for a in pa.table(t3.get_add_actions(flatten=True)).to_pylist()))
    )


def test_deltars_reads_our_tables_and_checkpoints(tmp_path):
    # data files written with pyarrow, commits written with the codec, checkpoint by deltalog
    import pyarrow.parquet as pq

    path = str(tmp_path / "ours")
    create(path, files=[])
    for i in range(3):
        name = f"part-{i}.parquet"
        pq.write_table(pa.table({"id": pa.array([i, i + 10], pa.int64()), "p": ["x", "x"]}), f"{path}/{name}")
        import os

        commit(path, i + 1, [add(name, size=os.path.getsize(f"{path}/{name}"))])
    commit(path, 4, [remove("part-0.parquet")])
    log = DeltaLog.for_table(path)
    log.checkpoint()
    table = deltalake.DeltaTable(path)
    assert table.version() == 4
    assert sorted(table.file_uris()) == sorted(f"{path}/part-{i}.parquet" for i in (1, 2))
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 11, 12]
    # a checkpoint alone (commits deleted) is enough for delta-rs
    import os

    for v in range(0, 4):
        os.remove(f"{path}/_delta_log/{v:020d}.json")
    table = deltalake.DeltaTable(path)
    assert table.version() == 4 and len(table.file_uris()) == 2


def test_deltars_timestamp_ntz_and_types(tmp_path):
    path = str(tmp_path / "ntz")
    data = pa.table(
        {
            "ts": pa.array([dt.datetime(2024, 1, 1, 12)], pa.timestamp("us")),
            "tz": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)], pa.timestamp("us", "UTC")),
            "d": pa.array([dt.date(2024, 1, 1)]),
            "dec": pa.array([1], pa.decimal128(10, 2)) if False else pa.array([None], pa.decimal128(10, 2)),
            "b": pa.array([b"x"]),
            "l": pa.array([[1, 2]]),
            "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
            "s": pa.array([{"x": 1}]),
        }
    )
    deltalake.write_deltalake(path, data)
    snap = DeltaLog.for_table(path).update()
    assert snap.schema.field("ts").type == PrimitiveType("timestamp_ntz")
    assert "timestampNtz" in (snap.protocol.reader_features or ())
    arrow = snap.schema.to_arrow()
    assert arrow.field("ts").type == pa.timestamp("us") and arrow.field("tz").type == pa.timestamp("us", "UTC")
    assert arrow.field("dec").type == pa.decimal128(10, 2)


def test_deltars_deletion_vector_table_or_rewrite(tmp_path):
    path = str(tmp_path / "dv")
    data = pa.table({"id": list(range(10))})
    deltalake.write_deltalake(path, data, configuration={"delta.enableDeletionVectors": "true"})
    deltalake.DeltaTable(path).delete("id < 3")
    snap = DeltaLog.for_table(path).update()
    assert "deletionVectors" in (snap.protocol.reader_features or ())
    _same_state(path)


def _v2_table(path: str, files: int) -> None:
    from deltalog.txn.protocol.actions import Protocol
    from tests.log.helpers import metadata

    proto = Protocol(3, 7, frozenset({"v2Checkpoint"}), frozenset({"v2Checkpoint"}))
    md = metadata({"delta.checkpointPolicy": "v2"})
    commit(path, 0, [proto, md, *[add(f"f{i}.parquet", size=i + 1) for i in range(files)]])
    commit(path, 1, [remove("f0.parquet"), add("x y%.parquet")])


def _drop_commits_before(path: str, version: int) -> None:
    import os

    for v in range(version):
        os.remove(f"{path}/_delta_log/{v:020d}.json")


def _deltars_files(path: str) -> list[str]:
    table = deltalake.DeltaTable(path)
    return sorted(_unq(a["path"]) for a in pa.table(table.get_add_actions(flatten=True)).to_pylist())


def test_v2_checkpoints_with_sidecars_read_by_deltars(tmp_path):
    import json
    import os

    for fmt in ("parquet", "json"):
        path = str(tmp_path / fmt)
        _v2_table(path, 50)
        log = DeltaLog.for_table(path)
        result = log.checkpoint(part_size=20, v2_format=fmt)
        names = os.listdir(f"{path}/_delta_log")
        top = [n for n in names if ".checkpoint." in n]
        assert len(top) == 1 and top[0].startswith(f"{1:020d}.checkpoint.") and top[0].endswith(f".{fmt}")
        sidecars = os.listdir(f"{path}/_delta_log/_sidecars")
        assert len(sidecars) == 3  # 50 adds + 1 remove, 20 actions per sidecar
        with open(f"{path}/_delta_log/_last_checkpoint") as fh:
            last = json.load(fh)
        assert last["version"] == 1 and last["v2Checkpoint"]["path"] == top[0]
        assert last["numOfAddFiles"] == 50 == result.num_add_files
        commit(path, 2, [add("after.parquet")])
        _drop_commits_before(path, 1)  # both readers must use the checkpoint
        expected = sorted([*(f"f{i}.parquet" for i in range(1, 50)), "x y%.parquet", "after.parquet"])
        snap = DeltaLog.for_table(path).update()
        assert snap.checkpoint_version == 1 and sorted(_unq(f.path) for f in snap.files) == expected
        assert [t.path for t in snap.tombstones] == ["f0.parquet"]
        assert _deltars_files(path) == expected
        assert deltalake.DeltaTable(path).version() == 2


def _stats_keys(path: str) -> list[tuple[str, ...]]:
    """The columns each file of the table has statistics for (nullCount keys), in log order."""
    import json

    return [tuple(json.loads(f.stats or "{}").get("nullCount", {})) for f in DeltaLog.for_table(path).update().files]


def test_deltars_and_deltalog_collect_statistics_for_the_same_stats_columns(tmp_path):
    from deltalog.contrib.spark.files import write_batches
    from deltalog.contrib.spark.options import WriteOptions
    from deltalog.contrib.spark.writes import write_spec
    from deltalog.txn.commit.operations import Write
    from deltalog.txn.protocol.actions import parse_line

    path = str(tmp_path / "t")
    data = pa.table({"id": [1, 2], "Name": ["a", "b"], "x": [1.0, None], "p": ["u", "v"]})
    # delta-rs matches names case-sensitively and only top-level columns (Delta: any case, nested too)
    config = {"delta.dataSkippingStatsColumns": "x, Name", "delta.dataSkippingNumIndexedCols": "1"}
    deltalake.write_deltalake(path, data, partition_by=["p"], configuration=config)
    log = DeltaLog.for_table(path)
    spec = write_spec(WriteOptions(path=path, overwrite=False), path, log.store.spec(), log.update().metadata)
    lines = write_batches(spec, [data], 0)  # the Spark task writer, in-process
    log.start_transaction().commit([parse_line(line) for line in lines], Write())
    deltalake.write_deltalake(path, data, partition_by=["p"], mode="append")  # delta-rs after deltalog
    keys = _stats_keys(path)
    assert len(keys) == 6 and all(sorted(k) == ["Name", "x"] for k in keys), keys
    _same_state(path)


def _our_files(path: str, version: int) -> list[str] | str:
    try:
        return sorted(_unq(f.path) for f in DeltaLog.for_table(path).snapshot(version=version).files)
    except Exception:
        return "unreadable"


def _their_files(path: str, version: int) -> list[str] | str:
    try:
        table = deltalake.DeltaTable(path, version=version)
    except Exception:
        return "unreadable"
    return sorted(_unq(a["path"]) for a in pa.table(table.get_add_actions()).to_pylist())


def test_deltars_cleaned_up_log_read_at_every_version(tmp_path):
    # delta-rs checkpoints and cleans up its log (logRetentionDuration 0): deltalog agrees with
    # it, version by version, on which versions can still be rebuilt and on their files
    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", None]})
    config = {"delta.logRetentionDuration": "interval 0 seconds"}
    deltalake.write_deltalake(path, data, partition_by=["p"], configuration=config)
    for _ in range(3):
        deltalake.write_deltalake(path, data, partition_by=["p"], mode="append")
    deltalake.DeltaTable(path).create_checkpoint()
    deltalake.DeltaTable(path).delete("id = 1")
    deltalake.DeltaTable(path).create_checkpoint()
    deltalake.write_deltalake(path, data, partition_by=["p"], mode="append")
    deltalake.DeltaTable(path).cleanup_metadata()
    for version in range(6):
        ours = _our_files(path, version)
        assert ours == _their_files(path, version), version
        assert (ours == "unreadable") == (version < 4), version
