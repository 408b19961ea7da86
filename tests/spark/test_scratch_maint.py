import glob, os, json
import deltalake, pyarrow as pa
import pytest
from deltalog.contrib.spark import DeltaTable
from deltalog.txn.delta_log import DeltaLog
pytestmark = pytest.mark.spark
RC = "spark.databricks.delta.retentionDurationCheck.enabled"

def rs_rows(path, version=None):
    t = deltalake.DeltaTable(path, version=version)
    r = deltalake.QueryBuilder().register("t", t).execute("select * from t").read_all()
    return sorted(tuple(sorted(d.items())) for d in pa.table(r).to_pylist())

def dl_rows(spark, path, version=None):
    rd = spark.read.format("deltalog")
    if version is not None: rd = rd.option("versionAsOf", version)
    return sorted(tuple(sorted(r.asDict().items())) for r in rd.load(path).collect())

def age(path, seconds=30*24*3600):
    for n in glob.glob(os.path.join(path, "**"), recursive=True):
        if os.path.isfile(n) and "_delta_log" not in n:
            st = os.stat(n); os.utime(n, (st.st_atime - seconds, st.st_mtime - seconds))

def test_cm_dv(spark, tmp_path):
    p = str(tmp_path / "t")
    df = spark.createDataFrame([(i, f"s{i}", i % 2) for i in range(10)], "id long, s string, k int").repartition(3)
    df.write.format("deltalog").option("delta.enableDeletionVectors", "true").option("delta.columnMapping.mode", "name").option("delta.enableChangeDataFeed", "true").mode("append").save(p)
    t = DeltaTable.forPath(spark, p)
    t.delete("id = 3")  # v1
    t.renameColumn("s", "s2")  # v2
    spark.createDataFrame([(20, "x", 0)], "id long, s2 string, k int").write.format("deltalog").mode("append").save(p)  # v3
    t.dropColumn("s2")  # v4
    res = t.optimize().executeCompaction()  # v5
    print(res.collect())
    t.optimize().executeZOrderBy("id")  # v6
    for v in range(7):
        a, b = dl_rows(spark, p, v), rs_rows(p, v)
        print(v, a == b, len(a), len(b))
        if a != b: print(a, b)
    print(t.history().select("version", "operation", "operationParameters", "operationMetrics").collect())
    cdf = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 5).load(p)
    print("cdf 5..", cdf.collect())
    print(t.detail().collect())
    r = t.restoreToVersion(1)
    print("restore", r.collect())
    print(dl_rows(spark, p) == rs_rows(p), dl_rows(spark, p))
    print(spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 7).load(p).collect())

def _test_clone_vacuum(spark, tmp_path):
    p = str(tmp_path / "src"); c = str(tmp_path / "clone"); d = str(tmp_path / "deep")
    df = spark.createDataFrame([(i, i % 2) for i in range(10)], "id long, k int").repartition(2)
    df.write.format("deltalog").option("delta.enableDeletionVectors", "true").option("delta.enableChangeDataFeed", "true").mode("append").save(p)
    t = DeltaTable.forPath(spark, p)
    t.delete("id = 1")
    t.update("id = 2", {"id": "200"})
    t.clone(c, isShallow=True)
    t.clone(d, isShallow=False)
    ct = DeltaTable.forPath(spark, c)
    ct.delete("id = 4")
    spark.createDataFrame([(99, 0)], "id long, k int").write.format("deltalog").mode("append").save(c)
    age(p); age(c); age(d)
    spark.conf.set(RC, "false")
    try:
        print("vac clone dry", ct.vacuum(0).collect() if False else None)
        from deltalog.txn.commands.vacuum import vacuum
        dry = vacuum(DeltaLog.for_table(c), 0, dry_run=True, enforce_retention=False)
        print("clone dry", dry.files)
        print("clone real", ct.vacuum(0).collect())
        print("src dry", vacuum(DeltaLog.for_table(p), 0, dry_run=True, enforce_retention=False).files)
        print("src real", t.vacuum(0).collect())
        print("deep", DeltaTable.forPath(spark, d).vacuum(0).collect())
    finally:
        spark.conf.unset(RC)
    for x in (p, c, d):
        print(x, dl_rows(spark, x) == rs_rows(x), dl_rows(spark, x))
    print(DeltaTable.forPath(spark, c).history().collect()[:3])
    print(DeltaTable.forPath(spark, c).detail().collect())
