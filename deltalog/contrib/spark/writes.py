"""The driver side of a write: plan it (schema, partitioning, layout) and commit it.

:func:`plan_write` runs when Spark asks the data source for a writer: it reads the table's
latest snapshot, decides whether the write creates the table, changes its schema
(``mergeSchema`` / ``overwriteSchema``) or only adds data, and returns a picklable
:class:`WritePlan` whose :class:`~deltalog.contrib.spark.files.WriteSpec` the tasks use.
:func:`commit_write` runs once all tasks succeeded: it opens a transaction and commits
every task's files in ONE commit (``WRITE`` or ``STREAMING UPDATE``), with the removes of
an overwrite, the ``txn`` action of an idempotent or streaming write, and the new
metadata when the table is created or its schema changes.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from deltalog.contrib.spark import schemas
from deltalog.contrib.spark.constraints import plan_constraints
from deltalog.contrib.spark.errors import (
    InvalidWriteOptionError,
    SchemaMismatchError,
    TableAlreadyExistsError,
)
from deltalog.contrib.spark.files import CDC_TYPE_COLUMN, WriteSpec, delete_files
from deltalog.contrib.spark.options import WriteOptions
from deltalog.contrib.spark.predicates import parse_partition_predicate
from deltalog.contrib.spark.tablelog import open_log, start_transaction
from deltalog.txn.actions import (
    Action,
    AddCDCFile,
    AddFile,
    Metadata,
    SetTransaction,
    parse_line,
)
from deltalog.txn.constraints import Constraint

__all__ = ["StreamingInfo", "WritePlan", "commit_write", "plan_write"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamingInfo:
    """A micro-batch: the query's application id, the batch id and the output mode."""

    app_id: str
    batch_id: int
    output_mode: str  # "Append" or "Complete"


@dataclass(frozen=True)
class WritePlan:
    options: WriteOptions
    spec: WriteSpec
    #: True: write nothing, commit nothing (ignore mode on an existing table, or an
    #: idempotent write that already happened).
    skip: bool
    #: The metadata to commit (create / schema change), or None to keep the table's.
    new_metadata: Metadata | None
    #: The table version and metadata id the plan was made against (-1: no table).
    read_version: int
    read_metadata_id: str | None
    data_schema: str


def _spark_schema_dict(schema_json: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(schema_json)
    return value


def _check_names(data: dict[str, Any], partition_by: Sequence[str]) -> None:
    names = [f["name"] for f in data["fields"]]
    lowered = [n.lower() for n in names]
    dupes = sorted({n for n in names if lowered.count(n.lower()) > 1})
    if dupes:
        raise SchemaMismatchError(f"duplicate column names in the data: {', '.join(dupes)}")
    for reserved in schemas.CDF_RESERVED_COLUMNS[1:]:
        if reserved in lowered:
            raise SchemaMismatchError(f"{reserved} is a reserved column name (change data feed); rename it")
    missing = [c for c in partition_by if c.lower() not in lowered]
    if missing:
        raise InvalidWriteOptionError(
            f"partitionBy names columns that are not in the data: {', '.join(missing)}; data columns are "
            f"{', '.join(names)}"
        )
    if partition_by and len(partition_by) >= len([n for n in lowered if n != CDC_TYPE_COLUMN]):
        raise InvalidWriteOptionError("cannot partition by every column: at least one data column must remain")


def _canonical_partitions(data: dict[str, Any], partition_by: Sequence[str]) -> tuple[str, ...]:
    by_lower = {f["name"].lower(): f["name"] for f in data["fields"]}
    return tuple(by_lower[c.lower()] for c in partition_by)


def _new_table_metadata(opts: WriteOptions, data: dict[str, Any]) -> Metadata:
    partition_by = opts.partition_by or ()
    _check_names(data, partition_by)
    fields = [f for f in data["fields"] if f["name"] != CDC_TYPE_COLUMN]
    schema = schemas.as_nullable({**data, "fields": fields})
    config = dict(opts.table_properties)
    mode = config.get("delta.columnMapping.mode", "none").lower()
    if mode not in ("none", "name", "id"):
        raise InvalidWriteOptionError(f"delta.columnMapping.mode must be none, name or id, got {mode!r}")
    if mode != "none":
        schema, max_id = schemas.assign_column_mapping(schema, 0)
        config["delta.columnMapping.maxColumnId"] = str(max_id)
    return Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(schema, separators=(",", ":")),
        partition_columns=_canonical_partitions(data, partition_by),
        configuration=config,
        created_time=int(time.time() * 1000),
    )


