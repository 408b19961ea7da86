"""The Spark session side of the integration: registering the ``deltalog`` data source,
the session a thread reads and writes with, and the interpreter of a local session's
Python workers. Imported by the package's façade and by what needs an active session
(the table API, the native read path), so nothing here imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["activate", "register", "use_driver_python"]


def register(spark: SparkSession) -> None:
    """Register the ``deltalog`` data source in ``spark`` and make ``spark`` the calling
    thread's active session.

    Spark resolves ``format("deltalog")`` in the JVM thread's *active* session, a
    thread-local: the JVM thread behind a new Python thread (PySpark's pinned-thread mode)
    has none, even under ``InheritableThread``, so a write from a thread fails with
    ``DATA_SOURCE_NOT_FOUND`` although the source is registered. Call ``register(spark)``
    (or :func:`activate`) at the start of every thread that reads or writes ``deltalog``.

    Also makes ``df.write.format("deltalog")`` carry the session confs Delta's writes read
    (:mod:`~deltalog.contrib.spark.session_writes`).
    """
    from deltalog.contrib.spark.session_writes import forward_session_confs
    from deltalog.contrib.spark.source import DeltaLogDataSource

    activate(spark)
    forward_session_confs()
    use_driver_python(spark)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(DeltaLogDataSource)


def use_driver_python(spark: SparkSession) -> str | None:
    """Make a local session's Python workers run this interpreter unless the user chose one.

    PySpark starts workers with ``$PYSPARK_PYTHON``, read when the SparkContext is created,
    else ``python3`` from ``PATH``: in a virtualenv that is usually another Python, without
    pyspark, pyarrow or deltalog, and every read or write of the data source fails. A data
    source takes the interpreter of the context when it is registered, so this runs
    before :func:`register` registers it. Only for ``local``/``local-cluster`` masters
    (their workers run on this machine, where this interpreter exists); on a cluster set
    ``spark.pyspark.python`` (or ``PYSPARK_PYTHON``) as Spark documents. An interpreter
    configured by ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` is kept (the latter is
    applied when PySpark did not). Returns the workers' interpreter (``None`` without a
    SparkContext, e.g. Spark Connect)."""
    import os
    import sys

    sc = getattr(spark, "_sc", None)
    if sc is None or not hasattr(sc, "pythonExec"):
        return None
    configured = sc.getConf().get("spark.pyspark.python")
    if os.environ.get("PYSPARK_PYTHON"):
        return str(sc.pythonExec)
    if configured:
        sc.pythonExec = configured
    elif str(sc.master).startswith("local"):
        sc.pythonExec = sys.executable
    return str(sc.pythonExec)


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread, in Python and in the JVM
    (where Spark looks up registered Python data sources). Cheap; safe to call often."""
    from pyspark.sql import SparkSession as _Session

    _Session._activeSession = spark
    jvm = getattr(spark, "_jvm", None)
    jsession = getattr(spark, "_jsparkSession", None)
    if jvm is not None and jsession is not None:  # classic PySpark (Spark Connect has no JVM here)
        jvm.SparkSession.setActiveSession(jsession)
