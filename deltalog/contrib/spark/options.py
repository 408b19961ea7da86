"""Reading the options of ``df.write`` / ``spark.read`` for the ``deltalog`` data source.

Spark lower-cases option names, so table properties (``delta.enableChangeDataFeed``) are
restored to Delta's spelling here, and validated as Delta validates a write's ``delta.*``
options (:func:`~deltalog.txn.protocol.properties.validate_table_properties`): an unknown
``delta.*`` key is refused unless the option (or, in ``write_table``, the session conf)
``spark.databricks.delta.allowArbitraryProperties.enabled`` is true; it then keeps the case
Spark gave it (pass ``tableProperties`` as a JSON object to keep any exact spelling).

Storage options are recognised by name (:func:`is_storage_option`): the ``AWS_*``,
``AZURE_*``, ``GOOGLE_*``, ``FSSPEC_*``, ``DELTALOG_*``, ``REDIS_*`` families, the short
aliases the stores accept (``REGION``, ``ENDPOINT_URL``, ...), ``deltalog.*``,
``spark.delta.logStore.*`` / ``delta.logStore.*`` and ``spark.databricks.delta.*``. A write
refuses any other option by name (:class:`UnknownWriteOptionError`), never ignores it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import InvalidWriteOptionError, UnknownWriteOptionError
from deltalog.contrib.spark.option_values import delta_boolean, get_option, illegal_option
from deltalog.contrib.spark.parquet_codecs import DEFAULT_CODEC, parquet_codec
from deltalog.contrib.spark.partition_overwrite import PartitionOverwriteMode
from deltalog.contrib.spark.replace_using import parse_replace_using
from deltalog.contrib.spark.resolver import CASE_INSENSITIVE, CASE_SENSITIVE_CONF, Resolver
from deltalog.contrib.spark.store_assignment import STORE_ASSIGNMENT_POLICIES, STORE_ASSIGNMENT_POLICY
from deltalog.contrib.spark.tablelog import USER_METADATA_CONF

if TYPE_CHECKING:
    from deltalog.txn.protocol.actions import Metadata

__all__ = [
    "AUTOMATIC_WIDENING_CONF",
    "CDF_OUT_OF_RANGE_CONF",
    "CDF_UNSAFE_SCHEMA_CONF",
    "CHECKPOINT_ROOT_CONF",
    "COLLECT_STATS_CONF",
    "OPTIMIZE_WRITE_CONF",
    "SESSION_TABLE_DEFAULTS_OPTION",
    "SESSION_TIME_ZONE_CONF",
    "SOURCE_UNBLOCK_CONF_PREFIX",
    "STRING_PREFIX_LENGTH_CONF",
    "ReadOptions",
    "StreamReadOptions",
    "WriteOptions",
    "is_storage_option",
    "optimizes_write",
    "session_collect_stats",
    "session_string_prefix_length",
    "storage_options_of",
]

_LOG = logging.getLogger(__name__)

#: Spark's session conf: the root under which a streaming query without ``checkpointLocation``
#: keeps its progress, in ``<root>/<queryName>`` (a new ``<root>/<uuid>`` without a name)
CHECKPOINT_ROOT_CONF = "spark.sql.streaming.checkpointLocation"

_WRITE_KEYS = {
    "path",
    "partitionby",
    "replacewhere",
    "targetalias",
    "replaceusing",
    "mergeschema",
    "overwriteschema",
    "usermetadata",
    "txnappid",
    "txnversion",
    "maxrecordsperfile",
    "savemode",
    "tableproperties",
    "logstore",
    "checkpointlocation",
    "queryid",
    "queryname",  # Spark hands a streaming query's name to its sink as this option
    "spark.sql.streaming.checkpointlocation",
    "datachange",
    "scanreport",
    "partitionoverwritemode",
    "compression",
    "spark.sql.sources.partitionoverwritemode",
    "usenullintolerantequalitywithdpo",
    "spark.sql.session.timezone",
    "spark.sql.casesensitive",
    "spark.sql.storeassignmentpolicy",
    "spark.databricks.io.skipping.stringprefixlength",
    "spark.databricks.delta.properties.defaults",
    "tablecreationmode",
    "optimizewrite",
}
#: Storage option families (lower case), as the stores, commit locks and engine settings read them.
_STORAGE_PREFIXES = (
    "aws_",
    "azure_",
    "google_",
    "fsspec_",
    "deltalog_",
    "redis_",
    "deltalog.",
    "spark.delta.logstore.",
    "delta.logstore.",
    "spark.databricks.delta.",
)
#: The short aliases the stores accept besides the prefixed names (delta-rs spellings).
_STORAGE_ALIASES = {
    "access_key",
    "access_key_id",
    "account_key",
    "account_name",
    "allow_http",
    "anonymous",
    "connect_timeout",
    "connection_string",
    "endpoint_url",
    "profile",
    "project_id",
    "region",
    "sas_key",
    "sas_token",
    "secret_access_key",
    "service_account",
    "service_account_key",
    "session_token",
    "skip_signature",
    "storage_emulator_host",
    "timeout",
    "use_emulator",
    "virtual_hosted_style_request",
}
#: Spark's session time zone: ``read_table`` hands it on as a read option of this name.
SESSION_TIME_ZONE_CONF = "spark.sql.session.timeZone"
#: Delta's session conf, a read option of ``format("deltalog")`` (planned without the session)
CDF_OUT_OF_RANGE_CONF = "spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled"
#: Delta's session conf, a read option: read a batch change feed across incompatible schema changes
CDF_UNSAFE_SCHEMA_CONF = "spark.databricks.delta.changeDataFeed.unsafeBatchReadOnIncompatibleSchemaChanges.enabled"
#: Delta's session conf: the characters string statistics keep where the table does not set
#: ``delta.dataSkippingStringPrefixLength`` (read where a write runs with the session)
STRING_PREFIX_LENGTH_CONF = "spark.databricks.io.skipping.stringPrefixLength"
#: A write option (JSON object) carrying the session's ``spark.databricks.delta.properties.defaults.*``
#: confs to a write planned without the session: the table property defaults of a table it creates
SESSION_TABLE_DEFAULTS_OPTION = "spark.databricks.delta.properties.defaults"
#: Delta's ``DELTA_COLLECT_STATS``: false, writes record no statistics.
COLLECT_STATS_CONF = "spark.databricks.delta.stats.collect"
#: Delta's ``DELTA_ALLOW_AUTOMATIC_WIDENING``: the widenings schema evolution (``mergeSchema``,
#: MERGE ``withSchemaEvolution``) applies on a table with type widening (``always``, Delta's
#: default since 4.1, ``same_family_type`` or ``never``; forwarded as an option)
AUTOMATIC_WIDENING_CONF = "spark.databricks.delta.typeWidening.allowAutomaticWidening"
#: Delta's ``DELTA_OPTIMIZE_WRITE_ENABLED``: optimized writes where the write option is silent
#: (over the table's ``delta.autoOptimize.optimizeWrite``)
OPTIMIZE_WRITE_CONF = "spark.databricks.delta.optimizeWrite.enabled"
#: Spark's session conf: a write without the ``maxRecordsPerFile`` option (and Delta's
#: OPTIMIZE) starts a new file after this many rows (0: no limit), as any Spark file write
MAX_RECORDS_PER_FILE_CONF = "spark.sql.files.maxRecordsPerFile"
#: Delta's session conf (default true): ``replaceWhere`` may name data columns; false: only
#: partition columns (``DELTA_NON_PARTITION_COLUMN_REFERENCE``). A write option of
#: ``format("deltalog")``; ``write_table`` reads the session's
REPLACE_WHERE_DATA_COLUMNS_CONF = "spark.databricks.delta.replaceWhere.dataColumns.enabled"
#: Delta's session conf (default true): every written row must satisfy ``replaceWhere``
REPLACE_WHERE_CONSTRAINT_CHECK_CONF = "spark.databricks.delta.replaceWhere.constraintCheck.enabled"
#: Delta's session conf (``DELTA_SCHEMA_AUTO_MIGRATE``): a write without a ``mergeSchema`` option
#: merges schemas when it is true (``DeltaOptions.canMergeSchema``; ``write_table`` reads the
#: session's), and so does a MERGE (schema evolution)
SCHEMA_AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"
#: Delta's SQL confs that unblock a non-additive schema change for a stream with
#: ``schemaTrackingLocation`` (``...allowSourceColumnRenameAndDrop`` and the like, and their
#: per-stream ``....ckpt_<hash>`` forms): reader options, or the session's through ``load``
SOURCE_UNBLOCK_CONF_PREFIX = "spark.databricks.delta.streaming.allowSourceColumn"
#: The write option that makes a write Delta's CREATE TABLE AS SELECT (``create``) or (CREATE
#: OR) REPLACE TABLE AS SELECT (``replace``, ``createOrReplace``): what PySpark's
#: ``writeTo(...).create()`` / ``replace()`` / ``createOrReplace()`` mean (the session's
#: writer wrapper sets it, :mod:`~deltalog.contrib.spark.session_writes`)
TABLE_CREATION_OPTION = "tableCreationMode"
#: Delta's ``TableCreationModes``, by the lower-cased option value
TABLE_CREATION_MODES = {"create": "create", "replace": "replace", "createorreplace": "createOrReplace"}
_READ_KEYS = {
    "versionasof",
    "timestampasof",
    "readchangefeed",
    "readchangedata",
    "startingversion",
    "endingversion",
    "startingtimestamp",
    "endingtimestamp",
    # streaming reads (StreamReadOptions)
    "maxfilespertrigger",
    "maxbytespertrigger",
    "ignoredeletes",
    "ignorechanges",
    "ignorefiledeletion",
    "skipchangecommits",
    "excluderegex",
    "maxsplitbytes",
    "readrowtracking",
    "spark.databricks.delta.changedatafeed.timestampoutofrange.enabled",
    "spark.databricks.delta.changedatafeed.unsafebatchreadonincompatibleschemachanges.enabled",
}


def _flag(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    """A boolean option as Delta's ``DeltaOptionParser.toBoolean`` (and Spark's boolean confs)
    read it: ``true`` or ``false`` in any case, else ``DELTA_ILLEGAL_OPTION``."""
    value = delta_boolean(options, key)
    return default if value is None else value


_get = get_option


def _int(options: Mapping[str, str], key: str) -> int | None:
    value = _get(options, key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidWriteOptionError(f"option {key} must be an integer, got {value!r}") from None


def _application_transaction(options: Mapping[str, str]) -> tuple[str | None, int | None]:
    """The ``txnAppId`` and ``txnVersion`` of an idempotent write, as Delta's
    ``DeltaWriteOptions``: both or neither, the version a non-negative integer."""
    app_id, raw = _get(options, "txnAppId"), _get(options, "txnVersion")
    version = None
    if raw is not None:
        try:
            version = int(raw)
        except ValueError:
            version = -1
        if version < 0:
            raise InvalidWriteOptionError(
                f"DELTA_ILLEGAL_OPTION: invalid value {raw!r} for option txnVersion, must be a non-negative integer"
            )
    if (app_id is None) != (version is None):
        raise InvalidWriteOptionError(
            "DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS.MISSING_DATAFRAME_WRITE_OPTIONS: both txnVersion and txnAppId "
            "must be specified for idempotent DataFrame writes; set the missing one or neither"
        )
    return app_id, version


def is_storage_option(key: str) -> bool:
    """Whether ``key`` names a storage option (store, commit lock, engine setting)."""
    low = key.lower()
    return low.startswith(_STORAGE_PREFIXES) or low in _STORAGE_ALIASES


def _is_table_property(key: str) -> bool:
    low = key.lower()
    return low.startswith("delta.") and not low.startswith("delta.logstore.")


def storage_options_of(options: Mapping[str, str]) -> dict[str, str]:
    """The options that configure the store (everything not a read/write option or property)."""
    out: dict[str, str] = {}
    for k, v in options.items():
        low = k.lower()
        if low in _WRITE_KEYS or low in _READ_KEYS or _is_table_property(k):
            continue
        out[k] = v
    return out


def _store_assignment_policy(options: Mapping[str, str]) -> str:
    """The :data:`STORE_ASSIGNMENT_POLICY` option (``ANSI`` when not given), as Spark takes the conf."""
    raw = _get(options, STORE_ASSIGNMENT_POLICY)
    policy = "ANSI" if raw is None else raw.strip().upper()
    if policy not in STORE_ASSIGNMENT_POLICIES:
        raise illegal_option(STORE_ASSIGNMENT_POLICY, raw, f"must be one of {', '.join(STORE_ASSIGNMENT_POLICIES)}")
    return policy


def automatic_widening(raw: str | None) -> str:
    """The session's :data:`AUTOMATIC_WIDENING_CONF` (``raw``; ``ALWAYS`` when unset), upper-cased
    as Delta takes it; another value is refused."""
    from deltalog.txn.protocol.type_widening import AUTOMATIC_WIDENING_MODES

    mode = "ALWAYS" if raw is None else raw.strip().upper()
    if mode not in AUTOMATIC_WIDENING_MODES:
        raise illegal_option(AUTOMATIC_WIDENING_CONF, raw, f"must be one of {', '.join(AUTOMATIC_WIDENING_MODES)}")
    return mode


def _refuse_unknown_write_options(options: Mapping[str, str]) -> None:
    unknown = sorted(
        k for k in options if not (k.lower() in _WRITE_KEYS or _is_table_property(k) or is_storage_option(k))
    )
    selective = [k for k in unknown if k.lower() == "replaceon"]
    if selective:  # Delta 4.3's selective overwrite by a condition (DeltaInsertReplaceOnOrUsingCommand)
        raise UnknownWriteOptionError(
            f"write option {selective[0]} (Delta's INSERT REPLACE ON overwrite) is not supported by deltalog, and a "
            "plain overwrite would replace the whole table: use replaceUsing with the key columns, a MERGE "
            "(DeltaTable.merge), or replaceWhere with a predicate"
        )
    if unknown:
        raise UnknownWriteOptionError(
            f"unknown write option(s) {', '.join(unknown)}: deltalog does not ignore options it does not know. "
            "Write options are partitionBy, replaceWhere, targetAlias, replaceUsing, partitionOverwriteMode, "
            "useNullIntolerantEqualityWithDPO, "
            "compression, mergeSchema, overwriteSchema, "
            "userMetadata, txnAppId, txnVersion, maxRecordsPerFile, dataChange, tableProperties, logStore, "
            "checkpointLocation, queryId, tableCreationMode; table properties start with delta.; storage options "
            "are AWS_*, AZURE_*, GOOGLE_*, FSSPEC_*, DELTALOG_*, REDIS_*, deltalog.*, spark.delta.logStore.* and the "
            "stores' short aliases (REGION, ENDPOINT_URL, ...)"
        )


def table_path(options: Mapping[str, str]) -> str:
    path = _get(options, "path")
    if not path:
        raise InvalidWriteOptionError(
            "no table path: use .save(uri) / .load(uri) or .option('path', uri) with format 'deltalog'. Spark hands "
            "a Python data source no location of a catalog table: INSERT INTO, insertInto, saveAsTable and writeTo "
            "need the path option too (format('deltalog').option('path', uri).insertInto(name); SQL: INSERT INTO "
            "name WITH ('path' = 'uri') ...); read a catalog table with DeltaTable.forName(spark, name).toDF()"
        )
    return path.rstrip("/") if len(path) > 1 else path


def session_collect_stats(raw: str | None) -> bool:
    """The session's :data:`COLLECT_STATS_CONF` (``raw``; true when unset): whether writes
    record files' statistics (Delta's ``DELTA_COLLECT_STATS``)."""
    return raw is None or str(raw).strip().lower() != "false"


def session_string_prefix_length(raw: str | None) -> int:
    """The session's :data:`STRING_PREFIX_LENGTH_CONF` (``raw``; 32 when unset), as Delta's
    ``getDataSkippingStringPrefixLength`` reads it when the table does not set the property.
    Spark refuses a value that is not an integer when it is set; a negative one keeps no
    character, as Delta's ``substring`` and ``truncateMaxStringAgg`` do with it."""
    if raw is None or str(raw).strip() == "":
        return 32
    try:
        return max(0, int(str(raw).strip()))
    except ValueError:
        raise InvalidWriteOptionError(f"{STRING_PREFIX_LENGTH_CONF} must be an integer, got {raw!r}") from None


