"""A MERGE's source, materialized once for all its passes (Delta's ``materializeSource``).

A MERGE reads its source several times: the key ranges and row count that prune the target
files, pass 1 (which files are touched, and whether a target row is matched twice) and
pass 2 (the rewrite). A source evaluated again per pass costs its work each time, and a
source that is not deterministic (``rand()``, a changing external table) could give the
passes different rows. Delta materializes the source first
(``spark.databricks.delta.merge.materializeSource``: ``auto`` by default, ``all``, ``none``);
deltalog does it with Spark's cache (``MEMORY_AND_DISK``, filled by the first pass that reads
the source, released when the MERGE ends):

- ``auto``: materialize, except for a MERGE with only insert clauses (one pass) and a
  source the session already caches (``df.cache()``/``persist()``: its passes read that
  cache already, so caching it again would only copy it);
- ``all``: materialize unless the session already caches the source;
- ``none``: never.

Where Delta differs: it materializes with ``localCheckpoint``; it also re-materializes an
already cached source (a cached Delta table is not pinned to a version); and ``auto`` skips
a deterministic source that reads only Delta tables, where deltalog cannot tell a table's
native scan from a Parquet one, so it materializes it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from deltalog.contrib.spark.errors import DeltaAnalysisError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["MATERIALIZE_SOURCE", "materialized_source"]

log = logging.getLogger(__name__)

MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"


def _cached(source: DataFrame) -> bool:
    level = source.storageLevel
    return bool(level.useMemory or level.useDisk or level.useOffHeap)


def _materializes(source: DataFrame, insert_only: bool) -> bool:
    mode = str(source.sparkSession.conf.get(MATERIALIZE_SOURCE, "auto") or "auto").strip().lower()
    if mode not in ("auto", "all", "none"):
        raise DeltaAnalysisError(f"{MATERIALIZE_SOURCE} must be auto, all or none, got {mode!r}")
    if mode == "none" or (mode == "auto" and insert_only):
        return False
    return not _cached(source)


@contextmanager
def materialized_source(source: DataFrame, insert_only: bool) -> Iterator[bool]:
    """``source`` cached for the duration of the block when the MERGE materializes it; yields
    whether it does (the first read of ``source`` in the block then fills the cache)."""
    from pyspark import StorageLevel

    if not _materializes(source, insert_only):
        yield False
        return
    log.info("MERGE materializes its source (%s)", MATERIALIZE_SOURCE)
    source.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        yield True
    finally:
        source.unpersist()
