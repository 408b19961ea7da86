"""The driver side of a write: plan it (schema, partitioning, layout) and commit it, as ONE
Delta transaction from plan to commit (Delta's ``WriteIntoDelta`` inside
``withNewTransaction``).

:func:`plan_write` runs when Spark asks the data source for a writer: it opens the
transaction on the table's latest snapshot (its version is the transaction's read version),
decides whether the write creates the table, changes its schema (``mergeSchema`` /
``overwriteSchema``) or only adds data, and returns a picklable :class:`WritePlan` whose
:class:`~deltalog.contrib.spark.files.WriteSpec` the tasks use. PySpark runs ``writer()``
and the driver-side ``commit()`` in different Python processes, so the open transaction
travels as that plan: its read version, what it read and its metadata change.
:func:`commit_write` runs once all tasks succeeded: it opens the transaction again ON THE
READ SNAPSHOT, replays what the write read (the whole table for an overwrite, the files a
``replaceWhere`` selects, the partitions a dynamic partition overwrite replaces, the
application id of an idempotent write), updates the metadata on that same snapshot, and
commits every task's files in ONE commit: the engine's conflict checker judges whatever
committed since the plan. A streaming micro-batch is its own transaction, opened on the
latest snapshot at the batch's commit (as Delta's sink does per batch).

Written files are deleted when the commit certainly did not land (a conflict, an invalid
transaction, a validation error); when its outcome is unknown they are kept and
:class:`~deltalog.contrib.spark.errors.WriteOutcomeUnknownError` says so.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark import schemas
from deltalog.contrib.spark.constraints import plan_constraints
from deltalog.contrib.spark.errors import (
    DeltaAnalysisError,
    InvalidWriteOptionError,
    ReplaceWhereMismatchError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    WriteOutcomeUnknownError,
)
from deltalog.contrib.spark.files import CDC_TYPE_COLUMN, WriteSpec, delete_files, file_actions, logical_records
from deltalog.contrib.spark.generated import check_data_for_default_columns
from deltalog.contrib.spark.idempotent import pending_set_transactions
from deltalog.contrib.spark.options import WriteOptions, optimizes_write
from deltalog.contrib.spark.partition_overwrite import NULL_INTOLERANT_EQUALITY_OPTION
from deltalog.contrib.spark.predicates import at_session_time_zone, exact_partition_filter, parse_partition_predicate
from deltalog.contrib.spark.replace_using import key_columns, matcher, refuse_incompatible_options, written_keys
from deltalog.contrib.spark.replace_where import names_data_columns, refuse_data_columns, refuse_unresolved_names
from deltalog.contrib.spark.replace_where_rewrite import rewrite_matching, rewrite_outside
from deltalog.contrib.spark.sink_cast import SinkCasts, write_types
from deltalog.contrib.spark.sink_null_types import (
    VOID_TYPES,
    refuse_empty_written_structs,
    refuse_null_types,
    refuse_null_types_in_collections,
)
from deltalog.contrib.spark.tablelog import open_log, start_transaction
from deltalog.logstores.base import LogStoreSpec
from deltalog.txn.commands.dependent_expressions import check_write_types
from deltalog.txn.commit.action_checks import assert_removable
from deltalog.txn.commit.commit_errors import MetadataChangedError, commit_certainly_failed
from deltalog.txn.commit.metadata_checks import refuse_change_data_columns, verify_metadata
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import (
    Action,
    AddCDCFile,
    AddFile,
    Metadata,
    Protocol,
    SetTransaction,
)
from deltalog.txn.protocol.clustering import cleared_clustering_domain, refuse_partitioning_a_clustered_table
from deltalog.txn.protocol.column_defaults import plan_default_expressions
from deltalog.txn.protocol.constraints import Constraint, refuse_missing_not_null_columns, table_constraints
from deltalog.txn.protocol.errors import SchemaMismatchError as ProtocolSchemaMismatchError
from deltalog.txn.protocol.file_stats import tight_bounds_on_write
from deltalog.txn.protocol.iceberg_compat import (
    complete_metadata,
    materializes_partition_columns,
    row_tracking_field_ids,
)
from deltalog.txn.protocol.identity import pop_high_water_marks, without_high_water_marks
from deltalog.txn.protocol.properties import COLUMN_MAPPING_MAX_ID, InvalidPropertyError, TableProperties
from deltalog.txn.protocol.protocol_requirements import with_table_defaults
from deltalog.txn.protocol.schema import duplicate_column_names
from deltalog.txn.protocol.stats_columns import StatsColumns
from deltalog.txn.protocol.time_zones import arrow_time_zone
from deltalog.txn.protocol.type_widening import preview_table_version, widen_for_schema_evolution

if TYPE_CHECKING:
    from deltalog.contrib.spark.source_reads import TargetReads
    from deltalog.txn.commit.operations import Operation
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.partition_filters import PartitionFilter

__all__ = [
    "StreamingInfo",
    "WritePlan",
    "abort_write",
    "commit_files",
    "commit_write",
    "plan_write",
    "write_spec",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamingInfo:
    """A micro-batch: the query's application id, the batch id and the output mode."""

    app_id: str
    batch_id: int
    output_mode: str  # "Append" or "Complete"
    #: The version the batch's tasks read identity high-water marks at (None: they read
    #: none): its transaction opens there (:mod:`~deltalog.contrib.spark.stream_identity`).
    read_version: int | None = None


@dataclass(frozen=True)
class WritePlan:
    options: WriteOptions
    spec: WriteSpec
    #: True: write nothing, commit nothing (ignore mode on an existing table, or an
    #: idempotent write that already happened).
    skip: bool
    #: The metadata to commit (create / schema change), or None to keep the table's.
    new_metadata: Metadata | None
    #: The transaction's read version (the snapshot the plan was made against; -1: no
    #: table) and that snapshot's metadata.
    read_version: int
    read_metadata: Metadata | None
    data_schema: str
    #: An overwrite that replaces only the partitions the tasks write (Delta's dynamic
    #: partition overwrite).
    dynamic_partition_overwrite: bool = False
    #: ``replaceWhere`` names data columns: the rows it selects are replaced, the other rows
    #: of the files holding them are kept (:mod:`~deltalog.contrib.spark.replace_where`).
    replace_where_on_data: bool = False
    #: The table's key columns of an overwrite with ``replaceUsing``: the rows whose keys
    #: equal a written row's are replaced (:mod:`~deltalog.contrib.spark.replace_using`).
    replace_using: tuple[str, ...] = ()
    #: The data written is computed from this table (a scan of it in the written DataFrame,
    #: :mod:`~deltalog.contrib.spark.source_reads`): the transaction reads the whole table.
    reads_whole_table: bool = False
    #: CHECK constraints and invariants the caller checked with Spark SQL over the written
    #: rows before writing them (``write_table``: those outside the tasks' SQL subset).
    spark_checked: tuple[Constraint, ...] = ()