@dataclass(frozen=True)
class WriteOptions:
    path: str
    overwrite: bool
    save_mode: str = "append"
    partition_by: tuple[str, ...] | None = None
    #: ``replaceWhere`` with the ``targetAlias`` qualifier stripped from its column references
    #: (Delta's ``stripTargetAliasIfExists``); ``replace_where_text``: as given (history records it)
    replace_where: str | None = None
    replace_where_text: str | None = None
    #: ``replaceUsing`` as given (history records it) and its column names
    #: (:mod:`~deltalog.contrib.spark.replace_using`)
    replace_using_option: str | None = None
    replace_using: tuple[str, ...] | None = None
    merge_schema: bool = False
    overwrite_schema: bool = False
    user_metadata: str | None = None
    txn_app_id: str | None = None
    txn_version: int | None = None
    #: ``maxRecordsPerFile`` (0: no limit; None: not given)
    max_records_per_file: int | None = None
    #: the ``compression`` option: Spark's Parquet codec name (:mod:`~deltalog.contrib.spark.parquet_codecs`)
    compression: str = DEFAULT_CODEC
    table_properties: dict[str, str] = field(default_factory=dict)
    storage_options: dict[str, str] = field(default_factory=dict)
    logstore: str | None = None
    data_change: bool = True
    #: ``partitionOverwriteMode``, the session's mode and Delta's switches of dynamic
    #: partition overwrite, read where the table's partitioning is known (``writes``)
    partition_overwrite: PartitionOverwriteMode = field(default_factory=PartitionOverwriteMode)
    #: :data:`REPLACE_WHERE_DATA_COLUMNS_CONF`: False limits ``replaceWhere`` to partition columns
    replace_where_data_columns: bool = True
    #: :data:`REPLACE_WHERE_CONSTRAINT_CHECK_CONF`: False writes rows outside ``replaceWhere`` too
    replace_where_constraint_check: bool = True
    #: The session's ``spark.sql.session.timeZone`` (an option of that name, which
    #: ``write_table`` and the session's conf wrapper give): timestamp literals of
    #: ``replaceWhere`` are its local times. None: read as UTC.
    session_time_zone: str | None = None
    #: The session's ``spark.sql.caseSensitive`` (an option of that name, which ``write_table``
    #: and the session's conf wrapper give): how ``replaceWhere`` names resolve.
    resolver: Resolver = CASE_INSENSITIVE
    #: The session's ``spark.databricks.io.skipping.stringPrefixLength`` (an option of that
    #: name): what string statistics keep when the table does not set
    #: ``delta.dataSkippingStringPrefixLength`` (32 when not given, Delta's default).
    session_string_prefix_length: int = 32
    #: The session's ``spark.databricks.delta.stats.collect`` (:data:`COLLECT_STATS_CONF`, forwarded
    #: as an option): false writes files without statistics, as Delta's ``TransactionalWrite``.
    session_collect_stats: bool = True
    #: the ``optimizeWrite`` option and the session's :data:`OPTIMIZE_WRITE_CONF` (None: not given);
    #: with the table's ``delta.autoOptimize.optimizeWrite``, :func:`optimizes_write` decides
    optimize_write: bool | None = None
    session_optimize_write: bool | None = None
    #: The session's ``spark.sql.storeAssignmentPolicy`` (``ANSI``, ``LEGACY`` or ``STRICT``;
    #: forwarded as an option): how a stream casts its columns to the table's types
    #: (:mod:`~deltalog.contrib.spark.sink_cast`).
    store_assignment_policy: str = "ANSI"
    #: The session's :data:`AUTOMATIC_WIDENING_CONF` (forwarded as an option): the widenings
    #: ``mergeSchema`` applies (:func:`~deltalog.txn.protocol.type_widening.is_automatic_widening`).
    automatic_widening: str = "ALWAYS"
    #: The session's table property defaults (``spark.databricks.delta.properties.defaults.*``,
    #: :func:`~deltalog.txn.protocol.protocol_requirements.session_table_defaults`), from
    #: :data:`SESSION_TABLE_DEFAULTS_OPTION`: a table the write creates gets them under its own.
    session_table_defaults: dict[str, str] = field(default_factory=dict)
    #: The writer checks the CHECK constraints and invariants outside the tasks' SQL subset
    #: with Spark SQL before writing (``write_table``), so planning does not refuse them.
    spark_constraint_checks: bool = False
    #: :data:`TABLE_CREATION_OPTION`: ``create``, ``replace`` or ``createOrReplace`` (Delta's
    #: CREATE / REPLACE TABLE AS SELECT; the last two overwrite), None for a plain write
    table_creation: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], overwrite: bool) -> WriteOptions:
        _refuse_unknown_write_options(options)
        save_mode = (_get(options, "saveMode") or ("overwrite" if overwrite else "append")).strip().lower()
        save_mode = {"error": "errorifexists", "default": "errorifexists"}.get(save_mode, save_mode)
        if save_mode not in ("append", "overwrite", "errorifexists", "ignore"):
            raise InvalidWriteOptionError(
                f"saveMode must be append, overwrite, errorifexists or ignore, got {save_mode!r}"
            )
        table_creation = _table_creation(options)
        if save_mode == "overwrite" or table_creation in ("replace", "createOrReplace"):
            overwrite = True
        partition_by = _partition_by(options)
        props = _table_properties(options)
        app_id, version = _application_transaction(options)
        replace_where = _replace_where(options)
        resolver = Resolver(_flag(options, CASE_SENSITIVE_CONF))
        max_records = _int(options, "maxRecordsPerFile")
        if max_records is not None and max_records < 0:
            max_records = 0  # Spark's FileFormatWriter: zero or negative, no limit
        return cls(
            path=table_path(options),
            overwrite=overwrite,
            save_mode=save_mode,
            partition_by=partition_by,
            replace_where=_without_target_alias(replace_where, _get(options, "targetAlias"), resolver),
            replace_where_text=replace_where,
            replace_using_option=_get(options, "replaceUsing"),
            replace_using=parse_replace_using(_get(options, "replaceUsing")),
            merge_schema=_flag(options, "mergeSchema"),
            overwrite_schema=_flag(options, "overwriteSchema"),
            user_metadata=_get(options, "userMetadata") or _get(options, USER_METADATA_CONF),
            txn_app_id=app_id,
            txn_version=version,
            max_records_per_file=max_records,
            compression=parquet_codec(_get(options, "compression")),
            table_properties=props,
            storage_options=storage_options_of(options),
            logstore=_get(options, "logStore"),
            data_change=_flag(options, "dataChange", True),
            partition_overwrite=PartitionOverwriteMode.parse(options),
            replace_where_data_columns=_flag(options, REPLACE_WHERE_DATA_COLUMNS_CONF, True),
            replace_where_constraint_check=_flag(options, REPLACE_WHERE_CONSTRAINT_CHECK_CONF, True),
            session_time_zone=_get(options, SESSION_TIME_ZONE_CONF),
            resolver=resolver,
            session_string_prefix_length=session_string_prefix_length(_get(options, STRING_PREFIX_LENGTH_CONF)),
            session_table_defaults=_session_table_defaults(options),
            session_collect_stats=_flag(options, COLLECT_STATS_CONF, True),
            optimize_write=delta_boolean(options, "optimizeWrite"),
            session_optimize_write=delta_boolean(options, OPTIMIZE_WRITE_CONF),
            store_assignment_policy=_store_assignment_policy(options),
            automatic_widening=automatic_widening(_get(options, AUTOMATIC_WIDENING_CONF)),
            table_creation=table_creation,
        )


