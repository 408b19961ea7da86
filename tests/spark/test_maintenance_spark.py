"""Table maintenance, history and time travel through the Spark ``DeltaTable`` API, checked
against what Delta Spark does (RESTORE, CLONE, upgradeTableProtocol, DESCRIBE HISTORY/DETAIL)."""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
from zoneinfo import ZoneInfo

import pytest

from tests.log.helpers import set_mtime
from tests.ops.tables import append, create
from tests.spark.helpers import commits

pytestmark = pytest.mark.spark

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
METRICS_ENABLED = "spark.databricks.delta.history.metricsEnabled"


def _age_data_files(path: str, seconds: int = 30 * 24 * 3600) -> None:
    for name in glob.glob(os.path.join(path, "**"), recursive=True):
        if os.path.isfile(name) and "_delta_log" not in name:
            st = os.stat(name)
            os.utime(name, (st.st_atime - seconds, st.st_mtime - seconds))


def test_restore_and_clone_at_timestamp_read_the_session_time_zone(spark, tmp_path):
    """``restoreToTimestamp("2023-11-14 14:14:00")`` is a local time of
    ``spark.sql.session.timeZone``, as Delta casts it (and as ``timestampAsOf`` reads)."""
    import time

    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1])
    append(log, [2])
    # five days ago, within delta.deletedFileRetentionDuration (a week), which RESTORE and
    # CLONE enforce as Delta 4.1+ does (Delta's own tests moved to "now - 5 days" likewise)
    start = int(time.time() * 1000) - 5 * 24 * 3_600_000
    for version in (0, 1, 2):
        set_mtime(os.path.join(path, "_delta_log", f"{version:020d}.json"), start + version * 3_600_000)
    zone = ZoneInfo("America/Los_Angeles")
    at_v1 = dt.datetime.fromtimestamp((start + 3_600_000) / 1000, zone).replace(tzinfo=None) + dt.timedelta(minutes=1)
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        table = DeltaTable.forPath(spark, path)
        clone = table.cloneAtTimestamp(str(at_v1), str(tmp_path / "clone"), isShallow=True)
        restored = table.restoreToTimestamp(str(at_v1)).collect()[0]
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert clone._log.history(1)[0].operation_parameters["sourceVersion"] == 1
    assert restored.num_of_files_after_restore == 1
    assert log.history(1)[0].operation == "RESTORE" and len(log.update().files) == 1


def test_upgrade_table_protocol_is_set_tblproperties_of_the_versions(spark, tmp_path):
    """As delta-spark's ``upgradeTableProtocol`` (an ``ALTER TABLE SET TBLPROPERTIES`` of the
    versions): the protocol gains what the versions imply and stays normalized, so (3, 7)
    asked of a (1, 3) table that uses no table feature changes nothing; a later table
    feature lists the features the old versions implied; lower versions are ignored."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.protocol.actions import Protocol

    path = str(tmp_path / "t")
    log = create(path)
    table = DeltaTable.forPath(spark, path)
    table.upgradeTableProtocol(1, 3)
    assert log.update().protocol == Protocol(1, 3)
    info = log.history(1)[0]
    assert info.operation == "SET TBLPROPERTIES"
    assert json.loads(info.operation_parameters["properties"]) == {
        "delta.minReaderVersion": "1",
        "delta.minWriterVersion": "3",
    }
    table.upgradeTableProtocol(3, 7)
    assert log.update().protocol == Protocol(1, 3)
    table.addFeatureSupport("deletionVectors")
    expected = Protocol(3, 7, ("deletionVectors",), ("appendOnly", "checkConstraints", "deletionVectors", "invariants"))
    assert log.update().protocol == expected
    table.upgradeTableProtocol(1, 2)  # Delta: downgradeIgnored
    assert log.update().protocol == expected
    # "upgrade to a version with DeltaTable API": versions Delta does not support are refused
    from deltalog.errors import InvalidPropertyError

    for reader, writer, error in ((4, 7, "needs to be one of"), (3, 8, "needs to be one of"), (3, 1, "REQUIRES_WRITE")):
        with pytest.raises(InvalidPropertyError, match=error):
            table.upgradeTableProtocol(reader, writer)
    assert log.update().protocol == expected
    assert table.detail().collect()[0].tableFeatures == [
        "appendOnly",
        "checkConstraints",
        "deletionVectors",
        "invariants",
    ]


def test_restore_and_clone_record_only_deltas_metrics(spark, tmp_path):
    """RESTORE and CLONE commit Delta's metrics, not the engine's generic file counts
    (``numFiles``, ``numOutputBytes``, ``numAddedFiles``, ``numRemovedBytes``)."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1])
    append(log, [2])
    table = DeltaTable.forPath(spark, path)
    table.restoreToVersion(1)
    assert set(log.history(1)[0].operation_metrics) == {
        "tableSizeAfterRestore",
        "numOfFilesAfterRestore",
        "numRemovedFiles",
        "numRestoredFiles",
        "removedFilesSize",
        "restoredFilesSize",
    }
    clone = table.clone(str(tmp_path / "clone"), isShallow=False)
    assert set(clone._log.history(1)[0].operation_metrics) == {
        "sourceTableSize",
        "sourceNumOfFiles",
        "numRemovedFiles",
        "numCopiedFiles",
        "removedFilesSize",
        "copiedFilesSize",
    }


