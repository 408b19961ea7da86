"""CONVERT TO DELTA: make a directory of Parquet files a Delta table, in one commit.

As Delta's ``ConvertToDeltaCommand``: list the Parquet files under the directory (paths
with a component starting with ``.`` or ``_`` are skipped), take each file's partition
values from its Hive-style ``column=value`` directories (they must name exactly the
partition schema's columns, and each value must parse as its column's type), take the
data schema from the footers (merged: a column one file lacks is added, one two files type
differently is refused), then commit the metadata and one ``add`` per file with ``commit_large``, so the actions
are streamed rather than held. Every column is nullable, as Delta's ``asNullable`` makes it.

Statistics are collected unless asked not to (Delta's ``NO STATISTICS``), for the columns
the table's properties name, from the footers' row-group statistics
(:meth:`~deltalog.txn.protocol.file_stats.StatsCollector.update_from_footer`: what a footer
cannot vouch for, such as float bounds, is left out), where Delta reads the rows. Only
footers are read, never the rows: each twice, once for the schema and once, against the
table's schema, for the statistics. The table's properties are the caller's (the Spark
layer gives the session's defaults, as Delta's ``updateMetadataForNewTable``); a column
mapping mode is refused, and row tracking without statistics, as Delta refuses them.

:func:`plan_convert` reads the directory (nothing is written), :func:`commit_convert`
commits a plan in a transaction the caller opened (the Spark layer opens its own, to name
itself in ``commitInfo``), :func:`convert_to_delta` does both.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs

from deltalog.txn.commit.operations import Convert
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.calendar_rebase import rebase_spec
from deltalog.txn.log.data_files import data_file_arrow_schema, open_data_file
from deltalog.txn.protocol.actions import AddFile, Metadata, encode_path
from deltalog.txn.protocol.errors import DeltaLogError, SchemaMismatchError
from deltalog.txn.protocol.file_stats import StatsCollector, stats_json
from deltalog.txn.protocol.partition_filters import InvalidPartitionFilterError, PartitionPredicate
from deltalog.txn.protocol.partition_paths import HIVE_DEFAULT_PARTITION, unescape_partition_value
from deltalog.txn.protocol.properties import validate_table_properties
from deltalog.txn.protocol.protocol_requirements import protocol_for_new_table
from deltalog.txn.protocol.schema import (
    StructField,
    StructType,
    as_nullable,
    data_type_from_json,
    from_arrow,
    merge_schemas,
)

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction

__all__ = [
    "ConvertPlan",
    "ConvertToDeltaError",
    "ParquetFile",
    "commit_convert",
    "convert_to_delta",
    "parse_partition_schema",
    "plan_convert",
]

log = logging.getLogger(__name__)

#: The partition columns: a schema, ``{column: Delta type name}`` (``"string"``, ``"date"``, ...),
#: or the DDL list ``"day date, region string"`` (see :func:`parse_partition_schema`).
PartitionSchema = StructType | Mapping[str, str] | str | None

#: Spark SQL's other names of Delta's primitive types.
_TYPE_ALIASES = {"int": "integer", "bigint": "long", "smallint": "short", "tinyint": "byte", "bool": "boolean"}
_DDL_COLUMN = re.compile(r"^\s*(`[^`]+`|[^\s`]+)\s+(\S.*?)\s*$")


class ConvertToDeltaError(DeltaLogError, ValueError):
    """The directory cannot be converted as asked (already a Delta table, no Parquet files,
    or partition directories that do not match the partition schema); nothing was written."""


@dataclass(frozen=True)
class ParquetFile:
    """One Parquet file of the directory: its table-relative path (not URL-encoded), size,
    modification time (ms), partition values, row count and, once collected, its
    statistics (``add.stats`` JSON)."""

    path: str
    size: int
    modification_time: int
    partition_values: dict[str, str | None]
    num_records: int
    stats: str | None = None

    def add(self) -> AddFile:
        return AddFile(
            path=encode_path(self.path),
            partition_values=self.partition_values,
            size=self.size,
            modification_time=self.modification_time,
            data_change=True,
            stats=self.stats or stats_json({"numRecords": self.num_records}),
        )


@dataclass(frozen=True)
class ConvertPlan:
    """What CONVERT commits: the new table's metadata and its files."""

    table_uri: str
    metadata: Metadata
    files: tuple[ParquetFile, ...]
    collect_stats: bool = True

    def adds(self) -> Iterator[AddFile]:
        return (f.add() for f in self.files)

    def operation(self) -> Convert:
        return Convert(
            num_files=len(self.files),
            partition_by=tuple(self.metadata.partition_columns),
            collect_stats=self.collect_stats,
        )