def _spark_schema_dict(schema_json: str) -> dict[str, Any]:
    """The written DataFrame's schema without column mapping field metadata (ids and physical
    names a DataFrame may carry from another table): the table assigns its own, as Delta's
    ``ImplicitMetadataOperation`` drops them before updating the metadata."""
    value: dict[str, Any] = schemas.without_column_mapping_metadata(json.loads(schema_json))
    return value


def _table_fields(data: dict[str, Any], change_data: bool) -> dict[str, Any]:
    """The data's schema as the table's: without ``_change_type`` when the table records the
    change data feed (the column then marks change data rows, Delta's CDC_TYPE_COLUMN_NAME);
    in any other table it is an ordinary column."""
    if not change_data:
        return data
    return {**data, "fields": [f for f in data["fields"] if f["name"] != CDC_TYPE_COLUMN]}


def _refuse_duplicate_columns(data: dict[str, Any]) -> None:
    """Delta's ``DELTA_DUPLICATE_COLUMNS_FOUND``: the data names a column twice (in any case),
    a nested field too (:func:`deltalog.txn.protocol.schema.duplicate_column_names`)."""
    dupes = duplicate_column_names(schemas.to_model(data))
    if dupes:
        raise SchemaMismatchError(
            f"DELTA_DUPLICATE_COLUMNS_FOUND: Found duplicate column(s) in the data to save: {', '.join(dupes)}; "
            "rename or drop one of each"
        )


def _check_names(data: dict[str, Any], partition_by: Sequence[str], change_data: bool, cdf_was_on: bool) -> None:
    """A new table's column names; ``cdf_was_on``: the change data feed was on before this
    write (the session's defaults turn it on, or the table ``overwriteSchema`` replaces had it)."""
    names = [f["name"] for f in data["fields"]]
    lowered = [n.lower() for n in names]
    _refuse_duplicate_columns(data)
    if change_data:  # _change_type marks rows as change data (_table_fields)
        refuse_change_data_columns([n for n in names if n.lower() != CDC_TYPE_COLUMN], cdf_was_on)
    missing = [c for c in partition_by if c.lower() not in lowered]
    if missing:
        raise InvalidWriteOptionError(
            f"partitionBy names columns that are not in the data: {', '.join(missing)}; data columns are "
            f"{', '.join(names)}"
        )
    counts = Counter(c.lower() for c in partition_by)
    twice = sorted(c for c, n in counts.items() if n > 1)
    if twice:  # Delta's PartitionUtils.validatePartitionColumn, names compared ignoring case
        raise SchemaMismatchError(
            f"DELTA_DUPLICATE_COLUMNS_FOUND: Found duplicate column(s) in the partition schema: {', '.join(twice)}"
        )
    if partition_by and len(partition_by) >= len(_table_fields(data, change_data)["fields"]):
        raise InvalidWriteOptionError("cannot partition by every column: at least one data column must remain")


def _canonical_partitions(data: dict[str, Any], partition_by: Sequence[str]) -> tuple[str, ...]:
    by_lower = {f["name"].lower(): f["name"] for f in data["fields"]}
    return tuple(by_lower[c.lower()] for c in partition_by)


def _new_table_metadata(
    opts: WriteOptions, data: dict[str, Any], old: Metadata | None = None, creating: bool = True
) -> Metadata:
    """The metadata of a table the write creates; or, over the table's ``old`` metadata, of the
    table a REPLACE TABLE AS SELECT re-creates (``creating``) or an ``overwriteSchema``
    re-defines (not ``creating``: the caller keeps the old properties and id). Column mapping
    ids go on above ``old``'s (:func:`~deltalog.contrib.spark.schemas.assign_table_column_mapping`)."""
    partition_by = opts.partition_by or ()
    # a table the write creates or re-creates gets the session's defaults (Delta's mergeGlobalConfigs)
    config = dict(opts.table_properties)
    if creating:
        config = with_table_defaults(config, opts.session_table_defaults)
    try:
        props = TableProperties(config)
        mode, change_data = props.column_mapping_mode, props.enable_change_data_feed
        before = old.configuration if old is not None else with_table_defaults({}, opts.session_table_defaults)
        cdf_was_on = TableProperties(before).enable_change_data_feed
    except InvalidPropertyError as exc:
        raise InvalidWriteOptionError(str(exc)) from exc
    _check_names(data, partition_by, change_data, cdf_was_on)
    schema = schemas.as_nullable(_table_fields(data, change_data))
    if old is None and not schema["fields"]:
        raise SchemaMismatchError(
            "DELTA_EMPTY_DATA: Data used in creating the Delta table doesn't have any columns; write a DataFrame "
            "with at least one column"
        )
    if mode != "none":
        schema, max_id = schemas.assign_table_column_mapping(schema, mode, old)
        config[COLUMN_MAPPING_MAX_ID] = str(max_id)
    return Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(schema, separators=(",", ":")),
        partition_columns=_canonical_partitions(data, partition_by),
        configuration=config,
        created_time=int(time.time() * 1000),
    )


def write_spec(
    opts: WriteOptions,
    table_uri: str,
    store_spec: LogStoreSpec,
    metadata: Metadata,
    constraints: tuple[Constraint, ...] = (),
    protocol: Protocol | None = None,
) -> WriteSpec:
    """What the write tasks need to write files of a table with ``metadata`` (and ``protocol``;
    None for a new table): its layout (partitioning, column mapping, partition columns in
    the files), statistics settings and the constraints they check."""
    props = metadata.properties
    schema = json.loads(metadata.schema_string)
    mode = props.column_mapping_mode
    types = schemas.top_level_types(schema)
    stats = StatsColumns.of(metadata, opts.session_string_prefix_length)
    return WriteSpec(
        store=store_spec,
        table_uri=table_uri,
        partition_columns=tuple(metadata.partition_columns),
        partition_types={c: types.get(c, "string") for c in metadata.partition_columns},
        stats_columns=stats.physical_paths,
        string_prefix_length=stats.string_prefix_length,
        max_records_per_file=opts.max_records_per_file,
        compression=opts.compression,
        physical_names=schemas.physical_names(schema, mode),
        field_ids=schemas.field_ids(schema, mode),
        tight_bounds=tight_bounds_on_write(protocol, metadata),
        collect_stats=opts.session_collect_stats,
        data_change=opts.data_change,
        constraints=constraints,
        column_mapping_schema=None if mode == "none" else metadata.schema_string,
        random_prefix_length=props.data_file_prefix_length,
        default_expressions=plan_default_expressions(metadata, protocol, opts.session_time_zone) or None,
        column_names=tuple(f["name"] for f in schema["fields"]),
        table_schema=metadata.schema_string,
        change_data=props.enable_change_data_feed,
        row_tracking_columns=row_tracking.named_materialized_columns(metadata),
        row_tracking_field_ids=row_tracking_field_ids(metadata),
        materialize_partitions=materializes_partition_columns(protocol, metadata),
        shred_variants=props.enable_variant_shredding,
        optimize_write=optimizes_write(opts, metadata),
        session_time_zone=opts.session_time_zone,
    )


