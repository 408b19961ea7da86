"""One Spark application of the two-applications test (``test_zz_cluster_cloud.py``).

Run as ``python -m tests.spark.cloud_app ROLE BARRIER_DIR`` with a JSON list of tables
(``{"name", "uri", "options"}``) on stdin: its own ``local[1]`` SparkSession appends two
batches of five rows to each table through ``format("deltalog")``, in lock step with the
other application (role ``a`` or ``b``) through files in ``BARRIER_DIR``:

* round 0, interleaved: a's write plans, its task starts and waits; b writes and commits;
  then a's task goes on and a commits. So a's write spans a commit of b.
* round 1, raced: both wait for each other, then write at the same time.

Credentials arrive only in the table options (stdin), never in the environment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from tests.spark.jvm import TEST_JVM_OPTIONS

ROUNDS = 2
ROWS = 5
INTERLEAVED_ROUNDS = 1
SCHEMA = "id long, app string"
BARRIER_TIMEOUT = 420.0  # JVM start-ups on a loaded machine; a failure ends the wait at once


def _touch(path: str) -> None:
    with open(path, "w", encoding="utf-8"):
        pass


def wait_for(path: str) -> None:
    """Block until ``path`` exists (a barrier another process sets); give up when an
    application failed (it leaves ``failed`` next to the table directories)."""
    failed = os.path.join(os.path.dirname(os.path.dirname(path)), "failed")
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while not os.path.exists(path):
        if os.path.exists(failed):
            raise RuntimeError(f"an application failed before {os.path.basename(path)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the other application never reached {os.path.basename(path)}")
        time.sleep(0.02)


def _held_until(started: str, release: str) -> Any:
    """A ``mapInArrow`` function: say the task started, wait for ``release``, pass the rows."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        _touch(started)
        wait_for(release)
        yield from batches

    return run


def start_spark() -> Any:
    import pyspark
    from pyspark.sql import SparkSession

    from deltalog.contrib.spark import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("deltalog-cloud-app")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "512m")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def run(role: str, barriers: str, tables: list[dict[str, Any]]) -> None:
    spark = start_spark()
    other = "b" if role == "a" else "a"
    offset = 0 if role == "a" else 1000
    for table in tables:
        mark = os.path.join(barriers, table["name"])
        os.makedirs(mark, exist_ok=True)
        for k in range(ROUNDS):
            rows = [(offset + k * ROWS + i, role) for i in range(ROWS)]
            df = spark.createDataFrame(rows, SCHEMA).coalesce(1)
            if k < INTERLEAVED_ROUNDS and role == "a":
                df = df.mapInArrow(_held_until(f"{mark}/a-started-{k}", f"{mark}/b-done-{k}"), SCHEMA)
            elif k < INTERLEAVED_ROUNDS:
                wait_for(f"{mark}/a-started-{k}")
            else:
                _touch(f"{mark}/{role}-ready-{k}")
                wait_for(f"{mark}/{other}-ready-{k}")
            writer = df.write.format("deltalog").mode("append").options(**table["options"])
            writer.option("userMetadata", f"{role}{k}").save(table["uri"])
            _touch(f"{mark}/{role}-done-{k}")
    spark.stop()


def main() -> None:
    role, barriers = sys.argv[1:3]
    try:
        run(role, barriers, json.load(sys.stdin))
    except BaseException:
        _touch(os.path.join(barriers, "failed"))  # releases the other application
        raise
    print("done")


if __name__ == "__main__":
    main()
