"""PySpark integration: the ``deltalog`` data source and a delta-spark-shaped ``DeltaTable``.

``register(spark)`` makes ``format("deltalog")`` available in a session::

    from deltalog.contrib.spark import register
    register(spark)
    df.write.format("deltalog").mode("append").save("s3://bucket/table")

pyspark is imported only when these functions are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DeltaTable", "activate", "read_table", "register"]


def register(spark: SparkSession) -> None:
    """Register the ``deltalog`` data source in ``spark`` and make ``spark`` the calling
    thread's active session.

    Spark resolves ``format("deltalog")`` in the JVM thread's *active* session, a
    thread-local: the JVM thread behind a new Python thread (PySpark's pinned-thread mode)
    has none, even under ``InheritableThread``, so a write from a thread fails with
    ``DATA_SOURCE_NOT_FOUND`` although the source is registered. Call ``register(spark)``
    (or :func:`activate`) at the start of every thread that reads or writes ``deltalog``.
    """
    from deltalog.contrib.spark.source import DeltaLogDataSource

    activate(spark)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(DeltaLogDataSource)


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread, in Python and in the JVM
    (where Spark looks up registered Python data sources). Cheap; safe to call often."""
    from pyspark.sql import SparkSession as _Session

    _Session._activeSession = spark
    jvm = getattr(spark, "_jvm", None)
    jsession = getattr(spark, "_jsparkSession", None)
    if jvm is not None and jsession is not None:  # classic PySpark (Spark Connect has no JVM here)
        jvm.SparkSession.setActiveSession(jsession)


def __getattr__(name: str) -> Any:
    if name == "DeltaTable":
        from deltalog.contrib.spark.tables import DeltaTable

        return DeltaTable
    if name == "read_table":
        from deltalog.contrib.spark.native import read_table

        return read_table
    raise AttributeError(name)