def plan_write(
    opts: WriteOptions, data_schema_json: str, streaming: bool = False, source: TargetReads | None = None
) -> WritePlan:
    """Decide what the write does; raises before any file is written when it cannot work.
    ``source``: the written DataFrame's scans of this table, when known (``write_table``):
    the transaction then opens on the snapshot a bound scan read, and reads the whole table."""
    delta_log = open_log(opts.path, opts.storage_options, opts.logstore)
    bound = None if source is None else source.snapshot(delta_log)
    snapshot = bound if bound is not None else delta_log.update()
    data = _spark_schema_dict(data_schema_json)
    _refuse_duplicate_columns(data)
    _check_null_types(delta_log.table_uri, snapshot, data, streaming)
    casts = SinkCasts()
    if streaming and snapshot.version >= 0 and not (opts.overwrite and opts.overwrite_schema):
        data, casts = _stream_write_types(opts, snapshot, data)
    skip = False
    read_metadata: Metadata | None = None
    _refuse_table_creation(opts, snapshot.version >= 0, delta_log.table_uri)
    if snapshot.version < 0:
        created = _new_table_metadata(opts, data)
        _check_partition_columns_given(created, json.loads(created.schema_string), data)
        new_metadata: Metadata | None = created
    else:
        read_metadata = snapshot.metadata
        skip = _skips_existing_table(opts, snapshot, delta_log.table_uri)
        if opts.overwrite and not skip:  # Delta's WriteIntoDelta (and DeltaSink's complete mode)
            assert_removable(read_metadata)
        new_metadata = _metadata_change(opts, snapshot, data)
    if new_metadata is not None:
        _refuse_metadata_change_without_data_change(opts, snapshot.version)
        # what the commit would refuse, refused before any file is written; then the metadata the commit
        # records (column mapping ids, IcebergCompat's properties and nested ids), so the files carry what it names
        verify_metadata(new_metadata, read_metadata)
        new_metadata = complete_metadata(read_metadata, new_metadata, creating=_recreates(opts, read_metadata))
    metadata = new_metadata or read_metadata
    assert metadata is not None  # a new table has new metadata
    on_data = _replace_where_on_data(opts, metadata)
    using = _replace_using(opts, snapshot, data, streaming)
    dynamic = not streaming and opts.table_creation is None and _dynamic_partition_overwrite(opts, metadata)
    checks = opts.spark_constraint_checks
    constraints = () if skip else plan_constraints(metadata, delta_log.table_uri, spark_fallback=checks)
    check_data_for_default_columns(metadata, data)
    protocol = snapshot.protocol if snapshot.version >= 0 else None
    spec = write_spec(opts, delta_log.table_uri, delta_log.store.spec(), metadata, constraints, protocol)
    if not skip:
        _refuse_missing_not_null_columns(spec, metadata, data)
    spec = _with_row_handling(spec, opts, on_data, casts, replaces_rows=on_data or bool(using))
    return WritePlan(
        options=opts,
        spec=spec,
        skip=skip,
        new_metadata=new_metadata,
        read_version=snapshot.version,
        read_metadata=read_metadata,
        data_schema=data_schema_json,
        dynamic_partition_overwrite=dynamic,
        replace_where_on_data=on_data,
        replace_using=using,
        reads_whole_table=source is not None and source.reads_table,
    )


def _refuse_table_creation(opts: WriteOptions, exists: bool, uri: str) -> None:
    """CREATE TABLE AS SELECT of a location holding a table (``TableAlreadyExistsError``) and
    REPLACE TABLE AS SELECT of one holding none (``DELTA_CANNOT_REPLACE_MISSING_TABLE``), as
    Delta's ``CreateDeltaTableCommand`` refuses them; nothing is written."""
    from deltalog.contrib.spark.table_builder import refuse_creation_step

    if opts.table_creation == "create" and exists:
        refuse_creation_step("exists", uri, exists)
    if opts.table_creation == "replace" and not exists:
        refuse_creation_step("missing", uri, exists)


def _recreates(opts: WriteOptions, read_metadata: Metadata | None) -> bool | None:
    """True for a REPLACE TABLE AS SELECT of an existing table (Delta's ``isCreatingNewTable``:
    the table is made anew, its column mapping mode may change); None otherwise."""
    return True if opts.table_creation is not None and read_metadata is not None else None


def _with_row_handling(
    spec: WriteSpec, opts: WriteOptions, on_data: bool, casts: SinkCasts, replaces_rows: bool
) -> WriteSpec:
    """``spec`` with what the tasks do to each row: check it against a ``replaceWhere`` on data
    columns (unless its constraint check is off), write it as ``insert`` change data too when
    the rows it replaces (``replaces_rows``) are change data, cast a stream's columns to the
    table's types."""
    return replace(
        spec,
        replace_where=opts.replace_where if on_data and opts.replace_where_constraint_check else None,
        insert_change_data=replaces_rows and spec.change_data,
        casts=casts,
    )


def _refuse_missing_not_null_columns(spec: WriteSpec, metadata: Metadata, data: dict[str, Any]) -> None:
    """Delta's ``DELTA_MISSING_NOT_NULL_COLUMN_VALUE``: the data must give every NOT NULL
    column the tasks do not fill (default, identity and generated columns)."""
    filled = spec.default_expressions.filled_columns() if spec.default_expressions else ()
    refuse_missing_not_null_columns(metadata, [str(f["name"]) for f in data.get("fields") or []], filled)


def _check_null_types(table_uri: str, snapshot: Snapshot, data: dict[str, Any], streaming: bool) -> None:
    """Delta's sink refuses any ``void`` type; a batch write one inside an array or map."""
    if streaming:
        table_schema = json.loads(snapshot.metadata.schema_string) if snapshot.version >= 0 else None
        refuse_null_types(table_uri, data, table_schema)
    else:
        refuse_null_types_in_collections(data)
        refuse_empty_written_structs(data)