def _clone_ignores_session_defaults(spark, table, log, tmp_path):
    """CloneTableSuiteBase "CLONE ignores reader/writer session defaults"; the history of
    "simple shallow clone" (source named as Delta's DeltaTableV2.name(), metrics)."""
    defaults = "spark.databricks.delta.properties.defaults."
    for name, value in (("minReaderVersion", "2"), ("minWriterVersion", "5"), ("enableChangeDataFeed", "true")):
        spark.conf.set(defaults + name, value)
    try:
        clone = table.cloneAtVersion(1, str(tmp_path / "c"), isShallow=True)
    finally:
        for name in ("minReaderVersion", "minWriterVersion", "enableChangeDataFeed"):
            spark.conf.unset(defaults + name)
    source, target = log.snapshot(1), clone._log.update()
    assert (target.protocol, target.metadata.configuration) == (source.protocol, source.metadata.configuration)
    row = clone.history(1).collect()[0]
    assert row.operation == "CLONE" and row.operationParameters == {
        "source": f"delta.`file:{tmp_path}/t`",
        "sourceVersion": "1",
    }
    assert row.operationMetrics == {
        "sourceTableSize": str(source.size_in_bytes),
        "sourceNumOfFiles": "1",
        "numRemovedFiles": "0",
        "numCopiedFiles": "0",
        "removedFilesSize": "0",
        "copiedFilesSize": "0",
    }


def _restore_a_restore(spark, table, log, tmp_path):
    """RestoreTableSuiteBase "restore a restore back to pre-restore version" and "restore
    command output metrics"; restoring to the latest version is refused, as Delta's require."""
    from deltalog.txn.commands.restore import RestoreToLatestVersionError

    out = table.restoreToVersion(1)
    assert [(f.name, f.dataType.simpleString()) for f in out.schema.fields] == [
        (name, "bigint")
        for name in (
            "table_size_after_restore",
            "num_of_files_after_restore",
            "num_removed_files",
            "num_restored_files",
            "removed_files_size",
            "restored_files_size",
        )
    ]
    row = out.collect()[0]
    assert (row.num_of_files_after_restore, row.num_removed_files, row.num_restored_files) == (1, 1, 0)
    assert row.removed_files_size > 0 and row.restored_files_size == 0
    table.restoreToVersion(2)
    assert log.update().version == 4 and len(log.update().files) == 2
    with pytest.raises(RestoreToLatestVersionError):
        table.restoreToVersion(4)


