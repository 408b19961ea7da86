"""A MERGE's source, materialized once for all its passes (Delta's ``materializeSource``).

A MERGE reads its source several times: the key ranges and row count that prune the target
files, pass 1 (which files are touched, and whether a target row is matched twice) and
pass 2 (the rewrite). A source evaluated again per pass costs its work each time, and a
source that is not deterministic (``rand()``, a changing external table) could give the
passes different rows. As Delta, deltalog materializes the source first
(``spark.databricks.delta.merge.materializeSource``: ``auto`` by default, ``all``, ``none``)
with ``localCheckpoint`` (eager, ``...materializeSource.rddStorageLevel``, ``DISK_ONLY`` by
default), which cuts the source's lineage, so no pass can evaluate it again; its blocks are
released when the MERGE ends:

- ``auto``: materialize, except for a MERGE that reads its source once (one with only
  insert clauses whose search condition gives no source key to prune the target files by:
  with one, the key ranges are read before the insert pass) and a source the session already
  caches (``df.cache()``/``persist()``: its passes read that cache already, so caching it
  again would only copy it);
- ``all``: materialize unless the session already caches the source;
- ``none``: never.

When blocks of the materialized source are lost (an executor gone), a pass fails with
Spark's ``CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND``; as Delta's
``runWithMaterializedSourceLostRetries``, the whole MERGE then starts again (a new
transaction, a new materialization, stored with ``...rddStorageLevelFirstRetry``,
``DISK_ONLY_2``, then ``...rddStorageLevelRetry``, ``DISK_ONLY_3``), up to
``...materializeSource.maxAttempts`` (4) attempts, after which it fails with
:class:`~deltalog.contrib.spark.errors.MergeMaterializeSourceFailedError`
(``DELTA_MERGE_MATERIALIZE_SOURCE_FAILED_REPEATEDLY``).

Where Delta differs: it also re-materializes an already cached source (a cached Delta table
is not pinned to a version); ``auto`` skips a deterministic source that reads only Delta
tables, where deltalog cannot tell a table's native scan from a Parquet one, so it
materializes it; it skips every insert-only MERGE (its insert-only MERGE prunes the target by
target-only predicates alone, reading the source once); and it materializes only the source
columns the MERGE uses.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaAnalysisError, MergeMaterializeSourceFailedError

if TYPE_CHECKING:
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MATERIALIZE_SOURCE", "MAX_ATTEMPTS", "MaterializedSource", "materialized_source", "run_with_source_retries"]

log = logging.getLogger(__name__)

MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"
MAX_ATTEMPTS = "spark.databricks.delta.merge.materializeSource.maxAttempts"
#: the storage level of the first attempt's materialization, the second's, and the later ones'
_STORAGE_LEVELS = (
    ("spark.databricks.delta.merge.materializeSource.rddStorageLevel", "DISK_ONLY"),
    ("spark.databricks.delta.merge.materializeSource.rddStorageLevelFirstRetry", "DISK_ONLY_2"),
    ("spark.databricks.delta.merge.materializeSource.rddStorageLevelRetry", "DISK_ONLY_3"),
)
_BLOCK_LOST = "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND"
#: Spark's join strategy hints a DataFrame's ``hint`` takes (the internal ones are left out)
_JOIN_HINTS = frozenset({"broadcast", "merge", "shuffle_hash", "shuffle_replicate_nl"})


@dataclass(frozen=True)
class MaterializedSource:
    """The source the MERGE's passes read: the materialized one, or the source itself."""

    source: DataFrame
    #: Delta's ``materializeSourceTimeMs``: how long the materialization took (0 without one)
    materialize_ms: int


class _SourceLost(Exception):
    """A pass lost blocks of the materialized source; the MERGE starts again."""


def _cached(source: DataFrame) -> bool:
    level = source.storageLevel
    return bool(level.useMemory or level.useDisk or level.useOffHeap)


def _materializes(source: DataFrame, one_pass: bool) -> bool:
    mode = str(source.sparkSession.conf.get(MATERIALIZE_SOURCE, "auto") or "auto").strip().lower()
    if mode not in ("auto", "all", "none"):
        raise DeltaAnalysisError(f"{MATERIALIZE_SOURCE} must be auto, all or none, got {mode!r}")
    if mode == "none" or (mode == "auto" and one_pass):
        return False
    return not _cached(source)


def _conf_int(spark: SparkSession, key: str, default: int) -> int:
    text = str(spark.conf.get(key, str(default)) or default).strip()
    if not text.isdigit() or int(text) < 1:
        raise DeltaAnalysisError(f"{key} must be a positive integer, got {text!r}")
    return int(text)


