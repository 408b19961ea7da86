"""Delta's time-travel retention check from the Spark side.

The rule is the log's (:mod:`deltalog.txn.log.time_travel_retention`): a version older than
``delta.deletedFileRetentionDuration`` is refused unless it is the latest. Delta turns it off
with the session conf
``spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration``; deltalog
reads it where a session is at hand (``read_table``, ``DeltaTable``) and hands it on as the
read option of the same name, which the log reads from its storage options. The
``format("deltalog")`` data source is planned in Python workers without the session, so
there the option must be given on the read. So with Delta's change feed confs
``spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled`` and
``...unsafeBatchReadOnIncompatibleSchemaChanges.enabled`` (:func:`with_session_change_feed_conf`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deltalog.txn.log.time_travel_retention import ENFORCE_CONF, ENFORCE_KEYS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "ENFORCE_CONF",
    "enforce_time_travel_retention",
    "with_session_change_feed_conf",
    "with_session_retention_conf",
    "without_retention_check",
]


def enforce_time_travel_retention(spark: SparkSession) -> bool:
    """The session's ``spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration``
    (default true, as in Delta)."""
    value = spark.conf.get(ENFORCE_CONF, "true")
    return str(value).strip().lower() != "false"


def _sets_the_check(options: Mapping[str, str]) -> bool:
    keys = {key.lower() for key in ENFORCE_KEYS}
    return any(name.lower() in keys for name in options)


def with_session_retention_conf(spark: SparkSession, options: Mapping[str, str]) -> dict[str, str]:
    """Read ``options`` carrying the session's conf when it turns the check off (an option
    the read gives itself wins)."""
    out = dict(options)
    if not _sets_the_check(out) and not enforce_time_travel_retention(spark):
        out[ENFORCE_CONF] = "false"
    return out


def with_session_change_feed_conf(spark: SparkSession, options: Mapping[str, str]) -> dict[str, str]:
    """Read ``options`` carrying the session's
    ``spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled`` and
    ``...unsafeBatchReadOnIncompatibleSchemaChanges.enabled`` when they are on (an option the
    read gives itself wins)."""
    from deltalog.contrib.spark.options import CDF_OUT_OF_RANGE_CONF, CDF_UNSAFE_SCHEMA_CONF

    out = dict(options)
    for conf in (CDF_OUT_OF_RANGE_CONF, CDF_UNSAFE_SCHEMA_CONF):
        given = any(name.lower() == conf.lower() for name in out)
        if not given and str(spark.conf.get(conf, "false")).strip().lower() == "true":
            out[conf] = "true"
    return out


def without_retention_check(options: Mapping[str, str]) -> dict[str, str]:
    """Read ``options`` for a command's own read of a snapshot it holds (not a user's time
    travel, which Delta never checks): the check is off whatever the options said."""
    keys = {key.lower() for key in ENFORCE_KEYS}
    out = {name: value for name, value in options.items() if name.lower() not in keys}
    out[ENFORCE_CONF] = "false"
    return out