def _stream_write_types(
    opts: WriteOptions, snapshot: Snapshot, data: dict[str, Any]
) -> tuple[dict[str, Any], SinkCasts]:
    """A stream's schema with the table's types where Delta's sink casts implicitly
    (``getWriteSchema``; not in complete mode with ``overwriteSchema``), and the top-level
    columns its tasks cast (name, batch type, table type), in the session's time zone and by its
    ``spark.sql.storeAssignmentPolicy`` (STRICT refuses a cast that may lose data). With
    ``mergeSchema`` a type the table may widen to (type widening) is widened, not cast, as in Delta."""
    metadata = snapshot.metadata
    table = schemas.logical_schema(json.loads(metadata.schema_string))
    if opts.merge_schema:
        version = preview_table_version(snapshot.protocol, snapshot.version + 1)
        table = widen_for_schema_evolution(
            table, data, metadata.configuration, version, automatic_widening=opts.automatic_widening
        )
    written = write_types(table, data, opts.store_assignment_policy)
    casts = tuple(
        (new["name"], json.dumps(old["type"]), json.dumps(new["type"]))
        for old, new in zip(data["fields"], written["fields"], strict=True)
        if old["type"] != new["type"]
    )
    return written, SinkCasts(casts, arrow_time_zone(opts.session_time_zone), opts.store_assignment_policy)


def _skips_existing_table(opts: WriteOptions, snapshot: Snapshot, table_uri: str) -> bool:
    """Whether a write to an existing table writes nothing: ``saveMode=ignore``, or an
    idempotent write (``txnAppId``/``txnVersion``) already committed. Raises for
    ``saveMode=errorifexists``."""
    if opts.save_mode == "errorifexists":
        raise TableAlreadyExistsError(
            f"a Delta table already exists at {table_uri} (saveMode=errorifexists); "
            "use mode('append') or mode('overwrite')"
        )
    skip = opts.save_mode == "ignore"
    if opts.txn_app_id is not None and opts.txn_version is not None:
        done = snapshot.txn_version(opts.txn_app_id)
        if done is not None and done >= opts.txn_version:
            log.info(
                "skipping the write to %s: application %s already committed version %s (asked %s)",
                table_uri,
                opts.txn_app_id,
                done,
                opts.txn_version,
            )
            skip = True
    return skip


def _metadata_change(opts: WriteOptions, snapshot: Snapshot, data: dict[str, Any]) -> Metadata | None:
    """The metadata a write to an existing table commits (``overwriteSchema``, ``mergeSchema``
    with type widening when the table allows it), or None to keep the snapshot's; raises
    when the data does not fit the table."""
    current = snapshot.metadata
    if opts.table_creation is not None:  # REPLACE TABLE AS SELECT: a new table's metadata over the old
        fresh = _new_table_metadata(opts, data, old=current)
        refuse_partitioning_a_clustered_table(snapshot.protocol, fresh.partition_columns)
        return fresh
    if opts.overwrite and opts.overwrite_schema and not opts.replace_where:
        fresh = _overwritten_metadata(opts, current, data)
        refuse_partitioning_a_clustered_table(snapshot.protocol, fresh.partition_columns)
        return fresh if _schema_or_partitioning_changed(fresh, current) else None
    if opts.partition_by is not None and [c.lower() for c in opts.partition_by] != [
        c.lower() for c in current.partition_columns
    ]:
        raise InvalidWriteOptionError(
            f"the table is partitioned by {list(current.partition_columns)}, the write asks for "
            f"{list(opts.partition_by)}; drop partitionBy, or overwrite with overwriteSchema=true"
        )
    table_schema = json.loads(current.schema_string)
    data_fields = _table_fields(data, current.properties.enable_change_data_feed)
    _check_partition_columns_given(current, table_schema, data_fields)
    _check_dependent_expressions(current, data_fields)
    new_metadata = None
    if not schemas.schemas_equal(table_schema, data_fields):
        if opts.merge_schema:
            version = preview_table_version(snapshot.protocol, snapshot.version + 1)
            widened = widen_for_schema_evolution(
                table_schema, data_fields, current.configuration, version, automatic_widening=opts.automatic_widening
            )
            new_metadata = _merged_metadata(current, schemas.merge_schemas(widened, data_fields))
        else:
            schemas.check_write_compatible(table_schema, data_fields)
    if new_metadata is None:
        _log_ignored_properties(opts, current)
    return new_metadata


def _log_ignored_properties(opts: WriteOptions, current: Metadata) -> None:
    """A write's table properties set only a table it creates (Delta's ``ImplicitMetadataOperation``)."""
    changed = {k: v for k, v in opts.table_properties.items() if current.configuration.get(k) != v}
    if changed:
        log.info("ignoring table properties %s on a write to an existing table", sorted(changed))


def _check_dependent_expressions(current: Metadata, data: dict[str, Any]) -> None:
    """Delta's ``checkDependentExpressions``: no column a CHECK constraint or a generated
    column reads may be typed otherwise by the data (raises :class:`SchemaMismatchError`)."""
    try:
        check_write_types(current, schemas.to_model(data))
    except ProtocolSchemaMismatchError as exc:
        raise SchemaMismatchError(str(exc)) from None


_FILLED_BY_TASKS = ("delta.generationExpression", "CURRENT_DEFAULT", "delta.identity.start")


def _check_partition_columns_given(current: Metadata, table_schema: dict[str, Any], data: dict[str, Any]) -> None:
    """Delta's ``DELTA_PARTITION_COLUMN_NOT_FOUND``: the data must hold every partition column
    the write tasks do not fill themselves (generated, default, identity), and
    ``DELTA_NON_PARTITION_COLUMN_ABSENT``: at least one column that is not one, among the
    data's columns and those the tasks fill (Delta checks after adding them)."""
    # a void column is left out of the files before the check (Delta's dropNullTypeColumns)
    kept = [f["name"] for f in data["fields"] if f["type"] not in VOID_TYPES]
    given = {n.lower() for n in kept}
    filled = {f["name"].lower() for f in table_schema["fields"] if set(f.get("metadata") or {}) & set(_FILLED_BY_TASKS)}
    partitions = {c.lower() for c in current.partition_columns}
    missing = [c for c in current.partition_columns if c.lower() not in given | filled]
    if missing:
        raise SchemaMismatchError(
            f"DELTA_PARTITION_COLUMN_NOT_FOUND: Partition column {missing[0]} not found in schema "
            f"[{', '.join(kept)}]; the data must hold the table's partition columns (a column of nulls without "
            "a type, void, is left out: cast it)"
        )
    if partitions and data["fields"] and given | filled <= partitions:
        dropped = len(kept) < len(data["fields"])
        raise SchemaMismatchError(
            f"DELTA_NON_PARTITION_COLUMN_ABSENT.{'NULL_TYPE_COLUMNS_DROPPED' if dropped else 'ALL_PARTITION_COLUMNS'}: "
            "Data written into Delta needs to contain at least one non-partitioned column; the data holds only the "
            f"partition columns {sorted(given)}" + (" once its void columns are dropped: cast them" if dropped else "")
        )


