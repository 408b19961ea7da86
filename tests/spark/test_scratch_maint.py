import glob, os, json
import deltalake, pyarrow as pa
import pytest
from deltalog.contrib.spark import DeltaTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.commands.vacuum import vacuum
pytestmark = pytest.mark.spark

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

def test_ckpt_vacuum(spark, tmp_path):
    p = str(tmp_path / "t")
    df = spark.createDataFrame([(i, i % 2) for i in range(10)], "id long, k int").coalesce(1)
    df.write.format("deltalog").option("delta.enableDeletionVectors", "true").option("delta.enableChangeDataFeed", "true").mode("append").save(p)
    t = DeltaTable.forPath(spark, p)
    t.delete("id = 1"); t.delete("id = 2"); t.update("id = 3", {"id": "300"})
    t.optimize().executeCompaction()
    log = DeltaLog.for_table(p)
    log.checkpoint()
    os.makedirs(os.path.join(p, "_hidden")); open(os.path.join(p, "_hidden", "x.parquet"), "w").write("x")
    os.makedirs(os.path.join(p, ".dot")); open(os.path.join(p, ".dot", "y"), "w").write("y")
    os.makedirs(os.path.join(p, "emptydir"))
    open(os.path.join(p, "orphan.parquet"), "w").write("o")
    age(p)
    print(sorted(os.path.relpath(x, p) for x in glob.glob(p + "/**", recursive=True) if os.path.isfile(x)))
    dry = vacuum(log, dry_run=True)
    print("dry default", dry.files)
    real = vacuum(log)
    print("real default", real.files, real.num_dirs)
    for v in range(log.update().version + 1):
        try:
            a = dl_rows(spark, p, v); b = rs_rows(p, v)
            print(v, a == b, len(a))
        except Exception as e:
            print(v, "ERR", type(e).__name__, str(e)[:200])
    print(sorted(os.path.relpath(x, p) for x in glob.glob(p + "/**", recursive=True) if os.path.isfile(x)))
    dry = vacuum(log, 0, dry_run=True, enforce_retention=False)
    real = vacuum(log, 0, enforce_retention=False)
    print("dry0", dry.files); print("real0", real.files, real.num_dirs)
    print(sorted(os.path.relpath(x, p) for x in glob.glob(p + "/**", recursive=True)))
    print(dl_rows(spark, p) == rs_rows(p))
    print(spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 4).option("endingVersion", 5).load(p).collect())
