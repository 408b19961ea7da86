"""CLONE (shallow and deep) through the engine: the target is a plain Delta table that
delta-rs reads with the source's rows, carrying Delta's CLONE operation and metrics."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

from deltalog.txn.commands.clone import CloneReplaceNonEmptyTableError, CloneTargetNotEmptyError, clone
from deltalog.txn.commands.clustering import clustering_columns
from deltalog.txn.commands.optimize import optimize
from deltalog.txn.commands.vacuum import vacuum
from deltalog.txn.commit.commit_errors import AddingDeletionVectorsDisallowedError
from deltalog.txn.commit.operations import Delete, SetTableProperties
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.errors import UnsupportedColumnMappingModeChangeError
from tests.log.test_feature_tables import test_deletion_vectors_on_disk_and_inline as build_dv_table
from tests.ops.tables import append, create


def _rows(uri: str, version: int | None = None) -> list[tuple[int, str, str | None]]:
    """The table's rows read by delta-rs (its DataFusion reader applies deletion vectors)."""
    table = deltalake.DeltaTable(uri, version=version)
    result = deltalake.QueryBuilder().register("t", table).execute("select * from t")
    data = pa.table(result.read_all()).to_pylist()
    return sorted(tuple(row.values()) for row in data)  # type: ignore[misc]


def _commit_info(uri: str, version: int) -> dict[str, object]:
    lines = (Path(uri) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return next(json.loads(line)["commitInfo"] for line in lines if '"commitInfo"' in line)


def _source(tmp_path: Path) -> DeltaLog:
    log = create(str(tmp_path / "source"), config={"delta.appendOnly": "false", "team.owner": "data"})
    append(log, [1, 2], "a")
    append(log, [3], "b c%")  # a partition value Delta escapes in the path
    append(log, [4, 5], "a")
    return log


def test_shallow_clone_points_at_the_source_files(tmp_path: Path) -> None:
    source = _source(tmp_path)
    target_uri = str(tmp_path / "shallow")
    result = clone(source, target_uri, properties={"team.owner": "analytics"})

    assert result.version == 0 and result.source_version == 3
    assert _rows(target_uri) == _rows(source.table_uri)
    target = DeltaLog.for_table(target_uri).update()
    assert all(f.path.startswith("file:") or f.path.startswith("/") for f in target.files)
    assert target.metadata.id != source.update().metadata.id
    assert target.metadata.configuration["team.owner"] == "analytics"
    assert target.metadata.partition_columns == ("p",)
    data = [p for p in Path(target_uri).rglob("*.parquet") if "_delta_log" not in p.parts]
    assert not data  # nothing copied
    assert target.checkpoint_version == 0  # a large commit is checkpointed at once, as Delta's
    info = _commit_info(target_uri, 0)
    assert info["operation"] == "CLONE"
    assert info["operationParameters"] == {"source": source.table_uri, "sourceVersion": 3}
    metrics = info["operationMetrics"]
    assert isinstance(metrics, dict)
    assert metrics["sourceNumOfFiles"] == "3" and metrics["numCopiedFiles"] == "0"
    assert metrics["sourceTableSize"] == str(source.update().size_in_bytes)

    # VACUUM of the clone never deletes the source's files
    vacuum(DeltaLog.for_table(target_uri), retention_hours=0, enforce_retention=False)
    assert _rows(target_uri) == _rows(source.table_uri)


def test_deep_clone_copies_and_stands_alone(tmp_path: Path) -> None:
    source = _source(tmp_path)
    expected = _rows(source.table_uri, version=2)
    target_uri = str(tmp_path / "deep")
    result = clone(source, target_uri, version=2, shallow=False)

    assert result.source_version == 2
    assert result.metrics["numCopiedFiles"] == "2"
    assert int(result.metrics["copiedFilesSize"]) == sum(f.size for f in DeltaLog.for_table(target_uri).update().files)
    shutil.rmtree(tmp_path / "source")  # the deep clone depends on nothing of the source
    assert _rows(target_uri) == expected == [(1, "n1", "a"), (2, "n2", "a"), (3, "n3", "b c%")]


@pytest.mark.parametrize("shallow", [True, False])
def test_clone_keeps_deletion_vectors(tmp_path: Path, shallow: bool) -> None:
    build_dv_table(tmp_path)  # builds tmp_path/"dv": on-disk and inline DVs, checked there
    source = DeltaLog.for_table(str(tmp_path / "dv"))
    target_uri = str(tmp_path / ("shallow" if shallow else "deep"))
    clone(source, target_uri, shallow=shallow)
    target = DeltaLog.for_table(target_uri).update()
    assert target.protocol == source.update().protocol
    kinds = sorted(f.deletion_vector.storage_type for f in target.files if f.deletion_vector is not None)
    assert kinds == (["i", "p"] if shallow else ["i", "u"])
    if not shallow:
        shutil.rmtree(tmp_path / "dv")
    got = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(target_uri)).execute("select id from t")
    assert sorted(pa.table(got.read_all()).column("id").to_pylist()) == sorted(
        {*range(10), *range(100, 109)} - {0, 3, 7}
    )


