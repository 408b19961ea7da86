"""Shapes of log found in Delta's golden tables that replay must take as Delta does.

- ``partitionValues`` is a map: each file action keeps exactly the keys its own line had,
  even when other lines of the same commit (parsed together) carry more keys.
- a ``metaData`` without ``schemaString`` (golden ``canonicalized-paths-*``,
  ``corrupted-last-checkpoint``, ``versions-not-contiguous``): Delta's ``Metadata.schema``
  is then the empty struct, at every version, whether the action is read from a JSON
  commit or from a checkpoint.
- an absolute path spelled ``/x``, ``file:/x`` or ``file:///x`` (golden
  ``canonicalized-paths-*``) names one file: a remove in one spelling removes an add in another.

And ``Metadata.id`` defaults to a fresh UUID, as Delta's ``Metadata`` does.
"""

from __future__ import annotations

import json
import os

import pytest

from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.schema import StructType

from .helpers import SCHEMA

PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}


def _write(table: str, version: int, actions: list[dict[str, object]]) -> None:
    os.makedirs(f"{table}/_delta_log", exist_ok=True)
    with open(f"{table}/_delta_log/{version:020d}.json", "w") as fh:
        fh.write("\n".join(json.dumps(a, separators=(",", ":")) for a in actions) + "\n")


def _add(path: str, pv: dict[str, str | None]) -> dict[str, object]:
    return {"add": {"path": path, "partitionValues": pv, "size": 1, "modificationTime": 1, "dataChange": True}}


def _metadata(schema: str | None, partition_columns: list[str]) -> dict[str, object]:
    body: dict[str, object] = {
        "id": "golden",
        "format": {"provider": "parquet", "options": {}},
        "partitionColumns": partition_columns,
        "configuration": {},
        "createdTime": 1,
    }
    if schema is not None:
        body["schemaString"] = schema
    return {"metaData": body}


def test_partition_values_keep_exactly_the_keys_of_their_line(tmp_path: object) -> None:
    table = str(tmp_path)
    _write(
        table,
        0,
        [
            PROTOCOL,
            _metadata(SCHEMA, ["p"]),
            _add("a", {"p": "1", "extra": "x"}),
            _add("b", {"p": "2"}),
            _add("c", {"p": None}),
            _add("d", {}),
            _add("e", {"extra": None}),
        ],
    )
    _write(table, 1, [_add("f", {"p": "3", "other": "y"}), _add("g", {"p": None})])
    expected = {
        "a": {"p": "1", "extra": "x"},
        "b": {"p": "2"},
        "c": {"p": None},
        "d": {},
        "e": {"extra": None},
        "f": {"p": "3", "other": "y"},
        "g": {"p": None},
    }
    log = DeltaLog.for_table(table)
    for version, names in ((0, "abcde"), (1, "abcdefg")):
        files = {f.path: f.partition_values for f in log.snapshot(version).files}
        assert files == {n: expected[n] for n in names}
    # a checkpoint written from that state keeps the keys too
    log.checkpoint()
    files = {f.path: f.partition_values for f in DeltaLog.for_table(table).snapshot().files}
    assert files == expected


def test_metadata_without_schema_string_is_the_empty_schema_at_every_version(tmp_path: object) -> None:
    table = str(tmp_path)
    _write(table, 0, [PROTOCOL, _metadata(None, []), _add("a", {})])
    _write(table, 1, [_add("b", {})])
    log = DeltaLog.for_table(table)
    for version in (0, 1, None):
        snapshot = log.snapshot(version)
        assert snapshot.schema == StructType(())
        assert snapshot.metadata.id == "golden"
    # from a checkpoint (which stores schemaString as null or the empty struct) and from JSON alike
    log.checkpoint()
    _write(table, 2, [_add("c", {})])
    fresh = DeltaLog.for_table(table)
    for version in (0, 1, 2, None):
        snapshot = fresh.snapshot(version)
        assert snapshot.schema == StructType(())
        assert sorted(f.path for f in snapshot.files) == sorted("abc"[: (2 if version is None else version) + 1])


@pytest.mark.parametrize("version", [0, 1])
def test_metadata_without_schema_string_in_a_checkpoint_matches_json(tmp_path: object, version: int) -> None:
    """A checkpoint written by Delta Spark holds ``schemaString: null`` for such a table
    (golden ``corrupted-last-checkpoint``): it reads as the JSON commit does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = str(tmp_path)
    _write(table, 0, [PROTOCOL, _metadata(None, []), _add("a", {})])
    _write(table, 1, [_add("b", {})])
    DeltaLog.for_table(table).checkpoint()
    cp = f"{table}/_delta_log/{1:020d}.checkpoint.parquet"
    data = pq.read_table(cp)
    md = data.column("metaData").combine_chunks()
    rows = md.to_pylist()
    for row in rows:
        if row is not None:
            row["schemaString"] = None
    data = data.set_column(data.schema.get_field_index("metaData"), "metaData", pa.array(rows, md.type))
    pq.write_table(data, cp)
    snapshot = DeltaLog.for_table(table).snapshot(version)
    assert snapshot.schema == StructType(())
    assert snapshot.metadata.schema_string == DeltaLog.for_table(table).snapshot(0).metadata.schema_string


def test_metadata_id_defaults_to_a_fresh_uuid() -> None:
    """Delta's ``Metadata(id = java.util.UUID.randomUUID().toString, ...)``."""
    import uuid

    from deltalog.txn.protocol.actions import Metadata

    first, second = Metadata(schema_string=SCHEMA), Metadata(schema_string=SCHEMA)
    assert str(uuid.UUID(first.id)) == first.id
    assert first.id != second.id
    assert Metadata.from_dict(first.to_dict()).id == first.id


@pytest.mark.parametrize("scheme", ["file:", "file://"])
@pytest.mark.parametrize("path", ["/some/unqualified/absolute/path", "/some/unqualified/with%20space/p@%23h"])
def test_an_absolute_path_and_its_file_uri_are_one_file(tmp_path: object, scheme: str, path: str) -> None:
    """Golden ``canonicalized-paths-{normal,special}-{a,b}``: an add of ``/x`` is removed by a
    remove of ``file:/x`` or ``file:///x`` (Delta Spark canonicalizes paths in replay, with
    the default file system); in JSON commits, and against a checkpoint."""
    from deltalog.txn.protocol.actions import absolute_path, is_absolute_path

    table = str(tmp_path)
    remove = {"remove": {"path": f"{scheme}{path}", "deletionTimestamp": 200, "dataChange": False}}
    _write(table, 0, [PROTOCOL, _metadata(SCHEMA, []), _add(path, {})])
    _write(table, 1, [remove])
    log = DeltaLog.for_table(table)
    assert log.update().num_files == 0 and log.snapshot(0).num_files == 1
    log.checkpoint(log.snapshot(0))
    assert DeltaLog.for_table(table).update().num_files == 0  # the remove against the checkpoint's add
    assert is_absolute_path(f"{scheme}{path}") and absolute_path("s3://b/t", f"{scheme}{path}") == path.replace(
        "%20", " "
    ).replace("%23", "#")
