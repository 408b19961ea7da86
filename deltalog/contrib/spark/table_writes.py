"""``write_table``: a DataFrame written to a Delta table by Spark's own Parquet writer.

The counterpart of :func:`~deltalog.contrib.spark.native.read_table` for writes.
``df.write.format("deltalog")`` goes through Spark's Python data source API, which hands
every row to Python tasks as Arrow batches (that hand-off alone costs about 1.3x a plain
``df.write.parquet``). ``write_table(df, uri, ...)`` is the same write, with the same
options and the same transaction (:func:`~deltalog.contrib.spark.writes.plan_write`:
opened when the write is planned, schema checked and evolved on that snapshot, overwrite
and ``replaceWhere`` reading what they replace; then
:func:`~deltalog.contrib.spark.writes.commit_write`, judged by the conflict checker), but
its rows are written by Spark itself (:mod:`~deltalog.contrib.spark.native_write`) where
it can, and by Python tasks otherwise (the reason is logged at INFO).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.dataframes import write_dataframe
from deltalog.contrib.spark.idempotent import reset_session_version, session_application_transaction
from deltalog.contrib.spark.options import (
    REPLACE_WHERE_CONSTRAINT_CHECK_CONF,
    REPLACE_WHERE_DATA_COLUMNS_CONF,
    SCHEMA_AUTO_MERGE_CONF,
    STRING_PREFIX_LENGTH_CONF,
    WriteOptions,
    session_string_prefix_length,
)
from deltalog.contrib.spark.partition_overwrite import (
    DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF,
    PARTITION_OVERWRITE_MODE_CONF,
)
from deltalog.contrib.spark.source_reads import TargetReads, target_reads
from deltalog.contrib.spark.tablelog import session_commit_confs
from deltalog.contrib.spark.writes import commit_write, plan_write
from deltalog.txn.protocol.properties import ALLOW_ARBITRARY_PROPERTIES_CONF
from deltalog.txn.protocol.protocol_requirements import session_table_defaults

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["write_table"]

log = logging.getLogger(__name__)

_TIME_ZONE = "spark.sql.session.timeZone"
#: Spark's session conf: a write without the ``maxRecordsPerFile`` option starts a new file after
#: this many rows (0: no limit), in Delta's writes as in any Spark file write
_MAX_RECORDS_PER_FILE = "spark.sql.files.maxRecordsPerFile"
#: Spark's session conf: the Parquet codec of a write without the ``compression`` option
_PARQUET_CODEC = "spark.sql.parquet.compression.codec"


def write_table(df: DataFrame, uri: str, mode: str = "append", **options: Any) -> int | None:
    """Write ``df`` to the Delta table at ``uri`` (created when missing) in one transaction;
    the committed version, or None when nothing was committed (``ignore`` mode on an
    existing table, an idempotent write already done).

    ``mode`` is ``append``, ``overwrite``, ``errorifexists`` or ``ignore``. Options are the
    write options of ``format("deltalog")`` (``partitionBy`` as a list or a comma-separated
    string, ``mergeSchema``, ``overwriteSchema``, ``replaceWhere``,
    ``partitionOverwriteMode``, ``maxRecordsPerFile``, ``txnAppId``/``txnVersion``,
    ``delta.*`` table properties, storage options, ``logStore``) plus ``native``: True
    or False forces Spark's writer or Python tasks; by default Spark's writer is used
    where it can write the rows."""
    raw = _option_strings(options)
    native = raw.pop("native", None)
    spark = df.sparkSession
    from_session = _session_application_transaction(spark, raw)
    raw = {**_session_defaults(spark, raw), **from_session, **raw}
    opts = WriteOptions.parse({**raw, "path": uri, "saveMode": mode}, overwrite=mode.strip().lower() == "overwrite")
    opts = replace(
        opts,
        session_time_zone=spark.conf.get(_TIME_ZONE, None),
        session_string_prefix_length=session_string_prefix_length(spark.conf.get(STRING_PREFIX_LENGTH_CONF, None)),
        session_table_defaults=session_table_defaults(spark.conf.getAll),
    )
    plan = plan_write(opts, df.schema.json(), source=_target_reads(df, opts))
    if plan.skip:
        if from_session:
            reset_session_version(spark)
        log.info("write to %s skipped (%s mode, or an idempotent write already committed)", uri, mode)
        return None
    forced = None if native is None else native.strip().lower() == "true"
    lines = write_dataframe(df, plan.spec, native=forced)
    if from_session:
        reset_session_version(spark)  # as Delta's createSetTransaction, before the commit
    return commit_write(plan, lines)


def _target_reads(df: DataFrame, opts: WriteOptions) -> TargetReads:
    """The scans of the written table in ``df`` (:mod:`~deltalog.contrib.spark.source_reads`)."""
    from deltalog.contrib.spark.tablelog import open_log

    return target_reads(df, open_log(opts.path, opts.storage_options, opts.logstore))


def _session_application_transaction(spark: SparkSession, options: Mapping[str, str]) -> dict[str, str]:
    """``txnAppId``/``txnVersion`` from the session confs when the options give neither
    (Delta's ``getTxnVersionAndAppId``): an idempotent write without options."""
    lowered = {k.lower() for k in options}
    if "txnappid" in lowered or "txnversion" in lowered:
        return {}
    app = session_application_transaction(spark)
    return {} if app is None else {"txnAppId": app.app_id, "txnVersion": str(app.version)}


def _session_defaults(spark: SparkSession, options: Mapping[str, str]) -> dict[str, str]:
    """What the session says where the options are silent, as Delta's ``DeltaOptions`` reads
    it (the data source's ``writer()`` has no session, see docs/spark.md): the session's
    ``spark.sql.sources.partitionOverwriteMode`` and Delta's
    ``...dynamicPartitionOverwrite.enabled`` (:mod:`~deltalog.contrib.spark.partition_overwrite`), its
    ``spark.databricks.delta.allowArbitraryProperties.enabled`` (whether unknown ``delta.*``
    table properties are kept), ``...replaceWhere.dataColumns.enabled`` and
    ``...replaceWhere.constraintCheck.enabled``, ``...schema.autoMerge.enabled`` (``mergeSchema``
    when the write does not say), ``spark.sql.files.maxRecordsPerFile`` and
    ``spark.sql.parquet.compression.codec``, and its commit confs
    (:func:`~deltalog.contrib.spark.tablelog.session_commit_confs`: ``...commitInfo.userMetadata``
    is the commit's ``userMetadata`` when the write gives none, ...)."""
    lowered = {k.lower() for k in options}
    out = {}
    auto_merge = spark.conf.get(SCHEMA_AUTO_MERGE_CONF, None)
    if auto_merge is not None and "mergeschema" not in lowered:
        out["mergeSchema"] = auto_merge
    codec = spark.conf.get(_PARQUET_CODEC, None)
    if codec is not None and "compression" not in lowered:
        out["compression"] = codec  # Spark's Parquet writer default, as Delta's writes
    max_records = spark.conf.get(_MAX_RECORDS_PER_FILE, None)
    if max_records is not None and "maxrecordsperfile" not in lowered:
        out["maxRecordsPerFile"] = max_records  # Spark's FileFormatWriter default, as Delta's writes
    for conf in (
        ALLOW_ARBITRARY_PROPERTIES_CONF,
        REPLACE_WHERE_DATA_COLUMNS_CONF,
        REPLACE_WHERE_CONSTRAINT_CHECK_CONF,
        PARTITION_OVERWRITE_MODE_CONF,
        DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF,
    ):
        value = spark.conf.get(conf, None)
        if value is not None and conf.lower() not in lowered:
            out[conf] = value
    out.update({conf: value for conf, value in session_commit_confs(spark).items() if conf.lower() not in lowered})
    return out


def _option_strings(options: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = str(value).lower()
        elif isinstance(value, (list, tuple)):
            out[key] = ",".join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out
