"""The table subcommands of ``deltalog``, run as subprocesses on real tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deltalog.txn.delta_log import DeltaLog
from tests.ops.tables import append, create, write_file

ROOT = Path(__file__).resolve().parents[2]


def deltalog(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deltalog.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DELTALOG_PROGRESS": "", **(env or {})},
    )


def ok_json(*args: str) -> object:
    proc = deltalog(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def table(tmp_path: Path) -> str:
    uri = str(tmp_path / "table")
    log = create(uri, config={"delta.appendOnly": "false"})
    append(log, [1, 2], "a")  # version 1
    append(log, [3], "b")  # version 2
    append(log, [4], "a")  # version 3
    return uri


def test_describe(table: str) -> None:
    info = ok_json("describe", table)
    assert isinstance(info, dict)
    assert info["version"] == 3 and info["num_files"] == 3
    assert info["partition_columns"] == ["p"]
    assert info["properties"] == {"delta.appendOnly": "false"}
    assert info["protocol"]["min_reader_version"] == 1 and info["protocol"]["min_writer_version"] == 2
    assert "appendOnly" in info["protocol"]["writer_features"]
    assert [f["name"] for f in info["schema"]["fields"]] == ["id", "name", "p"]
    assert info["size_in_bytes"] == DeltaLog.for_table(table).update().size_in_bytes
    old = ok_json("describe", table, "--version", "1")
    assert isinstance(old, dict) and old["version"] == 1 and old["num_files"] == 1
    text = deltalog("describe", table)
    assert text.returncode == 0
    assert "version:      3" in text.stdout and "partitioned by: p" in text.stdout
    assert "delta.appendOnly" in text.stdout and "long" in text.stdout
    from deltalog.cli_commands.table import _type_text

    nested = {"type": "struct", "fields": [{"name": "a", "type": {"type": "array", "elementType": "string"}}]}
    assert _type_text(nested) == "struct<a:array<string>>"  # not the schema's JSON
    assert _type_text({"type": "geography"}) == '{"type":"geography"}'  # unknown: as the log holds it


def test_history(table: str) -> None:
    records = ok_json("history", table, "--limit", "2")
    assert isinstance(records, list)
    assert [r["version"] for r in records] == [3, 2]
    assert all(r["operation"] == "WRITE" for r in records)
    text = deltalog("history", table).stdout
    assert "CREATE TABLE" in text and text.count("WRITE") == 3
    # a count below its least meaningful value is refused by argparse (exit 2), not taken
    for args in (("history", table, "--limit", "0"), ("describe", table, "--version", "-1")):
        refused = deltalog(*args)
        assert refused.returncode == 2 and "must be at least" in refused.stderr, refused


def test_files(table: str) -> None:
    rows = ok_json("files", table)
    assert isinstance(rows, list) and len(rows) == 3
    assert sorted(r["partition_values"]["p"] for r in rows) == ["a", "a", "b"]
    assert sum(r["num_records"] for r in rows) == 4
    first = ok_json("files", table, "--version", "1")
    assert isinstance(first, list) and len(first) == 1
    assert "3 files" in deltalog("files", table).stdout


def test_checkpoint_and_cleanup(table: str) -> None:
    result = ok_json("checkpoint", table)
    assert isinstance(result, dict) and result["version"] == 3 and result["num_add_files"] == 3
    assert (Path(table) / "_delta_log" / "_last_checkpoint").exists()
    cleaned = ok_json("cleanup", table)
    assert cleaned == {"table": f"file://{table}", "deleted_log_files": 0}  # nothing older than 30 days


def test_vacuum(table: str) -> None:
    log = DeltaLog.for_table(table)
    orphan = write_file(log, [99], "a")  # written by a "failed job", never committed
    an_hour_ago = time.time() - 3600
    os.utime(Path(table) / orphan.path, (an_hour_ago, an_hour_ago))  # older than "now - 0 hours"
    refused = deltalog("vacuum", table, "--retain-hours", "0")
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and "deletedFileRetentionDuration" in refused.stderr
    assert "Traceback" not in refused.stderr
    dry = ok_json("vacuum", table, "--retain-hours", "0", "--no-retention-check", "--dry-run")
    assert isinstance(dry, dict) and dry["files"] == [orphan.path] and dry["dry_run"]
    lite = ok_json("vacuum", table, "--retain-hours", "0", "--no-retention-check", "--dry-run", "--lite")
    assert isinstance(lite, dict) and lite["files"] == []  # LITE reads the log: no commit names the orphan
    assert (Path(table) / orphan.path).exists()
    done = deltalog(
        "vacuum",
        table,
        "--retain-hours",
        "0",
        "--storage-option",
        "spark.databricks.delta.retentionDurationCheck.enabled=false",
        "--lock",
        "in-process",
    )
    assert done.returncode == 0, done.stderr
    assert orphan.path in done.stdout and "deleted 1 file(s)" in done.stdout
    assert not (Path(table) / orphan.path).exists()
    assert [r["operation"] for r in ok_json("history", table, "--limit", "2")] == [  # type: ignore[union-attr]
        "VACUUM END",
        "VACUUM START",
    ]


def test_optimize(table: str) -> None:
    result = ok_json("optimize", table, "--where", "p = a")
    assert isinstance(result, dict)
    assert (result["num_files_removed"], result["num_files_added"], result["version"]) == (2, 1, 4)
    files = ok_json("files", table)
    assert sorted(f["partition_values"]["p"] for f in files) == ["a", "b"]  # type: ignore[union-attr]
    again = deltalog("optimize", table)
    assert again.returncode == 0 and "nothing to compact" in again.stdout
    bad = deltalog("optimize", table, "--where", "q = 1")
    assert bad.returncode == 1 and "q" in bad.stderr and "Traceback" not in bad.stderr


def test_optimize_purge_rewrites_the_files_with_deletion_vectors(tmp_path: Path) -> None:
    import numpy as np

    from deltalog.txn.commit.operations import Delete
    from deltalog.txn.log.deletion_vector_writer import mark_rows_deleted

    uri = str(tmp_path / "dv")
    log = create(uri, config={"delta.enableDeletionVectors": "true"})
    append(log, [1, 2, 3], "a")
    append(log, [4, 5], "b")
    txn = log.start_transaction()
    first = next(f for f in txn.filter_files() if f.partition_values["p"] == "a")
    marked = mark_rows_deleted(log.store, uri, log.update().metadata.configuration, [(first, np.array([0]))], 0)
    txn.commit(marked.actions, Delete(["id = 1"]))
    result = ok_json("optimize", uri, "--purge")
    assert isinstance(result, dict) and result["num_deletion_vectors_removed"] == 1
    assert result["num_files_removed"] == 1  # the file of partition b has no DV: left alone
    assert not any(f.deletion_vector for f in DeltaLog.for_table(uri).update().files)
    assert DeltaLog.for_table(uri).history(1)[0].operation == "REORG"


def test_progress_bar_only_when_forced(table: str) -> None:
    quiet = deltalog("optimize", table)
    assert quiet.returncode == 0 and quiet.stderr == ""  # stderr is a pipe, not a terminal
    append(DeltaLog.for_table(table), [5], "a")
    drawn = deltalog("optimize", table, "--progress")
    assert drawn.returncode == 0, drawn.stderr
    assert "optimize [" in drawn.stderr and "100%" in drawn.stderr
    append(DeltaLog.for_table(table), [6], "a")
    by_env = deltalog("optimize", table, env={"DELTALOG_PROGRESS": "1"})
    assert "optimize [" in by_env.stderr


def test_restore(table: str) -> None:
    result = ok_json("restore", table, "--version", "1")
    assert isinstance(result, dict) and result["restored_version"] == 1 and result["version"] == 4
    assert result["metrics"]["numRemovedFiles"] == "2"
    assert len(ok_json("files", table)) == 1  # type: ignore[arg-type]
    missing = deltalog("restore", table)
    assert missing.returncode == 2  # argparse: one of --version/--timestamp is required
    future = deltalog("restore", table, "--version", "42")
    assert future.returncode == 1 and future.stderr.startswith("deltalog restore: error:")


def test_clone(table: str, tmp_path: Path) -> None:
    shallow = ok_json("clone", table, str(tmp_path / "dev"), "--version", "1", "--property", "team=qa")
    assert isinstance(shallow, dict) and shallow["version"] == 0 and shallow["source_version"] == 1
    assert shallow["metrics"]["numCopiedFiles"] == "0"
    cloned, source = ok_json("files", str(tmp_path / "dev")), ok_json("files", table, "--version", "1")
    assert isinstance(cloned, list) and isinstance(source, list) and len(cloned) == len(source) > 0
    for ours, theirs in zip(cloned, source):  # the shallow clone names the source's files by absolute path
        assert ours["path"].startswith("file://") and ours["path"].endswith("/table/" + theirs["path"])
    deep = deltalog("clone", table, str(tmp_path / "copy"), "--deep")
    assert deep.returncode == 0 and "deep clone of version 3" in deep.stdout
    again = deltalog("clone", table, str(tmp_path / "copy"))
    assert again.returncode == 1 and "not empty" in again.stderr


def test_errors_are_one_line_unless_debug(tmp_path: Path) -> None:
    missing = str(tmp_path / "nothing")
    proc = deltalog("describe", missing)
    assert proc.returncode == 1
    assert proc.stderr.startswith("deltalog describe: error: no Delta table at")
    assert proc.stderr.count("\n") == 1
    debug = deltalog("describe", missing, "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_unknown_lock_is_refused(table: str) -> None:
    proc = deltalog("optimize", table, "--lock", "zookeeper://x")
    assert proc.returncode == 1 and "zookeeper" in proc.stderr
    assert DeltaLog.for_table(table).update().version == 3  # nothing committed


def test_every_command_takes_storage_options_and_lock(table: str) -> None:
    for args in (
        ["describe"],
        ["history"],
        ["files"],
        ["checkpoint"],
        ["cleanup"],
        ["vacuum", "--dry-run"],
        ["optimize", "--min-files", "5"],
        ["restore", "--version", "2"],
    ):
        proc = deltalog(args[0], table, *args[1:], "--storage-option", "AWS_REGION=eu-west-1", "--lock", "auto")
        assert proc.returncode == 0, (args, proc.stderr)


def test_stores_names_the_default_lock() -> None:
    from deltalog.logstores.local import LocalLogStore
    from deltalog.txn.commit.locks.selection import describe_default_lock

    rows = ok_json("stores")
    local = next(r for r in rows if r["name"] == "local")  # type: ignore[union-attr]
    assert local["commit_lock"] == describe_default_lock(LocalLogStore.default_semantics)


def test_convert(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    plain = tmp_path / "plain"
    for day, ids in (("2024-05-01", [1, 2]), ("2024-05-02", [3])):
        (plain / f"day={day}").mkdir(parents=True)
        pq.write_table(pa.table({"id": ids}), plain / f"day={day}" / "part-0.parquet")
    result = ok_json("convert", str(plain), "--partition-schema", "day date")
    assert result == {"table": DeltaLog.for_table(str(plain)).table_uri, "version": 0, "num_files": 2}
    assert DeltaLog.for_table(str(plain)).update().metadata.partition_columns == ("day",)
    again = deltalog("convert", str(plain))
    assert again.returncode == 1 and again.stderr.startswith("deltalog convert: error:")
    assert "already a Delta table" in again.stderr
    bare = tmp_path / "bare"
    bare.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), bare / "part-0.parquet")
    ok_json("convert", str(bare), "--no-statistics")
    (add,) = DeltaLog.for_table(str(bare)).update().files
    assert add.stats is None  # NO STATISTICS, as Delta: not even numRecords


def test_drop_feature(tmp_path: Path) -> None:
    uri = str(tmp_path / "dv")
    append(create(uri, config={"delta.enableDeletionVectors": "true"}), [1, 2], "a")
    common = ("--storage-option", "AWS_REGION=eu-west-1", "--lock", "auto")
    result = ok_json("drop-feature", uri, "deletionVectors", *common)
    assert isinstance(result, dict) and result["feature"] == "deletionVectors"
    assert result["features"] == ["appendOnly", "checkpointProtection", "invariants"]
    assert result["version"] == DeltaLog.for_table(uri).update().version == 6  # unset, 3 barriers, the drop
    again = deltalog("drop-feature", uri, "deletionVectors")
    assert again.returncode == 1 and "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT" in again.stderr
    protection = deltalog("drop-feature", uri, "checkpointProtection", "--truncate-history")
    assert protection.returncode == 1 and "WAIT_FOR_RETENTION_PERIOD" in protection.stderr
    text = deltalog("drop-feature", str(tmp_path / "nothing"), "appendOnly")
    assert text.returncode == 1 and text.stderr.startswith("deltalog drop-feature: error: no Delta table at")


def test_set_and_unset_properties(tmp_path: Path) -> None:
    """``set-properties`` / ``unset-properties``: ALTER TABLE SET/UNSET TBLPROPERTIES through
    the engine's path (column mapping 'none' rewrites the table first); bad input exits 1 or 2
    and commits nothing."""
    from tests.log.test_column_mapping_writes import _create, _write

    uri = str(tmp_path / "cm")
    log = _create(Path(uri), {"delta.columnMapping.mode": "name"})
    _write(log, [{"id": 1, "part": "a", "s": None}])
    result = ok_json("set-properties", uri, "owner=ops", "delta.columnMapping.mode=none", "--lock", "auto")
    assert result == {
        "table": log.table_uri,
        "version": 3,
        "properties": {"delta.columnMapping.mode": "none", "owner": "ops"},
    }
    assert [c.operation for c in log.history(2)] == ["SET TBLPROPERTIES", "REMOVE COLUMN MAPPING"]
    missing = deltalog("unset-properties", uri, "owner", "nope")
    assert missing.returncode == 1 and "cannot unset nope" in missing.stderr
    usage = deltalog("set-properties", uri, "owner")
    assert usage.returncode == 2 and "KEY=VALUE" in usage.stderr
    check = deltalog("set-properties", uri, "delta.constraints.positive=id > 0")  # rows unchecked: refused
    assert check.returncode == 1 and "DELTA_ADD_CONSTRAINTS" in check.stderr
    text = deltalog("unset-properties", uri, "owner", "nope", "--if-exists")
    assert text.returncode == 0 and text.stdout.startswith("unset 2 property(ies) at version 4; properties:")
    assert log.update().metadata.configuration == {"delta.columnMapping.mode": "none"}
