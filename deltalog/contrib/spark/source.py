"""The ``deltalog`` PySpark data source: batch writes, reads, change feed, streaming sink.

Register it with :func:`deltalog.contrib.spark.register`, then::

    df.write.format("deltalog").mode("append").option("partitionBy", "day").save(uri)
    spark.read.format("deltalog").option("versionAsOf", 3).load(uri)
    stream.writeStream.format("deltalog").option("checkpointLocation", ck).start(uri)

Spark runs ``schema``/``reader``/``writer`` and the driver-side ``commit`` in Python worker
processes, and ``write``/``read`` in executors: everything here is rebuilt from options and
picklable plans, never from state of the user's process.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from deltalog.contrib.spark.files import write_batches
from deltalog.contrib.spark.input_partitions import TARGET_SPLIT_BYTES, FilesPartition, files_partitions
from deltalog.contrib.spark.logical_schema import arrow_schema, logical_struct
from deltalog.contrib.spark.options import CHECKPOINT_ROOT_CONF, ReadOptions, WriteOptions
from deltalog.contrib.spark.read_compatibility import refuse_schema_changes_since_analysis
from deltalog.contrib.spark.reads import (
    ROW_TRACKING_COLUMN,
    FileToRead,
    ReadSpec,
    read_files,
    row_tracking_columns,
    row_tracking_struct,
)
from deltalog.contrib.spark.scan import Term, plan_files
from deltalog.contrib.spark.stream_identity import generates_identity_values, with_current_high_water_marks
from deltalog.contrib.spark.tablelog import open_log
from deltalog.contrib.spark.writes import StreamingInfo, WritePlan, abort_write, commit_write, plan_write
from deltalog.txn.protocol.generated_columns import partition_expressions
from deltalog.txn.protocol.type_widening import fields_widened_from_float

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import Metadata

__all__ = ["DeltaLogDataSource"]

log = logging.getLogger(__name__)

CDF_COLUMNS = (
    ("_change_type", "string"),
    ("_commit_version", "long"),
    ("_commit_timestamp", "timestamp"),
)


@dataclass
class DeltaCommitMessage(WriterCommitMessage):
    """What a write task hands to the driver: the action lines of the files it wrote, and for
    a micro-batch the plan they were written with (see :meth:`DeltaStreamWriter.commit`) and
    the table version whose identity high-water marks they generated values past, if any
    (:mod:`~deltalog.contrib.spark.stream_identity`)."""

    actions: list[str]
    plan: WritePlan | None = None
    read_version: int | None = None


def _task_id() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _lines(messages: Sequence[WriterCommitMessage | None]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if isinstance(m, DeltaCommitMessage):
            out.extend(m.actions)
    return out


# -- writes -------------------------------------------------------------------------------


class DeltaWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.plan.skip:
            for _ in iterator:
                pass
            return DeltaCommitMessage([])
        return DeltaCommitMessage(write_batches(self.plan.spec, iterator, _task_id()))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        commit_write(self.plan, _lines(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        deleted = abort_write(self.plan, _lines(messages))
        log.warning("write to %s aborted; deleted %d written files", self.plan.options.path, deleted)


def _query_app_id(raw: Any) -> str:
    """The streaming query's application id: the queryId option, else the query id Spark
    keeps in ``<checkpointLocation>/metadata``, else a stable id from the location. Without
    ``checkpointLocation``, Spark's session root (forwarded by the driver) gives the location as
    Spark resolves it: ``<root>/<queryName>``; for a query without a name Spark makes a new
    ``<root>/<uuid>`` each run, a new query each time, so its id is a new one too."""
    explicit = raw.get("queryId")
    if explicit:
        return str(explicit)
    location = raw.get("checkpointLocation")
    root = raw.get(CHECKPOINT_ROOT_CONF)
    if not location and root:
        name = raw.get("queryName")
        if not name:
            return str(uuid.uuid4())
        location = str(root).rstrip("/") + "/" + str(name)
    if location:
        meta = os.path.join(location.removeprefix("file:"), "metadata")
        try:
            with open(meta, encoding="utf-8") as f:
                first = f.readline()
            qid = json.loads(first).get("id")
            if qid:
                return str(qid)
        except (OSError, ValueError):
            pass
        return str(uuid.uuid5(uuid.NAMESPACE_URL, location))
    raise ValueError(
        "a streaming write to deltalog needs option('checkpointLocation', ...) or option('queryId', ...) "
        "so replayed batches can be recognised"
    )


class DeltaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, plan: WritePlan, app_id: str, complete: bool) -> None:
        self.plan = plan
        self.app_id = app_id
        self.complete = complete
        self.generates_identity = generates_identity_values(plan.spec, plan.data_schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if not self.generates_identity:
            return DeltaCommitMessage(write_batches(self.plan.spec, iterator, _task_id()), self.plan)
        spec, read_version = with_current_high_water_marks(self.plan.spec)
        return DeltaCommitMessage(write_batches(spec, iterator, _task_id()), self.plan, read_version)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the batch with the plan its files were written with: PySpark commits
        through a writer it creates again (a new plan, on the table as it is then), whose new
        columns would get other physical names under column mapping than the files have."""
        read = [m.read_version for m in messages if isinstance(m, DeltaCommitMessage) and m.read_version is not None]
        mode = "Complete" if self.complete else "Append"
        info = StreamingInfo(self.app_id, batchId, mode, min(read) if read else None)
        commit_write(_written_plan(messages, self.plan), _lines(messages), streaming=info)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        abort_write(_written_plan(messages, self.plan), _lines(messages))