@pytest.mark.parametrize("case", [_clone_ignores_session_defaults, _restore_a_restore], ids=lambda f: f.__name__)
def test_clone_and_restore_agree_with_deltas_suites(spark, tmp_path, case):
    """Representative cases of Delta's CloneTableSuiteBase / RestoreTableSuiteBase through
    the DeltaTable API, on a table of versions 0 (empty), 1 and 2 (one file each)."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1])
    append(log, [2])
    case(spark, DeltaTable.forPath(spark, path), log, tmp_path)


def test_restore_reads_ignore_missing_files_and_protocol_downgrade_from_the_session(spark, tmp_path):
    """RESTORE follows ``spark.sql.files.ignoreMissingFiles`` (RestoreTableCommand's
    ``checkSnapshotFilesAvailability`` is skipped) and Delta's
    ``spark.databricks.delta.restore.protocolDowngradeAllowed`` (RestoreTableSuiteBase's
    "restore downgrade protocol (allowed=true)": the version's own protocol comes back)."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.commands.restore import RestoreMissingFilesError
    from deltalog.txn.commit.operations import Delete
    from deltalog.txn.protocol.actions import Protocol

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1])
    old = log.update().protocol
    table = DeltaTable.forPath(spark, path)
    table.upgradeTableProtocol(2, 5)
    removed = log.update().files[0]
    log.start_transaction().commit([removed.remove(1)], Delete(["id = 1"]))
    os.remove(os.path.join(path, removed.path.replace("%3D", "=")))  # as VACUUM would
    with pytest.raises(RestoreMissingFilesError):
        table.restoreToVersion(1)
    spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
    spark.conf.set("spark.databricks.delta.restore.protocolDowngradeAllowed", "true")
    try:
        row = table.restoreToVersion(1).collect()[0]
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")
        spark.conf.unset("spark.databricks.delta.restore.protocolDowngradeAllowed")
    assert (row.num_restored_files, row.num_removed_files) == (1, 0)
    assert log.update().protocol == old != Protocol(2, 5)
    assert [f.path for f in log.update().files] == [removed.path]


def test_history_and_detail_have_deltas_columns(spark, tmp_path):
    """``history()`` and ``detail()`` return Delta's ``DeltaHistory`` / ``TableDetail``
    columns, in order; a legacy protocol's implied features are listed."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1])
    table = DeltaTable.forPath(spark, path)
    history = table.history(1)
    assert history.columns == [
        "version",
        "timestamp",
        "userId",
        "userName",
        "operation",
        "operationParameters",
        "job",
        "notebook",
        "clusterId",
        "readVersion",
        "isolationLevel",
        "isBlindAppend",
        "operationMetrics",
        "userMetadata",
        "engineInfo",
    ]
    row = history.collect()[0]
    assert (row.version, row.operation, row.userName, row.job) == (1, "WRITE", None, None)
    created = table.history().collect()[-1]
    # CREATE TABLE without data: an empty map, not null (DescribeDeltaHistorySuite
    # "operation metrics - create table - without data")
    assert (created.version, created.operationMetrics) == (0, {})
    detail = table.detail()
    assert detail.columns == [
        "format",
        "id",
        "name",
        "description",
        "location",
        "createdAt",
        "lastModified",
        "partitionColumns",
        "clusteringColumns",
        "numFiles",
        "sizeInBytes",
        "properties",
        "minReaderVersion",
        "minWriterVersion",
        "tableFeatures",
    ]
    got = detail.collect()[0]
    assert (got.partitionColumns, got.clusteringColumns, got.numFiles) == (["p"], [], 1)
    assert got.tableFeatures == ["appendOnly", "invariants"]  # implied by (1, 2)
    assert got.location == "file:" + path  # Hadoop's Path as Delta shows it (deltaLog.dataPath)
    # Delta's addFeatureSupport records the key as given (no validateConfigurations); the
    # protocol matches the feature in any case
    table.addFeatureSupport("changeDataFeed")
    added = table.history(1).collect()[0]
    assert (added.operation, added.operationParameters, added.operationMetrics) == (
        "SET TBLPROPERTIES",
        {"properties": '{"delta.feature.changeDataFeed":"supported"}'},
        {},
    )
    assert "changeDataFeed" in table.detail().collect()[0].tableFeatures


def test_restore_keeps_identity_high_water_marks(spark, table_path):
    """RESTORE brings back the older schema but not its identity high-water mark (Delta's
    ``copySchemaWithMergedHighWaterMarks``): a value generated after the restored version is
    never generated again."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long", generatedAlwaysAs=IdentityGenerator(start=1, step=1))
        .addColumn("v", "string")
        .execute()
    )

    def append(*values: str) -> None:
        rows = spark.createDataFrame([(v,) for v in values], "v string").coalesce(1)
        rows.write.format("deltalog").mode("append").save(table_path)

    append("a", "b")  # version 1: ids 1, 2
    append("c")  # version 2: id 3
    table = DeltaTable.forPath(spark, table_path)
    table.restoreToVersion(1)
    append("d")
    assert sorted(tuple(r) for r in table.toDF().collect()) == [(1, "a"), (2, "b"), (4, "d")]