def _refuse_metadata_change_without_data_change(opts: WriteOptions, read_version: int) -> None:
    """Delta's ``DELTA_DATA_CHANGE_FALSE``: a write with ``dataChange=false`` only rearranges
    data, so it may not create the table or change its schema or partitioning."""
    if opts.data_change:
        return
    if read_version < 0:
        op = "Create a Delta table"
    elif opts.overwrite and opts.overwrite_schema:
        op = "Overwrite the Delta table schema or change the partition schema"
    else:
        op = "Change the Delta table schema"
    raise InvalidWriteOptionError(
        "DELTA_DATA_CHANGE_FALSE: Cannot change table metadata because the 'dataChange' option is set to "
        f"false. Attempted operation: '{op}'. Drop dataChange=false for this write"
    )


def _replace_where_on_data(opts: WriteOptions, metadata: Metadata) -> bool:
    """Whether ``replaceWhere`` names data columns (rows are replaced, not partitions); raises
    when Delta refuses the predicate: data columns while
    ``spark.databricks.delta.replaceWhere.dataColumns.enabled`` is false
    (``DELTA_NON_PARTITION_COLUMN_REFERENCE``), or with ``dataChange=false``
    (``DELTA_REPLACE_WHERE_WITH_FILTER_DATA_CHANGE_UNSET``)."""
    predicate = opts.replace_where
    if not predicate:
        return False
    if opts.overwrite:  # Delta resolves the predicate of an overwrite against the table
        refuse_unresolved_names(predicate, metadata, opts.resolver)
    if not opts.replace_where_data_columns:
        if opts.overwrite:  # Delta verifies the partition predicate of an overwrite only
            refuse_data_columns(predicate, metadata)
            names_data_columns(predicate, metadata)  # raises for one the commit cannot evaluate
        return False
    if not opts.overwrite and opts.data_change:
        return False  # an append replaces nothing (WriteIntoDelta: only SaveMode.Overwrite does)
    on_data = names_data_columns(predicate, metadata)
    if on_data and not opts.data_change:
        raise InvalidWriteOptionError(
            "DELTA_REPLACE_WHERE_WITH_FILTER_DATA_CHANGE_UNSET: 'replaceWhere' cannot be used with data filters "
            f"when 'dataChange' is set to false. Filters: {predicate}"
        )
    return on_data and opts.overwrite


def _replace_using(opts: WriteOptions, snapshot: Snapshot, data: dict[str, Any], streaming: bool) -> tuple[str, ...]:
    """The table's key columns of a ``replaceUsing`` overwrite (none for an append, which
    replaces nothing, as Delta's); raises for the options Delta refuses with it, for a
    stream, and for a table that does not exist (Delta's ``DELTA_PATH_DOES_NOT_EXIST``)."""
    if opts.replace_using is None:
        return ()
    refuse_incompatible_options(
        overwrite=opts.overwrite,
        replace_where=opts.replace_where is not None,
        partition_overwrite_option=opts.partition_overwrite.in_options,
        overwrite_schema=opts.overwrite_schema,
        data_change=opts.data_change,
    )
    if streaming:
        raise InvalidWriteOptionError("replaceUsing is a batch overwrite option; a stream cannot use it")
    if not opts.overwrite:
        return ()
    if snapshot.version < 0:
        raise InvalidWriteOptionError(
            f"DELTA_PATH_DOES_NOT_EXIST: {opts.path} doesn't exist, or is not a Delta table: replaceUsing replaces "
            "rows of an existing table"
        )
    return key_columns(opts.replace_using, snapshot.metadata, data)


def _overwritten_metadata(opts: WriteOptions, current: Metadata, data: dict[str, Any]) -> Metadata:
    """``overwriteSchema``: the data's schema and partitioning as a new table's (no
    ``partitionBy``: unpartitioned, as Delta's ``ImplicitMetadataOperation`` takes the
    writer's partition columns), keeping the table's id, creation time, name, description
    and properties (the write's are ignored, as Delta's ``txn.metadata.copy`` ignores them)."""
    _log_ignored_properties(opts, current)
    fresh = _new_table_metadata(
        replace(opts, table_properties=dict(current.configuration)), data, old=current, creating=False
    )
    return replace(
        fresh,
        id=current.id,
        created_time=current.created_time,
        name=current.name,
        description=current.description,
    )


def _schema_or_partitioning_changed(fresh: Metadata, current: Metadata) -> bool:
    """Delta's ``isNewSchema || isPartitioningChanged`` for ``overwriteSchema``: without
    either the write is a plain overwrite and commits no metadata (a concurrent writer then
    sees no metadata change). The schemas compare as Delta's ``StructType`` equality: names,
    order, types, nullability and field metadata. As Delta, the table's stored schema is
    compared with the data's without column mapping metadata, so a column-mapped table's
    always changes (Delta then assigns its columns anew)."""
    data_schema = schemas.without_column_mapping_metadata(json.loads(fresh.schema_string))
    same_schema = data_schema == json.loads(current.schema_string)
    return not same_schema or list(fresh.partition_columns) != list(current.partition_columns)


def _merged_metadata(current: Metadata, merged: dict[str, Any]) -> Metadata:
    """``mergeSchema``: ``current`` with the merged schema (new columns get column-mapping ids
    and physical names when the table maps columns)."""
    config = dict(current.configuration)
    mode = current.properties.column_mapping_mode
    if mode != "none":
        merged, max_id = schemas.assign_column_mapping(merged, current.properties.column_mapping_max_id)
        config[COLUMN_MAPPING_MAX_ID] = str(max_id)
    return replace(current, schema_string=json.dumps(merged, separators=(",", ":")), configuration=config)