def _session_table_defaults(options: Mapping[str, str]) -> dict[str, str]:
    """The session's table property defaults the write's :data:`SESSION_TABLE_DEFAULTS_OPTION`
    carries (the session's conf wrapper and ``write_table`` hand them on)."""
    from deltalog.txn.protocol.protocol_requirements import session_table_defaults

    raw = _get(options, SESSION_TABLE_DEFAULTS_OPTION)
    try:
        confs = json.loads(raw) if raw else {}
        return session_table_defaults({str(k): str(v) for k, v in confs.items()})
    except (ValueError, AttributeError):
        raise InvalidWriteOptionError(
            f"{SESSION_TABLE_DEFAULTS_OPTION} must be a JSON object of the session's "
            f"{SESSION_TABLE_DEFAULTS_OPTION}.* confs"
        ) from None


def _table_creation(options: Mapping[str, str]) -> str | None:
    """:data:`TABLE_CREATION_OPTION` as one of Delta's ``TableCreationModes``, refusing what
    Delta's ``CreateDeltaTableCommand`` refuses with it: ``replaceUsing``, and an explicit
    ``overwriteSchema=false`` with a replace. A REPLACE TABLE AS SELECT replaces the whole
    table, so a ``replaceWhere`` with one is refused too (Delta would narrow what it removes)."""
    raw = _get(options, TABLE_CREATION_OPTION)
    if raw is None:
        return None
    mode = TABLE_CREATION_MODES.get(raw.strip().lower())
    if mode is None:
        raise InvalidWriteOptionError(
            f"{TABLE_CREATION_OPTION} must be create, replace or createOrReplace, got {raw!r}"
        )
    if _get(options, "replaceUsing") is not None:
        raise InvalidWriteOptionError(
            "DELTA_DFV2_CREATE_REPLACE_INCOMPATIBLE_REPLACE_ON_OR_USING: DataFrame Writer V2 create()/replace()/"
            "createOrReplace() cannot be used with the `replaceOn` or `replaceUsing` option for Delta tables"
        )
    if mode != "create" and _get(options, "overwriteSchema") is not None and not _flag(options, "overwriteSchema"):
        raise InvalidWriteOptionError(
            "DELTA_ILLEGAL_USAGE: The usage of overwriteSchema is not allowed when replacing a Delta table; drop "
            "overwriteSchema=false (a replace always replaces the schema)"
        )
    if mode != "create" and _get(options, "replaceWhere") is not None:
        raise InvalidWriteOptionError(
            f"replaceWhere cannot be combined with {TABLE_CREATION_OPTION}={mode}, which replaces the whole table: "
            f"drop {TABLE_CREATION_OPTION} to overwrite part of the table"
        )
    return mode