def test_convert_to_delta_merges_every_files_schema(spark, tmp_path):
    """CONVERT takes the schema of every footer, as Delta's ``mergeSchemasInParallel``: a
    column only a later file has is read, not dropped; a column two files type differently
    is refused before anything is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    plain = tmp_path / "plain"
    (plain / "p=a").mkdir(parents=True)
    (plain / "p=b").mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), plain / "p=a" / "part-0.parquet")
    pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "note": ["x"]}), plain / "p=b" / "part-0.parquet")
    table = DeltaTable.convertToDelta(spark, f"parquet.`{plain}`", "p string")
    assert sorted(tuple(r) for r in table.toDF().collect()) == [(1, None, "a"), (2, "x", "b")]

    clash = tmp_path / "clash"
    (clash / "a").mkdir(parents=True)
    (clash / "b").mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), clash / "a" / "part-0.parquet")
    pq.write_table(pa.table({"id": ["one"]}), clash / "b" / "part-0.parquet")
    with pytest.raises(DeltaAnalysisError, match=r"b/part-0\.parquet"):
        DeltaTable.convertToDelta(spark, f"parquet.`{clash}`")
    assert not (clash / "_delta_log").exists()


def test_convert_to_delta_takes_the_session_defaults_and_skips_by_statistics(spark, tmp_path):
    """Delta's CONVERT creates its table with the session's
    ``spark.databricks.delta.properties.defaults.*`` (``updateMetadataForNewTable``) and
    collects statistics, so a read skips files at once; a default column mapping mode is
    refused as Delta refuses it, with nothing written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import DeltaTable, read_table
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.delta_log import DeltaLog

    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), plain / "part-0.parquet")
    pq.write_table(pa.table({"id": pa.array([10, 11], pa.int64())}), plain / "part-1.parquet")
    prefix = "spark.databricks.delta.properties.defaults."
    spark.conf.set(prefix + "enableChangeDataFeed", "true")
    try:
        DeltaTable.convertToDelta(spark, f"parquet.`{plain}`")
    finally:
        spark.conf.unset(prefix + "enableChangeDataFeed")
    snapshot = DeltaLog.for_table(str(plain)).update()
    assert snapshot.metadata.configuration == {"delta.enableChangeDataFeed": "true"}
    assert "changeDataFeed" in (snapshot.protocol.writer_features or ())
    df = read_table(spark, str(plain), where="id > 5")
    assert [os.path.basename(f) for f in df.inputFiles()] == ["part-1.parquet"]
    assert sorted(r.id for r in df.collect()) == [10, 11]

    mapped = tmp_path / "mapped"
    mapped.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), mapped / "part-0.parquet")
    spark.conf.set(prefix + "columnMapping.mode", "name")
    try:
        with pytest.raises(DeltaAnalysisError, match="DELTA_CONVERSION_UNSUPPORTED_COLUMN_MAPPING"):
            DeltaTable.convertToDelta(spark, f"parquet.`{mapped}`")
    finally:
        spark.conf.unset(prefix + "columnMapping.mode")
    assert not (mapped / "_delta_log").exists()


