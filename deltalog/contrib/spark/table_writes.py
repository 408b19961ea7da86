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
from deltalog.contrib.spark.options import WriteOptions
from deltalog.contrib.spark.session_writes import session_defaults
from deltalog.contrib.spark.source_reads import TargetReads, target_reads
from deltalog.contrib.spark.writes import WritePlan, commit_write, plan_write

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["write_table"]

log = logging.getLogger(__name__)


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
    mode = _save_mode(mode, raw)
    spark = df.sparkSession
    from_session = _session_application_transaction(spark, raw)
    raw = {**session_defaults(spark, raw), **from_session, **raw}
    opts = WriteOptions.parse({**raw, "path": uri, "saveMode": mode}, overwrite=mode.strip().lower() == "overwrite")
    opts = replace(opts, spark_constraint_checks=True)  # by _spark_checked
    plan = plan_write(opts, df.schema.json(), source=_target_reads(df, opts))
    if plan.skip:
        if from_session:
            reset_session_version(spark)
        log.info("write to %s skipped (%s mode, or an idempotent write already committed)", uri, mode)
        return None
    forced = None if native is None else native.strip().lower() == "true"
    plan = _spark_checked(df, plan, forced)
    lines = write_dataframe(df, plan.spec, native=forced)
    if from_session:
        reset_session_version(spark)  # as Delta's createSetTransaction, before the commit
    return commit_write(plan, lines)


def _spark_checked(df: DataFrame, plan: WritePlan, native: bool | None) -> WritePlan:
    """``plan`` with the table's CHECK constraints and invariants the Python tasks cannot
    evaluate (outside their SQL subset, e.g. ``variant_get``) checked with Spark SQL, as Delta
    checks them in its write: by Spark's writer on the rows it writes when the write is native
    (one pass, as Delta's ``DeltaInvariantCheckerExec``), else over ``df`` before the Python
    tasks write it (one more Spark job, as the table API's DML)."""
    from pyspark.errors import AnalysisException

    from deltalog.contrib.spark.constraints import UncheckableConstraintsError, check_dataframe
    from deltalog.contrib.spark.native_write import native_write_blocker
    from deltalog.txn.protocol.constraints import table_constraints

    metadata = plan.new_metadata or plan.read_metadata
    assert metadata is not None  # a table, or the metadata that creates one
    spark_only = tuple(c for c in table_constraints(metadata) if c not in plan.spec.constraints)
    if not spark_only:
        return plan
    if native is not False and native_write_blocker(df.sparkSession, plan.spec, df.columns) is None:
        return replace(plan, spec=replace(plan.spec, constraints=(*plan.spec.constraints, *spark_only)))
    try:
        check_dataframe(df, metadata)
    except AnalysisException as exc:  # it reads a column the written rows lack (one the tasks fill)
        raise UncheckableConstraintsError(
            f"the constraints of the table at {plan.spec.table_uri} cannot be checked on the written rows "
            f"({exc.getMessage()}); nothing was written. Give every column they read in the data."
        ) from None
    return replace(plan, spark_checked=spark_only)


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


def _save_mode(mode: str, options: dict[str, str]) -> str:
    """The write's save mode: ``mode``, or where it is the default ``append``, the ``saveMode``
    option ``format("deltalog")`` takes (removed from ``options``); both naming other modes are
    refused, never one of them dropped (an ``ignore`` taken as ``append`` would write the rows twice)."""
    from deltalog.contrib.spark.errors import InvalidWriteOptionError

    given = [options.pop(k) for k in [k for k in options if k.lower() == "savemode"]]
    if not given:
        return mode
    option = given[-1]
    if mode.strip().lower() not in ("append", option.strip().lower()):
        raise InvalidWriteOptionError(
            f"mode {mode!r} and the saveMode option {option!r} name different save modes: give one of them"
        )
    return option


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