def _replace_where(options: Mapping[str, str]) -> str | None:
    """``replaceWhere``; a blank predicate is refused as Delta's parser refuses it
    (``DELTA_FAILED_RECOGNIZE_PREDICATE``), not read as no predicate. Outside an overwrite
    Delta parses it but replaces nothing: the write appends (see ``writes``)."""
    replace_where = _get(options, "replaceWhere")
    if replace_where is None:
        return None
    if not replace_where.strip():
        raise InvalidWriteOptionError(
            f"DELTA_FAILED_RECOGNIZE_PREDICATE: Cannot recognize the predicate {replace_where!r}: give a "
            "replaceWhere predicate, or drop the option to overwrite the whole table"
        )
    return replace_where


def optimizes_write(opts: WriteOptions, metadata: Metadata) -> bool:
    """Delta's ``TransactionalWrite.shouldOptimizeWrite``: the ``optimizeWrite`` option, else
    the session's ``spark.databricks.delta.optimizeWrite.enabled``, else the table's
    ``delta.autoOptimize.optimizeWrite``, else off."""
    for choice in (opts.optimize_write, opts.session_optimize_write, metadata.properties.optimize_write):
        if choice is not None:
            return choice
    return False


def _without_target_alias(replace_where: str | None, alias: str | None, resolver: Resolver) -> str | None:
    """``replaceWhere`` with the ``targetAlias`` option's qualifier stripped from its column
    references (``t.id`` -> ``id``), as Delta's ``stripTargetAliasIfExists`` (names compared by
    the session's resolver); a reference qualified by another name stays and is then refused as
    no column of the table (``UNRESOLVED_COLUMN``)."""
    from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, strip_qualifier

    if replace_where is None or alias is None or not alias.strip():
        return replace_where
    try:
        return strip_qualifier(replace_where, alias.strip(), resolver)
    except UnsupportedConstraintError:
        return replace_where  # a text the tokenizer cannot read is refused when it is planned