def _dynamic_partition_overwrite(opts: WriteOptions, metadata: Metadata) -> bool:
    """Delta's ``WriteIntoDelta.useDynamicPartitionOverwriteMode``, read in Delta's order for
    every write to a partitioned table (an append too: its errors are Delta's there as well);
    only an overwrite replaces partitions. Refused with a ``replaceWhere`` given together with
    the ``partitionOverwriteMode`` option (the session's mode gives way to it) and with
    ``overwriteSchema``."""
    mode = opts.partition_overwrite
    if not metadata.partition_columns:
        dynamic = False  # Delta ignores the mode on an unpartitioned table: a full overwrite
    elif opts.replace_where:
        if mode.in_options and mode.is_dynamic():
            raise InvalidWriteOptionError(
                "replaceWhere cannot be used with partitionOverwriteMode=dynamic: both say which data to overwrite "
                "(Delta's DELTA_REPLACE_WHERE_WITH_DYNAMIC_PARTITION_OVERWRITE); drop one of them"
            )
        dynamic = False
    else:
        dynamic = mode.is_dynamic()
    if dynamic and opts.overwrite and opts.overwrite_schema:
        raise InvalidWriteOptionError(
            "overwriteSchema cannot be used with partitionOverwriteMode=dynamic "
            "(Delta's DELTA_OVERWRITE_SCHEMA_WITH_DYNAMIC_PARTITION_OVERWRITE)"
        )
    if opts.overwrite and not opts.replace_where and not dynamic and mode.null_intolerant is not None:
        raise InvalidWriteOptionError(
            f"DELTA_ILLEGAL_OPTION: Invalid value '{str(mode.null_intolerant).lower()}' for option "
            f"'{NULL_INTOLERANT_EQUALITY_OPTION}', This option should be specified only in Dynamic Partition "
            "Overwrite mode."
        )
    return dynamic and opts.overwrite


def _write_metrics(adds: Sequence[AddFile], cdcs: Sequence[AddCDCFile], removed: Sequence[AddFile]) -> dict[str, str]:
    rows = sum(a.num_records() or 0 for a in adds)
    metrics = {
        "numFiles": str(len(adds)),
        "numOutputRows": str(rows),
        "numOutputBytes": str(sum(a.size for a in adds)),
    }
    if cdcs:
        metrics["numAddedChangeFiles"] = str(len(cdcs))
    if removed:
        metrics["numRemovedFiles"] = str(len(removed))
        metrics["numRemovedBytes"] = str(sum(f.size for f in removed))
    return metrics


def _partition_replace_metrics(removed: Sequence[AddFile]) -> dict[str, str]:
    """A replaceWhere on partition columns removes whole files, as Delta's metadata-only
    delete: the deleted rows are their row counts (left out when one has none), none copied."""
    deleted = logical_records(removed) if removed else 0
    metrics = {"numCopiedRows": "0"}
    if deleted is not None:
        metrics["numDeletedRows"] = str(deleted)
    return metrics


def commit_write(plan: WritePlan, action_lines: Sequence[str], streaming: StreamingInfo | None = None) -> int | None:
    """Commit the tasks' files in one transaction; ``None`` when nothing was committed.

    When the commit certainly did not land the written files are deleted (best effort) and
    the error propagates: the table is as it was. When its outcome is unknown the files are
    kept and :class:`WriteOutcomeUnknownError` is raised.
    """
    try:
        prepared = _prepare_commit(plan, action_lines, streaming)
    except BaseException:
        delete_files(plan.spec, action_lines)
        raise
    if prepared is None:
        delete_files(plan.spec, action_lines)
        return None
    if not prepared.actions and plan.new_metadata is None:
        # Delta's WriteIntoDelta commits with commitIfNeeded: a write of nothing is recorded
        # only where Delta records an empty commit (skipRecordingEmptyCommits=false, or a
        # WriteSerializable table, where a WRITE cannot downgrade to SnapshotIsolation)
        empty = prepared.txn.commit_if_needed([], prepared.operation)
        if empty is None:
            log.info("nothing to commit to %s", prepared.txn.delta_log.table_uri)
        return empty
    lines = [*action_lines, *prepared.rewritten]
    version = commit_files(prepared.txn, prepared.actions, prepared.operation, plan.spec, lines)
    log.info("committed version %d to %s (%s)", version, prepared.txn.delta_log.table_uri, prepared.operation.name)
    return version


def commit_files(
    txn: OptimisticTransaction, actions: Sequence[Action], operation: Operation, spec: WriteSpec, lines: Sequence[str]
) -> int | None:
    """``txn.commit_if_needed(actions, operation)`` for actions that add the files written as
    ``lines``: Delta's WRITE, DELETE, UPDATE and MERGE all commit with ``commitIfNeeded``, so a
    command left with nothing to commit (a MERGE whose clauses acted on no row) records no empty
    commit on a ``Serializable`` table; the version, or None when nothing was committed.

    The files are deleted only when the commit certainly did not land
    (:func:`~deltalog.txn.commit.commit_errors.commit_certainly_failed`); on an unknown outcome they
    are kept, since the version may exist and name them, and :class:`WriteOutcomeUnknownError`
    is raised from the engine's error. A DML command made idempotent by the session's
    ``txnAppId``/``txnVersion`` commits its ``SetTransaction`` with them."""
    actions = _untag_high_water_marks(txn, actions)
    try:
        version = txn.commit_if_needed([*pending_set_transactions(txn), *actions], operation)
    except BaseException as exc:
        if commit_certainly_failed(exc, txn.may_have_landed):
            delete_files(spec, lines)
            raise
        adds, cdcs = file_actions(lines)
        num_files = len(adds) + len(cdcs)
        log.error(
            "the commit to %s (txnId %s) has an unknown outcome; keeping its %d written files",
            txn.delta_log.table_uri,
            txn.txn_id,
            num_files,
        )
        raise WriteOutcomeUnknownError(txn.delta_log.table_uri, txn.txn_id, num_files, exc) from exc
    return version


def _untag_high_water_marks(txn: OptimisticTransaction, actions: Sequence[Action]) -> list[Action]:
    """``actions`` without the identity high-water marks the write tasks tagged their adds
    with, which move the marks of the transaction's metadata instead (a MERGE that generated
    identity values)."""
    adds, marks = pop_high_water_marks([a for a in actions if isinstance(a, AddFile)])
    if not marks:
        return list(actions)
    txn.update_identity_high_water_marks(marks)
    untagged = iter(adds)
    return [next(untagged) if isinstance(a, AddFile) else a for a in actions]


def abort_write(plan: WritePlan, action_lines: Sequence[str]) -> int:
    """Spark's ``abort``, after failed tasks or a failed ``commit``: delete the written files
    unless a commit after the read version names them (a commit reported as failed that
    landed) or the log cannot be read to find out. Returns how many files were deleted."""
    from deltalog.txn.protocol.actions import decode_path

    adds, cdcs = file_actions(action_lines)
    paths = {decode_path(a.path) for a in adds} | {decode_path(c.path) for c in cdcs}
    if not paths:
        return 0
    try:
        delta_log = open_log(plan.options.path, plan.options.storage_options, plan.options.logstore)
        for version in delta_log.list_commit_versions(plan.read_version + 1):
            for action in delta_log.read_commit(version):
                if isinstance(action, (AddFile, AddCDCFile)) and decode_path(action.path) in paths:
                    log.warning(
                        "abort of a write to %s: version %d commits its files, keeping them", plan.options.path, version
                    )
                    return 0
    except Exception:
        log.warning(
            "abort of a write to %s: cannot read the log to tell whether its commit landed; keeping its %d files",
            plan.options.path,
            len(paths),
            exc_info=True,
        )
        return 0
    return delete_files(plan.spec, action_lines)