def convert_to_delta(
    table: str | DeltaLog,
    partition_schema: PartitionSchema = None,
    *,
    storage_options: Mapping[str, str] | None = None,
    lock: str | CommitLock | None = None,
    configuration: Mapping[str, str] | None = None,
    collect_stats: bool = True,
    allow_arbitrary_properties: bool = False,
) -> int:
    """Make the Parquet directory ``table`` (a URI, or its :class:`DeltaLog`) a Delta table
    with the table properties ``configuration`` (validated as every new table's:
    :func:`~deltalog.txn.protocol.properties.validate_table_properties`, an unknown
    ``delta.*`` key refused unless ``allow_arbitrary_properties``); returns the version committed (0).
    ``storage_options`` apply to a URI; ``collect_stats=False`` is Delta's ``NO STATISTICS``.
    Raises :class:`ConvertToDeltaError` (nothing written) when it cannot be converted."""
    delta_log = DeltaLog.for_table(table, storage_options) if isinstance(table, str) else table
    configuration = validate_table_properties(configuration or {}, allow_arbitrary=allow_arbitrary_properties)
    plan = plan_convert(delta_log, partition_schema, configuration=configuration, collect_stats=collect_stats)
    return commit_convert(delta_log.start_transaction(lock=lock), plan)


def plan_convert(
    delta_log: DeltaLog,
    partition_schema: PartitionSchema = None,
    *,
    configuration: Mapping[str, str] | None = None,
    collect_stats: bool = True,
) -> ConvertPlan:
    """List and check the directory's Parquet files, build the table's metadata and, unless
    ``collect_stats`` is false, the files' statistics."""
    if delta_log.table_exists():
        raise ConvertToDeltaError(f"{delta_log.table_uri} is already a Delta table")
    partitions = _partition_struct(partition_schema)
    fs = delta_log.store.filesystem()
    root = delta_log.store.fs_path(delta_log.table_uri).rstrip("/")
    listed = _list_parquet_files(fs, root)
    if not listed:
        raise ConvertToDeltaError(f"no Parquet files under {delta_log.table_uri} to convert")
    files: list[ParquetFile] = []
    data_schema = StructType(())
    seen: list[pa.Schema] = []  # footer schemas already merged
    for rel, info in listed:
        values = _partition_values(rel, partitions)
        with open_data_file(fs, info.path) as pf:
            footer = data_file_arrow_schema(pf)
            if not any(footer.equals(s) for s in seen):
                data_schema = _merged_footer(data_schema, footer, rel)
                seen.append(footer)
            rows = pf.metadata.num_rows
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime else int(time.time() * 1000)
        files.append(ParquetFile(rel, int(info.size or 0), mtime, values, rows))
    # a partition column the files also hold is the partition's (Delta's mergeDataAndPartitionSchema)
    parts = {name.lower() for name in partitions.names}
    data_fields = [f for f in data_schema.fields if f.name.lower() not in parts]
    schema = as_nullable(StructType((*data_fields, *partitions.fields)))
    assert isinstance(schema, StructType)
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=schema.to_json(),
        partition_columns=tuple(partitions.names),
        configuration=dict(configuration or {}),
        created_time=int(time.time() * 1000),
    )
    _check_conversion_is_allowed(metadata, collect_stats)
    if collect_stats:
        files = [_with_statistics(fs, f"{root}/{f.path}", f, metadata) for f in files]
    return ConvertPlan(delta_log.table_uri, metadata, tuple(files), collect_stats)


def _check_conversion_is_allowed(metadata: Metadata, collect_stats: bool) -> None:
    """Delta's ``checkConversionIsAllowed``: no column mapping (the files hold the logical
    names), and no row tracking without statistics (row ids need the row counts Delta takes
    from them)."""
    mode = metadata.properties.column_mapping_mode
    if mode != "none":
        raise ConvertToDeltaError(
            f"DELTA_CONVERSION_UNSUPPORTED_COLUMN_MAPPING: the configuration 'delta.columnMapping.mode' cannot be "
            f"set to `{mode}` when using CONVERT TO DELTA; convert, then enable column mapping with "
            "SET TBLPROPERTIES. Nothing was written"
        )
    if not collect_stats and "rowTracking" in (protocol_for_new_table(metadata).writer_features or ()):
        raise ConvertToDeltaError(
            "DELTA_CONVERT_TO_DELTA_ROW_TRACKING_WITHOUT_STATS: cannot enable row tracking without collecting "
            "statistics; convert with statistics, or without row tracking (unset delta.enableRowTracking and "
            "delta.feature.rowTracking, or their session defaults). Nothing was written"
        )


