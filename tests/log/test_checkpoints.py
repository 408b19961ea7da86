"""Checkpoints, _last_checkpoint, cleanup and history (CheckpointsSuite, DeltaRetentionSuite)."""

from __future__ import annotations

import dataclasses
import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.logstores.local import LocalLogStore
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.last_checkpoint import LastCheckpointInfo, json_checksum, read_last_checkpoint
from deltalog.txn.protocol.actions import CheckpointMetadata, Protocol, Sidecar, action_to_line
from deltalog.txn.protocol.errors import CorruptLogError, VersionNotFoundError
from tests.log.helpers import add, commit, create, metadata, protocol, remove, set_mtime

DAY = 86_400_000


def _log_files(t: str) -> list[str]:
    return sorted(os.listdir(f"{t}/_delta_log"))


def test_json_checksum_protocol_vector():
    text = (
        '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], '
        '{"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
    )
    assert json_checksum(text) == "6a92d155a59bf2eecbd4b4ec7fd1f875"
    with pytest.raises(ValueError, match="duplicate key"):
        json_checksum('{"a": 1, "a": 2}')


def test_checkpoint_roundtrip_and_last_checkpoint(tmp_path):
    t = str(tmp_path)
    create(t, files=["a", "b"])
    commit(t, 1, [remove("a"), add("c")])
    log = DeltaLog.for_table(t)
    result = log.checkpoint()
    assert result.version == 1 and result.num_add_files == 2
    info = read_last_checkpoint(log.store, log.log_uri)
    assert info is not None and info.version == 1 and info.size == result.num_actions
    raw = json.loads(open(f"{t}/_delta_log/_last_checkpoint").read())
    assert raw["checksum"] == json_checksum(raw)
    commit(t, 2, [add("d")])
    os.remove(f"{t}/_delta_log/{0:020d}.json")  # the checkpoint must be used
    snap = DeltaLog.for_table(t).update()
    assert snap.segment is not None and snap.segment.checkpoint_version == 1
    assert sorted(f.path for f in snap.files) == ["b", "c", "d"]
    assert [r.path for r in snap.tombstones] == ["a"]
    with pytest.raises(
        VersionNotFoundError, match=r"DELTA_VERSION_NOT_FOUND: .* earliest reconstructable version is 1"
    ):
        DeltaLog.for_table(t).snapshot(version=0)


@pytest.mark.parametrize(
    "content", ["", "not json", '{"version": 1, "size": 3, "checksum": "bad"}', '{"version": 99, "size": 3}']
)
def test_corrupt_last_checkpoint_falls_back_to_listing(tmp_path, content):
    t = str(tmp_path)
    create(t, files=["a"])
    log = DeltaLog.for_table(t)
    log.checkpoint()
    commit(t, 1, [add("b")])
    with open(f"{t}/_delta_log/_last_checkpoint", "w") as fh:
        fh.write(content)
    assert DeltaLog.for_table(t).update().num_files == 2


def test_multipart_checkpoint_and_incomplete_one_is_ignored(tmp_path):
    t = str(tmp_path)
    create(t, files=[f"f{i}" for i in range(10)])
    commit(t, 1, [remove("f0")])
    log = DeltaLog.for_table(t)
    result = log.checkpoint(part_size=4)
    assert len(result.paths) == 3  # 12 actions: protocol, metaData, 9 adds, 1 tombstone
    assert all(".checkpoint.00000000" in p for p in result.paths)
    snap = DeltaLog.for_table(t).update()
    assert snap.segment.checkpoint_version == 1 and snap.num_files == 9
    # an incomplete multi-part checkpoint at a later version is never used
    commit(t, 2, [add("g")])
    lone = f"{t}/_delta_log/{2:020d}.checkpoint.0000000001.0000000002.parquet"
    pq.write_table(pa.table({"x": [1]}), lone)
    snap = DeltaLog.for_table(t).update()
    assert snap.segment.checkpoint_version == 1 and snap.num_files == 10


def test_checkpoint_through_temp_file_when_partial_writes_visible(tmp_path, monkeypatch):
    t = str(tmp_path)
    create(t, files=["a"])
    log = DeltaLog.for_table(t)
    moves: list[str] = []
    fs = log.store.filesystem()
    real_move = fs.move

    class Spy:
        def __getattr__(self, name):
            return getattr(fs, name)

        def move(self, src, dst):
            moves.append(os.path.basename(src))
            real_move(src, dst)

    monkeypatch.setattr(log.store, "filesystem", lambda: Spy())
    monkeypatch.setattr(log.store, "is_partial_write_visible", lambda p: True)
    log.checkpoint()
    assert len(moves) == 1 and moves[0].endswith(".tmp")
    # local files are visible while being written: a temp file even when the store's
    # log writes are atomic
    monkeypatch.setattr(log.store, "is_partial_write_visible", lambda p: False)
    log.checkpoint()
    assert len(moves) == 2 and moves[1].endswith(".tmp")
    # a store whose data writes are atomic (an object store's PUT) writes directly...
    monkeypatch.setattr(log.store, "atomic_file_writes", True)
    snap = log.update()
    assert snap.files_table.num_rows == 1  # files in memory: nothing read from the old checkpoint
    log.checkpoint(snap)
    assert len(moves) == 2
    # ...even over the checkpoint it is streaming its files from (no rename on Azure Blob
    # without hierarchical namespace): the files are read into memory first
    fresh = DeltaLog.for_table(t)
    monkeypatch.setattr(fresh.store, "filesystem", lambda: Spy())
    monkeypatch.setattr(fresh.store, "atomic_file_writes", True)
    snap = fresh.update()
    assert not snap.files_loaded
    fresh.checkpoint(snap)
    assert len(moves) == 2 and snap.files_loaded
    assert [a.path for a in DeltaLog.for_table(t).update().files] == ["a"]
    assert not [f for f in _log_files(t) if f.endswith(".tmp")]


