"""Where a catalog write creates a table: Delta's ``CreateDeltaTableCommand.checkPathEmpty``.

``saveAsTable(name)`` in ``errorifexists`` (the default) or ``ignore`` mode and
``writeTo(name).create()`` of a name Spark's catalog does not have are Delta's CREATE TABLE AS
SELECT: its location must be empty, or hold only a ``_delta_log`` with no commit yet (a write
that failed before its first commit), else ``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``. A
Python data source is only told "append" for such a write, so the check runs in the driver
before Spark registers the name (:mod:`~deltalog.contrib.spark.session_writes` calls
:func:`refuse_non_empty_create_location`); ``append`` and ``overwrite`` modes write the table
there, as Delta's.

Spark hands the data source neither ``writeTo(...).partitionedBy(...)`` nor
``tableProperty(...)``: :func:`creation_options` turns them into the ``partitionBy`` and
``tableProperties`` write options of ``create()``, ``replace()`` and ``createOrReplace()``, so
the new (or re-created) table gets them, as Delta's CREATE / REPLACE TABLE AS SELECT; a
partition transform (``years(ts)``, ``bucket(4, id)``) is refused, as Delta refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deltalog.contrib.spark.errors import DeltaAnalysisError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.txn.delta_log import DeltaLog

__all__ = ["CREATING_SAVE_MODES", "creation_options", "refuse_non_empty_create_location"]

#: the save modes in which ``saveAsTable`` of a name the catalog lacks must find its location empty
CREATING_SAVE_MODES = frozenset({"error", "errorifexists", "default", "ignore"})


def refuse_non_empty_create_location(
    spark: SparkSession, name: str, mode: str | None, options: Mapping[str, object]
) -> None:
    """Raise :class:`DeltaAnalysisError` (``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``) when
    creating the catalog table ``name`` at the write's ``path`` in ``mode`` would write where
    something already is (see the module doc); else nothing."""
    from deltalog.contrib.spark.options import storage_options_of
    from deltalog.contrib.spark.table_builder import in_session_catalog, location_has_files
    from deltalog.contrib.spark.tablelog import open_log

    if (mode or "errorifexists").strip().lower() not in CREATING_SAVE_MODES:
        return
    given = {str(k): str(v) for k, v in options.items() if v is not None}
    path = next((v for k, v in given.items() if k.lower() == "path"), None)
    if path is None or in_session_catalog(spark, name):
        return  # no location: Spark's own error; a catalog table: Spark's TABLE_OR_VIEW_ALREADY_EXISTS or ignore
    delta_log = open_log(path, storage_options_of(given))
    if not location_has_files(delta_log):
        return
    if not delta_log.table_exists() and _log_directory_exists(delta_log):
        return  # Delta: a log without commits is a failed earlier write, retried
    raise DeltaAnalysisError(
        f"DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION: Cannot create table ('{name}'). The associated location "
        f"('{path}') is not empty and also not a Delta table. Write to the table there with mode('append') or "
        "mode('overwrite'), or create the table at an empty location"
    )


def _log_directory_exists(delta_log: DeltaLog) -> bool:
    import pyarrow.fs as pafs

    fs = delta_log.store.filesystem()
    root = delta_log.store.fs_path(delta_log.table_uri).rstrip("/")
    return bool(fs.get_file_info(f"{root}/_delta_log").type != pafs.FileType.NotFound)


def creation_options(
    spark: SparkSession, partitioning: list[str], properties: Mapping[str, str], given: Mapping[str, object]
) -> dict[str, str]:
    """The write options that carry ``writeTo(...).partitionedBy(*partitioning)`` (each a
    column's text, as Spark prints it) and ``tableProperty`` ``properties`` to the data source,
    leaving out what the write's own options (``given``) already say. Raises
    :class:`DeltaAnalysisError` for a partition transform."""
    import json

    from pyspark.errors import ParseException

    out: dict[str, str] = {}
    names: list[str] = []
    for text in partitioning:
        try:
            parts = spark._jsparkSession.sessionState().sqlParser().parseMultipartIdentifier(text)
        except ParseException:
            raise DeltaAnalysisError(
                f"Partitioning by expressions is not supported for Delta tables: {text}; partition by columns"
            ) from None
        names.append(".".join(str(parts.apply(i)) for i in range(parts.length())))
    lowered = {k.lower() for k in given}
    if names and "partitionby" not in lowered:
        out["partitionBy"] = json.dumps(names)
    if properties:
        own = next((str(v) for k, v in given.items() if k.lower() == "tableproperties"), None)
        merged = dict(properties) | (json.loads(own) if own else {})
        out["tableProperties"] = json.dumps(merged)
    return out