def _written_plan(messages: Sequence[WriterCommitMessage | None], planned: WritePlan) -> WritePlan:
    """The plan the batch's tasks wrote with (``planned`` when no task wrote)."""
    written = (m.plan for m in messages if isinstance(m, DeltaCommitMessage) and m.plan is not None)
    return next(written, planned)


# -- reads --------------------------------------------------------------------------------


#: Whether Spark keeps a Python data source's planned read (its partitions and read
#: function) per scan. Up to Spark 4.3 ``PythonScanBuilder`` stores the plan made when
#: filters are pushed on the data source object that every scan of the DataFrame shares
#: (``PythonDataSourceV2.readInfo``), and a scan without pushable filters reuses whatever
#: plan is stored there: another query's pruned file list, or an older version. Spark
#: scoped the plan to one scan in the release that added ``DataSourceReader.pushLimit``.
READ_PLANS_PER_SCAN = hasattr(DataSourceReader, "pushLimit")


def _column(attr: Any) -> str:
    return ".".join(attr) if isinstance(attr, tuple) else str(attr)


def _dotted_name(f: Filter) -> bool:
    """Whether ``f`` names a column (or field) whose name has a dot: a term's column is a
    dotted path (``s.a`` is field ``a`` of ``s``), which cannot name it."""
    attr = getattr(f, "attribute", None)
    return isinstance(attr, tuple) and any("." in part for part in attr)


_COMPARISONS = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}
#: Delta's skipping folds NOT into the comparison it negates (``constructDataFilters``)
_NEGATED = {"=": "!=", ">": "<=", ">=": "<", "<": ">=", "<=": ">", "isnull": "notnull", "notnull": "isnull"}


def _term(f: Filter) -> Term | None:
    """The skipping term of one pushed filter (None: it skips no file)."""
    if _dotted_name(f):
        return None
    op = _COMPARISONS.get(type(f))
    if op is not None:
        value = getattr(f, "value", None)
        return None if value is None else (_column(getattr(f, "attribute", "")), op, value)
    if isinstance(f, EqualNullSafe):
        column = _column(f.attribute)
        return (column, "isnull", None) if f.value is None else (column, "=", f.value)
    if isinstance(f, In):
        return (_column(f.attribute), "in", tuple(f.value))
    if isinstance(f, IsNull):
        return (_column(f.attribute), "isnull", None)
    if isinstance(f, IsNotNull):
        return (_column(f.attribute), "notnull", None)
    if isinstance(f, StringStartsWith):
        return (_column(f.attribute), "startswith", f.value)
    if isinstance(f, Not):
        return _negated_term(f.child)
    return None


def _negated_term(f: Filter) -> Term | None:
    """The skipping term of ``NOT f``: the negated comparison, as Delta's; None for any
    other negation (``NOT IN``, ``NOT LIKE``, ``NOT (a <=> v)``)."""
    if isinstance(f, Not):
        return _term(f.child)
    if isinstance(f, EqualNullSafe):
        return None
    inner = _term(f)
    if inner is None or inner[1] not in _NEGATED:
        return None
    return (inner[0], _NEGATED[inner[1]], inner[2])