def _spec_for(
    opts: WriteOptions,
    table_uri: str,
    store_spec: Any,
    metadata: Metadata,
    constraints: tuple[Constraint, ...] = (),
) -> WriteSpec:
    config = metadata.configuration
    schema = json.loads(metadata.schema_string)
    mode = config.get("delta.columnMapping.mode", "none").lower()
    types = schemas.top_level_types(schema)
    indexed = int(config.get("delta.dataSkippingNumIndexedCols", "32"))
    dv = config.get("delta.enableDeletionVectors", "false").lower() == "true"
    return WriteSpec(
        store=store_spec,
        table_uri=table_uri,
        partition_columns=tuple(metadata.partition_columns),
        partition_types={c: types.get(c, "string") for c in metadata.partition_columns},
        num_indexed_cols=indexed,
        max_records_per_file=opts.max_records_per_file,
        physical_names=schemas.physical_names(schema, mode),
        field_ids=schemas.field_ids(schema, mode),
        tight_bounds=True if dv else None,
        data_change=opts.data_change,
        constraints=constraints,
    )


def plan_write(opts: WriteOptions, data_schema_json: str, streaming: bool = False) -> WritePlan:
    """Decide what the write does; raises before any file is written when it cannot work."""
    delta_log = open_log(opts.path, opts.storage_options, opts.logstore)
    snapshot = delta_log.update()
    data = _spark_schema_dict(data_schema_json)
    store_spec = delta_log.store.spec()
    skip = False
    if snapshot.version < 0:
        metadata = _new_table_metadata(opts, data)
        new_metadata: Metadata | None = metadata
        read_id = None
    else:
        current = snapshot.metadata
        read_id = current.id
        new_metadata = None
        if opts.save_mode == "errorifexists":
            raise TableAlreadyExistsError(
                f"a Delta table already exists at {delta_log.table_uri} (saveMode=errorifexists); "
                "use mode('append') or mode('overwrite')"
            )
        if opts.save_mode == "ignore":
            skip = True
        if opts.txn_app_id is not None and opts.txn_version is not None:
            done = snapshot.txn_version(opts.txn_app_id)
            if done is not None and done >= opts.txn_version:
                log.info(
                    "skipping the write to %s: application %s already committed version %s (asked %s)",
                    delta_log.table_uri,
                    opts.txn_app_id,
                    done,
                    opts.txn_version,
                )
                skip = True
        table_schema = json.loads(current.schema_string)
        if opts.overwrite and opts.overwrite_schema and not opts.replace_where:
            fresh = _new_table_metadata(
                replace(
                    opts,
                    partition_by=opts.partition_by
                    if opts.partition_by is not None
                    else tuple(current.partition_columns),
                    table_properties={**current.configuration, **opts.table_properties},
                ),
                data,
            )
            new_metadata = replace(
                fresh,
                id=current.id,
                created_time=current.created_time,
                name=current.name,
                description=current.description,
            )
        else:
            if opts.partition_by is not None and [c.lower() for c in opts.partition_by] != [
                c.lower() for c in current.partition_columns
            ]:
                raise InvalidWriteOptionError(
                    f"the table is partitioned by {list(current.partition_columns)}, the write asks for "
                    f"{list(opts.partition_by)}; drop partitionBy, or overwrite with overwriteSchema=true"
                )
            data_fields = {**data, "fields": [f for f in data["fields"] if f["name"] != CDC_TYPE_COLUMN]}
            if not schemas.schemas_equal(table_schema, data_fields):
                if opts.merge_schema:
                    merged = schemas.merge_schemas(table_schema, data_fields)
                    config = dict(current.configuration)
                    mode = config.get("delta.columnMapping.mode", "none").lower()
                    if mode != "none":
                        merged, max_id = schemas.assign_column_mapping(
                            merged, int(config.get("delta.columnMapping.maxColumnId", "0"))
                        )
                        config["delta.columnMapping.maxColumnId"] = str(max_id)
                    new_metadata = replace(
                        current, schema_string=json.dumps(merged, separators=(",", ":")), configuration=config
                    )
                else:
                    schemas.check_write_compatible(table_schema, data_fields)
            if opts.table_properties and new_metadata is None:
                changed = {k: v for k, v in opts.table_properties.items() if current.configuration.get(k) != v}
                if changed:
                    log.info("ignoring table properties %s on a write to an existing table", sorted(changed))
        metadata = new_metadata or current
    if opts.replace_where:
        filters = parse_partition_predicate(opts.replace_where)
        part_lower = {c.lower() for c in metadata.partition_columns}
        bad = [c for c, _, _ in filters if c.lower() not in part_lower]
        if bad:
            raise InvalidWriteOptionError(
                f"replaceWhere may only use partition columns {list(metadata.partition_columns)}; it uses {bad}"
            )
    constraints = () if skip else plan_constraints(metadata, delta_log.table_uri)
    spec = _spec_for(opts, delta_log.table_uri, store_spec, metadata, constraints)
    return WritePlan(
        options=opts,
        spec=spec,
        skip=skip,
        new_metadata=new_metadata,
        read_version=snapshot.version,
        read_metadata_id=read_id,
        data_schema=data_schema_json,
    )