def test_clone_into_a_non_empty_location_is_refused(tmp_path: Path) -> None:
    source = _source(tmp_path)
    existing = create(str(tmp_path / "existing"))
    with pytest.raises(CloneTargetNotEmptyError):
        clone(source, existing.table_uri)
    assert existing.update().version == 0
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("keep me")
    with pytest.raises(CloneTargetNotEmptyError, match="not empty"):
        clone(source, str(stray), shallow=False)
    assert sorted(p.name for p in stray.iterdir()) == ["notes.txt"]


def test_a_deep_clone_that_fails_copying_leaves_the_target_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy failing half-way (here a source file vanishing after the check) removes the
    copies and the directories it made, so the clone can be tried again at that location."""
    from deltalog.txn.commands import clone as clone_module

    source = _source(tmp_path)
    doomed = next(f for f in source.update().files if f.partition_values["p"] == "b c%")
    shutil.move(str(tmp_path / "source" / clone_module.decode_path(doomed.path)), str(tmp_path / "aside"))
    monkeypatch.setattr(clone_module, "missing_files", lambda *args: [])
    target = tmp_path / "deep"
    with pytest.raises(FileNotFoundError):
        clone(source, str(target), shallow=False)
    assert not target.exists() or not any(target.iterdir())
    monkeypatch.undo()
    shutil.move(str(tmp_path / "aside"), str(tmp_path / "source" / clone_module.decode_path(doomed.path)))
    assert clone(source, str(target), shallow=False).version == 0


@pytest.mark.parametrize("shallow", [True, False])
def test_clone_of_a_clustered_table_keeps_its_clustering_columns(tmp_path: Path, shallow: bool) -> None:
    """Delta's CLONE copies the ``delta.clustering`` domain (``handleDomainMetadataForCloneTable``):
    the clone is clustered by the source's columns, and OPTIMIZE of the clone clusters, not
    just compacts."""
    from tests.features.test_clustering import _append
    from tests.features.test_clustering import _create as create_clustered

    source = create_clustered(str(tmp_path / "source"), ["y", "x"])
    _append(source, [(1, 2), (3, 4)])
    _append(source, [(5, 6)])
    target_uri = str(tmp_path / "clone")
    clone(source, target_uri, shallow=shallow)
    target = DeltaLog.for_table(target_uri)
    assert clustering_columns(target.update()) == ["y", "x"]
    params = _commit_info(target_uri, optimize(target).version or 0)["operationParameters"]
    assert isinstance(params, dict) and params["clusterBy"] == '["y","x"]'
    # a clustered (empty) table replaced by the clone of an unclustered one is not clustered
    # any more (Delta's handleDomainMetadataForReplaceTable)
    empty = create_clustered(str(tmp_path / "empty"), ["x"])
    plain = create(str(tmp_path / "plain"))
    append(plain, [1])
    clone(plain, empty.table_uri, shallow=shallow, replace=True)
    assert clustering_columns(empty.update()) is None


def test_clone_properties_that_need_table_features_upgrade_the_protocol(tmp_path: Path) -> None:
    """The target's protocol is the source's merged with what the cloned properties need
    (here the deletionVectors table feature, on a (1, 2) source), not a downgrade error."""
    source = _source(tmp_path)
    assert source.update().protocol.min_writer_version < 7
    target_uri = str(tmp_path / "dv")
    clone(source, target_uri, properties={"delta.enableDeletionVectors": "true"})
    target = DeltaLog.for_table(target_uri).update()
    assert "deletionVectors" in (target.protocol.writer_features or ())
    assert _rows(target_uri) == _rows(source.table_uri)


def test_clone_takes_the_targets_name_and_description_not_the_sources(tmp_path: Path) -> None:
    """Delta's ``prepareSourceMetadata`` gives the clone the target's name and description
    (none for a new table); CloneTableTestMixin's ``compareMetadata`` checks they are null.
    The source's creation time stays."""
    source = _source(tmp_path)
    txn = source.start_transaction()
    txn.update_metadata(replace(source.update().metadata, name="orders", description="the orders"))
    txn.commit([], SetTableProperties({}))
    clone(source, str(tmp_path / "c"))
    metadata = DeltaLog.for_table(str(tmp_path / "c")).update().metadata
    assert (metadata.name, metadata.description) == (None, None)
    # the source's createdTime stays: Delta's sourceTable.metadata.copy(id, name, description)
    assert metadata.created_time == source.update().metadata.created_time is not None