def _terms(filters: Sequence[Filter]) -> list[Term]:
    return [t for t in map(_term, filters) if t is not None]


class DeltaReader(DataSourceReader):
    """Plans a scan in ``partitions()`` (on the driver side) and reads it in ``read()`` (in
    executors). Spark pickles the reader before it calls ``partitions()``, so nothing
    planned is kept on the reader: each partition carries its snapshot version, files and
    read spec."""

    def __init__(self, options: ReadOptions, schema: StructType, analyzed: Metadata | None = None) -> None:
        self.options = options
        self.schema = schema
        self.analyzed = analyzed  # the metadata the DataFrame was made with (Delta's snapshotAtAnalysis)
        self.terms: list[Term] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        # Pruning by these filters is only sound when the plan serves this scan alone.
        self.terms = _terms(filters) if READ_PLANS_PER_SCAN else []
        # Every filter is also evaluated by Spark: file skipping is only a superset.
        yield from filters

    def _snapshot(self) -> tuple[DeltaLog, Snapshot]:
        delta_log = open_log(self.options.path, self.options.storage_options, self.options.logstore)
        o = self.options
        if o.version_as_of is not None or o.timestamp_as_of is not None:
            snapshot = delta_log.snapshot(version=o.version_as_of, timestamp=o.timestamp_as_of, enforce_retention=True)
            return delta_log, snapshot
        return delta_log, delta_log.update()

    def _spec(self, delta_log: DeltaLog, snapshot: Snapshot) -> ReadSpec:
        tracking = row_tracking_columns(snapshot) if self.options.read_row_tracking else None
        return ReadSpec.for_snapshot(delta_log, snapshot, arrow_schema(self.schema), tracking)

    def partitions(self) -> Sequence[InputPartition]:
        from deltalog.contrib.spark import schemas

        if self.options.read_change_feed:
            from deltalog.contrib.spark.changes import change_files

            delta_log = open_log(self.options.path, self.options.storage_options, self.options.logstore)
            bounds = change_range(delta_log, self.options)
            read = change_read_snapshot(delta_log, bounds)
            _check_read_compatible(delta_log.table_uri, read, self.schema)
            unsafe = self.options.cdf_unsafe_schema_reads
            items = [] if bounds is None else change_files(delta_log, *bounds, read, not unsafe)
            spec = self._spec(delta_log, read)
            return files_partitions(spec, read.version, items, self._split_target)
        delta_log, snapshot = self._snapshot()
        metadata = snapshot.metadata
        schema = json.loads(metadata.schema_string)
        _check_read_compatible(delta_log.table_uri, snapshot, self.schema)
        if self.analyzed is not None:
            refuse_schema_changes_since_analysis(delta_log.table_uri, self.analyzed, metadata, snapshot.version)
        plan = plan_files(
            snapshot.files,
            snapshot.version,
            self.terms,
            metadata.partition_columns,
            schemas.top_level_types(schema),
            schemas.physical_names(schema, snapshot.properties.column_mapping_mode),
            generated=partition_expressions(metadata, snapshot.protocol),
            float_widened=fields_widened_from_float(schema),
        )
        log.info(
            "scan of %s at version %d: %d of %d files (partition filters %s, data filters %s)",
            delta_log.table_uri,
            snapshot.version,
            len(plan.files),
            plan.total_files,
            plan.partition_terms,
            plan.data_terms,
        )
        if self.options.scan_report:
            with open(self.options.scan_report, "w", encoding="utf-8") as f:
                json.dump(plan.report(), f)
        items = [
            FileToRead(
                a.path,
                a.partition_values,
                a.size,
                None if a.deletion_vector is None else a.deletion_vector.to_dict(),
                base_row_id=a.base_row_id,
                default_row_commit_version=a.default_row_commit_version,
            )
            for a in plan.files
        ]
        # plan.data_terms is empty unless READ_PLANS_PER_SCAN (see pushFilters): row groups
        # are skipped by pushed filters only where files are
        spec = dataclasses.replace(self._spec(delta_log, snapshot), row_group_terms=tuple(plan.data_terms))
        return files_partitions(spec, snapshot.version, items, self._split_target)

    @property
    def _split_target(self) -> int:
        return self.options.max_split_bytes or TARGET_SPLIT_BYTES

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilesPartition)
        yield from read_files(partition.spec, partition.files)


