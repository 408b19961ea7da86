"""PySpark integration: the ``deltalog`` data source and a delta-spark-shaped ``DeltaTable``.

``register(spark)`` makes ``format("deltalog")`` available in a session::

    from deltalog.contrib.spark import register
    register(spark)
    df.write.format("deltalog").mode("append").save("s3://bucket/table")

pyspark is imported only when these functions are used.
"""

from __future__ import annotations

from typing import Any

from deltalog.contrib.spark.session import activate, register, use_driver_python

__all__ = ["DeltaTable", "activate", "read_table", "register", "use_driver_python", "write_table"]


def __getattr__(name: str) -> Any:
    if name == "DeltaTable":
        from deltalog.contrib.spark.tables import DeltaTable

        return DeltaTable
    if name == "read_table":
        from deltalog.contrib.spark.native import read_table

        return read_table
    if name == "write_table":
        from deltalog.contrib.spark.table_writes import write_table

        return write_table
    raise AttributeError(name)