def _open_transaction(delta_log: DeltaLog, plan: WritePlan) -> OptimisticTransaction:
    """The write's transaction, opened again on its read snapshot (not the latest)."""
    opts = plan.options
    snapshot = delta_log.snapshot(plan.read_version) if plan.read_version >= 0 else delta_log.empty_snapshot()
    return start_transaction(delta_log, user_metadata=opts.user_metadata, snapshot=snapshot)


@dataclass(frozen=True)
class _PreparedCommit:
    """A write's commit, ready to run: its transaction, actions and operation, and the action
    lines of the files a ``replaceWhere`` on data columns rewrote."""

    txn: OptimisticTransaction
    actions: list[Action]
    operation: Operation
    rewritten: list[str]


def _prepare_commit(
    plan: WritePlan, action_lines: Sequence[str], streaming: StreamingInfo | None
) -> _PreparedCommit | None:
    """The write's transaction, reopened, with what it read, its metadata change and its
    actions; None when there is nothing to commit. Raises before anything is written to the
    log when the write cannot commit (having deleted any file it rewrote)."""
    opts = plan.options
    if plan.skip:
        return None
    adds, cdcs = file_actions(action_lines)
    adds, high_water_marks = pop_high_water_marks(adds)
    delta_log = open_log(opts.path, opts.storage_options, opts.logstore)
    if streaming is None:
        txn = _open_transaction(delta_log, plan)
        if plan.reads_whole_table:
            txn.read_whole_table()
    else:
        read = None if streaming.read_version is None else delta_log.snapshot(streaming.read_version)
        txn = start_transaction(delta_log, user_metadata=opts.user_metadata, snapshot=read)
    now = int(time.time() * 1000)
    actions: list[Action] = []
    app_id, app_version = opts.txn_app_id, opts.txn_version
    if streaming is not None:
        app_id, app_version = streaming.app_id, streaming.batch_id
    if app_id is not None and app_version is not None:
        done = txn.txn_version(app_id)
        if done is not None and done >= app_version:
            log.info("%s version %s was already committed to %s; skipping", app_id, app_version, delta_log.table_uri)
            return None
        actions.append(SetTransaction(app_id=app_id, version=app_version, last_updated=now))
    if streaming is None:
        if plan.new_metadata is not None:
            txn.update_metadata(plan.new_metadata, creating_table=_recreates(opts, plan.read_metadata))
        if opts.overwrite and not opts.replace_where and not plan.replace_using:
            actions.extend(_cleared_clustering(txn))
    else:
        _stream_metadata(txn, plan)
    txn.update_identity_high_water_marks(high_water_marks)
    _declare_constraints_checked(plan, txn, delta_log.table_uri)
    rewritten: list[str] = []
    rewrite_metrics: dict[str, str] = {}
    if streaming is None and opts.overwrite and plan.replace_where_on_data:
        # last: it writes files (and deletes them itself when it fails)
        removed, rewritten, rewrite_metrics = rewrite_outside(txn, opts.replace_where or "", plan.spec)
    elif streaming is None and plan.replace_using:  # as Delta's EXISTS data filter: every file is read
        keys = written_keys(txn, adds, plan.replace_using)
        removed, rewritten, rewrite_metrics = rewrite_matching(txn, txn.filter_files(), matcher(keys), plan.spec)
    else:
        removed = _read_and_remove(plan, txn, adds, streaming)
    copies, deletes = file_actions(rewritten)
    actions.extend(f.remove(now, data_change=opts.data_change) for f in removed)
    actions.extend([*adds, *copies, *cdcs, *deletes])
    metrics = {**_write_metrics([*adds, *copies], [*cdcs, *deletes], removed), **rewrite_metrics}
    if streaming is None and opts.overwrite and opts.replace_where and not plan.replace_where_on_data:
        metrics.update(_partition_replace_metrics(removed))
    if streaming is None and not opts.overwrite and opts.replace_where and opts.replace_where_data_columns:
        metrics["numCopiedRows"] = "0"  # Delta's registerInsertReplaceMetrics runs for an append too
    return _PreparedCommit(txn, actions, _operation(plan, streaming, metrics), rewritten)


def _cleared_clustering(txn: OptimisticTransaction) -> list[Action]:
    """Delta's ``getNewDomainMetadata`` for an overwrite (a DataFrame write replacing the
    table, not a ``replaceWhere`` or ``replaceUsing``): a table replaced without ``CLUSTER BY``
    keeps the clustering feature and has no clustering column."""
    if not txn.table_exists:
        return []
    return list(cleared_clustering_domain(txn.snapshot.domain_metadata))


def _operation(plan: WritePlan, streaming: StreamingInfo | None, metrics: dict[str, str]) -> Operation:
    """The commit's operation: ``STREAMING UPDATE`` for a micro-batch, else ``WRITE``."""
    from deltalog.txn.commit.operations import StreamingUpdate, Write

    opts = plan.options
    if streaming is not None:
        return StreamingUpdate(
            output_mode=streaming.output_mode, query_id=streaming.app_id, epoch_id=streaming.batch_id
        )
    if opts.table_creation is not None:
        return _table_definition(plan, metrics)
    return Write(
        mode="Overwrite" if opts.overwrite else "Append",
        partition_by=list(plan.spec.partition_columns) if opts.partition_by is not None else None,
        predicate=opts.replace_where_text,
        replace_using_columns=opts.replace_using_option if plan.replace_using else None,
        dynamic_partition_overwrite=opts.partition_overwrite.recorded(),
        can_overwrite_schema=opts.overwrite_schema,
        can_merge_schema=opts.merge_schema,
        user_metrics=metrics,
    )


def _table_definition(plan: WritePlan, metrics: dict[str, str]) -> Operation:
    """``CREATE TABLE AS SELECT`` or ``(CREATE OR) REPLACE TABLE AS SELECT`` (the mode's name,
    whether a table was there or not, as Delta records it), with the write's metrics."""
    from deltalog.txn.commit.operations import CreateTable, ReplaceTable

    metadata = plan.new_metadata or plan.read_metadata
    assert metadata is not None  # a table creation always has metadata
    definition: dict[str, Any] = {
        "partition_by": tuple(metadata.partition_columns),
        "properties": dict(metadata.configuration),
        "user_metrics": metrics,
    }
    mode = plan.options.table_creation
    if mode == "create":
        return CreateTable(**definition, as_select=True)
    return ReplaceTable(**definition, or_create=mode == "createOrReplace", as_select=True)