def change_range(delta_log: DeltaLog, options: ReadOptions) -> tuple[int, int] | None:
    """The change feed's first and last version, or None for an empty feed, as Delta's
    ``CDCReaderBase.getCDCRelation`` resolves them: ``startingVersion``, or
    ``startingTimestamp`` as the first commit at or after it (the earliest for a time before
    every commit, as a stream starts), one of them required; ``endingVersion`` (at most the latest), or
    ``endingTimestamp`` as the last commit at or before it; the latest by default. Two
    times between the same two commits are an empty feed. A start after the latest version
    or a time after the latest commit is an error, unless
    ``spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled`` (then an empty feed
    or, for the end, the latest version). A first version older than
    ``delta.deletedFileRetentionDuration`` is refused, as Delta's batch change feed does
    (:func:`~deltalog.contrib.spark.changes.enforce_start_within_retention`). Raises
    :class:`DeltaAnalysisError` for a range Delta refuses."""
    from deltalog.contrib.spark.changes import enforce_start_within_retention, invalid_range
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.log.history import starting_version_at, to_millis, version_at_timestamp

    latest = delta_log.update().version
    if latest < 0:
        raise DeltaAnalysisError(f"no Delta table at {delta_log.table_uri}")
    lenient = options.cdf_out_of_range
    if options.starting_version_latest:  # a stream's start: a batch read's version is a number
        raise DeltaAnalysisError(
            "DELTA_VERSION_INVALID: The provided version (latest) is not a valid version. A batch read of the "
            "change data feed takes startingVersion as a version number (startingVersion=latest is for streams)"
        )
    start = options.starting_version
    if start is None:
        if options.starting_timestamp is None:
            raise DeltaAnalysisError(
                "DELTA_NO_START_FOR_CDC_READ: no startingVersion or startingTimestamp provided for the change data "
                f"feed read of {delta_log.table_uri}; give one (startingVersion 0 reads every change recorded)"
            )
        start = starting_version_at(delta_log, options.starting_timestamp, can_exceed_latest=lenient)
    if start > latest:
        if lenient:
            return None
        raise DeltaAnalysisError(
            f"DELTA_CDC_START_VERSION_AFTER_LATEST: start version {start} for change data feed exceeds the latest "
            f"version {latest} of {delta_log.table_uri}"
        )
    end = latest if options.ending_version is None else min(options.ending_version, latest)
    if options.ending_version is None and options.ending_timestamp is not None:
        end = version_at_timestamp(delta_log, options.ending_timestamp, can_return_last_commit=lenient)
        if options.starting_version is None and options.starting_timestamp is not None:
            if to_millis(options.starting_timestamp) > to_millis(options.ending_timestamp):
                raise invalid_range(start, end)
            if end == start - 1:  # both times fall between the same two commits
                return None
    if end < start:
        raise invalid_range(start, end)
    enforce_start_within_retention(delta_log, start, end)
    return start, end


def change_read_snapshot(delta_log: DeltaLog, bounds: tuple[int, int] | None) -> Snapshot:
    """The snapshot whose schema a batch change feed of versions ``bounds`` (None: an empty
    feed) is read with, Delta's ``DeltaCDFRelationBase.snapshotForBatchSchema``: the last
    version's when column mapping is on at the latest, last or first version (Delta's default
    ``endVersion`` schema mode for such tables), else the latest version's (its ``legacy``
    mode: a column added after the range reads as null)."""
    latest = delta_log.update()
    if bounds is None or bounds[1] >= latest.version:
        return latest
    end = delta_log.snapshot(bounds[1])
    if latest.properties.column_mapping_mode != "none" or end.properties.column_mapping_mode != "none":
        return end
    first = delta_log.snapshot(bounds[0]).properties.column_mapping_mode
    return latest if first == "none" else end


def _change_schema_snapshot(delta_log: DeltaLog, options: ReadOptions) -> Snapshot:
    """The snapshot whose schema a change feed has. Spark asks the data source for it for a
    batch read and a stream alike, and a stream's options need not make a range a batch read
    accepts (Delta's streams need no start, and check no retention): for a range the batch
    read refuses, the latest version's schema, and the batch read raises when it is planned
    (:meth:`DeltaReader.partitions` resolves the range again)."""
    from deltalog.errors import DeltaError

    try:
        bounds = change_range(delta_log, options)
    except DeltaError:
        return delta_log.update()
    return change_read_snapshot(delta_log, bounds)


