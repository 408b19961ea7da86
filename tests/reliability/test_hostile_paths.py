"""Whatever the log says, maintenance never touches anything outside the table root.

The log references files outside the table (``../``, percent-encoded ``../``, absolute
paths, ``file://`` URIs, a sibling directory whose name starts with the table's, another
scheme), and those files are planted for real. Then log cleanup, VACUUM (retention 0,
check disabled) and OPTIMIZE run; the world outside the table root must be byte-identical
afterwards, with no new file. Paths are decoded per the protocol: ``x%20y`` names the file
``x y``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.errors import DeltaError
from deltalog.txn.commands.optimize import optimize
from deltalog.txn.commands.vacuum import vacuum
from deltalog.txn.commit.operations import CreateTable, Delete, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata, RemoveFile, decode_path, encode_path

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)


def _parquet(path: Path, values: list[int]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"v": pa.array(values, pa.int64())}), path)
    return path.stat().st_size


def _tree(root: Path, skip: Path | None = None) -> dict[str, bytes]:
    out = {}
    for directory, dirs, files in os.walk(root):
        if skip is not None and Path(directory) == skip:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if skip is None or Path(directory, d) != skip]
        for name in files:
            path = Path(directory, name)
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def _hostile_table(world: Path) -> tuple[DeltaLog, Path, list[str]]:
    root = world / "t"
    outside = world / "outside"
    sibling = world / "t-sibling"  # shares the table's name as a prefix
    hostile = {
        "../outside/rel.parquet": outside / "rel.parquet",
        "%2E%2E/outside/encoded.parquet": outside / "encoded.parquet",
        "p=a/../../outside/nested.parquet": outside / "nested.parquet",
        str(outside / "abs.parquet"): outside / "abs.parquet",
        "file://" + str(outside / "uri.parquet"): outside / "uri.parquet",
        "file://" + str(sibling / "p=a" / "sib.parquet"): sibling / "p=a" / "sib.parquet",
        "../t-sibling/p=a/rel-sib.parquet": sibling / "p=a" / "rel-sib.parquet",
    }
    sizes = {path: _parquet(target, [1, 2, 3]) for path, target in hostile.items()}
    log = DeltaLog.for_table(str(root))
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=("p",)))
    txn.commit([], CreateTable(partition_by=["p"]))
    # real files inside, one with a space (encoded as %20 in the log)
    inside = ["p=a/in one.parquet", "p=a/in-two.parquet"]
    adds = [AddFile(encode_path(rel), {"p": "a"}, _parquet(root / rel, [7]), 1) for rel in inside]
    adds += [AddFile("s3://elsewhere/bucket/x.parquet", {"p": "a"}, 10, 1)]
    adds += [AddFile(path, {"p": "a"}, size, 1) for path, size in sizes.items()]
    log.start_transaction().commit(adds, Write())
    return log, root, list(hostile)


def test_vacuum_cleanup_and_optimize_stay_inside_the_table_root(tmp_path: Path) -> None:
    world = tmp_path
    log, root, _ = _hostile_table(world)
    # an unreferenced file inside whose *literal* name is the encoded form: vacuum deletes it
    literal = root / "p=a" / "in%20one.parquet"
    _parquet(literal, [0])
    outside_before = _tree(world, skip=root)

    # OPTIMIZE cannot read a file of another scheme through the local store: a typed error,
    # and nothing written anywhere
    inside_before = _tree(root)
    with pytest.raises(DeltaError):
        optimize(log, target_size=1 << 30)
    assert _tree(world, skip=root) == outside_before
    assert _tree(root) == inside_before
    foreign = [f for f in log.update().files if f.path.startswith("s3://")]
    log.start_transaction().commit([f.remove(int(time.time() * 1000)) for f in foreign], Delete())

    # OPTIMIZE compacts everything it can read (including the outside files) into new files
    # inside the root; the outside originals are only removed from the log.
    result = optimize(log, target_size=1 << 30)
    assert result.num_files_added >= 1
    snapshot = log.update()
    assert all(not decode_path(f.path).startswith(("/", "..")) and "://" not in f.path for f in snapshot.files)

    # remove whatever is still referenced, so every hostile path is now a tombstone
    txn = log.start_transaction()
    files = txn.filter_files()
    now = int(time.time() * 1000)
    txn.commit([RemoveFile(f.path, now - 10**9, True) for f in files], Delete())
    log.checkpoint()
    log.cleanup_expired_logs(now_ms=now + 90 * 24 * 3600 * 1000)
    deleted = vacuum(log, retention_hours=0, enforce_retention=False, now_ms=now + 10**9)

    assert _tree(world, skip=root) == outside_before, "something outside the table root changed"
    deleted_paths = set(deleted)
    assert "p=a/in%20one.parquet" in deleted_paths  # the literal name, unreferenced
    assert all(not p.startswith("..") and not p.startswith("/") for p in deleted_paths)
    assert not literal.exists()


def test_paths_are_decoded_per_the_protocol(tmp_path: Path) -> None:
    log, root, _ = _hostile_table(tmp_path)
    # the add of "p=a/in one.parquet" is stored encoded and protects the decoded file
    raw = [json.loads(line) for line in log.store.read(log.commit_uri(1))]
    paths = [obj["add"]["path"] for obj in raw if "add" in obj]
    assert "p=a/in%20one.parquet" in paths and "p=a/in one.parquet" not in paths
    before = _tree(root)
    result = vacuum(log, retention_hours=0, enforce_retention=False, now_ms=int(time.time() * 1000) + 10**9)
    assert list(result) == []  # nothing inside is unreferenced: both data files are live
    after = _tree(root)
    assert {k: v for k, v in after.items() if not k.startswith("_delta_log")} == {
        k: v for k, v in before.items() if not k.startswith("_delta_log")
    }
    assert (root / "p=a" / "in one.parquet").exists()
