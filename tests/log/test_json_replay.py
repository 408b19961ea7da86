"""Columnar replay: commits parsed in bulk by pyarrow, checkpoints streamed in record
batches, reconciliation in Arrow -- checked against a plain-Python replay of the same log."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import textwrap
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa
import pytest

from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.replay import ADD_SCHEMA, REMOVE_SCHEMA
from deltalog.txn.protocol.arrow_build import null_array
from deltalog.txn.protocol.errors import CorruptLogError

from .helpers import SCHEMA

PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
METADATA = {
    "metaData": {
        "id": "t-1",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": ["p"],
        "configuration": {},
        "createdTime": 1,
    }
}


def _write(table: str, version: int, lines: list[str]) -> str:
    os.makedirs(f"{table}/_delta_log", exist_ok=True)
    path = f"{table}/_delta_log/{version:020d}.json"
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def _dv(i: int) -> dict[str, Any]:
    return {
        "storageType": "u",
        "pathOrInlineDv": f"ab^-aqEH.-t@S}}K{i:03d}",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": 2,
    }


def _random_log(table: str, commits: int, seed: int) -> None:
    """A log of adds, removes, re-adds, DV updates, odd paths, null partitions and tags,
    written with varying JSON spacing."""
    rng = random.Random(seed)
    _write(table, 0, [json.dumps(PROTOCOL), json.dumps(METADATA)])
    live: list[dict[str, Any]] = []
    n = 0
    for version in range(1, commits + 1):
        lines = [json.dumps({"commitInfo": {"timestamp": version, "operation": "WRITE"}})]
        touched: set[str] = set()
        for _ in range(rng.randint(1, 6)):
            n += 1
            raw = rng.choice([f"p=a/f{n}.parquet", f"p=b c/f {n}.parquet", f"p=%/f{n}%.parquet", f"p=ü/ü{n}.parquet"])
            path = quote(raw, safe="/=")
            add: dict[str, Any] = {
                "path": path,
                "partitionValues": {"p": rng.choice(["a", "b c", None, "ü"])},
                "size": n,
                "modificationTime": version,
                "dataChange": True,
                "stats": json.dumps({"numRecords": n}),
            }
            if rng.random() < 0.3:
                add["tags"] = rng.choice([{"INSERTION_TIME": str(n)}, {"a": "1", "b": "2"}, {}])
            if rng.random() < 0.1:
                add["unknownField"] = {"nested": [1, 2]}
            lines.append(json.dumps({"add": add}, separators=rng.choice([(",", ":"), (", ", ": ")])))
            live.append(add)
            touched.add(unquote(path))
        for _ in range(rng.randint(0, 3)):
            if not live:
                break
            victim = live[rng.randrange(len(live))]
            if unquote(victim["path"]) in touched:
                continue
            touched.add(unquote(victim["path"]))
            action = rng.choice(["remove", "dv", "readd_encoded"])
            if action == "remove":
                live.remove(victim)
                body = {"path": victim["path"], "deletionTimestamp": 10**13 + version, "dataChange": True}
                if "deletionVector" in victim:
                    body["deletionVector"] = victim["deletionVector"]
                lines.append(json.dumps({"remove": body}))
            elif action == "dv":
                # a DV update: remove the old logical file, add the same path with a DV
                old = {"path": victim["path"], "deletionTimestamp": 10**13 + version, "dataChange": True}
                if "deletionVector" in victim:
                    old["deletionVector"] = victim["deletionVector"]
                new = dict(victim, deletionVector=_dv(version), modificationTime=version)
                live.remove(victim)
                live.append(new)
                lines.append(json.dumps({"remove": old}))
                lines.append(json.dumps({"add": new}))
            else:
                # the same logical file re-added under a differently encoded path
                decoded = unquote(victim["path"])
                new = dict(victim, path=quote(decoded, safe="/"), size=victim["size"] + 1000)
                live.remove(victim)
                live.append(new)
                lines.append('{ "add" : ' + json.dumps(new) + " }")
        lines.append(json.dumps({"futureAction": {"x": version}}))
        _write(table, version, lines)


def _oracle(table: str, upto: int | None = None) -> dict[tuple[str, str | None], dict[str, Any]]:
    """Plain-Python replay: newest action per (decoded path, DV id) wins."""
    state: dict[tuple[str, str | None], dict[str, Any]] = {}
    log_dir = f"{table}/_delta_log"
    versions = sorted(int(f[:20]) for f in os.listdir(log_dir) if f.endswith(".json") and f[:20].isdigit())
    for v in versions:
        if upto is not None and v > upto:
            break
        with open(f"{log_dir}/{v:020d}.json") as fh:
            for line in fh:
                if not line.strip():
                    continue
                obj = json.loads(line)
                for kind in ("add", "remove"):
                    body = obj.get(kind)
                    if body is None:
                        continue
                    dv = body.get("deletionVector")
                    dv_id = (
                        None
                        if dv is None
                        else f"{dv['storageType']}{dv['pathOrInlineDv']}"
                        + (f"@{dv['offset']}" if dv.get("offset") is not None else "")
                    )
                    key = (unquote(body["path"]), dv_id)
                    if kind == "add":
                        state[key] = body
                    else:
                        state.pop(key, None)
    return state


def _assert_matches(table: str, snap: Any, upto: int | None = None) -> None:
    expected = _oracle(table, upto)
    got = {f.logical_key: f for f in snap.files}
    assert set(got) == set(expected)
    for key, body in expected.items():
        f = got[key]
        assert f.size == body["size"]
        assert f.partition_values == body["partitionValues"]
        assert (f.tags or {}) == (body.get("tags") or {})
        assert f.data_change is False
    assert snap.num_files == len(expected)
    assert snap.files_table.schema == ADD_SCHEMA


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_json_replay_matches_a_python_replay(tmp_path, seed):
    t = str(tmp_path)
    _random_log(t, 60, seed)
    snap = DeltaLog.for_table(t).update()
    assert snap.version == 60
    _assert_matches(t, snap)
    for v in (1, 17, 42):
        _assert_matches(t, DeltaLog.for_table(t).snapshot(v), v)


def test_checkpoint_then_commits_streamed_and_rewritten(tmp_path):
    t = str(tmp_path)
    _random_log(t, 40, 7)
    log = DeltaLog.for_table(t)
    log.checkpoint(log.snapshot(25))
    fresh = DeltaLog.for_table(t).update()
    assert fresh.checkpoint_version == 25
    assert not fresh.files_loaded  # the checkpoint's file actions are read on first use
    _assert_matches(t, fresh)
    # a checkpoint written from an unloaded snapshot (streamed from checkpoint 25 and the
    # commits after it) holds the same state
    lazy = DeltaLog.for_table(t).update()
    assert not lazy.files_loaded
    DeltaLog.for_table(t).checkpoint(lazy)
    assert not lazy.files_loaded
    reloaded = DeltaLog.for_table(t).update()
    assert reloaded.checkpoint_version == 40
    _assert_matches(t, reloaded)
    # the snapshot now reads from its own checkpoint: the old one can go
    os.remove(f"{t}/_delta_log/{25:020d}.checkpoint.parquet")
    _assert_matches(t, lazy)


def test_apply_on_an_unloaded_snapshot_does_not_read_the_checkpoint(tmp_path):
    from .helpers import add

    t = str(tmp_path)
    _random_log(t, 12, 5)
    log = DeltaLog.for_table(t)
    log.checkpoint()
    snap = DeltaLog.for_table(t).update()
    ckpt = f"{t}/_delta_log/{12:020d}.checkpoint.parquet"
    os.rename(ckpt, ckpt + ".away")  # reading it now would fail
    newer = snap.apply(13, [add("blind-1"), add("blind-2")], 13)
    newer = newer.apply(14, [add("blind-3")], 14)
    assert newer.version == 14 and not newer.files_loaded
    os.rename(ckpt + ".away", ckpt)
    paths = {f.path for f in newer.files}
    assert {"blind-1", "blind-2", "blind-3"} <= paths
    assert newer.num_files == len(_oracle(t)) + 3


def test_checkpoint_deleted_before_first_use_is_a_clear_error(tmp_path):
    t = str(tmp_path)
    _random_log(t, 5, 9)
    DeltaLog.for_table(t).checkpoint()
    snap = DeltaLog.for_table(t).update()
    os.remove(f"{t}/_delta_log/{5:020d}.checkpoint.parquet")
    with pytest.raises(CorruptLogError, match=r"checkpoint\.parquet: the checkpoint file disappeared"):
        _ = snap.files_table


def test_a_single_deletion_vector_survives_the_all_null_skip(tmp_path):
    """Fields that are all null in a checkpoint are not decoded (statistics); one DV in a
    large checkpoint must still be read."""
    t = str(tmp_path)
    lines = [json.dumps(PROTOCOL), json.dumps(METADATA)]
    for i in range(3000):
        body: dict[str, Any] = {
            "path": f"f{i}",
            "partitionValues": {"p": "a"},
            "size": i,
            "modificationTime": 1,
            "dataChange": True,
        }
        if i == 2500:
            body["deletionVector"] = _dv(1)
            body["tags"] = {"k": "v"}
        lines.append(json.dumps({"add": body}))
    _write(t, 0, lines)
    DeltaLog.for_table(t).checkpoint()
    snap = DeltaLog.for_table(t).update()
    with_dv = [f for f in snap.files if f.deletion_vector is not None]
    assert [(f.path, f.tags) for f in with_dv] == [("f2500", {"k": "v"})]
    assert with_dv[0].deletion_vector is not None and with_dv[0].deletion_vector.cardinality == 2
    assert snap.num_files == 3000


def test_corrupt_line_deep_in_a_long_log_names_file_and_line(tmp_path):
    t = str(tmp_path)
    _random_log(t, 50, 4)
    path = f"{t}/_delta_log/{37:020d}.json"
    with open(path) as fh:
        lines = fh.read().splitlines()
    lines[2] = lines[2][:-5]  # truncate an add line
    _write(t, 37, lines)
    with pytest.raises(CorruptLogError, match=r"00000000000000000037\.json: line 3 is not valid JSON"):
        DeltaLog.for_table(t).update()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            '{"add": {"path": "x", "partitionValues": {}, "size": "big", "modificationTime": 1, "dataChange": true}}',
            "malformed add action",
        ),
        (
            '{"add": {"partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": true}}',
            "malformed add action",
        ),
        ('{"remove": {"path": 7, "dataChange": true}}', "malformed remove action"),
        (
            '{"add": {"path": "x", "partitionValues": {"p": {"deep": 1}}, "size": 1, "modificationTime": 1}}',
            "malformed add action",
        ),
    ],
)
def test_malformed_file_actions_name_file_and_line(tmp_path, line, problem):
    t = str(tmp_path)
    _write(t, 0, [json.dumps(PROTOCOL), json.dumps(METADATA)])
    _write(t, 1, ['{"commitInfo": {}}', line])
    with pytest.raises(CorruptLogError, match=rf"00000000000000000001\.json: line 2: {problem}"):
        DeltaLog.for_table(t).update()


def test_null_array_matches_pyarrow_nulls():
    for f in [*ADD_SCHEMA, *REMOVE_SCHEMA, pa.field("x", pa.list_(pa.int32())), pa.field("d", pa.date32())]:
        for n in (0, 1, 9, 70_000):
            arr = null_array(n, f.type)
            arr.validate(full=True)
            assert arr.type == f.type and arr.null_count == n
            assert arr.equals(pa.nulls(n, f.type))


def test_replay_and_checkpoint_do_not_import_pandas(tmp_path):
    """pyarrow imports pandas on its first Python-object conversion; the replay path must
    not trigger that (it costs more than loading a 100k-file snapshot)."""
    t = str(tmp_path)
    _random_log(t, 30, 11)
    DeltaLog.for_table(t).checkpoint(DeltaLog.for_table(t).snapshot(20))
    code = textwrap.dedent(
        f"""
        import sys, traceback
        attempts = []
        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name == "pandas":
                    attempts.append("".join(traceback.format_stack(limit=12)))
                return None
        sys.meta_path.insert(0, Watch())
        from deltalog.txn.delta_log import DeltaLog
        log = DeltaLog.for_table({t!r})
        snap = log.update()
        n = snap.files_table.num_rows
        log.checkpoint(snap)
        assert DeltaLog.for_table({t!r}).update().num_files == n
        assert not attempts, attempts[0]
        print("ok", n)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok ")