# -- the source -----------------------------------------------------------------------------


class DeltaLogDataSource(DataSource):
    """``format("deltalog")``."""

    #: the metadata :meth:`schema` read the latest version with (Delta's ``snapshotAtAnalysis``):
    #: Spark pickles the source after ``schema()`` and unpickles it for ``reader()``, whose scan
    #: checks it; None for time travel, the change feed and a tracked schema
    _analyzed: Metadata | None = None

    @classmethod
    def name(cls) -> str:
        return "deltalog"

    def schema(self) -> StructType:
        opts = ReadOptions.parse(self.options)
        delta_log = open_log(opts.path, opts.storage_options, opts.logstore)
        if opts.read_change_feed:
            snapshot = _change_schema_snapshot(delta_log, opts)
        elif opts.version_as_of is not None or opts.timestamp_as_of is not None:
            snapshot = delta_log.snapshot(
                version=opts.version_as_of, timestamp=opts.timestamp_as_of, enforce_retention=True
            )
        else:
            snapshot = delta_log.update()
        if snapshot.version < 0:
            from deltalog.txn.protocol.errors import TableNotFoundError

            raise TableNotFoundError(delta_log.table_uri, "no _delta_log; write to it first")
        tracked = _tracked_schema(self.options, delta_log)
        schema = logical_struct(tracked or snapshot.metadata.schema_string)
        time_travel = opts.version_as_of is not None or opts.timestamp_as_of is not None
        if tracked is None and not opts.read_change_feed and not time_travel:
            self._analyzed = snapshot.metadata
        if opts.read_change_feed:
            for name, type_name in CDF_COLUMNS:
                schema = schema.add(name, type_name, True)
        elif opts.read_row_tracking:
            row_tracking_columns(snapshot)  # refuses a table without row tracking
            schema = schema.add(ROW_TRACKING_COLUMN, row_tracking_struct(), True)
        return schema

    def reader(self, schema: StructType) -> DataSourceReader:
        return DeltaReader(ReadOptions.parse(self.options), schema, self._analyzed)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from deltalog.contrib.spark.options import StreamReadOptions
        from deltalog.contrib.spark.streaming import DeltaSourceReader

        options = StreamReadOptions.parse(self.options)
        _check_read_schema(options.read.path, self.schema(), schema)
        reader = DeltaSourceReader(options, schema)
        if options.schema_tracking_location is not None:
            reader.check_schema_log()  # when the source starts, as Delta's createSource
        return reader

    def writer(self, schema: StructType, overwrite: bool) -> DeltaWriter:
        opts = _without_optimized_write(WriteOptions.parse(self.options, overwrite))
        return DeltaWriter(plan_write(opts, schema.json()))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DeltaStreamWriter:
        # ``overwrite`` is complete mode: each batch replaces the table, so overwriteSchema
        # applies as in a batch overwrite (Delta's sink: ``canOverwriteSchema`` in complete mode)
        opts = _without_optimized_write(WriteOptions.parse(self.options, overwrite))
        # Delta's sink records txn(queryId, batchId): txnAppId/txnVersion are batch writes' options
        opts = dataclasses.replace(opts, txn_app_id=None, txn_version=None)
        if opts.replace_where is not None or opts.table_creation is not None:
            from deltalog.contrib.spark.errors import InvalidWriteOptionError

            given = "replaceWhere" if opts.replace_where is not None else "tableCreationMode"
            raise InvalidWriteOptionError(
                f"{given} does not apply to a streaming write: complete mode replaces the whole table, "
                "append mode replaces nothing; drop the option"
            )
        app_id = _query_app_id(self.options)
        return DeltaStreamWriter(plan_write(opts, schema.json(), streaming=True), app_id, overwrite)


def _without_optimized_write(opts: WriteOptions) -> WriteOptions:
    """A ``format("deltalog")`` write cannot shuffle its rows before Spark's tasks write them:
    the ``optimizeWrite`` option is refused, and the session's or the table's setting does not
    apply (see docs/spark.md, "Optimized writes")."""
    if opts.optimize_write:
        from deltalog.contrib.spark.errors import InvalidWriteOptionError

        raise InvalidWriteOptionError(
            'optimizeWrite: a format("deltalog") write cannot shuffle its rows before Spark\'s tasks write them; '
            "use deltalog.contrib.spark.write_table(df, uri, optimizeWrite=True) (Spark's REBALANCE by the "
            "partition columns), or repartition the DataFrame by them"
        )
    return dataclasses.replace(opts, optimize_write=False, session_optimize_write=False)