@pytest.mark.parametrize("mode", ["id", "none"])
def test_clone_properties_cannot_change_the_column_mapping_mode(tmp_path: Path, mode: str) -> None:
    """Delta's ``checkColumnMappingMode`` (CloneTableSuiteBase's "block changing column
    mapping mode ... under CLONE"): a property moving a name-mapped source to another mode is
    refused before anything is written."""
    source = create(str(tmp_path / "source"), config={"delta.columnMapping.mode": "name"})
    target = tmp_path / "c"
    with pytest.raises(UnsupportedColumnMappingModeChangeError, match="from 'name' to"):
        clone(source, str(target), properties={"delta.columnMapping.mode": mode})
    assert not (target / "_delta_log").exists() or not any((target / "_delta_log").iterdir())


def test_clone_replace_needs_an_empty_delta_table_and_keeps_its_identity(tmp_path: Path) -> None:
    """Delta's ``CREATE OR REPLACE ... CLONE`` (CloneTableSuiteBase's "create or replace
    table" and "CLONE respects table features ..., targetExists=true"): a Delta table with
    files is refused (``DELTA_UNSUPPORTED_NON_EMPTY_CLONE``); an emptied one keeps its id,
    history and protocol (no downgrade) and gets the source's files and properties."""
    source = _source(tmp_path)
    target = create(str(tmp_path / "target"), config={"delta.enableDeletionVectors": "true"})
    append(target, [9], "z")
    with pytest.raises(CloneReplaceNonEmptyTableError, match="DELTA_UNSUPPORTED_NON_EMPTY_CLONE"):
        clone(source, target.table_uri, replace=True)
    with pytest.raises(CloneTargetNotEmptyError, match="is not empty"):
        clone(source, target.table_uri)
    txn = target.start_transaction()
    txn.commit([f.remove(1) for f in target.update().files], Delete([]))
    before = target.update()
    result = clone(source, target.table_uri, replace=True)
    after = target.update()
    assert result.version == 3 and after.metadata.id == before.metadata.id
    assert after.protocol == before.protocol  # (3, 7) with deletionVectors: not the source's (1, 2)
    assert after.metadata.configuration == source.update().metadata.configuration
    assert _rows(target.table_uri) == _rows(source.table_uri)
    assert clone(source, str(tmp_path / "fresh"), replace=True).version == 0  # no table there: created
    # Delta's restore.protocolDowngradeAllowed: the replaced table gets the source's protocol
    txn = target.start_transaction()
    txn.commit([f.remove(1) for f in target.update().files], Delete([]))
    clone(source, target.table_uri, replace=True, allow_protocol_downgrade=True)
    assert target.update().protocol == source.update().protocol != before.protocol


def test_files_re_added_in_place_keep_their_deletion_vectors_where_new_ones_are_off(tmp_path: Path) -> None:
    """Delta's ``isInPlaceFileMetadataUpdate``: turning row tracking on re-adds the live files
    (Delta's ROW TRACKING BACKFILL) with their deletion vectors, even after
    ``delta.enableDeletionVectors`` was turned off; only new deletion vectors are refused."""
    build_dv_table(tmp_path)
    log = DeltaLog.for_table(str(tmp_path / "dv"))
    for properties in ({"delta.enableDeletionVectors": "false"}, {"delta.enableRowTracking": "true"}):
        metadata = log.update().metadata
        txn = log.start_transaction()
        txn.update_metadata(replace(metadata, configuration={**metadata.configuration, **properties}))
        txn.commit([], SetTableProperties(properties))
    assert all(f.base_row_id is not None for f in log.update().files)
    assert sum(f.deletion_vector is not None for f in log.update().files) == 2


