"""Liquid clustering in the engine: the ``delta.clustering`` domain on create and ALTER,
appends left unclustered, OPTIMIZE ordering rows along a Hilbert curve of the clustering
columns into files whose min/max boxes barely overlap, and delta-rs reading the result."""

from __future__ import annotations

import itertools
import json
import random
import uuid
from pathlib import Path
from typing import Any

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark.optimize_metrics import optimize_result_row
from deltalog.errors import ClusteringColumnsError
from deltalog.txn.commands.clustering import ClusteringStats, cluster_by, clustering_actions, clustering_columns
from deltalog.txn.commands.hilbert import hilbert_order
from deltalog.txn.commands.optimize import OptimizeError, optimize
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata, Protocol
from deltalog.txn.protocol.clustering import clustering_domain, logical_clustering_columns, physical_clustering_columns
from deltalog.txn.protocol.file_stats import StatsCollector

ARROW = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("name", pa.string())])


def _schema(extra: list[dict[str, Any]] | None = None) -> str:
    fields = [
        {"name": "x", "type": "long", "nullable": True, "metadata": {}},
        {"name": "y", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        *(extra or []),
    ]
    return json.dumps({"type": "struct", "fields": fields})


def _create(uri: str, cluster: list[str] | None, partition_by: tuple[str, ...] = (), schema: str = "") -> DeltaLog:
    log = DeltaLog.for_table(uri)
    txn = log.start_transaction()
    txn.update_metadata(
        Metadata(id=str(uuid.uuid4()), schema_string=schema or _schema(), partition_columns=partition_by)
    )
    actions = clustering_actions(txn, cluster) if cluster is not None else []
    txn.commit(actions, CreateTable(partition_by=partition_by, cluster_by=cluster))
    return log


def _append(log: DeltaLog, rows: list[tuple[int, int]]) -> None:
    table = pa.table(
        {"x": [r[0] for r in rows], "y": [r[1] for r in rows], "name": [f"n{r[0]}-{r[1]}" for r in rows]},
        schema=ARROW,
    )
    name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    path = log.store.fs_path(f"{log.table_uri}/{name}")
    fs = log.store.filesystem()
    with fs.open_output_stream(path) as out:
        pq.write_table(table, out)
    stats = StatsCollector(ARROW)
    stats.update(table)
    add = AddFile(name, {}, int(fs.get_file_info(path).size or 0), 1, True, stats.to_json())
    log.start_transaction().commit([add], Write())


def _boxes(log: DeltaLog) -> list[tuple[int, int, int, int]]:
    out = []
    for f in log.update().files:
        s = json.loads(f.stats or "{}")
        out.append((s["minValues"]["x"], s["maxValues"]["x"], s["minValues"]["y"], s["maxValues"]["y"]))
    return out


def _overlapping_pairs(boxes: list[tuple[int, int, int, int]]) -> float:
    """The share of file pairs whose (x, y) min/max boxes intersect."""
    pairs = list(itertools.combinations(boxes, 2))
    hits = sum(1 for a, b in pairs if a[0] <= b[1] and b[0] <= a[1] and a[2] <= b[3] and b[2] <= a[3])
    return hits / len(pairs)


def _rows_deltars(uri: str) -> list[tuple[int, int, str]]:
    table = deltalake.DeltaTable(uri).to_pyarrow_table()
    return sorted(zip(table["x"].to_pylist(), table["y"].to_pylist(), table["name"].to_pylist()))


def test_create_writes_the_clustering_domain_and_features(tmp_path: Path) -> None:
    log = _create(str(tmp_path / "t"), ["y", "X"])
    snap = log.update()
    assert {"clustering", "domainMetadata"} <= set(snap.protocol.writer_features or ())
    domain = snap.domain_metadata["delta.clustering"]
    assert json.loads(domain.configuration) == {"clusteringColumns": [["y"], ["x"]]}
    assert clustering_columns(snap) == ["y", "x"]
    first = log.read_commit(0)
    assert any(type(a).__name__ == "DomainMetadata" for a in first)
    assert first[0].operation_parameters["clusterBy"] == '["y","X"]'  # type: ignore[union-attr]


def test_column_mapping_tables_name_physical_columns() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {
                "name": "x",
                "type": "long",
                "nullable": True,
                "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-abc"},
            }
        ],
    }
    paths = physical_clustering_columns(schema, ["X"])
    assert paths == [["col-abc"]]
    domain = clustering_domain(paths)
    assert (domain.domain, json.loads(domain.configuration)) == (
        "delta.clustering",
        {"clusteringColumns": [["col-abc"]]},
    )
    protocol = Protocol(1, 7, None, ("clustering", "domainMetadata"))
    assert logical_clustering_columns({domain.domain: domain}, schema, protocol) == ["x"]
    assert (
        logical_clustering_columns({domain.domain: domain}, schema, Protocol(1, 7, None, ("domainMetadata",))) is None
    )