def _partition_by(options: Mapping[str, str]) -> tuple[str, ...] | None:
    """``partitionBy``: comma-separated column names, or a JSON list (None: not given)."""
    text = _get(options, "partitionBy")
    if text is None:
        return None
    if text.strip().startswith("["):
        return tuple(json.loads(text))
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _table_properties(options: Mapping[str, str]) -> dict[str, str]:
    """The table properties a write sets: ``delta.*`` options and the ``tableProperties`` JSON
    object, validated as Delta's ``DeltaDataSource`` validates a write's ``delta.*`` options
    (every write, also one to an existing table)."""
    from deltalog.txn.protocol.properties import ALLOW_ARBITRARY_PROPERTIES_CONF, validate_table_properties

    props: dict[str, str] = {k: v for k, v in options.items() if _is_table_property(k)}
    raw_props = _get(options, "tableProperties")
    if raw_props:
        try:
            props.update({str(k): str(v) for k, v in json.loads(raw_props).items()})
        except (ValueError, AttributeError):
            raise InvalidWriteOptionError("tableProperties must be a JSON object of strings") from None
    return validate_table_properties(props, allow_arbitrary=_flag(options, ALLOW_ARBITRARY_PROPERTIES_CONF))


@dataclass(frozen=True)
class ReadOptions:
    path: str
    version_as_of: int | None = None
    timestamp_as_of: str | None = None
    read_change_feed: bool = False
    starting_version: int | None = None
    ending_version: int | None = None
    starting_timestamp: str | None = None
    ending_timestamp: str | None = None
    scan_report: str | None = None
    storage_options: dict[str, str] = field(default_factory=dict)
    logstore: str | None = None
    #: ``startingVersion=latest`` (streaming: start after the latest version)
    starting_version_latest: bool = False
    #: ``maxSplitBytes``: files larger than this are read by several tasks (None: 128 MiB)
    max_split_bytes: int | None = None
    #: ``readRowTracking``: add ``_metadata`` (``row_id``, ``row_commit_version``)
    read_row_tracking: bool = False
    #: Delta's ``spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled``: a change
    #: feed starting after the latest commit is empty, one ending after it ends at the latest
    cdf_out_of_range: bool = False
    #: Delta's ``...changeDataFeed.unsafeBatchReadOnIncompatibleSchemaChanges.enabled``
    cdf_unsafe_schema_reads: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        cdf = _flag(options, "readChangeFeed") or _flag(options, "readChangeData")
        if cdf and _flag(options, "readRowTracking"):
            raise InvalidWriteOptionError(
                "readRowTracking cannot be combined with readChangeFeed: as in Delta, a change feed read has no "
                "_metadata.row_id / row_commit_version (read the table with readRowTracking instead)"
            )
        latest = (_get(options, "startingVersion") or "").strip().lower() == "latest"
        path, version_as_of, timestamp_as_of = _time_travel(options)
        if cdf and (version_as_of is not None or timestamp_as_of is not None):
            # Delta's DeltaTableV2 (its changeDataFeed.allowTimeTravelOptionsForSchema is not read)
            raise InvalidWriteOptionError(
                "DELTA_UNSUPPORTED_TIME_TRAVEL_VIEWS: a change data feed read cannot time travel "
                "(versionAsOf/timestampAsOf or a path's @ suffix); choose its versions with "
                "startingVersion/endingVersion (or startingTimestamp/endingTimestamp)"
            )
        return cls(
            path=path,
            version_as_of=version_as_of,
            timestamp_as_of=_local_time(options, timestamp_as_of),
            read_change_feed=cdf,
            starting_version=None if latest else _int(options, "startingVersion"),
            starting_version_latest=latest,
            ending_version=_int(options, "endingVersion"),
            starting_timestamp=_local_time(options, _get(options, "startingTimestamp")),
            ending_timestamp=_local_time(options, _get(options, "endingTimestamp")),
            scan_report=_get(options, "scanReport"),
            storage_options=storage_options_of(options),
            logstore=_get(options, "logStore"),
            max_split_bytes=_byte_size(options, "maxSplitBytes"),
            read_row_tracking=_flag(options, "readRowTracking"),
            cdf_out_of_range=_flag(options, CDF_OUT_OF_RANGE_CONF),
            cdf_unsafe_schema_reads=_flag(options, CDF_UNSAFE_SCHEMA_CONF),
        )