def _with_statistics(fs: pafs.FileSystem, path: str, file: ParquetFile, metadata: Metadata) -> ParquetFile:
    """``file`` with the statistics of its footer for the columns ``metadata``'s table
    collects statistics for."""
    with open_data_file(fs, path) as pf:
        collector = StatsCollector.for_table(metadata, data_file_arrow_schema(pf))
        # a file of Spark's legacy calendar holds numbers its readers rebase: no date bounds
        collector.update_from_footer(pf.metadata, datetime_bounds=rebase_spec(pf.metadata.metadata) is None)
    return replace(file, stats=collector.to_json())


def _merged_footer(data_schema: StructType, footer: pa.Schema, rel: str) -> StructType:
    """``data_schema`` merged with one more file's footer, as Delta's
    ``mergeSchemasInParallel`` merges them: new columns are added, a column another file
    types differently is refused (:class:`ConvertToDeltaError`, Delta's
    ``failedMergeSchemaFile``)."""
    try:
        return merge_schemas(data_schema, from_arrow(footer))
    except SchemaMismatchError as exc:
        raise ConvertToDeltaError(
            f"failed to merge the schema of {rel} with the other files': {exc}. Rewrite the files to one "
            "type, or convert the directories separately; nothing was written"
        ) from None


def commit_convert(txn: OptimisticTransaction, plan: ConvertPlan) -> int:
    """Commit ``plan`` in ``txn`` (opened on the directory) as one large commit."""
    txn.update_metadata(plan.metadata)
    version = txn.commit_large(plan.adds(), plan.operation())
    log.info("CONVERT TO DELTA: %d files of %s committed as version %d", len(plan.files), plan.table_uri, version)
    return version


def parse_partition_schema(text: str) -> StructType:
    """The partition columns of a DDL list, ``"day date, region string"`` (primitive types by
    their Delta or Spark SQL names: ``int``, ``bigint``, ``decimal(10,2)``, ...)."""
    fields = []
    for column in re.split(r",(?![^()]*\))", text):
        if not column.strip():
            continue
        m = _DDL_COLUMN.match(column)
        if m is None:
            raise ConvertToDeltaError(f"{column.strip()!r} is not a partition column as 'name type'")
        name, type_name = m.group(1).strip("`"), m.group(2).lower().replace(" ", "")
        type_name = _TYPE_ALIASES.get(type_name, type_name)
        fields.append(StructField(name, data_type_from_json(type_name, f"partition column {name}")))
    return StructType(tuple(fields))


def _partition_struct(schema: PartitionSchema) -> StructType:
    if schema is None:
        return StructType(())
    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        return parse_partition_schema(schema)
    return StructType(
        tuple(StructField(name, data_type_from_json(t, f"partition column {name}")) for name, t in schema.items())
    )


def _list_parquet_files(fs: pafs.FileSystem, root: str) -> list[tuple[str, pafs.FileInfo]]:
    """``(table-relative path, file info)`` of every visible Parquet file, in path order."""
    entries = []
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root) + 1 :]
        if any(p.startswith((".", "_")) for p in rel.split("/")) or not rel.endswith(".parquet"):
            continue
        entries.append((rel, info))
    return sorted(entries, key=lambda entry: entry[0])


def _partition_values(rel: str, partitions: StructType) -> dict[str, str | None]:
    """The partition values of the file ``rel`` from its ``column=value`` directories."""
    values: dict[str, str | None] = {}
    for part in rel.split("/")[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            raw = unescape_partition_value(v)
            values[unescape_partition_value(k)] = None if raw == HIVE_DEFAULT_PARTITION else raw
    if sorted(values) != sorted(partitions.names):
        raise ConvertToDeltaError(
            f"{rel} has partition directories {sorted(values)}, but partitionSchema names {partitions.names}; "
            "pass the partition schema that matches the directory layout"
        )
    for f in partitions:
        type_name = f.type.simple_string()
        try:  # the partition filters' reading of a value as its column's type
            PartitionPredicate([(f.name, "=", values[f.name])], {f.name: type_name})
        except InvalidPartitionFilterError:
            raise ConvertToDeltaError(f"partition value {values[f.name]!r} of {rel} is not a {type_name}") from None
    return values