def test_tombstones_expire_in_checkpoint(tmp_path):
    t = str(tmp_path)
    create(t, config={"delta.deletedFileRetentionDuration": "interval 1 day"}, files=["a", "b", "c"])
    import time as _t

    now = int(_t.time() * 1000)
    commit(t, 1, [remove("a", ts=now - 2 * DAY), remove("b", ts=now - 1000)])
    log = DeltaLog.for_table(t)
    log.checkpoint()
    table = pq.read_table(f"{t}/_delta_log/{1:020d}.checkpoint.parquet")
    removes = [r["path"] for r in table.column("remove").to_pylist() if r]
    assert removes == ["b"]


def test_v2_checkpoint_json_with_sidecar(tmp_path):
    t = str(tmp_path)
    proto = Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",))
    commit(t, 0, [proto, metadata(), add("a")])
    commit(t, 1, [add("b"), add("c")])
    os.makedirs(f"{t}/_delta_log/_sidecars")
    side = f"{uuid.uuid4()}.parquet"
    adds = pa.array(
        [
            {"path": "a", "partitionValues": [], "size": 1, "modificationTime": 1, "dataChange": False},
            {"path": "b", "partitionValues": [], "size": 2, "modificationTime": 1, "dataChange": False},
        ],
        pa.struct(
            [
                ("path", pa.string()),
                ("partitionValues", pa.map_(pa.string(), pa.string())),
                ("size", pa.int64()),
                ("modificationTime", pa.int64()),
                ("dataChange", pa.bool_()),
            ]
        ),
    )
    pq.write_table(pa.table({"add": adds}), f"{t}/_delta_log/_sidecars/{side}")
    name = f"{1:020d}.checkpoint.{uuid.uuid4()}.json"
    LocalLogStore().write(
        f"{t}/_delta_log/{name}",
        [
            action_to_line(CheckpointMetadata(1)),
            action_to_line(proto),
            action_to_line(metadata()),
            action_to_line(Sidecar(side, 100, 1)),
        ],
    )
    os.remove(f"{t}/_delta_log/{0:020d}.json")  # the commit of the checkpoint's version stays, as cleanup keeps it
    snap = DeltaLog.for_table(t).update()
    assert snap.version == 1 and sorted(f.path for f in snap.files) == ["a", "b"]


def test_corrupt_checkpoint_names_file(tmp_path):
    t = str(tmp_path)
    create(t, files=["a"])
    commit(t, 1, [add("b")])
    with open(f"{t}/_delta_log/{1:020d}.checkpoint.parquet", "wb") as fh:
        fh.write(b"garbage")
    # with commit 0 still there the table is rebuilt from it (tests/log/test_checkpoint_fallback.py);
    # without it nothing can replace the checkpoint, and the error names the file (Delta's
    # "should not recover when the current checkpoint is broken but we don't have the entire history")
    os.remove(f"{t}/_delta_log/{0:020d}.json")
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.checkpoint\.parquet"):
        DeltaLog.for_table(t).update()


def test_delete_expired_logs_only_behind_checkpoint(tmp_path):
    t = str(tmp_path)
    old = 1_000 * DAY
    create(t, files=["a"])
    set_mtime(f"{t}/_delta_log/{0:020d}.json", old)
    for v in range(1, 6):
        commit(t, v, [add(f"f{v}")], mtime_ms=old + v * 1000)
    log = DeltaLog.for_table(t)
    now = old + 100 * DAY
    assert log.cleanup_expired_logs(now_ms=now) == 0  # no checkpoint: nothing deleted
    log.checkpoint(log.snapshot(version=4))
    set_mtime(f"{t}/_delta_log/{4:020d}.checkpoint.parquet", old + 4000)
    assert log.cleanup_expired_logs(now_ms=now) == 4
    files = _log_files(t)
    assert f"{4:020d}.json" in files and f"{4:020d}.checkpoint.parquet" in files
    assert f"{3:020d}.json" not in files
    fresh = DeltaLog.for_table(t).update()
    assert fresh.version == 5 and fresh.num_files == 6
    assert log.cleanup_expired_logs(now_ms=now) == 0  # already deleted files are fine


def test_cleanup_keeps_logs_when_multipart_checkpoint_incomplete(tmp_path):
    t = str(tmp_path)
    old = 1_000 * DAY
    create(t, files=[f"f{i}" for i in range(6)])
    for v in range(1, 4):
        commit(t, v, [add(f"g{v}")], mtime_ms=old + v)
    set_mtime(f"{t}/_delta_log/{0:020d}.json", old)
    log = DeltaLog.for_table(t)
    res = log.checkpoint(log.snapshot(version=2), part_size=3)
    os.remove(res.paths[-1].removeprefix("file://"))
    assert log.cleanup_expired_logs(now_ms=old + 100 * DAY) == 0