@pytest.mark.parametrize(
    ("columns", "partition_by", "match"),
    [
        (["nope"], (), r"DELTA_COLUMN_NOT_FOUND_IN_SCHEMA.*Couldn.t find column nope"),
        (["flag"], (), "no min/max statistics"),
        (["st"], (), "no min/max statistics"),
        (["st.a"], (), "nested field"),
        (["x", "y", "name", "flag", "x"], (), r"DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS.*up to 4 .* has 5 "),
        (["x", "X"], (), r"DELTA_DUPLICATE_COLUMNS_FOUND.CLUSTER_BY.*`X`"),
        (["x"], ("name",), "partitioned"),
    ],
)
def test_refused_clustering_columns_leave_no_table(
    tmp_path: Path, columns: list[str], partition_by: tuple[str, ...], match: str
) -> None:
    extra = [
        {"name": "flag", "type": "boolean", "nullable": True, "metadata": {}},
        {
            "name": "st",
            "type": {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]},
            "nullable": True,
            "metadata": {},
        },
    ]
    uri = str(tmp_path / "t")
    with pytest.raises(ClusteringColumnsError, match=match):
        _create(uri, columns, partition_by, _schema(extra))
    assert DeltaLog.for_table(uri).update().version == -1


def test_optimize_clusters_files_along_the_clustering_columns(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = _create(uri, ["x", "y"])
    rng = random.Random(7)
    rows = [(rng.randrange(1000), rng.randrange(1000)) for _ in range(8 * 400)]
    for k in range(8):
        _append(log, rows[k * 400 : (k + 1) * 400])
    before = _boxes(log)
    assert all(f.clustering_provider is None for f in log.update().files)  # appends: unclustered
    total = sum(f.size for f in log.update().files)
    result = optimize(log, target_size=total // 8)
    snap = log.update()
    assert result.num_files_removed == 8 and snap.num_files >= 4
    assert all(f.clustering_provider == "liquid" and not f.data_change for f in snap.files)
    after = _boxes(log)
    assert _overlapping_pairs(before) == 1.0
    assert _overlapping_pairs(after) < 0.5
    # each file covers a small part of the square, not the whole range of either column
    assert np.mean([(b[1] - b[0]) * (b[3] - b[2]) for b in after]) < 0.5 * 1000 * 1000
    info = log.read_commit(snap.version)[0]
    assert info.operation_parameters["clusterBy"] == '["x","y"]'  # type: ignore[union-attr]
    assert info.operation_parameters["zOrderBy"] == "[]"  # type: ignore[union-attr]
    expected = sorted((x, y, f"n{x}-{y}") for x, y in rows)
    assert _rows_deltars(uri) == expected
    # everything is clustered: nothing to do; a new append is clustered by the next OPTIMIZE
    assert optimize(log, target_size=total // 8).version is None
    _append(log, [(5, 5)])
    assert optimize(log, target_size=total // 8).version is not None
    assert all(f.clustering_provider == "liquid" for f in log.update().files)
    assert _rows_deltars(uri) == sorted([*expected, (5, 5, "n5-5")])


def test_full_optimize_reclusters_after_cluster_by_changed(tmp_path: Path) -> None:
    log = _create(str(tmp_path / "t"), ["x"])
    rng = random.Random(3)
    for _ in range(4):
        _append(log, [(rng.randrange(1000), rng.randrange(1000)) for _ in range(300)])
    total = sum(f.size for f in log.update().files)
    first = optimize(log, target_size=total // 4)
    assert all(b[3] - b[2] > 900 for b in _boxes(log))  # clustered by x: every file spans y
    # Delta's ClusteringStats: 4 unclustered inputs merged into one ZCube
    assert first.clustering_stats == ClusteringStats((0, 0), (4, total), 0, (4, total), 1)
    row = optimize_result_row(first, False, 2)[1]
    assert row[5] is None and row[6] == ((0, 0), (4, total), 0, (4, total), 1)
    # Delta's ZCubeInfo tags: the files of one bin form one ZCube, clustered by ["x"]
    tags = [f.tags or {} for f in log.update().files]
    assert len(tags) > 1 and len({t["ZCUBE_ID"] for t in tags}) == 1
    assert {t["ZCUBE_ZORDER_BY"] for t in tags} == {'["x"]'}
    cluster_by(log, ["y"])
    nothing = optimize(log, target_size=total // 4)  # every file is clustered already (by x)
    clustered = (first.num_files_added, first.bytes_added)
    assert nothing.version is None and nothing.clustering_stats == ClusteringStats((0, 0), clustered, 0, (0, 0), 0)
    full = optimize(log, target_size=total // 4, full=True)
    version = full.version
    assert version is not None and full.clustering_stats == ClusteringStats(clustered, (0, 0), 1, clustered, 1)
    params = log.read_commit(version)[0].operation_parameters  # type: ignore[union-attr]
    assert (params["clusterBy"], params["isFull"]) == ('["y"]', True)  # Delta writes booleans raw
    by_y = sorted(_boxes(log), key=lambda b: b[2])
    assert len(by_y) > 1
    assert all(nxt[2] >= prev[3] for prev, nxt in itertools.pairwise(by_y))  # ranges of y at most touch


def test_zorder_of_a_clustered_table_is_refused(tmp_path: Path) -> None:
    log = _create(str(tmp_path / "t"), ["x"])
    _append(log, [(1, 2)])
    with pytest.raises(ClusteringColumnsError, match="ZORDER BY"):
        optimize(log, z_order_by=["y"])
    # Delta's DELTA_OPTIMIZE_FULL_NOT_SUPPORTED: FULL needs clustering columns (not CLUSTER BY NONE)
    _append(log, [(3, 4)])
    cluster_by(log, [])
    version = log.update().version
    with pytest.raises(OptimizeError, match="DELTA_OPTIMIZE_FULL_NOT_SUPPORTED"):
        optimize(log, full=True)
    assert log.update().version == version


def test_alter_cluster_by_changes_and_enables_clustering(tmp_path: Path) -> None:
    log = _create(str(tmp_path / "t"), None)
    _append(log, [(1, 2), (3, 4)])
    assert clustering_columns(log.update()) is None
    version = cluster_by(log, ["name"])
    snap = log.update()
    assert "clustering" in (snap.protocol.writer_features or ())
    assert clustering_columns(snap) == ["name"]
    info = log.read_commit(version)[0]
    assert info.operation == "CLUSTER BY"  # type: ignore[union-attr]
    # Delta's ClusterBy: the logical names joined by commas (ClusteredTableTestUtils), not JSON lists
    assert info.operation_parameters == {"oldClusteringColumns": "", "newClusteringColumns": "name"}  # type: ignore[union-attr]
    version = cluster_by(log, ["x", "y"])
    info = log.read_commit(version)[0]
    assert info.operation_parameters == {"oldClusteringColumns": "name", "newClusteringColumns": "x,y"}  # type: ignore[union-attr]
    cluster_by(log, [])  # CLUSTER BY NONE: still clustered, by nothing; OPTIMIZE compacts
    assert clustering_columns(log.update()) == []
    assert optimize(log).num_files_removed == 0  # one file: nothing to compact
    assert _rows_deltars(str(tmp_path / "t")) == [(1, 2, "n1-2"), (3, 4, "n3-4")]


def test_a_partitioned_table_cannot_be_clustered(tmp_path: Path) -> None:
    """ClusteringTableFeatureSuite "alter table cluster by partitioned tables is not allowed.":
    CLUSTER BY (a) and CLUSTER BY NONE both refused, with Delta's error class."""
    log = _create(str(tmp_path / "t"), None, ("name",))
    for columns in (["x"], []):
        refused = "DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED"
        with pytest.raises(ClusteringColumnsError, match=refused):
            cluster_by(log, columns)
    assert log.update().version == 0


@pytest.mark.parametrize(("dims", "bits"), [(2, 4), (3, 3), (4, 2)])
def test_hilbert_order_visits_neighbouring_cells(dims: int, bits: int) -> None:
    points = np.array(list(itertools.product(range(2**bits), repeat=dims)), dtype=np.uint64)
    np.random.default_rng(0).shuffle(points)
    order = hilbert_order([points[:, i] for i in range(dims)], bits)
    walk = points[order].astype(np.int64)
    assert walk[0].tolist() == [0] * dims
    assert set(np.abs(np.diff(walk, axis=0)).sum(axis=1).tolist()) == {1}  # one step at a time


def test_hilbert_indices_are_deltas_hilbert_index() -> None:
    """MultiDimClusteringSuite "ensure records with close Hilbert curve values are close in the
    output" (4 ranges: Delta's 3 bits) and "... sorted according to Hilbert curve values"
    (1000 ranges: 10 bits): Delta's ``hilbert_index`` of the range ids, bit for bit."""
    from deltalog.txn.commands.z_order import hilbert_indices

    c1, c2 = list("aabcdeeefgh"), [20, 20, 20, 30, 70, 90, 90, 90, 200, 10, 20]
    table = pa.table({"c1": c1, "c2": c2})
    rows = [c1[i] + str(c2[i]) for i in hilbert_indices(table, ["c1", "c2"], 4).to_pylist()]
    # (0, 0) -> 0, (1, 1) -> 2, (3, 0) -> 5, (2, 3) -> 11, (1, 2) -> 13
    assert rows == ["a20", "a20", "b20", "c30", "g10", "h20", "f200", "d70", "e90", "e90", "e90"]
    rows = [c1[i] + str(c2[i]) for i in hilbert_indices(table, ["c1", "c2"], 1000).to_pylist()]
    # (1, 1) -> 2, (0, 1) -> 3, (2, 2) -> 8, (3, 3) -> 10, (6, 0) -> 20, (7, 1) -> 22, (4, 4) -> 32, (5, 5) -> 34
    assert rows == ["b20", "a20", "a20", "c30", "d70", "g10", "h20", "e90", "e90", "e90", "f200"]


def test_overwrite_with_partition_columns_is_refused_on_a_clustered_table(tmp_path: Path) -> None:
    from deltalog.contrib.spark.options import WriteOptions
    from deltalog.contrib.spark.writes import plan_write

    uri = str(tmp_path / "t")
    log = _create(uri, ["x"])
    options = {"path": uri, "overwriteSchema": "true", "partitionBy": "name"}
    with pytest.raises(ClusteringColumnsError, match="REPLACE_TABLE_WITH_PARTITIONED_TABLE"):
        plan_write(WriteOptions.parse(options, overwrite=True), _schema())
    assert log.update().version == 0
    plan_write(WriteOptions.parse({"path": uri, "overwriteSchema": "true"}, overwrite=True), _schema())


def test_clustering_columns_need_statistics_by_delta_data_skipping_stats_columns(tmp_path: Path) -> None:
    def create(uri: str, cluster: list[str]) -> None:
        log = DeltaLog.for_table(uri)
        txn = log.start_transaction()
        config = {"delta.dataSkippingNumIndexedCols": "1", "delta.dataSkippingStatsColumns": "name,y"}
        txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=_schema(), configuration=config))
        txn.commit(clustering_actions(txn, cluster), CreateTable(cluster_by=cluster))

    with pytest.raises(ClusteringColumnsError, match="no statistics"):
        create(str(tmp_path / "x"), ["x"])  # the first column, but not listed
    create(str(tmp_path / "y"), ["Y"])
    assert clustering_columns(DeltaLog.for_table(str(tmp_path / "y")).update()) == ["y"]


def test_cluster_by_none_on_an_unclustered_table_commits_nothing(tmp_path: Path) -> None:
    """Delta's "alter table cluster by none is a no-op on non-clustered tables": no commit, no
    clustering feature."""
    log = _create(str(tmp_path / "t"), None)
    assert cluster_by(log, []) is None
    snapshot = log.update()
    assert snapshot.version == 0 and "clustering" not in (snapshot.protocol.writer_features or ())


@pytest.mark.parametrize(
    ("properties", "error_class"),
    [
        ({"clusteringColumns": '[["y"]]'}, "DELTA_CANNOT_MODIFY_TABLE_PROPERTY"),
        ({"delta.feature.clustering": "supported"}, "DELTA_ALTER_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED"),
    ],
)
def test_clustering_is_not_set_through_table_properties(
    tmp_path: Path, properties: dict[str, str], error_class: str
) -> None:
    """Delta's "alter table set tbl properties not allowed for clusteringColumns" and
    ``alterTableSetClusteringTableFeatureException``: clustering columns live in the
    ``delta.clustering`` domain (``cluster_by``), and the feature comes with them."""
    from deltalog.txn.commands.alter import set_table_properties
    from deltalog.txn.protocol.errors import DeltaLogError

    log = _create(str(tmp_path / "t"), ["x"])
    with pytest.raises(DeltaLogError, match=error_class):
        set_table_properties(log, properties)
    assert log.update().version == 0


def test_clustering_column_names_are_quoted_as_spark_quotes_them() -> None:
    """Delta's ``ClusteringColumnInfo.logicalName`` (``FieldReference``): a name part that is
    not a plain word is backquoted (``ClusteredTableDDLSuite`` "clustering column names with
    spaces", "commas in the column name")."""
    fields = [
        {"name": name, "type": t, "nullable": True, "metadata": {}}
        for name, t in (("col1 a", "integer"), ("col9.f", "integer"), (",c,", "long"), ("plain_1", "long"))
    ]
    nested = {"type": "struct", "fields": [{"name": "x y", "type": "integer", "nullable": True, "metadata": {}}]}
    fields.append({"name": "s", "type": nested, "nullable": True, "metadata": {}})
    schema = {"type": "struct", "fields": fields}
    paths = [["col1 a"], ["col9.f"], [",c,"], ["plain_1"], ["s", "x y"]]
    domain = clustering_domain(paths)
    names = logical_clustering_columns({domain.domain: domain}, schema)
    assert names == ["`col1 a`", "`col9.f`", "`,c,`", "plain_1", "s.`x y`"]


def test_a_clustering_column_with_a_space_clusters_and_cannot_be_dropped(tmp_path: Path) -> None:
    """A clustering column whose name Delta quotes (```col 1```) is found by OPTIMIZE and by
    the drop-column check by its name parts, not by the quoted text."""
    from deltalog.txn.commands.alter import drop_columns
    from deltalog.txn.protocol.errors import InvalidSchemaChangeError

    fields = [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in ("col 1", "y")]
    schema = json.dumps({"type": "struct", "fields": fields})
    log = DeltaLog.for_table(str(tmp_path / "t"))
    txn = log.start_transaction()
    config = {"delta.columnMapping.mode": "name"}
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=schema, configuration=config))
    txn.commit(clustering_actions(txn, ["`col 1`"]), CreateTable(cluster_by=["`col 1`"]))
    assert clustering_columns(log.update()) == ["`col 1`"]
    with pytest.raises(InvalidSchemaChangeError, match="DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN"):
        drop_columns(log, ["col 1"])
    assert optimize(log).num_files_removed == 0  # finds the column (no file yet)