def _read_and_remove(
    plan: WritePlan, txn: OptimisticTransaction, adds: Sequence[AddFile], streaming: StreamingInfo | None
) -> list[AddFile]:
    """Record what the write read (for the conflict checker) and return the files it removes:
    always files of the transaction's read snapshot, never files committed since."""
    opts = plan.options
    if streaming is not None:
        if streaming.output_mode != "Complete":
            return []
        txn.read_whole_table()
        removed: list[AddFile] = txn.filter_files()
        return removed
    if not opts.overwrite:
        return []
    if opts.replace_where:
        return _replaced_partitions(plan, txn, adds)
    if plan.dynamic_partition_overwrite:
        if opts.partition_overwrite.null_intolerant:  # Delta's useNullIntolerantEqualityWithDPO
            adds = [a for a in adds if all(v is not None for v in a.partition_values.values())]
        # Delta's txn.filterFiles(addFiles): the partitions are read, not the files
        return txn.filter_files_in_partitions(adds)
    everything: list[AddFile] = txn.filter_files()
    return everything


def _layout(metadata: Metadata) -> tuple[Any, ...]:
    """What the written files depend on: the table, its schema, partitioning, column mapping
    and the constraints the tasks checked."""
    mode = metadata.properties.column_mapping_mode
    return (
        metadata.id,
        without_high_water_marks(metadata).schema_string,  # moved by each batch that generates identity values
        tuple(metadata.partition_columns),
        mode,
        frozenset(table_constraints(metadata)),
    )


def _stream_metadata(txn: OptimisticTransaction, plan: WritePlan) -> None:
    """A micro-batch's files were written against the metadata planned when the query
    started: commit them only if the table still has it (or the planned change), else raise
    the engine's :class:`MetadataChangedError`."""
    current = txn.snapshot.metadata if txn.table_exists else None
    target = plan.new_metadata or plan.read_metadata
    if current is not None and target is not None and _layout(current) == _layout(target):
        return
    if plan.new_metadata is not None and current == plan.read_metadata:
        txn.update_metadata(plan.new_metadata)
        return
    raise MetadataChangedError(
        "the table's schema, partitioning, column mapping or constraints changed after this streaming "
        "query planned its writes; restart the query",
        table=txn.delta_log.table_uri,
    )


def _declare_constraints_checked(plan: WritePlan, txn: OptimisticTransaction, where: str) -> None:
    """Tell the engine the tasks checked the table's constraints, after making sure the
    constraints the transaction commits with are the ones the tasks checked. (A constraint
    added after the read version is a metadata change the conflict checker refuses.)"""
    from deltalog.contrib.spark.constraints import UncheckableConstraintsError

    metadata = txn.metadata
    current = set(table_constraints(metadata)) if metadata is not None else set()
    unchecked = current - set(plan.spec.constraints) - set(plan.spark_checked)
    if unchecked:
        raise UncheckableConstraintsError(
            f"constraints were added to {where} during the write ("
            + "; ".join(f"{c.name}: {c.expression}" for c in sorted(unchecked, key=lambda c: c.name))
            + "); the written rows were not checked against them, so nothing was committed. Run the write again"
        )
    if current or plan.spec.default_expressions:  # the tasks also checked generated columns
        txn.mark_constraints_checked()


def _replaced_partitions(plan: WritePlan, txn: OptimisticTransaction, adds: Sequence[AddFile]) -> list[AddFile]:
    """The files of the read snapshot a ``replaceWhere`` on partition columns replaces: those
    its partition filters select or, for a predicate they cannot express (an ``OR``, a
    function of a partition column), those whose partition values satisfy it, read through the
    filters of its top-level ``AND`` terms (recorded as the transaction's read). Unless its
    constraint check is off, every written file must satisfy its terms naming a column."""
    from deltalog.contrib.spark.partition_rows import files_satisfying
    from deltalog.contrib.spark.replace_where import (
        checked_terms,
        compiled_predicate,
        files_in_partition_groups,
        partition_filter_groups,
    )

    opts = plan.options
    predicate = opts.replace_where or ""
    metadata = plan.new_metadata or txn.snapshot.metadata
    types = schemas.top_level_types(json.loads(metadata.schema_string))
    check = opts.replace_where_constraint_check or not opts.replace_where_data_columns
    try:
        filters = at_session_time_zone(parse_partition_predicate(predicate), types, opts.session_time_zone)
    except DeltaAnalysisError:
        filters = []
    lowered = {c.lower(): t for c, t in types.items()}
    if not filters or not all(exact_partition_filter(lowered.get(c.lower(), ""), op, v) for c, op, v in filters):
        # not simple terms, or terms Spark compares after a cast (string p = 1): the evaluator
        if check:  # the terms naming a column, as Delta's extractConstraints
            terms = checked_terms(predicate, opts.session_time_zone)
            outside = {f.path: f for t in terms for f in files_satisfying(t, metadata, adds, holds=False)}
            _refuse_outside(list(outside.values()), plan)
        read = partition_filter_groups(predicate, metadata)
        compiled = compiled_predicate(predicate, opts.session_time_zone)
        return files_satisfying(compiled, metadata, files_in_partition_groups(txn, read))
    if check:
        _check_replace_where(adds, filters, plan, txn)
    replaced: list[AddFile] = txn.filter_files(filters)
    return replaced


def _check_replace_where(
    adds: Sequence[AddFile], filters: Sequence[PartitionFilter], plan: WritePlan, txn: OptimisticTransaction
) -> None:
    from deltalog.txn.protocol.column_mapping import physical_partition_filters
    from deltalog.txn.protocol.partition_filters import PartitionPredicate, partition_column_types

    metadata = plan.new_metadata or txn.snapshot.metadata
    types = partition_column_types(metadata.schema_string, metadata.partition_columns)
    predicate = PartitionPredicate(*physical_partition_filters(metadata, filters, types))
    _refuse_outside([add for add in adds if not predicate.matches(add.partition_values)], plan)


def _refuse_outside(outside: Sequence[AddFile], plan: WritePlan) -> None:
    """Delta's DELTA_REPLACE_WHERE_MISMATCH, for the rows of the written files ``outside`` the
    predicate (none: nothing to refuse)."""
    if outside:
        rows = sum(add.num_records() or 0 for add in outside)
        raise ReplaceWhereMismatchError(plan.options.replace_where or "", rows, dict(outside[0].partition_values))
