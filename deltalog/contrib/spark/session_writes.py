"""The session's confs for writes (and reads) through ``format("deltalog")``.

Spark runs a Python data source's ``writer()`` in a Python worker that has no session, so
the confs Delta's writes read from the session (``spark.sql.sources.partitionOverwriteMode``,
``spark.databricks.delta.schema.autoMerge.enabled``, ``...commitInfo.userMetadata``, ...)
would never reach it: an overwrite under ``partitionOverwriteMode=dynamic`` would replace the
whole table where Delta replaces the written partitions. :func:`forward_session_confs`
(called by :func:`~deltalog.contrib.spark.session.register`) wraps PySpark's classic
``DataFrameWriter`` and ``DataStreamWriter`` so that ``save``, ``saveAsTable`` and
``insertInto`` of a write whose format is ``deltalog`` (``start`` and ``toTable`` of such a
stream, which takes the session's values when it starts) first add, as write options, the
session confs the write does not give itself: the same ones
:func:`~deltalog.contrib.spark.table_writes.write_table` reads (:func:`session_defaults`).
A batch write also takes the session's idempotent-write confs
``spark.databricks.delta.write.txnAppId``/``txnVersion`` as Delta's ``WriteIntoDelta`` does
(a stream does not: Delta's sink commits its own ``txn``). The same holds for reads:
``load`` of a ``DataFrameReader`` or ``DataStreamReader`` whose format is ``deltalog`` first
adds the session's time zone and Delta's read confs, as
``read_table`` reads them (:func:`session_read_defaults`).
Writers and readers of other formats are left exactly as they were.

``save`` of such a write also takes what Spark refuses for a Python data source as Delta
takes it: the save modes ``errorifexists`` (Spark's default) and ``ignore``, and the columns of
``partitionBy(...)``, handed on as the ``saveMode`` and ``partitionBy`` options; ``saveAsTable``
refuses ``bucketBy``, as Delta does (Spark would drop the buckets).

``saveAsTable`` (which also records ``mode``) and ``DataFrameWriterV2.create`` (which records
its table, ``using`` and options) of such a write that creates a catalog table first check its
location as Delta's CREATE TABLE AS SELECT does
(:func:`~deltalog.contrib.spark.create_location.refuse_non_empty_create_location`).
``DataFrameWriterV2`` ``create``, ``replace`` and ``createOrReplace`` hand the write their kind
(the ``tableCreationMode`` option: Delta's CREATE / REPLACE TABLE AS SELECT), ``partitionedBy``
and ``tableProperty``, which Spark does not pass to a Python data source.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from deltalog.contrib.spark.options import (
    AUTOMATIC_WIDENING_CONF,
    CHECKPOINT_ROOT_CONF,
    COLLECT_STATS_CONF,
    MAX_RECORDS_PER_FILE_CONF,
    OPTIMIZE_WRITE_CONF,
    REPLACE_WHERE_CONSTRAINT_CHECK_CONF,
    REPLACE_WHERE_DATA_COLUMNS_CONF,
    SCHEMA_AUTO_MERGE_CONF,
    SESSION_TABLE_DEFAULTS_OPTION,
    SESSION_TIME_ZONE_CONF,
    SOURCE_UNBLOCK_CONF_PREFIX,
    STRING_PREFIX_LENGTH_CONF,
)
from deltalog.contrib.spark.parquet_codecs import python_tasks_write
from deltalog.contrib.spark.partition_overwrite import (
    DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF,
    PARTITION_OVERWRITE_MODE_CONF,
)
from deltalog.contrib.spark.resolver import CASE_SENSITIVE_CONF
from deltalog.contrib.spark.store_assignment import STORE_ASSIGNMENT_POLICY
from deltalog.contrib.spark.tablelog import session_commit_confs
from deltalog.txn.protocol.properties import ALLOW_ARBITRARY_PROPERTIES_CONF
from deltalog.txn.protocol.protocol_requirements import SESSION_DEFAULTS_PREFIX

if TYPE_CHECKING:
    from typing import TypeAlias

    from pyspark.sql import Column, SparkSession
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter, DataFrameWriterV2
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    _Handle: TypeAlias = DataFrameWriter | DataStreamWriter | DataFrameReader | DataStreamReader

__all__ = ["forward_session_confs", "session_defaults", "session_read_defaults"]

SOURCE_NAME = "deltalog"
_SOURCE = "_deltalog_format"
_WRAPPED = "_deltalog_forwards_session_confs"
_VALUES = "_deltalog_option_values"
_MODE = "_deltalog_mode"
_TABLE = "_deltalog_table"
_PARTITIONING = "_deltalog_partitioning"
_BUCKETED = "_deltalog_bucketed"
_PROPERTIES = "_deltalog_table_properties"

_F = TypeVar("_F", bound=Callable[..., object])
#: keyword arguments of ``save``/``saveAsTable``/``insertInto``/``start``/``toTable`` that are no
#: write options (their second positional argument is the format, ``insertInto``'s is ``overwrite``)
_NOT_OPTIONS = frozenset({"path", "format", "mode", "partitionBy", "outputMode", "queryName", "overwrite", "schema"})

#: the reads and writes by path, whose format is the session's default without ``format(...)``
_BY_PATH = frozenset({"save", "load", "start"})
#: Spark's session conf: the format of a read or write by path without ``format(...)``
_DEFAULT_SOURCE_CONF = "spark.sql.sources.default"
#: Spark's session conf: the Parquet codec of a write without the ``compression`` option
_PARQUET_CODEC = "spark.sql.parquet.compression.codec"
#: Spark's save modes (as ``SaveMode`` parses them) that it refuses for a Python data source,
#: with the ``saveMode`` option that asks deltalog for them
_SAVE_MODE_OPTIONS = {
    "error": "errorifexists",
    "errorifexists": "errorifexists",
    "default": "errorifexists",
    "ignore": "ignore",
}
#: the save modes Spark hands a Python data source itself; still given as the ``saveMode``
#: option, so a reused writer does not keep the one an earlier ``save`` set
_SPARK_SAVE_MODES = frozenset({"append", "overwrite"})


def session_defaults(spark: SparkSession, options: Mapping[str, str]) -> dict[str, str]:
    """What the session says where the options are silent, as Delta's ``DeltaOptions`` reads
    it (for ``write_table``, and for ``format("deltalog")`` through :func:`forward_session_confs`): the session's
    ``spark.sql.sources.partitionOverwriteMode`` and Delta's
    ``...dynamicPartitionOverwrite.enabled`` (:mod:`~deltalog.contrib.spark.partition_overwrite`), its
    ``spark.databricks.delta.allowArbitraryProperties.enabled`` (whether unknown ``delta.*``
    table properties are kept), ``...replaceWhere.dataColumns.enabled`` and
    ``...replaceWhere.constraintCheck.enabled``, ``...schema.autoMerge.enabled`` (``mergeSchema``
    when the write does not say), ``spark.sql.files.maxRecordsPerFile`` and
    ``spark.sql.parquet.compression.codec``, ``spark.databricks.delta.stats.collect``,
    ``spark.sql.storeAssignmentPolicy`` (how a stream casts to the table's types),
    ``...typeWidening.allowAutomaticWidening`` (what ``mergeSchema`` widens), its commit confs
    (:func:`~deltalog.contrib.spark.tablelog.session_commit_confs`: ``...commitInfo.userMetadata``
    is the commit's ``userMetadata`` when the write gives none, ...), its time zone, Delta's
    ``spark.databricks.io.skipping.stringPrefixLength`` and its table property defaults
    ``spark.databricks.delta.properties.defaults.*``."""
    lowered = {k.lower() for k in options}
    out = {}
    auto_merge = spark.conf.get(SCHEMA_AUTO_MERGE_CONF, None)
    if auto_merge is not None and "mergeschema" not in lowered:
        out["mergeSchema"] = auto_merge
    codec = spark.conf.get(_PARQUET_CODEC, None)
    if codec is not None and "compression" not in lowered:
        out["compression"] = codec  # Spark's Parquet writer default, as Delta's writes
    max_records = spark.conf.get(MAX_RECORDS_PER_FILE_CONF, None)
    if max_records is not None and "maxrecordsperfile" not in lowered:
        out["maxRecordsPerFile"] = max_records  # Spark's FileFormatWriter default, as Delta's writes
    for conf in (
        CASE_SENSITIVE_CONF,
        ALLOW_ARBITRARY_PROPERTIES_CONF,
        REPLACE_WHERE_DATA_COLUMNS_CONF,
        REPLACE_WHERE_CONSTRAINT_CHECK_CONF,
        PARTITION_OVERWRITE_MODE_CONF,
        DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF,
        COLLECT_STATS_CONF,
        OPTIMIZE_WRITE_CONF,
        STORE_ASSIGNMENT_POLICY,
        AUTOMATIC_WIDENING_CONF,
    ):
        value = spark.conf.get(conf, None)
        if value is not None and conf.lower() not in lowered:
            out[conf] = value
    out.update({conf: value for conf, value in session_commit_confs(spark).items() if conf.lower() not in lowered})
    out.update({k: v for k, v in _session_planning_confs(spark).items() if k.lower() not in lowered})
    return out


def _session_planning_confs(spark: SparkSession) -> dict[str, str]:
    """The session confs a write's planning reads (:class:`~deltalog.contrib.spark.options.WriteOptions`):
    its time zone (timestamp literals of ``replaceWhere``), Delta's string prefix length of
    statistics, and its table property defaults ``spark.databricks.delta.properties.defaults.*``
    (for a table the write creates)."""
    import json

    out = {SESSION_TIME_ZONE_CONF: str(spark.conf.get(SESSION_TIME_ZONE_CONF))}
    prefix_length = spark.conf.get(STRING_PREFIX_LENGTH_CONF, None)
    if prefix_length is not None:
        out[STRING_PREFIX_LENGTH_CONF] = prefix_length
    # one JSON option: Spark lower-cases a Python data source's option keys, property names keep their case
    defaults = {k: str(v) for k, v in spark.conf.getAll.items() if k.startswith(SESSION_DEFAULTS_PREFIX)}
    if defaults:
        out[SESSION_TABLE_DEFAULTS_OPTION] = json.dumps(defaults)
    return out


def session_read_defaults(spark: SparkSession, options: Mapping[str, str], stream: bool = False) -> dict[str, str]:
    """What the session says to a ``format("deltalog")`` read where its options are silent, as
    ``read_table`` reads it: the session time zone (timestamps of ``timestampAsOf``,
    ``startingTimestamp``, ``endingTimestamp`` and the path's ``@yyyyMMddHHmmssSSS`` without
    an offset are its local times), Delta's time travel retention check when the session
    turns it off, and the change feed's ``...timestampOutOfRange.enabled`` and
    ``...unsafeBatchReadOnIncompatibleSchemaChanges.enabled`` when on. A ``stream`` also takes
    Delta's SQL confs that unblock a schema change (``...streaming.allowSourceColumn*``, with
    their per-stream ``.ckpt_<hash>`` forms), which Delta's source reads from the session."""
    from deltalog.contrib.spark.time_travel import with_session_change_feed_conf, with_session_retention_conf

    lowered = {k.lower() for k in options}
    out = with_session_change_feed_conf(spark, with_session_retention_conf(spark, options))
    if SESSION_TIME_ZONE_CONF.lower() not in lowered:
        out[SESSION_TIME_ZONE_CONF] = str(spark.conf.get(SESSION_TIME_ZONE_CONF))
    if stream:
        prefix = SOURCE_UNBLOCK_CONF_PREFIX.lower()
        confs = {k: str(v) for k, v in spark.conf.getAll.items() if k.lower().startswith(prefix)}
        out.update({k: v for k, v in confs.items() if k.lower() not in lowered})
    return {k: v for k, v in out.items() if k not in options}


def _recorded(handle: object, attribute: str) -> dict[str, object]:
    """The dictionary a wrapped method records on ``handle`` under ``attribute`` (created empty)."""
    recorded: dict[str, object] | None = getattr(handle, attribute, None)
    if recorded is None:
        recorded = {}
        setattr(handle, attribute, recorded)
    return recorded


def _values(handle: object) -> dict[str, object]:
    """The options given to ``handle`` (keys as given, without those set to None)."""
    return _recorded(handle, _VALUES)


def _is_deltalog(handle: _Handle, fmt: object = None, by_path: bool = False) -> bool:
    """Whether a read or write through ``handle`` is deltalog's: its format is ``fmt`` (given
    to ``save``/``load``), else the one ``format(...)`` recorded, else, for one by path
    (``save``, ``load``, ``start``), the session's ``spark.sql.sources.default``, as Spark
    takes it (for ``saveAsTable``, ``insertInto`` and ``toTable`` an existing catalog table's
    own provider decides, so they need ``format(...)``)."""
    source = fmt if isinstance(fmt, str) else getattr(handle, _SOURCE, None)
    if source is None and by_path:
        source = handle._spark.conf.get(_DEFAULT_SOURCE_CONF)
    return isinstance(source, str) and source.strip().lower() == SOURCE_NAME


def _add_session_confs(handle: _Handle, fmt: str | None, options: dict[str, object], by_path: bool) -> None:
    """Add the session's confs the write (or read) does not give, if it is deltalog's
    (:func:`_is_deltalog`)."""
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamReader

    if not _is_deltalog(handle, fmt, by_path):
        return
    given = dict.fromkeys(set(_values(handle)) | {k for k, v in options.items() if v is not None}, "")
    if isinstance(handle, (DataFrameReader, DataStreamReader)):
        stream = isinstance(handle, DataStreamReader)
        for key, value in session_read_defaults(handle._spark, given, stream).items():
            handle._jreader = handle._jreader.option(key, value)
        return
    defaults = session_defaults(handle._spark, given)
    if isinstance(handle, DataFrameWriter):
        defaults.update(_session_application_transaction(handle._spark, given))
    else:
        defaults.update(_stream_options(handle, given))
    for key, value in defaults.items():
        if key == "compression" and not python_tasks_write(value):
            continue  # these writes are Python tasks: they keep their snappy (docs/spark.md)
        handle._jwrite = handle._jwrite.option(key, value)


def _stream_options(handle: _Handle, given: Mapping[str, object]) -> dict[str, str]:
    """What a stream's sink needs that Spark does not hand a Python data source: the
    session's checkpoint root, where Spark keeps a query without its own location, and the
    columns of ``writeStream.partitionBy(...)`` (Spark drops them), as the ``partitionBy``
    option, as Delta's sink takes them."""
    import json

    lowered = {k.lower() for k in given}
    out: dict[str, str] = {}
    root = handle._spark.conf.get(CHECKPOINT_ROOT_CONF, None)
    if root and "checkpointlocation" not in lowered:
        out[CHECKPOINT_ROOT_CONF] = root
    partitioning: list[str] | None = getattr(handle, _PARTITIONING, None)
    if partitioning and "partitionby" not in lowered:
        out["partitionBy"] = json.dumps(partitioning)
    return out


def _session_application_transaction(spark: SparkSession, options: Mapping[str, object]) -> dict[str, str]:
    """Delta's ``getTxnVersionAndAppId`` for a batch write (not a stream: Delta's sink
    commits its own ``txn``): without ``txnAppId``/``txnVersion`` options, the session's
    pair as those options (raises when the session sets only one of them), its version unset
    when ``...autoReset.enabled`` is true, as Delta does once a write used it."""
    from deltalog.contrib.spark.idempotent import reset_session_version, session_application_transaction

    if {"txnappid", "txnversion"} & {k.lower() for k in options}:
        return {}
    app = session_application_transaction(spark)
    if app is None:
        return {}
    reset_session_version(spark)
    return {"txnAppId": app.app_id, "txnVersion": str(app.version)}


def _recording_format(original: _F) -> _F:
    @functools.wraps(original)
    def format(self: _Handle, source: str) -> object:
        setattr(self, _SOURCE, source)
        return original(self, source)

    return format  # type: ignore[return-value]


def _recording_option(original: _F) -> _F:
    @functools.wraps(original)
    def option(self: _Handle, key: str, value: object) -> object:
        if value is not None:
            _values(self)[key] = value
        return original(self, key, value)

    return option  # type: ignore[return-value]


def _recording_options(original: _F) -> _F:
    @functools.wraps(original)
    def options(self: _Handle, **opts: object) -> object:
        _values(self).update((k, v) for k, v in opts.items() if v is not None)
        return original(self, **opts)

    return options  # type: ignore[return-value]


def _forwarding_save(original: _F, by_path: bool) -> _F:
    @functools.wraps(original)
    def save(self: _Handle, *args: object, **options: object) -> object:
        fmt = options.get("format") if len(args) < 2 else args[1]
        if options.get("partitionBy") is not None:  # PySpark calls partitionBy(...) only inside
            setattr(self, _PARTITIONING, _column_names(options["partitionBy"]))
        kwargs = {k: v for k, v in options.items() if k not in _NOT_OPTIONS}
        _add_session_confs(self, fmt if isinstance(fmt, str) else None, kwargs, by_path)
        return original(self, *args, **options)

    return save  # type: ignore[return-value]


def _recording_mode(original: _F) -> _F:
    @functools.wraps(original)
    def mode(self: DataFrameWriter, saveMode: str | None) -> object:
        if saveMode is not None:  # PySpark keeps the mode it has for None
            setattr(self, _MODE, saveMode)
        return original(self, saveMode)

    return mode  # type: ignore[return-value]


def _delta_save(original: _F) -> _F:
    """``DataFrameWriter.save`` of a ``deltalog`` write with Delta's save modes and
    ``partitionBy(...)``, both of which Spark refuses for a Python data source (it hands one
    only ``append`` and ``overwrite``, and no partitioning): see :func:`_as_delta_write`."""

    @functools.wraps(original)
    def save(
        self: DataFrameWriter,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: object,
    ) -> object:
        if format is not None:
            self.format(format)
        self.mode(mode)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if _is_deltalog(self, by_path=True):
            _as_delta_write(self, [k for k, v in options.items() if v is not None])
        return original(self, path, **options)

    return save  # type: ignore[return-value]


def _as_delta_write(writer: DataFrameWriter, options: list[str]) -> None:
    """Hand ``writer``'s save mode and ``partitionBy(...)`` columns to deltalog as the options
    it reads them from, where the write does not give those options (``options``: the keys
    ``save`` got): ``errorifexists`` (Spark's default, also ``error``/``default``) and
    ``ignore`` as the ``saveMode`` option of an ``append`` (a table at the path is refused /
    left alone, as Delta's ``WriteIntoDelta``), the partition columns as the ``partitionBy``
    option (Spark's own partitioning of the write is cleared: the table's is deltalog's).
    ``append`` and ``overwrite`` are given as the option too: a reused writer keeps the
    options of its earlier saves, and its ``ignore`` must not skip a later overwrite."""
    import json

    from pyspark.sql.classic.column import _to_seq

    given = {k.lower() for k in (*_values(writer), *options)}
    mode = str(getattr(writer, _MODE, None) or "errorifexists").strip().lower()
    save_mode = _SAVE_MODE_OPTIONS.get(mode)
    if "savemode" not in given:
        if save_mode is not None:
            writer._jwrite = writer._jwrite.mode("append").option("saveMode", save_mode)
        elif mode in _SPARK_SAVE_MODES:  # PySpark's writer keeps its options between saves
            writer._jwrite = writer._jwrite.option("saveMode", mode)
    partitioning = getattr(writer, _PARTITIONING, None)
    if partitioning and "partitionby" not in given:
        no_columns = _to_seq(writer._spark._sc, [])
        writer._jwrite = writer._jwrite.partitionBy(no_columns).option("partitionBy", json.dumps(partitioning))


def _recording_bucket_by(original: _F) -> _F:
    @functools.wraps(original)
    def bucketBy(self: DataFrameWriter, *args: object, **kwargs: object) -> object:
        setattr(self, _BUCKETED, True)
        return original(self, *args, **kwargs)

    return bucketBy  # type: ignore[return-value]


def _checking_save_as_table(original: _F) -> _F:
    """``saveAsTable`` creating a catalog table: its location must be empty, as Delta's, and
    its ``partitionBy(...)``, which Spark does not hand on, goes as the ``partitionBy`` option
    (:mod:`~deltalog.contrib.spark.create_location`)."""

    @functools.wraps(original)
    def saveAsTable(self: DataFrameWriter, *args: object, **kwargs: object) -> object:
        from deltalog.contrib.spark.create_location import creation_options, refuse_non_empty_create_location

        named = dict(zip(("name", "format", "mode", "partitionBy"), args, strict=False)) | kwargs
        if _is_deltalog(self, named.get("format")):
            if getattr(self, _BUCKETED, False):  # Spark would drop the buckets; Delta refuses them
                from deltalog.contrib.spark.errors import DeltaAnalysisError

                raise DeltaAnalysisError(
                    "DELTA_OPERATION_NOT_ALLOWED_DETAIL: Operation not allowed: `Bucketing` is not supported for "
                    f"Delta tables: {named['name']}"
                )
            mode = named.get("mode") or getattr(self, _MODE, None)
            options = _values(self) | {k: v for k, v in kwargs.items() if k not in _NOT_OPTIONS}
            refuse_non_empty_create_location(self._spark, str(named["name"]), _text(mode), options)
            given = named.get("partitionBy")
            partitioning = _column_names(given) if given is not None else getattr(self, _PARTITIONING, [])
            for key, value in creation_options(self._spark, partitioning, {}, options).items():
                self._jwrite = self._jwrite.option(key, value)
        return original(self, *args, **kwargs)

    return saveAsTable  # type: ignore[return-value]


def _column_names(cols: object) -> list[str]:
    """``partitionBy``'s columns as PySpark reads them: names, or one list of names."""
    if isinstance(cols, str):
        return [cols]
    return [str(c) for c in cols] if isinstance(cols, (list, tuple)) else []


def _recording_partition_by(original: _F) -> _F:
    @functools.wraps(original)
    def partitionBy(self: DataFrameWriter | DataStreamWriter, *cols: str | list[str]) -> object:
        names = _column_names(cols[0]) if len(cols) == 1 else _column_names(cols)
        setattr(self, _PARTITIONING, names)
        return original(self, *cols)

    return partitionBy  # type: ignore[return-value]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _recording_table(original: _F) -> _F:
    @functools.wraps(original)
    def __init__(self: DataFrameWriterV2, df: object, table: str) -> None:
        setattr(self, _TABLE, table)
        original(self, df, table)

    return __init__  # type: ignore[return-value]


def _table_creating(original: _F, mode: str) -> _F:
    """``writeTo(name).using("deltalog")`` ``.create()`` / ``.replace()`` /
    ``.createOrReplace()`` (``mode``): Delta's CREATE TABLE AS SELECT, whose location must be
    empty (:mod:`~deltalog.contrib.spark.create_location`), and (CREATE OR) REPLACE TABLE AS
    SELECT; the write carries the mode, ``partitionedBy`` and ``tableProperty`` as options."""

    @functools.wraps(original)
    def creating(self: DataFrameWriterV2) -> object:
        from deltalog.contrib.spark.create_location import creation_options, refuse_non_empty_create_location
        from deltalog.contrib.spark.options import TABLE_CREATION_OPTION

        source = getattr(self, _SOURCE, None)
        if isinstance(source, str) and source.strip().lower() == SOURCE_NAME:
            given = _values(self)
            if mode == "create":
                refuse_non_empty_create_location(self._spark, getattr(self, _TABLE), None, given)
            partitioning = getattr(self, _PARTITIONING, [])
            properties = {k: str(v) for k, v in _recorded(self, _PROPERTIES).items()}
            options = creation_options(self._spark, partitioning, properties, given)
            for key, value in {TABLE_CREATION_OPTION: mode, **options}.items():
                self._jwriter.option(key, value)
        return original(self)

    return creating  # type: ignore[return-value]


def _recording_partitioning(original: _F) -> _F:
    @functools.wraps(original)
    def partitionedBy(self: DataFrameWriterV2, col: Column | str, *cols: Column | str) -> object:
        texts = [c if isinstance(c, str) else _column_text(c) for c in (col, *cols)]
        setattr(self, _PARTITIONING, texts)
        return original(self, col, *cols)

    return partitionedBy  # type: ignore[return-value]


def _column_text(column: Column) -> str:
    """A classic ``Column`` as Spark prints it (``id``, ``years(ts)``)."""
    jc: Any = getattr(column, "_jc")  # noqa: B009 -- Column's __getattr__ would make it a Column
    return str(jc.toString())


def _recording_property(original: _F) -> _F:
    @functools.wraps(original)
    def tableProperty(self: DataFrameWriterV2, property: str, value: str) -> object:
        _recorded(self, _PROPERTIES)[property] = value
        return original(self, property, value)

    return tableProperty  # type: ignore[return-value]


def _wrap_v2_writer() -> None:
    """``DataFrameWriterV2`` records its table, provider and options for :func:`_table_creating`."""
    from pyspark.sql.readwriter import DataFrameWriterV2

    if getattr(DataFrameWriterV2, _WRAPPED, False):
        return
    DataFrameWriterV2.__init__ = _recording_table(DataFrameWriterV2.__init__)  # type: ignore[method-assign]
    DataFrameWriterV2.using = _recording_format(DataFrameWriterV2.using)  # type: ignore[method-assign]
    DataFrameWriterV2.option = _recording_option(DataFrameWriterV2.option)  # type: ignore[method-assign]
    DataFrameWriterV2.options = _recording_options(DataFrameWriterV2.options)  # type: ignore[method-assign]
    DataFrameWriterV2.partitionedBy = _recording_partitioning(DataFrameWriterV2.partitionedBy)  # type: ignore[method-assign]
    DataFrameWriterV2.tableProperty = _recording_property(DataFrameWriterV2.tableProperty)  # type: ignore[method-assign]
    for mode in ("create", "replace", "createOrReplace"):
        setattr(DataFrameWriterV2, mode, _table_creating(getattr(DataFrameWriterV2, mode), mode))
    setattr(DataFrameWriterV2, _WRAPPED, True)


def forward_session_confs() -> None:
    """Wrap PySpark's classic ``DataFrameWriter``, ``DataStreamWriter``, ``DataFrameReader``
    and ``DataStreamReader`` once per process (see the module doc). Spark Connect's are not
    wrapped: there, give the confs as options."""
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    for cls, starts in (
        (DataFrameWriter, ("save", "saveAsTable", "insertInto")),
        (DataStreamWriter, ("start", "toTable")),
        (DataFrameReader, ("load",)),
        (DataStreamReader, ("load",)),
    ):
        if getattr(cls, _WRAPPED, False):
            continue
        cls.format = _recording_format(cls.format)  # type: ignore[method-assign]
        cls.option = _recording_option(cls.option)  # type: ignore[method-assign]
        cls.options = _recording_options(cls.options)  # type: ignore[method-assign]
        for name in starts:
            setattr(cls, name, _forwarding_save(getattr(cls, name), by_path=name in _BY_PATH))
        setattr(cls, _WRAPPED, True)
    if not getattr(DataFrameWriter.mode, _WRAPPED, False):
        DataFrameWriter.mode = _recording_mode(DataFrameWriter.mode)  # type: ignore[method-assign]
        DataFrameWriter.partitionBy = _recording_partition_by(DataFrameWriter.partitionBy)  # type: ignore[method-assign]
        DataStreamWriter.partitionBy = _recording_partition_by(DataStreamWriter.partitionBy)  # type: ignore[method-assign]
        DataFrameWriter.saveAsTable = _checking_save_as_table(DataFrameWriter.saveAsTable)  # type: ignore[method-assign]
        DataFrameWriter.bucketBy = _recording_bucket_by(DataFrameWriter.bucketBy)  # type: ignore[method-assign]
        DataFrameWriter.save = _delta_save(DataFrameWriter.save)  # type: ignore[method-assign]
        setattr(DataFrameWriter.mode, _WRAPPED, True)
    _wrap_v2_writer()