def test_json_replay_does_not_import_parquet_or_filesystems(tmp_path):
    """Loading a table without a Parquet checkpoint needs neither ``pyarrow.parquet`` nor
    ``pyarrow.fs`` (which loads the S3, GCS, Azure and HDFS filesystems, ~9 MB), nor
    OpenSSL through ``hashlib``: they are imported where a checkpoint is read or written."""
    t = str(tmp_path)
    _random_log(t, 10, 3)
    heavy = ["pyarrow.parquet", "pyarrow.fs", "pyarrow._s3fs", "pyarrow._gcsfs", "pyarrow._azurefs", "hashlib"]
    code = textwrap.dedent(
        f"""
        import sys
        from deltalog.txn.delta_log import DeltaLog
        n = DeltaLog.for_table({t!r}).update().files_table.num_rows
        print("ok", n, [m for m in {heavy!r} if m in sys.modules])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok ") and out.stdout.rstrip().endswith("[]"), out.stdout


def test_unpartitioned_checkpoint_keeps_empty_partition_values(tmp_path):
    """A map's null count also counts empty maps: empty partitionValues must not be taken
    for an all-null field and come back null."""
    t = str(tmp_path)
    md = json.loads(json.dumps(METADATA))
    md["metaData"]["partitionColumns"] = []
    adds = [
        json.dumps(
            {
                "add": {
                    "path": f"f{i}",
                    "partitionValues": {},
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                    "tags": {},
                }
            }
        )
        for i in range(100)
    ]
    _write(t, 0, [json.dumps(PROTOCOL), json.dumps(md), *adds])
    DeltaLog.for_table(t).checkpoint()
    snap = DeltaLog.for_table(t).update()
    assert snap.checkpoint_version == 0
    pv = snap.files_table.column("partitionValues")
    assert pv.null_count == 0 and pv.to_pylist()[0] == []
    assert all(f.partition_values == {} for f in snap.files)
    # and the rewritten checkpoint still has non-null partitionValues for other readers
    import pyarrow.parquet as pq

    DeltaLog.for_table(t).checkpoint(snap)
    written = pq.read_table(f"{t}/_delta_log/{0:020d}.checkpoint.parquet", columns=["add"]).column("add")
    values = [row for row in written.to_pylist() if row is not None]
    assert len(values) == 100 and all(row["partitionValues"] == [] for row in values)


def test_many_chunks_parse_in_parallel_and_keep_log_order(tmp_path, monkeypatch):
    """Several chunks go to worker threads; the newest action per file must still win and a
    bad line in a late chunk still names its file and line."""
    import deltalog.txn.log.replay as replay

    monkeypatch.setattr(replay, "_CHUNK_BYTES", 2_000)
    t = str(tmp_path)
    _random_log(t, 80, 13)
    _assert_matches(t, DeltaLog.for_table(t).update())
    with open(f"{t}/_delta_log/{70:020d}.json") as fh:
        lines = fh.read().splitlines()
    lines[1] = re.sub(r'"size":\s*\d+', '"size": "x"', lines[1])
    _write(t, 70, lines)
    with pytest.raises(CorruptLogError, match=r"00000000000000000070\.json: line 2: malformed add action"):
        DeltaLog.for_table(t).update()


def test_date_like_partition_values_keep_their_text_on_the_bulk_path(tmp_path, monkeypatch):
    """pyarrow infers "2024-01-01" as a timestamp; with the table's partition keys known the
    values are read as text, without falling back to the per-line parser."""
    import deltalog.txn.log.replay as replay

    def no_slow_path(*args: object, **kwargs: object) -> None:
        raise AssertionError("fell back to the per-line parser")

    t = str(tmp_path)
    md = json.loads(json.dumps(METADATA))
    md["metaData"]["partitionColumns"] = ["p"]
    values = ["2024-01-01", "2024-01-01 12:30:00", "2024-01-01T12:30:00.000Z", None, "1999-12-31"]
    adds = [
        json.dumps(
            {
                "add": {
                    "path": f"f{i}",
                    "partitionValues": {"p": v},
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                }
            }
        )
        for i, v in enumerate(values)
    ]
    _write(t, 0, [json.dumps(PROTOCOL), json.dumps(md)])
    _write(t, 1, adds)
    monkeypatch.setattr(replay, "_slow_tables", no_slow_path)
    snap = DeltaLog.for_table(t).update()
    assert {f.path: f.partition_values["p"] for f in snap.files} == {f"f{i}": v for i, v in enumerate(values)}
    # and through Snapshot.apply (the engine's path)
    from .helpers import add

    newer = snap.apply(2, [add("g", pv={"p": "2025-02-03"})], 2)
    assert {f.path: f.partition_values for f in newer.files}["g"] == {"p": "2025-02-03"}
