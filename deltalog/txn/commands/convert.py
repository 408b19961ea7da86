"""CONVERT TO DELTA: make a directory of Parquet files a Delta table, in one commit.

As Delta's ``ConvertToDeltaCommand``: list the files under the directory (a file whose
name starts with ``.`` or ``_`` is skipped, and so is such a directory unless it is a
``column=value`` one; a file that is not Parquet is refused, or left out when asked), take
each file's partition values from its Hive-style ``column=value`` directories (they must
name the partition schema's columns, in its order, and each value must parse as its
column's type), take the data schema from the footers as Spark infers it (:mod:`~deltalog.txn.log.footer_schema`:
variant columns Spark wrote are variants; merged: a column one file lacks is added, one two files type
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

from deltalog.txn.commands.convert_listing import list_data_files
from deltalog.txn.commit.operations import Convert
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.calendar_rebase import rebase_spec
from deltalog.txn.log.data_files import data_file_arrow_schema, open_data_file
from deltalog.txn.log.footer_schema import footer_schema
from deltalog.txn.protocol.actions import AddFile, Metadata, encode_path
from deltalog.txn.protocol.errors import DeltaLogError, SchemaMismatchError
from deltalog.txn.protocol.file_stats import StatsCollector
from deltalog.txn.protocol.partition_filters import InvalidPartitionFilterError, PartitionPredicate
from deltalog.txn.protocol.partition_paths import HIVE_DEFAULT_PARTITION, unescape_partition_value
from deltalog.txn.protocol.properties import validate_table_properties
from deltalog.txn.protocol.protocol_requirements import protocol_for_new_table
from deltalog.txn.protocol.schema import (
    StructField,
    StructType,
    as_nullable,
    data_type_from_json,
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
    "merge_data_and_partition_schema",
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
            stats=self.stats,
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
    ignore_corrupt_files: bool = False,
    use_metadata_log: bool = True,
    ignore_partition_cast_failure: bool = False,
) -> ConvertPlan:
    """List and check the directory's Parquet files, build the table's metadata and, unless
    ``collect_stats`` is false, the files' statistics. A visible file that is not Parquet
    is refused, or left out with ``ignore_corrupt_files`` (Spark's
    ``spark.sql.files.ignoreCorruptFiles``, as Delta's footer reading). A streaming sink's
    directory gives the files its ``_spark_metadata`` log names, unless not
    ``use_metadata_log`` (:mod:`~deltalog.txn.commands.convert_listing`). A partition value
    that is not of its column's type is refused, or made null with
    ``ignore_partition_cast_failure`` (Delta's ``convert.partitionValues.ignoreCastFailure``)."""
    if delta_log.table_exists():
        raise ConvertToDeltaError(f"{delta_log.table_uri} is already a Delta table")
    partitions = _partition_struct(partition_schema)
    fs = delta_log.store.filesystem()
    root = delta_log.store.fs_path(delta_log.table_uri).rstrip("/")
    try:
        listed = list_data_files(fs, root, use_metadata_log=use_metadata_log)
    except ValueError as exc:
        raise ConvertToDeltaError(f"{exc}; nothing was written") from None
    if not listed:
        raise ConvertToDeltaError(f"no Parquet files under {delta_log.table_uri} to convert")
    files: list[ParquetFile] = []
    data_schema = StructType(())
    seen: list[pa.Schema] = []  # footer schemas already merged
    for rel, info in listed:
        values = _partition_values(rel, partitions, check_types=not ignore_partition_cast_failure)
        footer_and_rows = _read_footer(fs, info.path, rel, ignore_corrupt_files)
        if footer_and_rows is None:
            continue
        footer, rows = footer_and_rows
        if not any(footer.equals(s) for s in seen):
            data_schema = _merged_footer(data_schema, footer, rel)
            seen.append(footer)
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime else int(time.time() * 1000)
        files.append(ParquetFile(rel, int(info.size or 0), mtime, values, rows))
    if not files:
        raise ConvertToDeltaError(f"no Parquet files under {delta_log.table_uri} to convert")
    schema = merge_data_and_partition_schema(data_schema, partitions)
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
        return merge_schemas(data_schema, footer_schema(footer))
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


def _read_footer(fs: pafs.FileSystem, path: str, rel: str, ignore_corrupt: bool) -> tuple[pa.Schema, int] | None:
    """The footer's schema and row count of the file ``rel``; ``None`` for a file that is not
    Parquet when ``ignore_corrupt`` (else :class:`ConvertToDeltaError`)."""
    try:
        with open_data_file(fs, path) as pf:
            return data_file_arrow_schema(pf), pf.metadata.num_rows
    except (pa.ArrowInvalid, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if ignore_corrupt:
            log.warning("CONVERT TO DELTA leaves out %s, which is not a Parquet file: %s", rel, exc)
            return None
        raise ConvertToDeltaError(
            f"{rel} is not a Parquet file ({exc}); remove it, or set spark.sql.files.ignoreCorruptFiles "
            "to leave it out. Nothing was written"
        ) from None


def merge_data_and_partition_schema(data: StructType, partitions: StructType) -> StructType:
    """The table's schema, as Spark's ``PartitioningUtils.mergeDataAndPartitionSchema``: the
    data columns in their order, a partition column the files also hold taking its data
    column's place (with the partition's name and type), the other partition columns after
    them; every column nullable, as Delta's ``asNullable``."""
    by_lower = {f.name.lower(): f for f in partitions.fields}
    in_data = {f.name.lower() for f in data.fields}
    fields = [by_lower.get(f.name.lower(), f) for f in data.fields]
    fields += [f for f in partitions.fields if f.name.lower() not in in_data]
    schema = as_nullable(StructType(tuple(fields)))
    assert isinstance(schema, StructType)
    return schema


def _partition_values(rel: str, partitions: StructType, *, check_types: bool = True) -> dict[str, str | None]:
    """The partition values of the file ``rel`` from its ``column=value`` directories, keyed
    by the partition schema's names: as Delta's ``ConvertUtils.createAddFile``, the
    directories name the partition columns in the schema's order (case-insensitively)."""
    found: list[tuple[str, str | None]] = []
    for part in rel.split("/")[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            raw = unescape_partition_value(v)
            found.append((unescape_partition_value(k), None if raw == HIVE_DEFAULT_PARTITION else raw))
    expected = list(partitions.names)
    if len(found) != len(expected):
        raise ConvertToDeltaError(
            f"DELTA_UNEXPECTED_NUM_PARTITION_COLUMNS_FROM_FILE_NAME: expecting {len(expected)} partition column(s): "
            f"{expected}, but found {len(found)} partition column(s): {[k for k, _ in found]} from parsing the file "
            f"name: {rel}; pass the partition schema that matches the directory layout"
        )
    for name, (parsed, _) in zip(expected, found, strict=True):
        if name.lower() != parsed.lower():
            raise ConvertToDeltaError(
                f"DELTA_UNEXPECTED_PARTITION_COLUMN_FROM_FILE_NAME: expecting partition column {name}, but found "
                f"partition column {parsed} from parsing the file name: {rel}"
            )
    values = {name: value for name, (_, value) in zip(expected, found, strict=True)}
    for f in partitions:
        type_name = f.type.simple_string()
        try:  # the partition filters' reading of a value as its column's type
            PartitionPredicate([(f.name, "=", values[f.name])], {f.name: type_name})
        except InvalidPartitionFilterError:
            if check_types:
                raise ConvertToDeltaError(
                    f"DELTA_FAILED_CAST_PARTITION_VALUE: Failed to cast partition value {values[f.name]!r} of {rel} "
                    f"to {type_name}; give the column its type in the partition schema, or set "
                    "spark.databricks.delta.convert.partitionValues.ignoreCastFailure to read it as null"
                ) from None
            values[f.name] = None  # Delta keeps the text, which its reads cast to null
    return values