def _tracked_schema(raw: Any, delta_log: DeltaLog) -> str | None:
    """With ``schemaTrackingLocation``, the schema a stream reads with: the schema log's
    latest entry (after merging the consecutive metadata-only commits that follow it, as
    Delta's ``sourceSchema`` does), None while the log is empty (the table's schema)."""
    from deltalog.contrib.spark.options import StreamReadOptions
    from deltalog.contrib.spark.schema_log import merge_consecutive
    from deltalog.contrib.spark.streaming import open_schema_log

    keys = {k.lower() for k in raw}
    if not {"schematrackinglocation", "schemalocation"} & keys:
        return None
    log = open_schema_log(StreamReadOptions.parse(raw), delta_log.update().metadata.id)
    if log is None or log.current is None:
        return None
    merge_consecutive(delta_log, log)
    assert log.current is not None
    return log.current.data_schema_json


def _check_read_compatible(table: str, snapshot: Snapshot, read: StructType) -> None:
    """Every column the read returns (a schema given with ``.schema(...)``, the table's
    when its DataFrame was made, or the schema log's with ``schemaTrackingLocation``; the
    change feed's columns aside) is one the snapshot has, of the same type (nullability
    aside): the files would give nulls for any other. Columns the table gained since are
    fine (Delta's ``checkSchemaOnRead`` lets a DataFrame read a table that only added
    columns). Raises :class:`DeltaAnalysisError` (``DELTA_READ_SOURCE_SCHEMA_CONFLICT``)."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    table_fields = {f.name.lower(): f for f in logical_struct(snapshot.metadata.schema_string).fields}
    added = {ROW_TRACKING_COLUMN, *(name for name, _ in CDF_COLUMNS)}
    for field in read.fields:
        if field.name in added:
            continue
        ours = table_fields.get(field.name.lower())
        if ours is None or not _reads_as(field.dataType.jsonValue(), ours.dataType.jsonValue()):
            raise DeltaAnalysisError(
                f"DELTA_READ_SOURCE_SCHEMA_CONFLICT: the read of {table} at version {snapshot.version} returns "
                f"{field.simpleString()}, which the table "
                + ("does not have" if ours is None else f"has as {ours.simpleString()}")
                + ". Drop .schema(...), or, when the table's schema changed since the DataFrame was created, "
                "create it again"
            )


def _reads_as(read: Any, table: Any) -> bool:
    """Whether a column of the table's type ``table`` (Spark JSON) reads as ``read``: the
    same type, where a struct may have fields the read does not ask for (added since)."""
    if isinstance(read, dict) and isinstance(table, dict) and read.get("type") == table.get("type"):
        kind = read["type"]
        if kind == "struct":
            fields = {f["name"].lower(): f["type"] for f in table["fields"]}
            return all(_reads_as(f["type"], fields.get(f["name"].lower())) for f in read["fields"])
        if kind == "array":
            return _reads_as(read["elementType"], table["elementType"])
        if kind == "map":
            return _reads_as(read["keyType"], table["keyType"]) and _reads_as(read["valueType"], table["valueType"])
    return bool(read == table)


def _check_read_schema(table: str, table_schema: StructType, given: StructType) -> None:
    """The stream's schema (given to ``readStream.schema(...)``, or the table's when its
    DataFrame was created) must be the table's (Delta's ``DELTA_READ_SOURCE_SCHEMA_CONFLICT``;
    column order and nullability aside): files are read by column name, so another name would
    stream nulls, and a column added since would be dropped."""
    from deltalog.contrib.spark import schemas
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    ours, theirs = table_schema.jsonValue(), given.jsonValue()
    same_names = {f["name"] for f in ours["fields"]} == {f["name"] for f in theirs["fields"]}
    if not (same_names and schemas.schemas_equal(ours, theirs)):
        raise DeltaAnalysisError(
            f"DELTA_READ_SOURCE_SCHEMA_CONFLICT: the schema of the stream of {table} is not the table's: "
            f"stream {given.simpleString()}, table {table_schema.simpleString()}. The stream's schema is the "
            "table's: drop .schema(...), or, when the table's schema changed since the streaming DataFrame was "
            "created, create it again"
        )