def test_cleanup_disabled_and_recent_logs_kept(tmp_path):
    t = str(tmp_path)
    create(t, config={"delta.enableExpiredLogCleanup": "false"}, files=["a"])
    commit(t, 1, [add("b")])
    log = DeltaLog.for_table(t)
    log.checkpoint()
    assert log.cleanup_expired_logs(now_ms=10**15) == 0


def test_history_and_time_travel_by_timestamp(tmp_path):
    t = str(tmp_path)
    base = 1_700_000_000_000
    create(t, files=["a"])
    set_mtime(f"{t}/_delta_log/{0:020d}.json", base)
    commit(t, 1, [add("b")], mtime_ms=base + 10_000)
    commit(t, 2, [add("c")], mtime_ms=base + 5_000)  # clock skew: made monotonic (base+10001)
    log = DeltaLog.for_table(t)
    hist = log.history()
    assert [h.version for h in hist] == [2, 1, 0]
    assert hist[0].timestamp == base + 10_001 and hist[0].operation == "WRITE"
    assert [h.version for h in log.history(limit=1)] == [2]
    assert log.snapshot(timestamp=base + 10_000).version == 1
    assert log.snapshot(timestamp=base + 10_001).version == 2
    assert log.snapshot(timestamp=base + 9_999).version == 0
    with pytest.raises(VersionNotFoundError, match="before the earliest version"):
        log.snapshot(timestamp=base - 1)
    with pytest.raises(VersionNotFoundError, match="after the latest commit"):
        log.snapshot(timestamp="2100-01-01T00:00:00")


def test_in_commit_timestamps_are_used(tmp_path):
    t = str(tmp_path)
    from deltalog.txn.protocol.actions import CommitInfo

    proto = Protocol(1, 7, None, ("inCommitTimestamp",))
    store = LocalLogStore()
    md = metadata({"delta.enableInCommitTimestamps": "true"})
    for v, ict in ((0, 5_000), (1, 9_000)):
        acts = [CommitInfo(timestamp=1, in_commit_timestamp=ict, operation="WRITE")]
        acts += [proto, md] if v == 0 else [add("b")]
        store.write(f"{t}/_delta_log/{v:020d}.json", [action_to_line(a) for a in acts])
    log = DeltaLog.for_table(t)
    assert log.update().timestamp == 9_000
    assert [h.timestamp for h in log.history()] == [9_000, 5_000]
    assert log.snapshot(timestamp=8_000).version == 0


def _enabling_ict_at_version_2(t: str) -> DeltaLog:
    """A table whose commits 0 and 1 have file times 1 s and 50 s, and which turns in-commit
    timestamps on at version 2 (enablement timestamp 20 s; versions 2 and 3 at 20 s and 30 s):
    commit 1's file time is after the enablement (clock skew)."""
    from deltalog.txn.protocol.actions import CommitInfo

    store = LocalLogStore()
    create(t)
    set_mtime(f"{t}/_delta_log/{0:020d}.json", 1_000)
    commit(t, 1, [add("a")], mtime_ms=50_000)  # its file time is after the enablement (skew)
    on = metadata(
        {
            "delta.enableInCommitTimestamps": "true",
            "delta.inCommitTimestampEnablementVersion": "2",
            "delta.inCommitTimestampEnablementTimestamp": "20000",
        }
    )
    for v, ict in ((2, 20_000), (3, 30_000)):
        acts = [CommitInfo(timestamp=1, in_commit_timestamp=ict, operation="WRITE")]
        acts += [Protocol(1, 7, None, ("inCommitTimestamp",)), on] if v == 2 else [add("b")]
        store.write(f"{t}/_delta_log/{v:020d}.json", [action_to_line(a) for a in acts])
    log = DeltaLog.for_table(t)
    return log


def test_time_travel_splits_the_log_at_the_in_commit_timestamp_enablement(tmp_path):
    """PROTOCOL "In-Commit Timestamps": a timestamp at or after the enablement timestamp
    reads only versions from the enablement version on, an earlier one only versions before
    it, whatever the file times of the commits before enablement say (clock skew)."""
    t = str(tmp_path)
    log = _enabling_ict_at_version_2(t)
    assert log.snapshot(timestamp=20_000).version == 2
    assert log.snapshot(timestamp=29_999).version == 2
    assert log.snapshot(timestamp=30_000).version == 3
    assert log.snapshot(timestamp=19_999).version == 0  # before enablement: versions 0 and 1 only
    with pytest.raises(VersionNotFoundError, match="after the latest commit"):
        log.snapshot(timestamp=30_001)