def _local_time(options: Mapping[str, str], text: str | None) -> str | None:
    """A timestamp option's text as Spark casts it: without an offset, a local time of the
    session time zone the option ``spark.sql.session.timeZone`` names (``read_table`` and the
    session's conf wrapper give it; without it, UTC), with its offset."""
    from deltalog.contrib.spark.predicates import in_session_time_zone

    time_zone = _get(options, SESSION_TIME_ZONE_CONF)
    return text if text is None or time_zone is None else in_session_time_zone(text, time_zone)


def _time_travel(options: Mapping[str, str]) -> tuple[str, int | None, str | None]:
    """The table's path, ``versionAsOf`` and ``timestampAsOf``: from the options, or from
    Delta's ``@v<version>`` / ``@<yyyyMMddHHmmssSSS>`` suffix of the path
    (:func:`~deltalog.contrib.spark.time_travel_spec.at_syntax`; the time in the zone of the
    option ``spark.sql.session.timeZone``, which ``read_table`` gives from the session); not
    both (``DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS``), and not both options
    (``DELTA_ONEOF_IN_TIMETRAVEL``)."""
    from deltalog.contrib.spark.time_travel_spec import at_syntax

    path = table_path(options)
    version, timestamp = _int(options, "versionAsOf"), _get(options, "timestampAsOf")
    if version is not None and timestamp is not None:
        raise InvalidWriteOptionError(
            "DELTA_ONEOF_IN_TIMETRAVEL: Please either provide 'timestampAsOf' or 'versionAsOf' for time travel, "
            "not both"
        )
    if not path:
        return path, version, timestamp
    found = at_syntax(
        path, storage_options_of(options), _get(options, "logStore"), _get(options, SESSION_TIME_ZONE_CONF)
    )
    if found is None:
        return path, version, timestamp
    if version is not None or timestamp is not None:
        raise InvalidWriteOptionError(
            "DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS: Cannot specify time travel in multiple formats: "
            f"the path {path!r} names a version or time, and versionAsOf/timestampAsOf is given too"
        )
    return found


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}
_BYTE_UNITS.update({"t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50})


def _byte_size(options: Mapping[str, str], key: str) -> int | None:
    """A size like ``10g`` or ``512k`` (binary units, as Spark's ``byteStringAs``)."""
    value = _get(options, key)
    if value is None:
        return None
    text = value.strip().lower()
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(digits) :]
    if not digits.isdigit() or unit not in _BYTE_UNITS or int(digits) <= 0:
        raise illegal_option(key, value, "must be a size configuration such as '10g'")
    return int(digits) * _BYTE_UNITS[unit]


@dataclass(frozen=True)
class StreamReadOptions:
    """``spark.readStream.format("deltalog")``: the read options plus Delta's streaming
    source options (``DeltaOptions``: admission control and how non-append commits are
    handled)."""

    read: ReadOptions
    max_files_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    ignore_deletes: bool = False
    #: deprecated in Delta for ``skipChangeCommits``: re-emits the files of changed commits (also
    #: Delta's older ``ignoreFileDeletion``)
    ignore_changes: bool = False
    skip_change_commits: bool = False
    #: ``excludeRegex``: files whose path this matches (``re.search``) are not read
    exclude_regex: str | None = None
    #: ``failOnDataLoss``: a stream whose next commit was cleaned up from the log fails
    #: (Delta's default); False goes on from the earliest commit left
    fail_on_data_loss: bool = True
    #: ``schemaTrackingLocation`` (alias ``schemaLocation``): the root of the stream's schema log
    schema_tracking_location: str | None = None
    #: ``streamingSourceTrackingId``: tells apart two sources of one table sharing a location
    source_tracking_id: str | None = None
    #: the options that unblock a non-additive schema change: Delta's reader options
    #: ``allowSourceColumn{Rename,Drop,TypeChange}`` and its SQL confs
    #: ``spark.databricks.delta.streaming.allowSourceColumn*`` given as reader options
    schema_change_unblocks: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StreamReadOptions:
        _refuse_unimplemented_source_options(options)
        _check_starting_options(options)
        read = ReadOptions.parse(options)
        if read.version_as_of is not None or read.timestamp_as_of is not None:
            raise InvalidWriteOptionError(
                "DELTA_UNSUPPORTED_TIME_TRAVEL_VIEWS: a stream cannot time travel (versionAsOf/timestampAsOf); "
                "start it at a version with startingVersion or startingTimestamp"
            )
        return cls(
            read=read,
            max_files_per_trigger=_positive_int(options, "maxFilesPerTrigger"),
            max_bytes_per_trigger=_byte_size(options, "maxBytesPerTrigger"),
            ignore_deletes=_flag(options, "ignoreDeletes"),
            ignore_changes=_flag(options, "ignoreChanges") or _ignore_file_deletion(options),
            skip_change_commits=_flag(options, "skipChangeCommits"),
            exclude_regex=_regex(options, "excludeRegex"),
            fail_on_data_loss=_flag(options, "failOnDataLoss", default=True),
            **_schema_tracking(options),
        )


def _check_starting_options(options: Mapping[str, str]) -> None:
    """Delta's ``DeltaReadOptions``: ``startingVersion`` is ``latest`` or a version >= 0, and
    not given with ``startingTimestamp``."""
    version = _get(options, "startingVersion")
    if version is not None and version != "latest" and not (version.isascii() and version.isdigit()):
        raise illegal_option("startingVersion", version, "must be greater than or equal to zero")
    if version is not None and _get(options, "startingTimestamp") is not None:
        raise InvalidWriteOptionError(
            "DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET: Please either provide 'startingVersion' or "
            "'startingTimestamp'"
        )


def _positive_int(options: Mapping[str, str], key: str) -> int | None:
    """Delta's ``maxFilesPerTrigger``: a positive integer, else ``DELTA_ILLEGAL_OPTION``."""
    value = _get(options, key)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:
        raise illegal_option(key, value, "must be a positive integer")
    return int(value)


def _schema_tracking(options: Mapping[str, str]) -> dict[str, Any]:
    location = _get(options, "schemaTrackingLocation") or _get(options, "schemaLocation")
    unblocks = tuple(
        (k, v)
        for k, v in options.items()
        if k.lower().startswith(("allowsourcecolumn", SOURCE_UNBLOCK_CONF_PREFIX.lower()))
    )
    return {
        "schema_tracking_location": location,
        "source_tracking_id": _get(options, "streamingSourceTrackingId"),
        "schema_change_unblocks": unblocks,
    }


#: Delta streaming source options deltalog does not implement, with the value that asks for
#: nothing (None: any value asks for something). Taken as storage options they would be
#: ignored, and the stream would read what Delta would not (or fail where Delta would not).
_UNIMPLEMENTED_SOURCE_OPTIONS = {
    "withEventTimeOrder": "false",
}


def _ignore_file_deletion(options: Mapping[str, str]) -> bool:
    """Delta's deprecated ``ignoreFileDeletion``: lets deletes and changes through as
    ``ignoreChanges`` does (``shouldAllowChanges``/``shouldAllowDeletes``), with a warning."""
    if not _flag(options, "ignoreFileDeletion"):
        return False
    _LOG.warning(
        "The 'ignoreFileDeletion' option is deprecated. Switch to using one of 'ignoreDeletes' or 'ignoreChanges'"
    )
    return True


def _refuse_unimplemented_source_options(options: Mapping[str, str]) -> None:
    for key, harmless in _UNIMPLEMENTED_SOURCE_OPTIONS.items():
        value = _get(options, key)
        if value is not None and (harmless is None or value.strip().lower() != harmless):
            raise InvalidWriteOptionError(
                f"option {key}={value!r} of Delta's streaming source is not implemented by deltalog; "
                "remove it (docs/spark.md lists the source's options)"
            )


def _regex(options: Mapping[str, str], key: str) -> str | None:
    value = _get(options, key)
    if value is None:
        return None
    try:
        re.compile(value)
    except re.error as exc:
        raise InvalidWriteOptionError(
            f"DELTA_REGEX_OPT_SYNTAX_ERROR: Please recheck your syntax for '{key}' ({value!r}: {exc})"
        ) from None
    return value