def _file_actions(lines: Sequence[str]) -> tuple[list[AddFile], list[AddCDCFile]]:
    adds: list[AddFile] = []
    cdcs: list[AddCDCFile] = []
    for line in lines:
        action = parse_line(line)
        if isinstance(action, AddFile):
            adds.append(action)
        elif isinstance(action, AddCDCFile):
            cdcs.append(action)
    return adds, cdcs


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


def commit_write(plan: WritePlan, action_lines: Sequence[str], streaming: StreamingInfo | None = None) -> int | None:
    """Commit the tasks' files in one transaction; ``None`` when nothing was committed.

    On any error the written files are deleted (best effort) and the error propagates:
    a failed write leaves the table as it was.
    """
    try:
        return _commit(plan, action_lines, streaming)
    except BaseException:
        delete_files(plan.spec, action_lines)
        raise


def _commit(plan: WritePlan, action_lines: Sequence[str], streaming: StreamingInfo | None) -> int | None:
    from deltalog.txn.operations import StreamingUpdate, Write

    opts = plan.options
    if plan.skip:
        delete_files(plan.spec, action_lines)
        return None
    adds, cdcs = _file_actions(action_lines)
    delta_log = open_log(opts.path, opts.storage_options, opts.logstore)
    txn = start_transaction(delta_log, user_metadata=opts.user_metadata)
    now = int(time.time() * 1000)
    actions: list[Action] = []
    app_id, app_version = opts.txn_app_id, opts.txn_version
    if streaming is not None:
        app_id, app_version = streaming.app_id, streaming.batch_id
    if app_id is not None and app_version is not None:
        done = txn.txn_version(app_id)
        if done is not None and done >= app_version:
            log.info(
                "%s version %s was already committed to %s; skipping",
                app_id,
                app_version,
                delta_log.table_uri,
            )
            delete_files(plan.spec, action_lines)
            return None
        actions.append(SetTransaction(app_id=app_id, version=app_version, last_updated=now))
    if plan.read_version < 0 and txn.table_exists:
        if opts.save_mode == "ignore":
            delete_files(plan.spec, action_lines)
            return None
        if opts.save_mode == "errorifexists":
            raise TableAlreadyExistsError(f"a Delta table was created at {delta_log.table_uri} during the write")
    if txn.table_exists and plan.read_metadata_id is not None and txn.snapshot.metadata.id != plan.read_metadata_id:
        raise SchemaMismatchError(
            f"the table at {delta_log.table_uri} was replaced during the write; run the write again"
        )
    if plan.new_metadata is not None:
        if txn.table_exists and plan.read_version < 0:
            current = txn.snapshot.metadata
            if current.schema_string != plan.new_metadata.schema_string or tuple(current.partition_columns) != tuple(
                plan.new_metadata.partition_columns
            ):
                raise SchemaMismatchError(
                    f"another writer created the table at {delta_log.table_uri} with a different schema "
                    "during this write; run the write again"
                )
        else:
            txn.update_metadata(plan.new_metadata)
    removed: list[AddFile] = []
    complete = streaming is not None and streaming.output_mode == "Complete"
    if (opts.overwrite and streaming is None) or complete:
        if opts.replace_where:
            filters = parse_partition_predicate(opts.replace_where)
            removed = txn.filter_files(filters) if txn.table_exists else []
            _check_replace_where(adds, filters, plan, txn)
        else:
            if complete:
                txn.read_whole_table()
            removed = txn.filter_files() if txn.table_exists else []
        actions.extend(f.remove(now, data_change=opts.data_change) for f in removed)
    actions.extend(adds)
    actions.extend(cdcs)
    partition_by = list(plan.spec.partition_columns) if opts.partition_by is not None else None
    metrics = _write_metrics(adds, cdcs, removed)
    operation: Any
    if streaming is not None:
        operation = StreamingUpdate(
            output_mode=streaming.output_mode, query_id=streaming.app_id, epoch_id=streaming.batch_id
        )
    else:
        operation = Write(
            mode="Overwrite" if opts.overwrite else "Append",
            partition_by=partition_by,
            predicate=opts.replace_where,
            user_metrics=metrics,
        )
    if not actions and plan.new_metadata is None:
        log.info("nothing to commit to %s", delta_log.table_uri)
        return None
    _declare_constraints_checked(plan, txn, delta_log.table_uri)
    version: int = txn.commit(actions, operation)
    log.info(
        "committed version %d to %s: %s files added, %s removed (%s)",
        version,
        delta_log.table_uri,
        len(adds),
        len(removed),
        operation.name,
    )
    return version


