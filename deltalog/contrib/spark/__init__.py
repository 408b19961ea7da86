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

__all__ = ["DeltaTable", "register"]


def register(spark: SparkSession) -> None:
    """Register the ``deltalog`` data source in ``spark`` (and enable filter pushdown)."""
    from deltalog.contrib.spark.source import DeltaLogDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(DeltaLogDataSource)


def __getattr__(name: str) -> Any:
    if name == "DeltaTable":
        from deltalog.contrib.spark.tables import DeltaTable

        return DeltaTable
    raise AttributeError(name)