def test_a_starting_timestamp_finds_the_first_commit_at_or_after_it_within_the_enablement_split(tmp_path):
    """Delta's ``getStartingVersionFromTimestamp`` (a stream's and the change feed's
    ``startingTimestamp``): the commit active at the time, searched on the same side of the
    in-commit timestamp enablement as time travel, then the next version unless it was
    committed exactly then; the earliest commit for a time before every commit."""
    t = str(tmp_path)
    from deltalog.txn.log.history import starting_version_at

    log = _enabling_ict_at_version_2(t)
    found = {ts: starting_version_at(log, ts) for ts in (500, 1_000, 19_999, 20_000, 25_000, 30_000)}
    assert found == {500: 0, 1_000: 0, 19_999: 1, 20_000: 2, 25_000: 3, 30_000: 3}
    with pytest.raises(VersionNotFoundError, match="after the latest commit"):
        starting_version_at(log, 30_001)


def test_last_checkpoint_info_roundtrip():
    info = LastCheckpointInfo(version=10, size=13, parts=2, size_in_bytes=14800, num_of_add_files=1)
    again = LastCheckpointInfo.from_json(info.to_json())
    assert again.version == 10 and again.parts == 2 and again.num_of_add_files == 1
    assert protocol() is not None


def test_cleanup_deletes_only_unreferenced_old_sidecars(tmp_path):
    from deltalog.txn.protocol.actions import Protocol
    from tests.log.helpers import metadata

    t = str(tmp_path)
    proto = Protocol(3, 7, frozenset({"v2Checkpoint"}), frozenset({"v2Checkpoint"}))
    commit(
        t,
        0,
        [proto, metadata({"delta.checkpointPolicy": "v2", "delta.logRetentionDuration": "interval 1 day"}), add("a")],
    )
    log = DeltaLog.for_table(t)
    log.checkpoint(log.update())
    first = set(os.listdir(f"{t}/_delta_log/_sidecars"))
    commit(t, 1, [add("b")])
    commit(t, 2, [add("c")])
    log.checkpoint(log.update())
    second = set(os.listdir(f"{t}/_delta_log/_sidecars")) - first
    assert len(first) == 1 and len(second) == 1
    orphan_old = f"{t}/_delta_log/_sidecars/00000000-0000-0000-0000-00000000dead.parquet"
    orphan_new = f"{t}/_delta_log/_sidecars/00000000-0000-0000-0000-00000000beef.parquet"
    for p in (orphan_old, orphan_new):
        with open(p, "wb") as fh:
            fh.write(b"x")
    now = 100 * DAY
    old = (now - 10 * DAY) / 1000
    for name in os.listdir(f"{t}/_delta_log"):
        if name.endswith(".json") or ".checkpoint." in name:  # one second apart per version
            os.utime(f"{t}/_delta_log/{name}", (old + int(name[:20]), old + int(name[:20])))
    for name in first | second | {os.path.basename(orphan_old)}:
        os.utime(f"{t}/_delta_log/_sidecars/{name}", (old, old))
    os.utime(orphan_new, (now / 1000, now / 1000))
    log.cleanup_expired_logs(now_ms=now)
    left = set(os.listdir(f"{t}/_delta_log/_sidecars"))
    # checkpoint 0 is gone with its sidecar; checkpoint 2's sidecar and the fresh orphan stay
    assert left == second | {os.path.basename(orphan_new)}
    assert sorted(f.path for f in DeltaLog.for_table(t).update().files) == ["a", "b", "c"]


def _stats_parsed_table(t: str, config: dict[str, str]) -> pa.DataType:
    """A checkpoint with ``stats_parsed`` of a table (s struct<x, y>, id, name; partition p):
    the type of its ``add.stats_parsed.minValues``."""
    from deltalog.txn.protocol.actions import AddFile, Metadata

    def field(name: str, type_: object) -> dict[str, object]:
        return {"name": name, "type": type_, "nullable": True, "metadata": {}}

    inner = {"type": "struct", "fields": [field("x", "long"), field("y", "long")]}
    schema = {
        "type": "struct",
        "fields": [field("s", inner), field("id", "long"), field("name", "string"), field("p", "string")],
    }
    meta = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(schema),
        partition_columns=("p",),
        configuration={"delta.checkpoint.writeStatsAsStruct": "true", **config},
    )
    values = {"s": {"x": 1, "y": 2}, "id": 3, "name": "n"}
    stats = json.dumps({"numRecords": 1, "minValues": values, "maxValues": values, "nullCount": {"id": 0}})
    commit(t, 0, [protocol(), meta, AddFile("f", {"p": "a"}, 1, 1, True, stats)])
    DeltaLog.for_table(t).checkpoint()
    table = pq.read_table(f"{t}/_delta_log/{0:020d}.checkpoint.parquet")
    return table.schema.field("add").type.field("stats_parsed").type.field("minValues").type


def test_stats_parsed_has_the_columns_of_delta_data_skipping_stats_columns(tmp_path):
    config = {"delta.dataSkippingNumIndexedCols": "1", "delta.dataSkippingStatsColumns": "name,s.y"}
    assert _stats_parsed_table(str(tmp_path), config) == pa.struct(
        [("s", pa.struct([("y", pa.int64())])), ("name", pa.string())]
    )


def test_stats_parsed_counts_leaf_columns_for_delta_data_skipping_num_indexed_cols(tmp_path):
    config = {"delta.dataSkippingNumIndexedCols": "3"}  # s.x, s.y, id: Delta counts leaves
    assert _stats_parsed_table(str(tmp_path), config) == pa.struct(
        [("s", pa.struct([("x", pa.int64()), ("y", pa.int64())])), ("id", pa.int64())]
    )


