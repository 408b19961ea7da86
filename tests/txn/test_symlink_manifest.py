"""Symlink manifests as Delta's ``DeltaGenerateSymlinkManifestSuite``: no manifests for a
column-mapped table (its partition values and directories are physical), an empty manifest
for an empty unpartitioned table, Delta's error for deletion vectors, and the property
checks that keep deletion vectors and incremental manifests apart."""

from __future__ import annotations

import json
import uuid

import pyarrow.fs as pafs
import pytest

from deltalog.errors import (
    GenerateWithDeletionVectorsError,
    ManifestWithColumnMappingError,
    TablePropertyValidationError,
)
from deltalog.txn.commands.alter import set_table_properties
from deltalog.txn.commit.operations import CreateTable, ManualUpdate, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.symlink_manifest import generate_symlink_manifest
from deltalog.txn.protocol.actions import AddFile, DeletionVectorDescriptor, Metadata

MANIFEST_ON = {"delta.compatibility.symlinkFormatManifest.enabled": "true"}
DV = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 36, 2)


def _table(partition_columns: tuple[str, ...] = ("p",), **config: str) -> DeltaLog:
    log = DeltaLog.for_table(f"memory://manifest-{uuid.uuid4().hex}")
    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in (("p", "string"), ("v", "long"))]
    txn = log.start_transaction()
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            schema_string=json.dumps({"type": "struct", "fields": fields}),
            partition_columns=partition_columns,
            configuration=config,
        )
    )
    txn.commit([], CreateTable(partition_by=list(partition_columns)))
    return log


def _manifests(log: DeltaLog) -> dict[str, str]:
    fs = log.store.filesystem()
    root = log.store.fs_path(log.table_uri + "/_symlink_format_manifest")
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    out = {}
    for info in infos:
        if info.type == pafs.FileType.File:
            with fs.open_input_stream(info.path) as f:
                out[info.path[len(root) + 1 :]] = f.read().decode()
    return out


def _add_with_deletion_vector(log: DeltaLog) -> None:
    stats = '{"numRecords":5,"tightBounds":false}'
    dv_file = AddFile("p=a/x.parquet", {"p": "a"}, 10, 1, stats=stats, deletion_vector=DV)
    log.start_transaction().commit([dv_file], Write())


def _generate(log: DeltaLog) -> None:
    snapshot = log.update()
    generate_symlink_manifest(log, snapshot.version, snapshot, ())


def test_an_empty_unpartitioned_table_gets_an_empty_manifest():
    log = _table(partition_columns=())
    log.start_transaction().commit([AddFile("a.parquet", {}, 10, 1)], Write())
    _generate(log)
    assert _manifests(log) == {"manifest": f"{log.table_uri}/a.parquet\n"}
    txn = log.start_transaction()
    txn.commit([f.remove(5) for f in txn.files_for_scan()], Write())
    _generate(log)
    assert _manifests(log) == {"manifest": ""}  # Delta writes it empty: readers see no files


def test_a_column_mapped_table_gets_no_manifest():
    log = _table(**{"delta.columnMapping.mode": "name"})
    physical = log.update().schema.field("p").physical_name
    log.start_transaction().commit([AddFile("ab/x.parquet", {physical: "a"}, 10, 1)], Write())
    with pytest.raises(
        ManifestWithColumnMappingError, match="DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING"
    ):
        _generate(log)
    assert _manifests(log) == {}
    # with the property on, the commit stands and no wrong manifest is written
    set_table_properties(log, MANIFEST_ON)
    log.start_transaction().commit([AddFile("cd/y.parquet", {physical: "b"}, 10, 1)], Write())
    assert log.update().version == 3 and _manifests(log) == {}


def test_generate_refuses_a_version_with_deletion_vectors():
    log = _table(**{"delta.enableDeletionVectors": "true"})
    stats = '{"numRecords":5,"tightBounds":false}'
    log.start_transaction().commit(
        [AddFile("p=a/x.parquet", {"p": "a"}, 10, 1, stats=stats, deletion_vector=DV)], Write()
    )
    with pytest.raises(GenerateWithDeletionVectorsError, match="DELTA_UNSUPPORTED_GENERATE_WITH_DELETION_VECTORS"):
        _generate(log)


@pytest.mark.parametrize(
    "properties",
    [
        {**MANIFEST_ON, "delta.enableDeletionVectors": "true"},  # both at once
        MANIFEST_ON,  # on a table with deletion vectors enabled
    ],
)
def test_deletion_vectors_and_incremental_manifests_exclude_each_other(properties):
    log = _table(**{"delta.enableDeletionVectors": "true"})
    with pytest.raises(
        TablePropertyValidationError,
        match=r"DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED\.PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL",
    ):
        set_table_properties(log, properties)
    assert log.update().version == 0
    other = _table(**MANIFEST_ON)  # and in the other order
    with pytest.raises(TablePropertyValidationError, match="PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL"):
        set_table_properties(other, {"delta.enableDeletionVectors": "true"})


def test_incremental_manifests_need_a_table_without_deletion_vectors():
    log = _table(**{"delta.enableDeletionVectors": "true"})
    stats = '{"numRecords":5,"tightBounds":false}'
    log.start_transaction().commit(
        [AddFile("p=a/x.parquet", {"p": "a"}, 10, 1, stats=stats, deletion_vector=DV)], Write()
    )
    set_table_properties(log, {"delta.enableDeletionVectors": "false"})
    with pytest.raises(
        TablePropertyValidationError, match=r"EXISTING_DELETION_VECTORS_WITH_INCREMENTAL.*APPLY \(PURGE\)"
    ):
        set_table_properties(log, MANIFEST_ON)
    txn = log.start_transaction()  # purged: the file recommitted without its deletion vector
    (old,) = txn.files_for_scan()
    txn.commit(
        [old.remove(5, data_change=False), AddFile("p=a/y.parquet", {"p": "a"}, 10, 1, data_change=False)],
        ManualUpdate(),
    )
    set_table_properties(log, MANIFEST_ON)
    assert _manifests(log) == {}  # a property change adds no file: no manifest yet
    log.start_transaction().commit([AddFile("p=b/z.parquet", {"p": "b"}, 10, 1)], Write())
    assert set(_manifests(log)) == {"p=a/manifest", "p=b/manifest"}