def _storage_level(spark: SparkSession, attempt: int) -> StorageLevel:
    """The storage level of ``attempt``'s materialization (Delta's, by attempt)."""
    from pyspark import StorageLevel

    key, default = _STORAGE_LEVELS[min(attempt, len(_STORAGE_LEVELS)) - 1]
    name = str(spark.conf.get(key, default) or default).strip().upper()
    level = getattr(StorageLevel, name, None)
    if not isinstance(level, StorageLevel):
        raise DeltaAnalysisError(f"{key} must be a StorageLevel name such as DISK_ONLY, got {name!r}")
    return level


def _with_source_hints(source: DataFrame, materialized: DataFrame) -> DataFrame:
    """``materialized`` with the join strategy hints at the top of ``source``'s plan
    (``broadcast(source)``), which the materialized plan lost (Delta's ``addHintsToPlan``)."""
    jdf: Any = getattr(source, "_jdf", None)
    if jdf is None:
        return materialized
    jvm: Any = source.sparkSession._jvm
    rule = getattr(getattr(jvm.org.apache.spark.sql.catalyst.optimizer, "EliminateResolvedHint$"), "MODULE$")
    hints = rule.extractHintsFromPlan(jdf.queryExecution().analyzed())._2()
    names = []
    for i in range(hints.size()):
        strategy = hints.apply(i).strategy()
        if strategy.isDefined() and str(strategy.get().displayName()).lower() in _JOIN_HINTS:
            names.append(str(strategy.get().displayName()).lower())
    for name in reversed(names):  # the top hint outermost, as in the source
        materialized = materialized.hint(name)
    return materialized


def _checkpoint(source: DataFrame, attempt: int) -> tuple[DataFrame, Any]:
    """``source`` materialized with an eager ``localCheckpoint``, and its RDD (None on Spark
    Connect, where the RDD cannot be reached)."""
    level = _storage_level(source.sparkSession, attempt)
    checkpointed = source.localCheckpoint(eager=True, storageLevel=level)
    jdf: Any = getattr(checkpointed, "_jdf", None)
    rdd = None if jdf is None else jdf.queryExecution().analyzed().rdd()
    if rdd is not None:
        rdd.setName("mergeMaterializedSource")
    return _with_source_hints(source, checkpointed), rdd


def _lost(exc: BaseException, rdd_id: int) -> bool:
    """Whether ``exc`` (or an exception it wraps) is Spark's lost-block error of RDD ``rdd_id``."""
    seen: BaseException | None = exc
    for _ in range(16):
        if seen is None:
            return False
        text = str(seen)
        if _BLOCK_LOST in text and f"rdd_{rdd_id}_" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@contextmanager
def materialized_source(source: DataFrame, one_pass: bool, attempt: int = 1) -> Iterator[MaterializedSource]:
    """The source the passes of ``attempt`` read: materialized when the MERGE materializes it
    (``one_pass``: the MERGE reads its source once), released when the block ends. A pass
    that lost its blocks raises :class:`_SourceLost` out of the block, for
    :func:`run_with_source_retries`."""
    if not _materializes(source, one_pass):
        yield MaterializedSource(source, 0)
        return
    log.info("MERGE materializes its source (%s), attempt %d", MATERIALIZE_SOURCE, attempt)
    started = time.perf_counter()
    checkpointed, rdd = _checkpoint(source, attempt)
    try:
        yield MaterializedSource(checkpointed, int((time.perf_counter() - started) * 1000))
    except Exception as exc:
        if rdd is not None and _lost(exc, int(rdd.id())):
            raise _SourceLost(f"blocks of the materialized MERGE source were lost in attempt {attempt}") from exc
        raise
    finally:
        if rdd is not None:
            rdd.unpersist(False)


def run_with_source_retries(spark: SparkSession, attempt: Callable[[int], None]) -> None:
    """Run ``attempt(1)``, and again with the next number while it loses its materialized
    source, up to ``...materializeSource.maxAttempts`` attempts (Delta's
    ``runWithMaterializedSourceLostRetries``)."""
    max_attempts = _conf_int(spark, MAX_ATTEMPTS, 4)
    for number in range(1, max_attempts + 1):
        try:
            attempt(number)
            return
        except _SourceLost as lost:
            if number >= max_attempts:
                log.error("MERGE lost its materialized source in all %d attempts", number)
                raise MergeMaterializeSourceFailedError(number) from lost.__cause__
            log.warning("%s; the MERGE starts again", lost)