def test_multipart_checkpoint_parts_count_file_actions_as_delta(tmp_path):
    """CheckpointsSuite ``multipart checkpoints``: ``ceil((adds + removes) / partSize)``
    parts, a single file when that is 1 (the protocol, metadata and transactions do not count)."""
    t = str(tmp_path)
    create(t)
    log = DeltaLog.for_table(t)
    total, version = 0, 0
    for new, part_size, parts in [(2, 10, 1), (9, 10, 2), (9, 10, 2), (11, 10, 4), (69, 100, 1), (1, 100, 2)]:
        version += 1
        commit(t, version, [add(f"f{total + i}") for i in range(new)])
        total += new
        result = log.checkpoint(log.update(), part_size=part_size)
        assert len(result.paths) == parts, (total, part_size)
        assert read_last_checkpoint(log.store, log.log_uri).parts == (None if parts == 1 else parts)
    assert DeltaLog.for_table(t).update().num_files == total


def test_multipart_checkpoint_parts_are_spark_hash_partitions_of_the_path(tmp_path):
    """PROTOCOL "Multi-part checkpoint": parts MUST be clustered by Spark-style hash
    partitioning, as Delta's ``repartition(numParts, coalesce(add.path, remove.path))``:
    part ``i`` holds the actions whose ``pmod(hash(path), n) == i - 1`` (Spark's Murmur3
    ``hash``, seed 42; the non-file actions have a null key, whose hash is the seed), so two
    writers racing on the same checkpoint write interchangeable parts. The expected parts
    are Spark's ``pmod(hash(path), 3) + 1`` of these paths."""
    t = str(tmp_path)
    expected = {"a": 3, "ab": 2, "abc": 3, "abcd": 2, "abcde": 1, "x/%C3%A9.parquet": 1}  # the path as logged
    create(t, files=["a", "ab", "abc", "abcd"])
    commit(t, 1, [add("abcde"), add("x/%C3%A9.parquet"), remove("abcd")])
    result = DeltaLog.for_table(t).checkpoint(part_size=2)  # 6 file actions: 3 parts
    assert len(result.paths) == 3
    found: dict[str, int] = {}
    for part, uri in enumerate(result.paths, 1):
        table = pq.read_table(uri.removeprefix("file://"))
        for row in table.select(["add", "remove", "protocol", "metaData"]).to_pylist():
            if row["add"] or row["remove"]:
                found[(row["add"] or row["remove"])["path"]] = part
            else:
                assert part == 42 % 3 + 1, row  # protocol and metaData: a null key
    assert found == expected
    assert sorted(f.path for f in DeltaLog.for_table(t).update().files) == [
        "a",
        "ab",
        "abc",
        "abcde",
        "x/%C3%A9.parquet",
    ]


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_v2_checkpoint_of_an_empty_table_has_one_empty_sidecar(tmp_path, fmt):
    """CheckpointsSuite ``test empty checkpoints`` (V2): one sidecar, with no rows."""
    t = str(tmp_path)
    proto = Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",))
    commit(t, 0, [proto, metadata({"delta.checkpointPolicy": "v2"})])
    log = DeltaLog.for_table(t)
    log.checkpoint(v2_format=fmt)
    sidecars = os.listdir(f"{t}/_delta_log/_sidecars")
    assert len(sidecars) == 1 and pq.read_table(f"{t}/_delta_log/_sidecars/{sidecars[0]}").num_rows == 0
    snap = DeltaLog.for_table(t).update()
    assert snap.checkpoint_version == 0 and snap.num_files == 0