def _declare_constraints_checked(plan: WritePlan, txn: Any, where: str) -> None:
    """Tell the engine the tasks checked the table's constraints, after making sure the
    constraints at commit time are the ones the tasks checked (one added meanwhile was not)."""
    from deltalog.contrib.spark.constraints import UncheckableConstraintsError
    from deltalog.txn.constraints import table_constraints

    metadata = (
        plan.new_metadata if plan.new_metadata is not None else (txn.snapshot.metadata if txn.table_exists else None)
    )
    current = set(table_constraints(metadata)) if metadata is not None else set()
    unchecked = current - set(plan.spec.constraints)
    if unchecked:
        raise UncheckableConstraintsError(
            f"constraints were added to {where} during the write ("
            + "; ".join(f"{c.name}: {c.expression}" for c in sorted(unchecked, key=lambda c: c.name))
            + "); the written rows were not checked against them, so nothing was committed. Run the write again"
        )
    if current:
        txn.mark_constraints_checked()


def _check_replace_where(adds: Sequence[AddFile], filters: Any, plan: WritePlan, txn: Any) -> None:
    from deltalog.txn.partition_filters import PartitionPredicate, partition_column_types

    metadata = plan.new_metadata or txn.snapshot.metadata
    predicate = PartitionPredicate(filters, partition_column_types(metadata.schema_string, metadata.partition_columns))
    for add in adds:
        if not predicate.matches(add.partition_values):
            raise InvalidWriteOptionError(
                f"data written with replaceWhere={plan.options.replace_where!r} does not match it: "
                "a file has "
                f"partition values {add.partition_values}; filter the DataFrame by the same predicate"
            )
