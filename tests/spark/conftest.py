"""Spark sessions for the deltalog data source tests: ``local[2]`` and ``local-cluster[2,1,1024]``.

One JVM holds one SparkContext, so the two sessions take turns: asking for one stops the
other. The local-cluster tests live in ``test_zz_cluster.py`` so they run last.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark.jvm import TEST_JVM_OPTIONS

_CURRENT: dict[str, Any] = {}


def _session(master: str) -> Any:
    import pyspark
    from pyspark.sql import SparkSession

    from deltalog.contrib.spark import register

    active = _CURRENT.get("session")
    if active is not None and _CURRENT.get("master") == master:
        return active
    if active is not None:
        active.stop()
        _CURRENT.clear()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # local-cluster starts executors with SPARK_HOME/bin scripts: the pip package has them.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pythonpath = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    builder = (
        SparkSession.builder.master(master)
        .appName("deltalog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.executorEnv.PYTHONPATH", pythonpath)
        .config("spark.driver.extraJavaOptions", f"-Duser.timezone=UTC {TEST_JVM_OPTIONS}")
        .config("spark.executor.extraJavaOptions", f"-Duser.timezone=UTC {TEST_JVM_OPTIONS}")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    _CURRENT.update(session=session, master=master)
    return session


@pytest.fixture
def spark() -> Any:
    return _session("local[2]")


@pytest.fixture
def spark_cluster() -> Any:
    return _session("local-cluster[2,1,1024]")


@pytest.fixture(scope="session", autouse=True)
def _stop_sessions() -> Iterator[None]:
    yield
    active = _CURRENT.get("session")
    if active is not None:
        active.stop()


@pytest.fixture
def table_path(tmp_path: Any) -> Iterator[str]:
    """A table directory; after the test, delta-rs must read whatever Delta table the test
    left there, with as many rows as deltalog's file statistics count."""
    path = str(tmp_path / "table")
    yield path
    if os.path.isdir(os.path.join(path, "_delta_log")):
        _delta_rs_agrees(path)


def _delta_rs_agrees(path: str) -> None:
    import deltalake

    from deltalog.txn.delta_log import DeltaLog

    snapshot = DeltaLog.for_table(path).update()
    if snapshot.version < 0:
        return
    counts = [f.num_records() for f in snapshot.files]
    theirs = deltalake.DeltaTable(path)
    assert theirs.version() == snapshot.version
    # delta-rs's pyarrow reader refuses a table with the deletionVectors reader feature
    dv_feature = "deletionVectors" in (snapshot.protocol.reader_features or ())
    if all(c is not None for c in counts) and not dv_feature:
        assert theirs.to_pyarrow_table().num_rows == sum(c for c in counts if c is not None)