@pytest.mark.parametrize("v2", [False, True])
def test_statistics_survive_a_checkpoint_written_only_with_stats_parsed(tmp_path, v2):
    """CheckpointsSuite ``... stats are preserved during state reconstruction``
    (``writeStatsAsJson=false``, ``writeStatsAsStruct=true``): the checkpoint has no
    ``add.stats``, and the files read from it get ``stats = to_json(stats_parsed)``, as Delta's
    ``loadActionsForStateReconstruction`` -- also through the next checkpoint."""
    from deltalog.txn.protocol.actions import Metadata

    t = str(tmp_path)
    fields = [("l", "long"), ("d", "date"), ("ts", "timestamp"), ("ntz", "timestamp_ntz"), ("m", "decimal(10,2)")]
    schema = {"type": "struct", "fields": [{"name": n, "type": k, "nullable": True, "metadata": {}} for n, k in fields]}
    schema["fields"].append(
        {"name": "s", "nullable": True, "metadata": {}, "type": {"type": "struct", "fields": [schema["fields"][0]]}}
    )
    config = {"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "true"}
    if v2:
        config["delta.checkpointPolicy"] = "v2"
    proto = Protocol(3, 7, ("timestampNtz", "v2Checkpoint"), ("timestampNtz", "v2Checkpoint"))
    stats = {
        "numRecords": 2,
        "minValues": {"l": -3, "d": "2020-01-02", "ts": "2020-01-02T03:04:05.006Z", "ntz": "2021-02-03T04:05:06.007"},
        "maxValues": {"l": 9, "d": "2020-02-01", "m": 12345678.91, "s": {"l": 4}},
        "nullCount": {"l": 0, "d": 1, "ts": 0, "ntz": 0, "m": 0, "s": {"l": 1}},
        "tightBounds": True,
    }
    commit(t, 0, [proto, Metadata(id="x", schema_string=json.dumps(schema), configuration=config)])
    commit(t, 1, [dataclasses.replace(add("a"), stats=json.dumps(stats)), dataclasses.replace(add("b"), stats=None)])
    log = DeltaLog.for_table(t)
    log.checkpoint()
    for _ in range(2):
        snap = DeltaLog.for_table(t).update()
        got = {f.path: f.stats for f in snap.files}
        assert got["b"] is None and json.loads(got["a"]) == stats
        commit(t, snap.version + 1, [])
        DeltaLog.for_table(t).checkpoint()  # the next checkpoint is made from those statistics


def test_statistics_survive_a_checkpoint_when_only_write_stats_as_json_is_false(tmp_path):
    """DeltaCheckpointWithStructColsSuite ``do not lose file stats after a checkpoint when
    writeStatsAsJson=false``: with ``writeStatsAsStruct`` unset the checkpoint keeps the
    statistics as ``stats_parsed`` (Delta Spark's default for it is true); only both set to false
    leave them out, as the protocol says."""
    t = str(tmp_path)
    stats = {"numRecords": 1, "minValues": {"id": 3}, "maxValues": {"id": 3}, "nullCount": {"id": 0}}
    create(t, config={"delta.checkpoint.writeStatsAsJson": "false"})
    commit(t, 1, [dataclasses.replace(add("a"), stats=json.dumps(stats))])
    DeltaLog.for_table(t).checkpoint()
    add_type = pq.read_schema(f"{t}/_delta_log/{1:020d}.checkpoint.parquet").field("add").type
    assert add_type.get_field_index("stats") == -1 and add_type.get_field_index("stats_parsed") >= 0
    assert json.loads(DeltaLog.for_table(t).update().files[0].stats or "null") == stats
    u = str(tmp_path / "both")
    create(u, config={"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "false"})
    commit(u, 1, [dataclasses.replace(add("a"), stats=json.dumps(stats))])
    DeltaLog.for_table(u).checkpoint()
    assert DeltaLog.for_table(u).update().files[0].stats is None


def _retention_table(t: str, versions: int, checkpoints: tuple[int, ...], mtime: dict[int, int]) -> DeltaLog:
    """Commits 0..``versions`` (with ``.crc``) and checkpoints, every file of version ``v`` at
    ``mtime[v]`` (DeltaRetentionSuiteBase's ``setModificationTime``)."""
    create(t, files=["a"])
    for v in range(1, versions + 1):
        commit(t, v, [add(f"f{v}")])
    log = DeltaLog.for_table(t)
    for c in checkpoints:
        log.checkpoint(log.snapshot(version=c))
    for name in os.listdir(f"{t}/_delta_log"):
        if name[:20].isdigit():
            set_mtime(f"{t}/_delta_log/{name}", mtime[int(name[:20])])
    for v in range(versions + 1):
        if not os.path.exists(crc := f"{t}/_delta_log/{v:020d}.crc"):
            with open(crc, "w") as fh:
                fh.write("{}")
        set_mtime(crc, mtime[v])
    return DeltaLog.for_table(t)


_OLD = 1_000 * DAY
_SUITE_TIMES = {v: _OLD + v * 1000 + (35 * DAY if v > 15 else 0) for v in range(26)}
_SKEW_TIMES = {v: _OLD + (40 * DAY if v == 9 else v * 1000) for v in range(26)}


@pytest.mark.parametrize(
    ("times", "now", "first_kept"),
    [
        # "cleanup does not delete the checkpoint if it is required by non-expired versions":
        # versions 0..15 on day 0 (checkpoint 10), 16..25 on day 35 (checkpoint 20)
        (_SUITE_TIMES, _OLD + 35 * DAY + 60_000, 10),
        ({v: _OLD + v * 1000 for v in range(26)}, _OLD + 100 * DAY, 20),  # everything expired
        ({v: _OLD + v * 1000 for v in range(26)}, _OLD + 10 * DAY, 0),  # within retention
        (_SKEW_TIMES, _OLD + 71 * DAY, 20),  # commit 9 is newer than 10..19, still expired
    ],
)
def test_cleanup_agrees_with_delta_retention_suite(tmp_path, times, now, first_kept):
    """DeltaRetentionSuite: only files before a checkpoint whose preceding commit (time made
    monotonic) is older than midnight of ``now - 30 days`` go, with their ``.crc``."""
    t = str(tmp_path)
    log = _retention_table(t, 25, (10, 20), times)
    log.cleanup_expired_logs(now_ms=now)
    versions = {int(n[:20]) for n in _log_files(t) if n[:20].isdigit()}
    assert min(versions) == first_kept and max(versions) == 25
    assert f"{first_kept:020d}.crc" in _log_files(t)
    assert DeltaLog.for_table(t).snapshot(version=first_kept).version == first_kept


def test_cleanup_bounded_by_last_checkpoint_file(tmp_path):
    """Delta's ``listExpiredDeltaLogs`` deletes only before the checkpoint ``_last_checkpoint``
    names; without that file, nothing (a corrupt one is replaced by a listing)."""
    t = str(tmp_path)
    times = {v: _OLD + v * 1000 for v in range(26)}
    log = _retention_table(t, 25, (10, 20), times)
    hint = f"{t}/_delta_log/_last_checkpoint"
    with open(hint, "w") as fh:
        fh.write(json.dumps({"version": 10, "size": 2}))
    log.cleanup_expired_logs(now_ms=_OLD + 100 * DAY)
    assert f"{9:020d}.json" not in _log_files(t) and f"{10:020d}.json" in _log_files(t)
    os.remove(hint)
    assert log.cleanup_expired_logs(now_ms=_OLD + 100 * DAY) == 0
    with open(hint, "w") as fh:
        fh.write("{corrupt")
    log.cleanup_expired_logs(now_ms=_OLD + 100 * DAY)
    assert min(int(n[:20]) for n in _log_files(t) if n[:20].isdigit()) == 20


def test_time_travel_by_timestamp_agrees_with_delta_history_manager(tmp_path):
    """DeltaHistoryManagerSuite "time travelling with adjusted timestamps" and the errors of
    ``getActiveCommitAtTime`` (before the first commit, after the last unless
    ``canReturnLastCommit``)."""
    from deltalog.txn.log.history import version_at_timestamp

    t, start = str(tmp_path), 1_700_000_000_000
    create(t, files=["a"])
    set_mtime(f"{t}/_delta_log/{0:020d}.json", start)
    commit(t, 1, [add("b")], mtime_ms=start - 5_000)
    commit(t, 2, [add("c")], mtime_ms=start + 180_000)
    log = DeltaLog.for_table(t)
    found = [version_at_timestamp(log, start + d) for d in (0, 1, 119_000, 180_000)]
    assert found == [0, 1, 1, 2]
    assert version_at_timestamp(log, start + 180_001, can_return_last_commit=True) == 2
    with pytest.raises(VersionNotFoundError, match="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"):
        version_at_timestamp(log, start - 3_000)
    with pytest.raises(VersionNotFoundError, match="DELTA_TIMESTAMP_GREATER_THAN_COMMIT"):
        version_at_timestamp(log, start + 180_001)


def test_timestamp_to_millis_is_exact():
    """A time travel timestamp is cut to whole milliseconds exactly (Delta's
    ``Timestamp.getTime``): floating-point seconds lose the last one for later dates."""
    from datetime import datetime, timezone

    from deltalog.txn.log.history import to_millis

    assert to_millis(datetime(2039, 5, 25, 17, 40, 23, 279000, tzinfo=timezone.utc)) == 2_189_958_023_279
    assert to_millis("2039-05-25 17:40:23.279999") == 2_189_958_023_279
    assert to_millis(datetime(1969, 12, 31, 23, 59, 59, 999500)) == -1


def test_timestamp_text_zones_are_read_as_spark_casts_them():
    """``timestampAsOf`` text is cast as Spark's ``stringToTimestamp`` reads it, zones through
    ``DateTimeUtils.getZoneId``: Java's short ids (``PST``), the ``UT`` prefix, offsets with
    seconds or a one-digit minute; null (DELTA_TIMESTAMP_INVALID) for an offset beyond 18
    hours, a lowercase ``z``, a ``T`` with no time or a zone before the seconds. Expected values are Spark 4.3's
    ``unix_millis(try_cast(text AS timestamp))`` in a UTC session."""
    from deltalog.contrib.spark.predicates import in_session_time_zone
    from deltalog.txn.log.history import to_millis

    spark_casts = {
        "2024-01-01 00:00:00 PST": 1704096000000,
        "2024-01-01 00:00:00 SST": 1704027600000,
        "2024-01-01 00:00:00UT": 1704067200000,
        "2024-01-01 00:00:00 UT+1": 1704063600000,
        "2024-01-01 00:00:00+08:00:30": 1704038370000,
        "2024-01-01 00:00:00 +08:0": 1704038400000,
    }
    assert {text: to_millis(text) for text in spark_casts} == spark_casts
    refused = ("2024-01-01T", "2024-01-01 00:00:00 z", "2024-01-01 00:00:00 +19:00", "2024-01-01T12:00Z")
    for text in refused:
        with pytest.raises(ValueError, match="DELTA_TIMESTAMP_INVALID"):
            to_millis(text)
    # a local time before standard time: the zone's LMT offset has seconds
    assert to_millis(in_session_time_zone("0001-01-01", "America/Los_Angeles")) == -62135568422000


def test_time_travel_searches_from_the_earliest_recreatable_commit(tmp_path):
    """Delta's ``getActiveCommitAtTime`` lists commits from the earliest recreatable one
    (``getEarliestRecreatableCommit``: a checkpoint reached by the contiguous commits) and
    makes only those monotonic; DESCRIBE HISTORY LIMIT n only the n listed."""
    from deltalog.txn.log.history import version_at_timestamp

    t, start = str(tmp_path), 1_700_000_000_000
    create(t, files=["a"])
    for v in range(1, 7):
        commit(t, v, [add(f"f{v}")], mtime_ms=start + v * 1000)
    log = DeltaLog.for_table(t)
    log.checkpoint(log.snapshot(version=2))
    log.checkpoint(log.snapshot(version=5))
    os.remove(f"{t}/_delta_log/{0:020d}.json")
    set_mtime(f"{t}/_delta_log/{1:020d}.json", start + 100_000)  # not recreatable, and later
    assert version_at_timestamp(DeltaLog.for_table(t), start + 3_500) == 3
    assert [(h.version, h.timestamp - start) for h in log.history(limit=2)] == [(6, 6000), (5, 5000)]
    for v in (1, 2, 3):  # checkpoint 2 is left without the commits after it
        os.remove(f"{t}/_delta_log/{v:020d}.json")
    assert version_at_timestamp(DeltaLog.for_table(t), start + 5_000) == 5
    with pytest.raises(VersionNotFoundError, match="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"):
        version_at_timestamp(DeltaLog.for_table(t), start + 4_500)
    for name in _log_files(t):
        if ".checkpoint." in name:
            os.remove(f"{t}/_delta_log/{name}")
    with pytest.raises(VersionNotFoundError, match="DELTA_NO_RECREATABLE_HISTORY_FOUND"):
        version_at_timestamp(DeltaLog.for_table(t), start + 5_000)


@pytest.mark.parametrize(
    ("times", "max_ts", "max_version", "deleted"),
    [  # DeltaTimeTravelSuite "BufferingLogDeletionIterator: ...": one checkpoint per version
        ((10, 11), 100, 100, 1),
        ((10, 15, 25, 26), 100, 100, 3),
        ((5, 10, 8, 12), 7, 100, 1),
        ((5, 10, 8, 12), 10, 100, 1),  # 10 adjusts the following 8 to 11
        ((5, 10, 8, 12), 11, 100, 3),
        ((5, 10, 8, 12, 13), 12, 100, 4),
        ((5, 10, 8), 10, 100, 1),
        ((5, 10, 8, 12), 100, 1, 1),
        ((5, 10, 8, 12), 100, 2, 3),
        ((5, 10, 8, 11, 14), 11, 100, 1),
        ((5, 10, 8, 11, 14), 12, 100, 4),
        ((5, 10, 8, 9, 13), 100, 3, 4),
        ((10, 8, 9), 11, 100, 0),
        ((10, 8, 9, 13), 12, 100, 3),
        ((5, 10, 8, 9, 12, 15, 14, 14), 12, 100, 1),
        ((5, 10, 8, 9, 12, 15, 14, 14), 15, 100, 5),
        ((5, 10, 8, 9, 12, 15, 14, 14, 18), 17, 100, 8),
    ],
)
def test_log_deletion_walk_agrees_with_buffering_iterator(times, max_ts, max_version, deleted):
    from deltalog.logstores.base import FileStatus
    from deltalog.txn.log.log_deletion import expired_log_files

    files = [FileStatus(f"/t/_delta_log/{v:020d}.checkpoint.parquet", 10, ts) for v, ts in enumerate(times)]
    assert expired_log_files(files, max_ts, max_version) == files[:deleted]


def test_cleanup_keeps_files_before_a_checkpoint_whose_time_was_adjusted(tmp_path):
    """A checkpoint no newer than the file before it is no cleanup boundary (Delta's
    ``BufferingLogDeletionIterator``): deleting up to it would move the adjusted times of the
    versions that stay."""
    t = str(tmp_path)
    times = {v: _OLD + v * 1000 for v in range(26)}
    _retention_table(t, 25, (10, 20), times)
    set_mtime(f"{t}/_delta_log/{20:020d}.checkpoint.parquet", _OLD)
    DeltaLog.for_table(t).cleanup_expired_logs(now_ms=_OLD + 100 * DAY)
    assert min(int(n[:20]) for n in _log_files(t) if n[:20].isdigit()) == 10


def test_update_takes_a_checkpoint_written_below_the_cached_version(tmp_path):
    """Delta's update lists the log from the cached snapshot's checkpoint, so a checkpoint
    written since then for a version at or below the cached one (a writer's post-commit
    checkpoint that finished late) gives a new log segment; cleanup may already have deleted
    the older checkpoint the cached snapshot has not read its files from yet."""
    t = str(tmp_path)
    create(t, files=["a"])
    for v in range(1, 7):
        commit(t, v, [add(f"f{v}")])
    DeltaLog.for_table(t).checkpoint(DeltaLog.for_table(t).snapshot(version=4))
    log = DeltaLog.for_table(t)
    assert log.update().version == 6 and not log.update().files_in_memory  # on checkpoint 4
    other = DeltaLog.for_table(t)
    other.checkpoint(other.snapshot(version=5))
    for name in os.listdir(f"{t}/_delta_log"):  # cleanup behind checkpoint 5
        if name.startswith(f"{4:020d}.checkpoint") or (name[:20] < f"{5:020d}" and name.endswith(".json")):
            os.remove(f"{t}/_delta_log/{name}")
    assert sorted(a.path for a in log.update().files) == ["a"] + [f"f{v}" for v in range(1, 7)]