def test_generate_symlink_format_manifest(spark, tmp_path):
    """``generate("symlink_format_manifest")`` writes one manifest per partition listing the
    latest version's data files, as Delta's GENERATE does; another mode is refused."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1], "a")
    append(log, [2], "b")
    table = DeltaTable.forPath(spark, path)
    table.generate("symlink_format_manifest")
    for f in log.update().files:
        part = f.path.split("/")[0]
        with open(os.path.join(path, "_symlink_format_manifest", part, "manifest"), encoding="utf-8") as manifest:
            assert manifest.read().split() == [f"{log.table_uri}/{f.path}"]
    with pytest.raises(DeltaAnalysisError, match="DELTA_MODE_NOT_SUPPORTED"):
        table.generate("hive_manifest")


def test_restore_brings_back_the_clustering_columns(spark, tmp_path):
    """RESTORE of a liquid-clustered table brings back the version's clustering columns
    (Delta's ``handleDomainMetadataForRestoreTable``), so OPTIMIZE clusters by them again."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.commands.clustering import cluster_by

    path = str(tmp_path / "t")
    table = (
        DeltaTable.create(spark).location(path).addColumn("id", "long").addColumn("v", "string").clusterBy("id")
    ).execute()
    cluster_by(table._log, ["v"])  # version 1: ALTER TABLE ... CLUSTER BY (v)
    assert table.detail().collect()[0].clusteringColumns == ["v"]
    table.restoreToVersion(0)
    assert table.detail().collect()[0].clusteringColumns == ["id"]


def test_clone_of_a_vacuumed_version_is_refused_and_writes_nothing(spark, tmp_path):
    """A shallow clone of a version whose files were vacuumed could not be read and a deep
    one failed half-way, leaving directories that made the location "not empty" for the
    next try; both are refused before anything is written."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.errors import CloneSourceFilesMissingError
    from deltalog.txn.commit.operations import Delete

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1], "a")
    append(log, [2], "b")
    txn = log.start_transaction()
    gone = txn.filter_files([("p", "=", "a")])[0]
    txn.commit([gone.remove(1)], Delete(["p = 'a'"]))
    os.remove(os.path.join(path, gone.path))  # what VACUUM does once the tombstone expired
    table = DeltaTable.forPath(spark, path)
    target = tmp_path / "clone"
    for shallow in (True, False):
        with pytest.raises(CloneSourceFilesMissingError, match="p=a/") as err:
            table.cloneAtVersion(2, str(target), isShallow=shallow)
        assert len(err.value.missing) == 1
        assert not target.exists() or not any(target.iterdir())
    assert table.clone(str(target), isShallow=False).toDF().count() == 1  # the latest version


def test_a_vacuumed_deletion_vector_refuses_restore_and_time_travel_clearly(spark, table_path):
    """The data file is still live (only its deletion vector changed), but the deletion
    vector of the target version was vacuumed: committing the restore would make every read
    fail, so it is refused like a vacuumed data file and nothing is committed; reading that
    version fails with Delta's DELTA_FILE_NOT_FOUND_DETAILED, not as a corrupt log."""
    from deltalog.contrib.spark import DeltaTable, read_table
    from deltalog.errors import DataFileNotFoundError
    from deltalog.txn.commands.restore import RestoreMissingFilesError

    df = spark.createDataFrame([(i,) for i in range(6)], "id long").coalesce(1)
    df.write.format("deltalog").mode("append").option("delta.enableDeletionVectors", "true").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("id = 1")  # version 1: deletion vector A
    table.delete("id = 2")  # version 2: deletion vector B replaces A on the same file
    _age_data_files(table_path)
    spark.conf.set(RETENTION_CHECK, "false")
    try:
        dvs_before = {n for n in os.listdir(table_path) if n.startswith("deletion_vector_")}
        table.vacuum(0)
    finally:
        spark.conf.unset(RETENTION_CHECK)
    assert len(dvs_before - set(os.listdir(table_path))) == 1  # deletion vector A
    before = len(commits(table_path))
    with pytest.raises(RestoreMissingFilesError, match="deletion_vector_") as err:
        table.restoreToVersion(1)
    assert len(err.value.missing) == 1
    assert len(commits(table_path)) == before  # nothing committed
    assert sorted(r.id for r in table.toDF().collect()) == [0, 3, 4, 5]
    with pytest.raises(DataFileNotFoundError, match=r"deletion vector file .*deletion_vector_"):
        read_table(spark, table_path, versionAsOf=1)
    with pytest.raises(Exception, match="DELTA_FILE_NOT_FOUND_DETAILED"):
        spark.read.format("deltalog").option("versionAsOf", 1).load(table_path).collect()


def test_vacuum_after_a_purge_and_of_change_data_agrees_with_deltas_suite(spark, table_path):
    """DeltaVacuumSuite "vacuum after purge with zero retention policy" and "vacuum for cdc":
    once REORG PURGE rewrote the files with deletion vectors, VACUUM RETAIN 0 HOURS deletes the
    deletion-vector file and the rewritten files and the table still reads the same; the
    deletion vector of the current version is kept; change-data files stay while younger than
    the retention and go after it."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.log.deletion_vectors import dv_absolute_path

    options = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    spark.range(0, 20, 1, 2).write.format("deltalog").mode("append").options(**options).save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("id % 2 = 0 AND id < 15")

    def names() -> set[str]:
        return {n for n in os.listdir(table_path) if not n.startswith((".", "_"))}

    purged = names()  # the files with deletion vectors, and the deletion-vector file
    assert any(n.startswith("deletion_vector_") for n in purged)
    table.optimize().executePurge()
    spark.conf.set(RETENTION_CHECK, "false")
    try:
        table.update("id = 1", {"id": "id + 100"})  # a deletion vector and a change-data file, young
        cdc = os.path.join(table_path, "_change_data")
        table.vacuum(1)
        assert os.listdir(cdc) and purged <= names()  # within the retention: kept
        _age_data_files(table_path)
        table.vacuum(0)
    finally:
        spark.conf.unset(RETENTION_CHECK)
    snapshot = table._log.update()
    live = {os.path.basename(f.path) for f in snapshot.files}
    live |= {
        os.path.basename(dv_absolute_path(table._log.table_uri, f.deletion_vector))
        for f in snapshot.files
        if f.deletion_vector
    }
    assert any(n.startswith("deletion_vector_") for n in live)
    assert names() == live and not purged & live
    assert not os.path.exists(cdc)
    expected = [i + 100 if i == 1 else i for i in range(20) if not (i % 2 == 0 and i < 15)]
    assert sorted(r.id for r in table.toDF().collect()) == sorted(expected)


def _convert(spark, table, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import DeltaTable

    (tmp_path / "plain").mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), tmp_path / "plain" / "part-0.parquet")
    return DeltaTable.convertToDelta(spark, str(tmp_path / "plain"))._path


def _create(spark, table, tmp_path):
    from deltalog.contrib.spark import DeltaTable

    return DeltaTable.create(spark).location(str(tmp_path / "new")).addColumn("id", "long").execute()._path


def _features(spark, table, tmp_path):
    table.upgradeTableProtocol(1, 4)
    table.addFeatureSupport("domainMetadata")
    table.dropFeatureSupport("domainMetadata")


def _alter(spark, table, tmp_path):
    table.setProperties({"team.owner": "analytics"})
    table.unsetProperties(["team.owner"])
    table.addColumn("note", "string")
    table.changeColumnComment("note", "free text")


def _merge(spark, table, tmp_path):
    source = spark.createDataFrame([(3, "n3", "a")], "id long, name string, p string")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()


#: command -> (what runs it, the operations it commits); a command making a new table returns its path
_SESSION_COMMANDS = {
    "OPTIMIZE": (lambda spark, table, tmp_path: table.optimize().executeCompaction(), ["OPTIMIZE"]),
    "RESTORE": (lambda spark, table, tmp_path: table.restoreToVersion(1), ["RESTORE"]),
    "VACUUM": (lambda spark, table, tmp_path: table.vacuum(), ["VACUUM START", "VACUUM END"]),
    "CLONE": (lambda spark, table, tmp_path: table.clone(str(tmp_path / "clone"), isShallow=True)._path, ["CLONE"]),
    "CONVERT": (_convert, ["CONVERT"]),
    "CREATE": (_create, ["CREATE TABLE"]),
    "ALTER": (
        _alter,
        ["SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "ADD COLUMNS", "CHANGE COLUMN"],
    ),
    "FEATURES": (_features, ["SET TBLPROPERTIES", "SET TBLPROPERTIES", "DROP FEATURE"]),
    "MERGE": (_merge, ["MERGE"]),  # DELETE: test_write_table
}


@pytest.mark.parametrize("command", list(_SESSION_COMMANDS))
def test_every_table_command_commits_with_the_sessions_commit_confs(spark, tmp_path, command):
    """Delta's ``getUserMetadata`` (``TransactionHelper``) and ``getOperationMetrics``, read at
    every commit of every command: the session's ``...commitInfo.userMetadata`` is the
    ``userMetadata`` of OPTIMIZE, RESTORE, VACUUM START/END, CLONE, CONVERT, CREATE, ALTER
    TABLE and MERGE commits alike (DeltaSuite "history includes user-defined metadata for SQL
    API"), ``...history.metricsEnabled=false`` leaves out their ``operationMetrics``, and their
    ``engineInfo`` names the Spark integration. The ``DeltaTable`` is made before the confs are
    set: they are read when the command commits."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.delta_log import DeltaLog

    path = str(tmp_path / "t")
    log = create(path)
    append(log, [1])
    append(log, [2])
    table = DeltaTable.forPath(spark, path)
    run, expected = _SESSION_COMMANDS[command]
    spark.conf.set(USER_METADATA, f"nightly {command}")
    spark.conf.set(METRICS_ENABLED, "false")
    try:
        target = run(spark, table, tmp_path)
    finally:
        spark.conf.unset(USER_METADATA)
        spark.conf.unset(METRICS_ENABLED)
    new_table = isinstance(target, str)
    history = DeltaLog.for_table(target if new_table else path).history()
    made = [r.commit_info for r in reversed(history) if new_table or r.version > 2]
    assert [i.operation for i in made] == expected
    assert {i.user_metadata for i in made} == {f"nightly {command}"}
    assert [i.operation_metrics for i in made] == [None] * len(made)
    assert all(i.engine_info.startswith("deltalog-spark/") for i in made)
    table.setProperties({"team.after": "x"})
    assert log.history(1)[0].commit_info.user_metadata is None  # the conf is unset again


def test_detail_last_modified_is_the_latest_commit_files_modification_time(spark, tmp_path):
    """Delta's ``DescribeDeltaDetailCommand``: ``lastModified`` is the latest commit file's
    modification time, also when in-commit timestamps give the commit another time."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    log = create(path, config={"delta.enableInCommitTimestamps": "true"})
    append(log, [1])
    mtime_ms = 1_700_000_000_000  # 2023-11-14T22:13:20Z, long before the commit's timestamp
    set_mtime(os.path.join(path, "_delta_log", f"{1:020d}.json"), mtime_ms)
    got = DeltaTable.forPath(spark, path).detail().collect()[0].lastModified
    assert got.replace(tzinfo=dt.timezone.utc).timestamp() * 1000 == mtime_ms


def test_detail_agrees_with_deltas_describe_detail_suite(spark, tmp_path):
    """Cases of Delta's DescribeDeltaDetailSuite: detail always reads the latest version
    (a property another writer set since the ``DeltaTable`` was made); a liquid table shows
    its clustering columns by logical name after a column-mapping rename, no partition
    columns and no file, and none after ``CLUSTER BY NONE``."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.commands.alter import set_table_properties
    from deltalog.txn.commands.clustering import cluster_by

    path = str(tmp_path / "t")
    log = create(path)
    table = DeltaTable.forPath(spark, path)
    assert table.detail().collect()[0].properties == {}
    set_table_properties(log, {"foo": "bar"})
    assert table.detail().collect()[0].properties == {"foo": "bar"}

    liquid = str(tmp_path / "liquid")
    DeltaTable.create(spark).location(liquid).addColumn("col1", "string").addColumn("col2", "int").clusterBy(
        "col1", "col2"
    ).execute()
    table = DeltaTable.forPath(spark, liquid)
    table.setProperties(
        {"delta.columnMapping.mode": "name", "delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}
    )
    table.renameColumn("col2", "new_col_name")
    got = table.detail().collect()[0]
    assert (got.format, got.partitionColumns, got.clusteringColumns, got.numFiles) == (
        "delta",
        [],
        ["col1", "new_col_name"],
        0,
    )
    cluster_by(table._log, [])
    assert table.detail().collect()[0].clusteringColumns == []