def test_clone_turning_deletion_vectors_off_on_a_source_with_them_is_refused(tmp_path: Path) -> None:
    """CloneTableSuiteBase's "CLONE with table properties to disable DV": Delta's commit
    refuses an add with a deletion vector once ``delta.enableDeletionVectors`` is false
    (``DELTA_ADDING_DELETION_VECTORS_DISALLOWED``); nothing is written."""
    build_dv_table(tmp_path)
    source = DeltaLog.for_table(str(tmp_path / "dv"))
    target = tmp_path / "c"
    with pytest.raises(AddingDeletionVectorsDisallowedError, match="DELTA_ADDING_DELETION_VECTORS_DISALLOWED"):
        clone(source, str(target), properties={"delta.enableDeletionVectors": "false"})
    assert DeltaLog.for_table(str(target)).update().version == -1


_ROW_TRACKING_ON = {"delta.enableRowTracking": "true"}


@pytest.mark.parametrize(
    ("source_on", "source_rows", "target", "properties", "supported", "enabled"),
    [
        (True, True, None, {}, True, True),  # "clone a table with row tracking enabled into non-existing target"
        (False, True, None, {"delta.feature.rowTracking": "supported"}, True, False),  # "...explicitly adding"
        (False, True, "on", {}, True, False),  # "clone assigns fresh row IDs for empty target"
        (True, True, "on", {"delta.enableRowTracking": "false"}, True, False),  # "can disable row IDs"
        (True, False, "off", {}, True, True),  # "from empty source ... does not assign row IDs"
        (False, False, None, {}, False, False),  # same, rowIdsEnabledOnSource=false
        (False, False, "off", _ROW_TRACKING_ON, True, True),  # "... using property override"
        (True, False, "self", {}, True, True),  # "self-clone an empty table"
    ],
)
def test_clone_row_ids_as_row_id_clone_suite(
    tmp_path: Path,
    source_on: bool,
    source_rows: bool,
    target: str | None,
    properties: dict[str, str],
    supported: bool,
    enabled: bool,
) -> None:
    """Delta's RowIdCloneSuite: the target's row tracking support and enablement, and valid
    row ids (every file has a ``baseRowId``, disjoint ranges under the high-water mark)
    exactly when the source has rows."""
    source = create(str(tmp_path / "s"), partitioned=False, config=_ROW_TRACKING_ON if source_on else None)
    if source_rows:
        append(source, [1, 2, 3], None)
        append(source, [4, 5], None)
    if target == "self":
        target_log = source
    elif target is not None:
        target_log = create(str(tmp_path / "t"), partitioned=False, config=_ROW_TRACKING_ON if target == "on" else None)
    else:
        target_log = DeltaLog.for_table(str(tmp_path / "t"))
    clone(source, target_log.table_uri, replace=target is not None, properties=properties)
    snapshot = DeltaLog.for_table(target_log.table_uri).update()
    assert ("rowTracking" in (snapshot.protocol.writer_features or ())) is supported
    assert snapshot.properties.enable_row_tracking is enabled
    ranges = sorted((f.base_row_id, f.num_records) for f in snapshot.files)
    assert [r[0] for r in ranges] == ([0, 3] if source_rows else [])
    mark = snapshot.domain_metadata.get("delta.rowTracking")
    assert (mark is not None and json.loads(mark.configuration)["rowIdHighWaterMark"] == 4) is source_rows


def test_clone_into_row_tracking_of_files_without_stats_is_refused(tmp_path: Path) -> None:
    """RowIdCloneSuite "clone throws error when assigning row IDs without stats": a source
    file without ``numRecords`` cannot get row ids in the target; Delta refuses the clone
    (``DELTA_CLONE_WITH_ROW_TRACKING_WITHOUT_STATS``) and, deep, copies nothing."""
    from deltalog.txn.commit.operations import ManualUpdate
    from deltalog.txn.protocol.errors import RowTrackingError

    source = create(str(tmp_path / "s"), partitioned=False)
    append(source, [1, 2, 3], None)
    (f,) = source.update().files
    source.start_transaction().commit([replace(f, stats=None, data_change=False)], ManualUpdate())
    target = tmp_path / "t"
    with pytest.raises(RowTrackingError, match=r"^\[DELTA_CLONE_WITH_ROW_TRACKING_WITHOUT_STATS\]"):
        clone(source, str(target), shallow=False, properties=_ROW_TRACKING_ON)
    assert DeltaLog.for_table(str(target)).update().version == -1
    assert not list(target.rglob("*.parquet"))  # the deep clone copied nothing
