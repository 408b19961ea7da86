"""OPTIMIZE: bin-packing compaction of small files, per partition, with pyarrow.

Delta's ``OptimizeExecutor`` (without Z-ordering), in the txn layer:

1. the candidate files are the active files matching the partition filters ``where`` (and
   chosen by ``select_files``: the Spark layer's WHERE, any partition predicate as Delta's
   ``filesForScan``, none for one folding to false; its commit ``predicate`` then) whose
   size is below ``min_file_size`` (Delta's ``spark.databricks.delta.optimize.minFileSize``;
   default: the target size), plus the files with a deletion vector deleting more than
   ``max_deleted_rows_ratio`` of their rows (``purge=True``, Delta's ``REORG ... APPLY
   (PURGE)``: exactly the files with deletion vectors);
2. per partition, candidates sorted by size fill bins of at most the target size
   (``target_size`` argument, else ``delta.targetFileSize``, else 1 GiB as Delta's
   ``spark.databricks.delta.optimize.maxFileSize``); a bin with fewer than
   ``min_files_per_bin`` files (default 2) is left alone, also when its file has too many
   deleted rows, as Delta's ``groupFilesIntoBins`` (only a reorg rewrites a lone file);
3. each bin is streamed, file by file and batch by batch, into one new Parquet file named as
   the Spark writer names them (``part-00000-<uuid>.c000.<codec>.parquet``) in the Hive
   partition directory, with statistics (numRecords, min/max, nullCount). The output keeps
   the input's format so compaction never grows the data: the codec of the bin's first file,
   dictionary encoding on exactly the columns the inputs dictionary-encoded (a dictionary on
   unique numbers costs about 40%), and row groups of up to ``ROW_GROUP_ROWS`` rows, not one
   per input batch. The bins are rewritten by a :data:`BinRewriter`: in this process one
   after the other by default, as Spark tasks from :mod:`deltalog.contrib.spark.maintenance`
   (each task rebuilds the store from the picklable :class:`CompactionSpec`);
4. one commit removes the old files and adds the new ones, all with ``dataChange=false``:
   the transaction runs at snapshot isolation, so concurrent appends do not conflict. As
   Delta's ``commitAndRetry`` (:mod:`~deltalog.txn.commands.optimize_commit`), it is not
   planned again: a concurrent commit that removed a file being compacted (or gave it a
   deletion vector) fails it with ``ConcurrentDeleteReadError``; after another conflict the
   same actions are committed again, up to ``max_attempts`` attempts. Files written for a
   plan that did not commit are deleted.

The commit carries Delta's ``OPTIMIZE`` parameters (``predicate``, ``zOrderBy``, ``auto``) and
metrics (``numAddedFiles``, ``numRemovedFiles``, ``numAddedBytes``, ``numRemovedBytes``,
``minFileSize``/``p25FileSize``/``p50FileSize``/``p75FileSize``/``maxFileSize``,
``numDeletionVectorsRemoved``; the percentiles index the sorted sizes as Delta's
``FileSizeStatsWithHistogram``); the result's metrics also have ``numBatches``,
``totalConsideredFiles``, ``totalFilesSkipped`` and ``preserveInsertionOrder``, which, as in
Delta, the commit does not carry. The result also holds what Delta's ``OptimizeMetrics``
reports (the sizes of the files added and removed, ``numBins``, the table's column counts).

Files with deletion vectors are candidates when more than ``max_deleted_rows_ratio`` of
their rows are deleted (Delta's ``spark.databricks.delta.optimize.maxDeletedRowsRatio``) or
they lack ``numRecords``. ``purge=True`` is Delta's ``REORG TABLE ... APPLY (PURGE)``: the
candidates are exactly the files with deletion vectors, each rewritten without its deleted
rows (a bin of one file included), committed as a ``REORG`` operation. A clustered table is
clustered by its clustering columns (Hilbert curve, :mod:`deltalog.txn.commands.clustering`)
when one of its files is not clustered yet, or always with ``full`` (Delta's
``OPTIMIZE ... FULL``, e.g. after ``CLUSTER BY`` changed). ``rewrite_type_widening=True`` is
Delta's internal ``REORG ... APPLY (REWRITE TYPE WIDENING)`` (``DeltaRewriteTypeWideningOperation``,
run by ``DROP FEATURE typeWidening``): the candidates are the files whose Parquet footer
stores a column with a narrower type than the table's (written before a type widening), each
rewritten with the table's types (clustered files too), committed as a ``REORG`` operation.
Rewritten files get statistics as every writer does
(:class:`~deltalog.txn.protocol.stats_columns.StatsColumns`): strings keep the table's
``delta.dataSkippingStringPrefixLength``, else ``session_prefix_length`` (Delta's session
conf, which the Spark layer passes), else 32.

``rewrite_bins`` rewrites the bins (default: here, reporting ``progress``). ``z_order_by`` orders
the rows by the interleaved bits of the columns' ``num_ranges`` range ids into
``max(1, bytes // target_size)`` files per partition; its names are parsed as Spark parses
them (backquotes quote a name holding a dot; nested fields are refused).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.logstores.base import LogStore, LogStoreSpec, arrow_threads_allowed
from deltalog.txn.commands.clustering import ClusteringStats, clustering_plan, clustering_stats, is_clustered
from deltalog.txn.commands.optimize_commit import commit_and_retry
from deltalog.txn.commands.z_order import (
    ZOrderColumn,
    hilbert_indices,
    z_order_columns,
    z_order_indices,
)
from deltalog.txn.commit.operations import Optimize, Reorg
from deltalog.txn.log.calendar_rebase import rebase_batch, rebase_spec
from deltalog.txn.log.checkpoint_rows import parse_partition_values
from deltalog.txn.log.data_files import ROW_GROUP_BYTES, ROW_GROUP_ROWS, open_data_file
from deltalog.txn.log.deletion_vector_writer import random_prefix
from deltalog.txn.log.deletion_vectors import read_deletion_vector
from deltalog.txn.log.variant_shredding import rebuild_variants_in
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import Action, AddFile, absolute_path, encode_path
from deltalog.txn.protocol.clustering import CLUSTERING_PROVIDER
from deltalog.txn.protocol.column_identifiers import ColumnPath
from deltalog.txn.protocol.column_mapping import physical_arrow_schema, rename_to_logical, typed_partition_keys
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.file_stats import StatsCollector, tight_bounds_on_write
from deltalog.txn.protocol.iceberg_compat import materializes_partition_columns, row_tracking_field_ids
from deltalog.txn.protocol.partition_filters import PartitionFilter
from deltalog.txn.protocol.partition_paths import partition_directory
from deltalog.txn.protocol.schema import StructType, from_arrow_type, split_column_name
from deltalog.txn.protocol.stats_columns import STRING_PREFIX_LENGTH, StatsColumns
from deltalog.txn.protocol.type_widening import is_type_change_supported

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "DEFAULT_MAX_DELETED_ROWS_RATIO",
    "DEFAULT_TARGET_FILE_SIZE",
    "BinRewriter",
    "CompactionSpec",
    "OptimizeError",
    "OptimizeResult",
    "delete_data_file",
    "discard_bin_outputs",
    "files_with_narrower_types",
    "has_deleted_rows",
    "optimize",
    "partition_key",
    "rewrite_bin",
]

log = logging.getLogger(__name__)

#: Delta's ``spark.databricks.delta.optimize.maxFileSize`` default (1 GiB).
DEFAULT_TARGET_FILE_SIZE = 1024 * 1024 * 1024
#: Delta's ``spark.databricks.io.skipping.mdc.rangeId.max`` default.
DEFAULT_NUM_RANGES = 1000
#: Delta's ``DELTA_OPTIMIZE_ZORDER_COL_STAT_CHECK`` session conf (``check_z_order_stats`` of :func:`optimize`).
ZORDER_STATS_CHECK_KEY = "spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled"
#: Delta's ``spark.databricks.delta.optimize.maxDeletedRowsRatio`` default.
DEFAULT_MAX_DELETED_ROWS_RATIO = 0.05

Progress = Callable[[int, int], None]
_BinKey = frozenset[tuple[str, "str | None"]]


class OptimizeError(DeltaLogError):
    """OPTIMIZE could not rewrite a file (unreadable, or data that does not fit the schema)."""


@dataclass
class OptimizeResult:
    """The outcome of :func:`optimize` (``version`` is None when there was nothing to do)."""

    table_uri: str
    version: int | None = None
    num_files_added: int = 0
    num_files_removed: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    #: Delta's ``numBatches``: OPTIMIZE commits its bins in one batch (Delta without
    #: ``spark.databricks.delta.optimize.batchSize``), also when there is nothing to do
    num_batches: int = 1
    #: Delta's ``numBins``: the bins rewritten
    num_bins: int = 0
    partitions_optimized: int = 0
    total_considered_files: int = 0
    total_files_skipped: int = 0
    num_deletion_vectors_removed: int = 0
    #: Delta's ``numDeletionVectorRowsRemoved``: the rows the removed deletion vectors deleted
    num_deletion_vector_rows_removed: int = 0
    #: the sizes of the files added and removed (Delta's ``filesAdded``/``filesRemoved``)
    added_file_sizes: tuple[int, ...] = ()
    removed_file_sizes: tuple[int, ...] = ()
    #: Delta's ``numTableColumns`` and ``numTableColumnsWithStats`` (the table's columns, and
    #: ``delta.dataSkippingNumIndexedCols`` capped by them)
    num_table_columns: int = 0
    num_table_columns_with_stats: int = 0
    #: Delta's ``clusteringStats`` (a clustered table only)
    clustering_stats: ClusteringStats | None = None
    start_time_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    end_time_ms: int = 0
    attempts: int = 0
    metrics: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table_uri,
            "version": self.version,
            "num_files_added": self.num_files_added,
            "num_files_removed": self.num_files_removed,
            "bytes_added": self.bytes_added,
            "bytes_removed": self.bytes_removed,
            "num_batches": self.num_batches,
            "num_bins": self.num_bins,
            "partitions_optimized": self.partitions_optimized,
            "total_considered_files": self.total_considered_files,
            "total_files_skipped": self.total_files_skipped,
            "num_deletion_vectors_removed": self.num_deletion_vectors_removed,
            "attempts": self.attempts,
            "metrics": dict(self.metrics),
        }


def describe_filters(where: Sequence[PartitionFilter] | None) -> list[str]:
    """Partition filters as Delta writes OPTIMIZE's ``predicate`` parameter."""
    out = []
    for column, op, value in where or ():
        rendered = f"'{value}'" if isinstance(value, str) else repr(value)
        out.append(f"({column} {op.upper() if op.isalpha() or ' ' in op else op} {rendered})")
    return out


def _bins(files: Sequence[AddFile], target: int, min_files: int) -> list[list[AddFile]]:
    """Delta's ``groupFilesIntoBins`` for one partition: a bin of fewer than ``min_files``
    files is left alone, also when a file of it has too many deleted rows (only REORG, with
    ``min_files`` 1, rewrites a lone file)."""
    bins: list[list[AddFile]] = []
    current: list[AddFile] = []
    size = 0
    for f in sorted(files, key=lambda f: (f.size, f.path)):
        if current and size + f.size > target:
            bins.append(current)
            current, size = [], 0
        current.append(f)
        size += f.size
    if current:
        bins.append(current)
    return [b for b in bins if len(b) >= min_files]


def has_deleted_rows(f: AddFile) -> bool:
    """Whether REORG PURGE rewrites ``f`` (Delta's ``DeltaPurgeOperation``): its deletion
    vector deletes rows, or it has one and no ``numRecords``."""
    dv = f.deletion_vector
    return dv is not None and (dv.cardinality > 0 or f.num_records() is None)


def _too_many_deleted(f: AddFile, max_ratio: float) -> bool:
    """Delta's ``shouldCompactBecauseOfDeletedRows``: a DV and no ``numRecords``, or more
    than ``max_ratio`` of the rows deleted."""
    dv = f.deletion_vector
    if dv is None:
        return False
    n = f.num_records()
    return n is None or (n > 0 and dv.cardinality / n > max_ratio)


def partition_key(f: AddFile) -> tuple[tuple[str, str | None], ...]:
    """The file's partition as its sorted ``partitionValues`` (physical names): how OPTIMIZE
    and auto compaction group files."""
    return tuple(sorted(f.partition_values.items()))


def _data_schema(snapshot: Snapshot) -> tuple[pa.Schema, StructType]:
    schema = snapshot.schema
    partition = {c.lower() for c in snapshot.partition_columns}
    data = StructType(tuple(f for f in schema.fields if f.name.lower() not in partition))
    return physical_arrow_schema(data), data


def _conform(batch: pa.RecordBatch, target: pa.Schema, where: str) -> pa.RecordBatch:
    arrays = []
    names = batch.schema.names
    for f in target:
        if f.name in names:
            col = rebuild_variants_in(batch.column(names.index(f.name)), f.type, f"{f.name} in {where}")
            if not col.type.equals(f.type):
                try:
                    col = pc.cast(col, f.type, safe=not pa.types.is_timestamp(f.type))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise OptimizeError(
                        f"cannot compact {where}: column {f.name!r} of type {col.type} does not fit the "
                        f"table's type {f.type} ({exc}). Fix or remove the file, then run OPTIMIZE again."
                    ) from None
            arrays.append(col)
        else:
            arrays.append(pa.nulls(batch.num_rows, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


@dataclass(frozen=True)
class CompactionSpec:
    """Everything a bin rewrite needs, picklable (a Spark task rebuilds the store from it)."""

    store: LogStoreSpec
    table_uri: str
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    #: the leaf columns rewritten files get statistics for (physical paths, the table's StatsColumns)
    stats_columns: tuple[ColumnPath, ...]
    #: characters of a string statistics keep (the table's ``StatsColumns.string_prefix_length``)
    string_prefix_length: int
    #: physical -> logical column names (partition directories use logical names).
    logical_names: Mapping[str, str]
    #: logical -> physical names of the top-level columns.
    physical_names: Mapping[str, str] = field(default_factory=dict)
    #: Z-order columns (logical names, dots between nested fields); empty for compaction.
    z_order_by: tuple[str, ...] = ()
    #: their paths in the data files (physical names): the top-level column, then the
    #: fields nested in it
    z_order_paths: tuple[ColumnPath, ...] = ()
    #: Z-order writes ``max(1, bin bytes // max_file_size)`` files per bin.
    max_file_size: int = DEFAULT_TARGET_FILE_SIZE
    #: Spark's ``spark.sql.files.maxRecordsPerFile``, which Delta's OPTIMIZE honours (its
    #: file writer starts a new file after this many rows); 0: no limit
    max_records_per_file: int = 0
    #: Delta's ``spark.databricks.io.skipping.mdc.rangeId.max``.
    num_ranges: int = DEFAULT_NUM_RANGES
    #: row tracking enabled: the materialized (row id, row commit version) columns the
    #: rewritten rows carry their stable ids and commit versions in, as Delta's OPTIMIZE does
    row_tracking_columns: tuple[str, str] | None = None
    #: their Parquet field ids (IcebergCompatV3: Iceberg's reserved ones); empty otherwise
    row_tracking_field_ids: Mapping[str, int] = field(default_factory=dict)
    #: ``zorder``, or ``hilbert`` (liquid clustering by two or more columns).
    curve: str = "zorder"
    #: ``clusteringProvider`` of the files written (``liquid`` when clustering).
    clustering_provider: str | None = None
    #: the partition columns (logical schema) when the files hold them after the other
    #: columns (IcebergCompat, ``materializePartitionColumns``); None when they do not
    materialized_partitions: StructType | None = None
    #: the table's data schema with column mapping, when the rewrite drops it (``DROP
    #: FEATURE columnMapping``): the files are read by its physical names and written by the
    #: logical ones of ``schema``; None otherwise
    rename_from: StructType | None = None
    #: characters of the random directory rewritten files go under instead of partition
    #: directories (:attr:`TableProperties.data_file_prefix_length`); 0: partition directories
    random_prefix_length: int = 0
    #: the ``tightBounds`` of rewritten files' statistics (:func:`tight_bounds_on_write`)
    tight_bounds: bool | None = None

    @classmethod
    def for_snapshot(
        cls,
        delta_log: DeltaLog,
        snapshot: Snapshot,
        z_order_by: Sequence[ZOrderColumn] = (),
        max_file_size: int = DEFAULT_TARGET_FILE_SIZE,
        num_ranges: int = DEFAULT_NUM_RANGES,
        clustered: bool = False,
        session_prefix_length: int = STRING_PREFIX_LENGTH,
    ) -> CompactionSpec:
        schema, _ = _data_schema(snapshot)
        stats = StatsColumns.of(snapshot.metadata, session_prefix_length)
        return cls(
            store=delta_log.store.spec(),
            table_uri=delta_log.table_uri,
            schema=schema,
            partition_columns=tuple(snapshot.partition_columns),
            stats_columns=stats.physical_paths,
            string_prefix_length=stats.string_prefix_length,
            logical_names={f.physical_name: f.name for f in snapshot.schema.fields},
            physical_names={f.name: f.physical_name for f in snapshot.schema.fields},
            z_order_by=tuple(c.name for c in z_order_by),
            z_order_paths=tuple(c.physical_path for c in z_order_by),
            max_file_size=max_file_size,
            num_ranges=num_ranges,
            row_tracking_columns=row_tracking.materialized_columns(snapshot.protocol, snapshot.metadata),
            row_tracking_field_ids=row_tracking_field_ids(snapshot.metadata),
            curve="hilbert" if clustered and len(z_order_by) > 1 else "zorder",
            clustering_provider=CLUSTERING_PROVIDER if clustered else None,
            materialized_partitions=_materialized_partitions(snapshot),
            random_prefix_length=snapshot.metadata.properties.data_file_prefix_length,
            tight_bounds=tight_bounds_on_write(snapshot.protocol),
        )


def _materialized_partitions(snapshot: Snapshot) -> StructType | None:
    """The partition columns, when the table's data files must hold them."""
    if not snapshot.partition_columns or not materializes_partition_columns(snapshot.protocol, snapshot.metadata):
        return None
    return StructType(tuple(snapshot.schema.field(c) for c in snapshot.partition_columns))


#: Rewrites bins (each a list of files of one partition), in order, returning the files
#: written for each (none for a bin whose files hold no rows).
BinRewriter = Callable[[CompactionSpec, Sequence[Sequence[AddFile]]], "list[list[AddFile]]"]
#: A further selection of OPTIMIZE's files, given the snapshot and the files ``where`` matched.
FileSelector = Callable[["Snapshot", "list[AddFile]"], "list[AddFile]"]


def _input_format(md: pq.FileMetaData) -> tuple[str, set[str]]:
    """The codec and the dictionary-encoded column paths of a data file."""
    codec = "UNCOMPRESSED"
    dictionary: set[str] = set()
    for rg in range(md.num_row_groups):
        group = md.row_group(rg)
        for i in range(group.num_columns):
            chunk = group.column(i)
            codec = chunk.compression if codec == "UNCOMPRESSED" else codec
            if chunk.has_dictionary_page:
                dictionary.add(chunk.path_in_schema)
    return codec, dictionary


#: Spark's file name suffix for a Parquet codec (``part-...c000.snappy.parquet``).
_CODEC_SUFFIX = {
    "SNAPPY": ".snappy",
    "GZIP": ".gz",
    "ZSTD": ".zstd",
    "LZ4": ".lz4hadoop",
    "LZ4_RAW": ".lz4raw",
    "BROTLI": ".br",
    "UNCOMPRESSED": "",
}


class RowLimiter:
    """The batches of one output split into files of at most ``limit`` rows (0: one file), as
    Spark's file writer splits by ``maxRecordsPerFile``. Each file's batches must be read to
    the end before the next file's."""

    def __init__(self, batches: Iterator[pa.RecordBatch], limit: int) -> None:
        self._batches = batches
        self._limit = limit
        self._pending: pa.RecordBatch | None = None

    def files(self) -> Iterator[Iterator[pa.RecordBatch]]:
        if self._limit <= 0:
            yield self._batches
            return
        while self._peek():
            yield self._one_file()

    def _peek(self) -> bool:
        while self._pending is None or self._pending.num_rows == 0:
            self._pending = next(self._batches, None)
            if self._pending is None:
                return False
        return True

    def _one_file(self) -> Iterator[pa.RecordBatch]:
        left = self._limit
        while left > 0 and self._peek():
            batch = self._pending
            assert batch is not None
            taken = batch.slice(0, left)
            self._pending = batch.slice(left) if batch.num_rows > left else None
            left -= taken.num_rows
            yield taken


class _Compactor:
    def __init__(self, spec: CompactionSpec) -> None:
        self.spec = spec
        self.store: LogStore = spec.store.build()
        self.fs: pafs.FileSystem = self.store.filesystem()
        self.schema = spec.schema
        #: what the rewritten files hold: the data columns, plus the materialized row
        #: tracking columns (not in the table's schema, so without statistics)
        self.row_schema = spec.schema
        for name in spec.row_tracking_columns or ():
            fid = spec.row_tracking_field_ids.get(name)
            meta = None if fid is None else {b"PARQUET:field_id": str(fid).encode()}
            self.row_schema = self.row_schema.append(pa.field(name, pa.int64(), metadata=meta))
        #: ... and, last, the partition columns when the files hold them (no statistics either)
        self.file_schema = self.row_schema
        if spec.materialized_partitions is not None:
            partitions = physical_arrow_schema(spec.materialized_partitions)
            self.file_schema = pa.schema([*self.row_schema, *partitions])

    def _directory(self, values: dict[str, str | None], stem: str) -> str:
        """The directory of a bin's files named ``stem``: its partition's, or, where the table
        randomizes file prefixes or maps columns, random characters (as Delta's committer),
        drawn from the stem so that :meth:`output_paths` names the same directory."""
        if self.spec.random_prefix_length:
            return random_prefix(self.spec.random_prefix_length, seed=stem)
        logical = {self.spec.logical_names.get(k, k): v for k, v in values.items()}
        return partition_directory(self.spec.partition_columns, logical)

    def _batches(self, f: AddFile, formats: list[tuple[str, set[str]]]) -> Any:
        uri = absolute_path(self.spec.table_uri, f.path)
        deleted = None
        if f.deletion_vector is not None:
            deleted = read_deletion_vector(self.store, self.spec.table_uri, f.deletion_vector)
        try:
            with open_data_file(self.fs, self.store.fs_path(uri)) as reader:
                formats.append(_input_format(reader.metadata))
                rebase = rebase_spec(reader.metadata.metadata)
                offset = 0
                for raw in reader.iter_batches(batch_size=65536, use_threads=arrow_threads_allowed(self.fs)):
                    if rebase is not None:
                        raw = rebase_batch(raw, reader, rebase, uri)
                    n = raw.num_rows
                    batch = self._with_row_tracking(f, raw, self._conform(raw, uri), offset)
                    batch = self._with_partition_values(f, batch)
                    if deleted is not None and len(deleted):
                        rows = pa.array(range(offset, offset + n), pa.uint64())
                        batch = batch.filter(pc.invert(pc.is_in(rows, value_set=deleted)))
                    offset += n
                    yield batch
        except (OSError, pa.ArrowInvalid) as exc:
            raise OptimizeError(
                f"cannot compact {uri}: the data file could not be read ({exc}). Check that it exists and "
                "is valid Parquet (a vacuumed or damaged file); nothing was committed."
            ) from None

    def _conform(self, raw: pa.RecordBatch, uri: str) -> pa.RecordBatch:
        """The data columns of ``raw`` as the table's schema (renamed to the logical names
        when the rewrite drops column mapping)."""
        source = self.spec.rename_from
        if source is None:
            return _conform(raw, self.schema, uri)
        table = rename_to_logical(pa.Table.from_batches([_conform(raw, physical_arrow_schema(source), uri)]), source)
        logical = pa.RecordBatch.from_arrays([c.combine_chunks() for c in table.columns], schema=table.schema)
        return _conform(logical, self.schema, uri)

    def _with_row_tracking(self, f: AddFile, raw: pa.RecordBatch, batch: pa.RecordBatch, offset: int) -> pa.RecordBatch:
        """``batch`` plus the rows' stable row ids and commit versions (the file's
        materialized values, else ``baseRowId`` + position and ``defaultRowCommitVersion``)."""
        columns = self.spec.row_tracking_columns
        if columns is None:
            return batch

        def materialized(name: str) -> pa.Array | None:
            return raw.column(name) if name in raw.schema.names else None

        positions = pa.array(range(offset, offset + raw.num_rows), pa.uint64())
        ids = row_tracking.row_ids(f.base_row_id, positions, materialized(columns[0]))
        versions = row_tracking.row_commit_versions(
            f.default_row_commit_version, raw.num_rows, materialized(columns[1])
        )
        return pa.RecordBatch.from_arrays([*batch.columns, ids, versions], schema=self.row_schema)

    def _with_partition_values(self, f: AddFile, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` plus ``f``'s partition values as columns, when the files hold them."""
        partitions = self.spec.materialized_partitions
        if partitions is None:
            return batch
        names = tuple(p.name for p in partitions.fields)
        physical = {p.name: p.physical_name for p in partitions.fields}
        values = pa.array([list(f.partition_values.items())], pa.map_(pa.string(), pa.string()))
        parsed = parse_partition_values(values, partitions, names, physical)
        zeros = pa.array([0] * batch.num_rows, pa.int32())
        columns = [parsed.field(i).take(zeros) for i in range(len(names))]
        return pa.RecordBatch.from_arrays([*batch.columns, *columns], schema=self.file_schema)

    def output_paths(self, files: Sequence[AddFile], stem: str) -> list[str]:
        """Every relative path :meth:`write_bin` may give the files named ``stem``."""
        directory = self._directory(dict(files[0].partition_values), stem)
        count = self._num_outputs(files)
        if self.spec.max_records_per_file > 0:  # each piece may end in one more, shorter file
            count += -(-sum(self._num_rows(f) for f in files) // self.spec.max_records_per_file)
        names = [f"{stem}.c{k:03d}{s}.parquet" for k in range(count) for s in _CODEC_SUFFIX.values()]
        return [f"{directory}/{n}" if directory else n for n in names]

    def _num_rows(self, f: AddFile) -> int:
        """The rows of ``f``'s data file (its ``numRecords``, else its footer's count)."""
        known = f.num_records()
        if known is not None:
            return known
        with open_data_file(self.fs, self.store.fs_path(absolute_path(self.spec.table_uri, f.path))) as reader:
            return int(reader.metadata.num_rows)

    def _num_outputs(self, files: Sequence[AddFile]) -> int:
        """Delta's ``approxNumFiles`` of a Z-order bin (else one file)."""
        if not self.spec.z_order_by or self.spec.max_file_size <= 0:
            return 1
        return max(1, sum(f.size for f in files) // self.spec.max_file_size)

    def write_bin(self, files: Sequence[AddFile], stem: str | None = None) -> list[AddFile]:
        """Rewrite ``files`` into one file named ``<stem>.c000.<codec>.parquet`` (default
        stem: ``part-00000-<uuid>``), or, Z-ordering, into ``approxNumFiles`` files
        ``.c000``, ``.c001``, … of consecutive Z-values; none when they hold no rows."""
        values = dict(files[0].partition_values)
        formats: list[tuple[str, set[str]]] = []
        batches = (b for f in files for b in self._batches(f, formats) if b.num_rows)
        first = next(batches, None)
        if first is None:
            return []
        stem = stem or f"part-00000-{uuid.uuid4()}"
        directory = self._directory(values, stem)
        if not self.spec.z_order_by:
            pieces: Iterable[Iterator[pa.RecordBatch]] = [itertools.chain([first], batches)]
        else:
            table = pa.Table.from_batches([first, *batches])
            paths = self.spec.z_order_paths
            if self.spec.curve == "hilbert":
                table = table.take(hilbert_indices(table, paths, self.spec.num_ranges))
            else:
                table = table.take(z_order_indices(table, paths, self.spec.num_ranges))
            n = min(self._num_outputs(files), table.num_rows)
            bounds = [table.num_rows * k // n for k in range(n + 1)]
            pieces = (iter(table.slice(bounds[k], bounds[k + 1] - bounds[k]).to_batches()) for k in range(n))
        written: list[AddFile] = []
        try:
            for piece in pieces:
                for rows in RowLimiter(piece, self.spec.max_records_per_file).files():
                    written.append(self._write_file(values, directory, f"{stem}.c{len(written):03d}", formats, rows))
        except BaseException:
            for a in written:
                self.delete(a.path)
            raise
        return self._z_cube(written, stem)

    def _z_cube(self, written: list[AddFile], stem: str) -> list[AddFile]:
        """Clustering: the bin's files tagged as one ZCube, as Delta's ``ZCubeInfo.setForFile``
        (``ZCUBE_ID``, the same for a retried task's bin, and ``ZCUBE_ZORDER_BY``: the
        clustering columns as a JSON list), so Delta's OPTIMIZE sees them clustered."""
        if self.spec.clustering_provider is None:
            return written
        tags = {
            "ZCUBE_ID": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.spec.table_uri}/{stem}")),
            "ZCUBE_ZORDER_BY": json.dumps(list(self.spec.z_order_by), separators=(",", ":")),
        }
        return [dataclasses.replace(a, tags={**(a.tags or {}), **tags}) for a in written]

    def _write_file(
        self,
        values: dict[str, str | None],
        directory: str,
        stem: str,
        formats: list[tuple[str, set[str]]],
        batches: Any,
    ) -> AddFile:
        import pyarrow.parquet as pq

        codec = formats[0][0]
        dictionary = {c for _, d in formats for c in d}
        name = f"{stem}{_CODEC_SUFFIX.get(codec, '')}.parquet"
        rel = f"{directory}/{name}" if directory else name
        path = self.store.fs_path(f"{self.spec.table_uri}/{rel}")
        if directory:
            self.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        stats = StatsCollector(self.schema, self.spec.stats_columns, self.spec.string_prefix_length)
        pending: list[pa.RecordBatch] = []
        pending_rows = pending_bytes = 0
        try:
            with (
                self.fs.open_output_stream(path) as out,
                pq.ParquetWriter(
                    out,
                    self.file_schema,
                    compression=codec.lower() if codec in _CODEC_SUFFIX else "snappy",
                    use_dictionary=sorted(dictionary),
                ) as writer,
            ):
                for batch in batches:
                    stats.update(batch)
                    pending.append(batch)
                    pending_rows += batch.num_rows
                    pending_bytes += batch.nbytes
                    if pending_rows >= ROW_GROUP_ROWS or pending_bytes >= ROW_GROUP_BYTES:
                        writer.write_table(pa.Table.from_batches(pending), row_group_size=ROW_GROUP_ROWS)
                        pending, pending_rows, pending_bytes = [], 0, 0
                if pending:
                    writer.write_table(pa.Table.from_batches(pending), row_group_size=ROW_GROUP_ROWS)
        except BaseException:
            self.delete(encode_path(rel))
            raise
        size = int(self.fs.get_file_info(path).size or 0)
        return AddFile(
            path=encode_path(rel),
            partition_values=values,
            size=size,
            modification_time=int(time.time() * 1000),
            data_change=False,
            stats=stats.to_json(self.spec.tight_bounds),
            clustering_provider=self.spec.clustering_provider,
        )

    def delete(self, rel: str) -> None:
        delete_data_file(self.store, self.spec.table_uri, rel)


def rewrite_bin(spec: CompactionSpec, files: Sequence[AddFile], stem: str | None = None) -> list[AddFile]:
    """Rewrite one bin (what a Spark task runs); a given ``stem`` names the files, so a
    retried task overwrites its own output instead of leaving second copies."""
    return _Compactor(spec).write_bin(files, stem)


def discard_bin_outputs(spec: CompactionSpec, bins: Sequence[tuple[Sequence[AddFile], str]]) -> None:
    """Delete whatever :func:`rewrite_bin` wrote for ``(files, stem)`` bins of a failed run."""
    compactor = _Compactor(spec)
    for files, stem in bins:
        for rel in compactor.output_paths(files, stem):
            compactor.delete(encode_path(rel))


def delete_data_file(store: LogStore, table_uri: str, rel: str) -> None:
    """Delete a file this run wrote (never committed)."""
    try:
        store.filesystem().delete_file(store.fs_path(absolute_path(table_uri, rel)))
    except FileNotFoundError:
        pass


def _narrower(file_type: pa.DataType, table_type: pa.DataType) -> bool:
    """Whether a file stores a column (or a nested field) with a type the table widened
    (Delta's ``fileHasDifferentTypes``, on the primitive types a widening can change)."""
    if pa.types.is_struct(file_type) and pa.types.is_struct(table_type):
        fields = {table_type.field(i).name.lower(): table_type.field(i).type for i in range(table_type.num_fields)}
        return any(
            _narrower(file_type.field(i).type, fields[name])
            for i in range(file_type.num_fields)
            if (name := file_type.field(i).name.lower()) in fields
        )
    if pa.types.is_map(file_type) and pa.types.is_map(table_type):
        return _narrower(file_type.key_type, table_type.key_type) or _narrower(
            file_type.item_type, table_type.item_type
        )
    nested = (pa.types.is_list, pa.types.is_large_list)
    if any(f(file_type) for f in nested) and any(f(table_type) for f in nested):
        return _narrower(file_type.value_type, table_type.value_type)
    try:
        old, new = from_arrow_type(file_type).to_json_value(), from_arrow_type(table_type).to_json_value()
    except DeltaLogError:
        return False
    return isinstance(old, str) and old != new and is_type_change_supported(old, new)


def files_with_narrower_types(spec: CompactionSpec, files: Sequence[AddFile]) -> list[AddFile]:
    """The files of ``files`` whose Parquet footer stores some column with a narrower type
    than the table's (``spec.schema``): the files ``rewrite_type_widening`` rewrites."""
    table = pa.struct(list(spec.schema))
    return [f for f, stored in _file_schemas(spec, files) if _narrower(stored, table)]


def _file_schemas(spec: CompactionSpec, files: Sequence[AddFile]) -> Iterator[tuple[AddFile, pa.DataType]]:
    """Each file of ``files`` with the schema its Parquet footer stores, as a struct type;
    :class:`OptimizeError` (nothing committed) when a footer cannot be read."""
    store = spec.store.build()
    fs = store.filesystem()
    for f in files:
        uri = absolute_path(spec.table_uri, f.path)
        try:
            with open_data_file(fs, store.fs_path(uri), pre_buffer=False) as reader:
                stored = pa.struct(list(reader.schema_arrow))
        except (OSError, pa.ArrowInvalid) as exc:
            raise OptimizeError(f"cannot read the footer of {uri} ({exc}); nothing was committed.") from None
        yield f, stored


def _selection(
    spec: CompactionSpec,
    snapshot: Snapshot,
    sizes: tuple[int, int],
    min_files_per_bin: int,
    purge: bool,
    max_deleted_rows_ratio: float,
    rewrite_type_widening: bool,
) -> _Selection:
    """What the run rewrites: ``sizes`` are the bin size and the size below which a file is a
    candidate; a purge of a column-mapped table also reads footers for dropped columns."""
    narrow = functools.partial(files_with_narrower_types, spec) if rewrite_type_widening else None
    column_mapped = snapshot.metadata.properties.column_mapping_mode != "none"
    dropped = functools.partial(files_with_dropped_columns, spec) if purge and column_mapped else None
    target, smaller_than = sizes
    return _Selection(
        spec.z_order_by, target, smaller_than, min_files_per_bin, purge, max_deleted_rows_ratio, narrow, dropped
    )


def files_with_dropped_columns(spec: CompactionSpec, files: Sequence[AddFile]) -> set[str]:
    """The paths of the files of ``files`` whose Parquet footer holds a column (at any depth,
    names compared ignoring case) the table no longer has: the files REORG PURGE rewrites
    without it (Delta's ``DeltaPurgeOperation`` and ``fileHasExtraColumns``). Partition
    columns written into the files and row tracking's materialized columns are the table's."""
    kept = [*spec.schema, *(pa.field(spec.physical_names.get(c, c), pa.null()) for c in spec.partition_columns)]
    kept += [pa.field(name, pa.null()) for name in spec.row_tracking_columns or ()]
    table = pa.struct(kept)
    return {f.path for f, stored in _file_schemas(spec, files) if _has_extra_fields(stored, table)}


def _has_extra_fields(stored: pa.DataType, table: pa.DataType) -> bool:
    """Whether ``stored`` has a struct field ``table`` lacks (through structs, lists and maps);
    a field whose type in ``table`` is null (a partition or row tracking column) is not entered."""
    if pa.types.is_null(table):
        return False
    if pa.types.is_struct(stored):
        if not pa.types.is_struct(table):
            return False
        fields = {table.field(i).name.lower(): table.field(i).type for i in range(table.num_fields)}
        return any(
            stored.field(i).name.lower() not in fields
            or _has_extra_fields(stored.field(i).type, fields[stored.field(i).name.lower()])
            for i in range(stored.num_fields)
        )
    if pa.types.is_list(stored) or pa.types.is_large_list(stored):
        return (pa.types.is_list(table) or pa.types.is_large_list(table)) and _has_extra_fields(
            stored.value_type, table.value_type
        )
    if pa.types.is_map(stored):
        return pa.types.is_map(table) and (
            _has_extra_fields(stored.key_type, table.key_type) or _has_extra_fields(stored.item_type, table.item_type)
        )
    return False


def _percentile(sizes: list[int], quarters: int) -> int:
    """Delta's ``FileSizeStatsWithHistogram``: the size at index ``count * quarters / 4`` of
    the sorted sizes (0 without files)."""
    if not sizes:
        return 0
    s = sorted(sizes)
    return s[len(s) * quarters // 4]


def optimize(
    delta_log: DeltaLog,
    where: Sequence[PartitionFilter] | None = None,
    target_size: int | None = None,
    min_files_per_bin: int = 2,
    *,
    min_file_size: int | None = None,
    max_attempts: int = 5,
    lock: str | CommitLock | None = None,
    progress: Progress | None = None,
    rewrite_bins: BinRewriter | None = None,
    z_order_by: Sequence[str] = (),
    num_ranges: int = DEFAULT_NUM_RANGES,
    purge: bool = False,
    check_z_order_stats: bool = True,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
    full: bool = False,
    rewrite_type_widening: bool = False,
    session_prefix_length: int = STRING_PREFIX_LENGTH,
    select_files: FileSelector | None = None,
    predicate: Sequence[str] | None = None,
    auto: bool = False,
) -> OptimizeResult:
    """Compact small files; an :class:`OptimizeResult`. ``target_size``: Delta's ``maxFileSize``; files below
    ``min_file_size`` (default: the target) are candidates. ``z_order_by``: Delta's ``ZORDER BY``, checked for stats
    unless ``check_z_order_stats`` is false (:data:`ZORDER_STATS_CHECK_KEY`). ``auto``: run by auto compaction
    (:mod:`~deltalog.txn.commands.auto_compact`). The rest: the module docstring."""
    _check_counts(delta_log, min_files_per_bin, max_attempts)
    written: dict[_BinKey, list[AddFile]] = {}
    result = OptimizeResult(delta_log.table_uri)
    committed: set[str] = set()
    try:
        txn = delta_log.start_transaction(lock=lock)
        target, smaller_than = _size_limits(txn.snapshot, target_size, min_file_size)
        clustered = _clustering(txn.snapshot, z_order_by, full)
        kind = _Kind(reorg=purge or rewrite_type_widening, clustered=clustered is not None, full=full, auto=auto)
        columns = _z_order_columns(txn.snapshot, clustered, z_order_by, check_z_order_stats)
        spec = CompactionSpec.for_snapshot(
            delta_log, txn.snapshot, columns, target, num_ranges, kind.clustered, session_prefix_length
        )
        select = _selection(
            spec, txn.snapshot, (target, smaller_than), min_files_per_bin, purge, max_deleted_rows_ratio,
            rewrite_type_widening,
        )  # fmt: skip
        plan = _plan_bins(txn, where, select, result, kind, select_files)
        if not plan:
            log.info("optimize %s: nothing to compact", delta_log.table_uri)
            return result
        adds = _rewrite_plan(spec, plan, written, rewrite_bins, progress)
        actions, operation = _commit_plan(plan, adds, where, spec.z_order_by, result, kind, predicate)
        compacted = [f for _, b in plan for f in b]
        result.version, result.attempts = commit_and_retry(
            delta_log, txn, actions, operation, compacted, max_attempts=max_attempts, lock=lock
        )
        committed = {a.path for a in adds}
        log.info("optimize %s: version %d, %s", delta_log.table_uri, result.version, result.metrics)
        return result
    finally:
        _finish(delta_log, result, written, committed)


def _clustering(snapshot: Snapshot, z_order_by: Sequence[str], full: bool) -> tuple[str, ...] | None:
    """The clustering columns OPTIMIZE clusters by (:func:`clustering_plan`); ``full`` needs some,
    as Delta's ``optimizeFullNotSupportedException``."""
    clustered = clustering_plan(snapshot, z_order_by)
    if full and clustered is None:
        raise OptimizeError(
            "[DELTA_OPTIMIZE_FULL_NOT_SUPPORTED] OPTIMIZE FULL is only supported for clustered tables with "
            "non-empty clustering columns; cluster the table (cluster_by) or run OPTIMIZE without full"
        )
    return clustered


def _finish(
    delta_log: DeltaLog, result: OptimizeResult, written: dict[_BinKey, list[AddFile]], committed: set[str]
) -> None:
    """The end of a run: its end time recorded, the files no commit names deleted."""
    result.end_time_ms = int(time.time() * 1000)
    _delete_uncommitted(delta_log, written, committed)


def _count_table_columns(result: OptimizeResult, snapshot: Snapshot) -> None:
    """Delta's ``numTableColumns`` (top-level columns) and ``numTableColumnsWithStats``
    (``delta.dataSkippingNumIndexedCols`` capped by them, as Delta's ``OptimizeExecutor``)."""
    columns = len(snapshot.schema.fields)
    result.num_table_columns = columns
    result.num_table_columns_with_stats = min(snapshot.properties.data_skipping_num_indexed_cols, columns)


def _check_counts(delta_log: DeltaLog, min_files_per_bin: int, max_attempts: int) -> None:
    """The arguments checked, then that the table exists."""
    if min_files_per_bin < 1:
        raise ValueError(f"min_files_per_bin must be >= 1, got {min_files_per_bin}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    delta_log.require_table()


def _delete_uncommitted(delta_log: DeltaLog, written: dict[_BinKey, list[AddFile]], committed: set[str]) -> None:
    """Delete the files this run wrote that no commit names (after a failure)."""
    leftovers = [a for added in written.values() for a in added if a.path not in committed]
    for a in leftovers:
        delete_data_file(delta_log.store, delta_log.table_uri, a.path)


def _bin_key(files_in_bin: Sequence[AddFile]) -> _BinKey:
    return frozenset(f.logical_key for f in files_in_bin)


def _size_limits(snapshot: Snapshot, target_size: int | None, min_file_size: int | None) -> tuple[int, int]:
    """The bin size and the size below which a file is a candidate."""
    target = target_size or snapshot.properties.target_file_size or DEFAULT_TARGET_FILE_SIZE
    if target <= 0:
        raise ValueError(f"the target file size must be > 0, got {target}")
    smaller_than = target if min_file_size is None else min_file_size
    if smaller_than < 0:
        raise ValueError(f"the minimum file size must be >= 0, got {smaller_than}")
    return target, smaller_than


@dataclass(frozen=True)
class _Kind:
    """What the commit records: ``REORG`` for a purge or a type widening rewrite, else
    ``OPTIMIZE`` (clustering the table by its clustering columns, or everything with ``full``)."""

    reorg: bool = False
    clustered: bool = False
    full: bool = False
    #: run by auto compaction (``auto`` in the commit's parameters)
    auto: bool = False


@dataclass(frozen=True)
class _Selection:
    """Which files an OPTIMIZE (or REORG PURGE) rewrites, and how it bins them."""

    z_order: tuple[str, ...]
    target: int
    smaller_than: int
    min_files_per_bin: int
    purge: bool
    max_deleted_rows_ratio: float
    #: ``rewrite_type_widening``: the files among the partitions' files to rewrite, each
    #: even alone in its bin (Delta's reorg keeps bins of one file)
    narrower: Callable[[Sequence[AddFile]], list[AddFile]] | None = None
    #: ``purge`` on a table with column mapping: the paths of the files among the partitions'
    #: files whose Parquet schema still holds a column the table dropped
    dropped_columns: Callable[[Sequence[AddFile]], set[str]] | None = None

    def wants(self, f: AddFile) -> bool:
        if self.narrower is not None:
            return True
        if self.purge:
            return has_deleted_rows(f)
        return bool(self.z_order) or f.size < self.smaller_than or _too_many_deleted(f, self.max_deleted_rows_ratio)


def _plan_bins(
    txn: OptimisticTransaction,
    where: Sequence[PartitionFilter] | None,
    select: _Selection,
    result: OptimizeResult,
    kind: _Kind = _Kind(),
    select_files: FileSelector | None = None,
) -> list[tuple[Any, list[AddFile]]]:
    """The bins to rewrite, per partition: the candidate files (smaller than ``smaller_than``,
    with too many rows deleted, or with purge every file with deleted rows) packed into bins
    of ``target`` bytes, or with Z-order every file of the partition in one bin. Records the
    files considered and skipped in ``result``."""
    _count_table_columns(result, txn.snapshot)
    files = txn.files_for_scan(list(where) if where else None)
    if select_files is not None:  # the Spark layer's WHERE (Delta's filesForScan)
        files = select_files(txn.snapshot, files)
    extra = select.dropped_columns(files) if select.dropped_columns is not None else set()
    wanted = [f for f in files if select.wants(f) or f.path in extra]
    if select.narrower is not None:
        wanted = select.narrower(wanted)
    by_partition: dict[Any, list[AddFile]] = defaultdict(list)
    typed = typed_partition_keys(txn.snapshot.metadata)  # Delta groups by normalizedPartitionValues
    for f in wanted:
        by_partition[typed.key(f.partition_values) or partition_key(f)].append(f)
    # a reorg rewrites a file even alone in its bin (Delta's groupFilesIntoBins)
    min_files = 1 if select.narrower is not None or select.purge else select.min_files_per_bin
    # Z-order (Delta's multi-dimensional clustering) rewrites each partition whole
    plan = [
        (key, b)
        for key, group in by_partition.items()
        for b in ([group] if select.z_order else _bins(group, select.target, min_files))
    ]
    if kind.clustered and not (kind.full or select.narrower):  # only bins holding a file not clustered yet
        plan = [(key, b) for key, b in plan if any(not is_clustered(f) for f in b)]
    if kind.clustered:
        merged = [f for _, b in plan for f in b]
        result.clustering_stats = clustering_stats(files, merged, len(plan), select.z_order, kind.full)
    result.total_considered_files = len(files)
    result.total_files_skipped = len(files) - sum(len(b) for _, b in plan)
    txn.track_files_read(f for _, b in plan for f in b)  # Delta's trackFilesRead(filesToProcess)
    return plan


def _rewrite_plan(
    spec: CompactionSpec,
    plan: list[tuple[Any, list[AddFile]]],
    written: dict[_BinKey, list[AddFile]],
    rewrite_bins: BinRewriter | None,
    progress: Progress | None,
) -> list[AddFile]:
    """Rewrite the bins of ``plan`` not rewritten by an earlier attempt (``written``, updated);
    returns the files that replace the planned ones."""
    todo = [b for _, b in plan if _bin_key(b) not in written]
    for files_in_bin, added in zip(todo, _rewrite(spec, todo, rewrite_bins, progress)):
        written[_bin_key(files_in_bin)] = added
    return [a for _, b in plan for a in written[_bin_key(b)]]


def _rewrite(
    spec: CompactionSpec, todo: list[list[AddFile]], rewrite_bins: BinRewriter | None, progress: Progress | None
) -> list[list[AddFile]]:
    """Rewrite each bin of ``todo`` (with ``rewrite_bins``, else here one after the other,
    reporting ``progress``); returns the files written for each."""
    if rewrite_bins is not None:
        rewritten = list(rewrite_bins(spec, todo)) if todo else []
        if len(rewritten) != len(todo):
            raise AssertionError(f"{len(todo)} bins rewritten into {len(rewritten)} results")
        return rewritten
    compactor = _Compactor(spec)
    if progress is not None:
        progress(0, len(todo))
    written: list[list[AddFile]] = []
    for i, files_in_bin in enumerate(todo, 1):
        written.append(compactor.write_bin(files_in_bin))
        if progress is not None:
            progress(i, len(todo))
    return written


def _commit_plan(
    plan: list[tuple[Any, list[AddFile]]],
    adds: list[AddFile],
    where: Sequence[PartitionFilter] | None,
    z_order: tuple[str, ...],
    result: OptimizeResult,
    kind: _Kind = _Kind(),
    predicate: Sequence[str] | None = None,
) -> tuple[list[Action], Optimize | Reorg]:
    """The removes of the planned files and ``adds`` (``dataChange=false``), and the
    ``OPTIMIZE`` (or ``REORG``) operation committing them."""
    now = int(time.time() * 1000)
    predicate = predicate or describe_filters(where)
    removes = [f.remove(now, data_change=False) for _, b in plan for f in b]
    _fill(result, plan, adds)
    operation: Optimize | Reorg
    if kind.reorg:
        operation = Reorg(predicate=list(predicate), user_metrics=result.metrics)
    else:
        operation = Optimize(
            predicate=list(predicate),
            z_order_by=() if kind.clustered else z_order,
            cluster_by=z_order if kind.clustered else None,
            is_full=kind.full,
            auto=kind.auto,
            user_metrics=result.metrics,
        )
    return [*removes, *adds], operation


def _z_order_columns(
    snapshot: Snapshot, clustered: Sequence[str] | None, z_order_by: Sequence[str], check_stats: bool
) -> tuple[ZOrderColumn, ...]:
    """The clustering columns of a clustered table, else the ``ZORDER BY`` columns checked as
    Delta's ``validateZorderByColumns`` (:func:`~deltalog.txn.commands.z_order.z_order_columns`),
    its refusals as :class:`OptimizeError`."""
    # clustering: top-level columns, named as Delta quotes them (`a b`)
    names = [tuple(split_column_name(c)) for c in clustered] if clustered else z_order_by
    if not names:
        return ()
    check = z_order_columns(snapshot, names, check_stats)
    if check.refusal is not None:
        raise OptimizeError(check.refusal)
    if check.without_stats:
        raise OptimizeError(
            f"Z-Ordering on {list(check.without_stats)} will be ineffective, because we currently do not collect "
            "stats for these columns (delta.dataSkippingStatsColumns, else the first delta.dataSkippingNumIndexedCols "
            "columns). Z-order by columns with statistics, list these in delta.dataSkippingStatsColumns, or disable "
            f"this check by setting SET {ZORDER_STATS_CHECK_KEY} = false (DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS)."
        )
    if check.not_orderable:
        name, type_name = check.not_orderable[0]
        raise OptimizeError(
            f'[DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT] Cannot resolve "rangepartitionid({name})" due to data '
            f"type mismatch: cannot sort data type {type_name}. Z-order by columns of orderable types (not variant "
            "or map, nor structs or arrays holding one); nothing was rewritten"
        )
    return check.columns


def _fill(result: OptimizeResult, plan: Sequence[tuple[Any, list[AddFile]]], adds: Sequence[AddFile]) -> None:
    removed = [f for _, b in plan for f in b]
    result.num_files_removed = len(removed)
    result.num_files_added = len(adds)
    result.bytes_removed = sum(f.size for f in removed)
    result.bytes_added = sum(a.size for a in adds)
    result.num_bins = len(plan)
    result.partitions_optimized = len({key for key, _ in plan})
    with_dv = [f.deletion_vector for f in removed if f.deletion_vector is not None]
    result.num_deletion_vectors_removed = len(with_dv)
    result.num_deletion_vector_rows_removed = sum(dv.cardinality for dv in with_dv)
    sizes = [a.size for a in adds]
    result.added_file_sizes = tuple(sizes)
    result.removed_file_sizes = tuple(f.size for f in removed)
    result.metrics = {
        "numAddedFiles": str(result.num_files_added),
        "numRemovedFiles": str(result.num_files_removed),
        "numAddedBytes": str(result.bytes_added),
        "numRemovedBytes": str(result.bytes_removed),
        "minFileSize": str(min(sizes) if sizes else 0),
        "p25FileSize": str(_percentile(sizes, 1)),
        "p50FileSize": str(_percentile(sizes, 2)),
        "p75FileSize": str(_percentile(sizes, 3)),
        "maxFileSize": str(max(sizes) if sizes else 0),
        "numBatches": str(result.num_batches),
        "totalConsideredFiles": str(result.total_considered_files),
        "totalFilesSkipped": str(result.total_files_skipped),
        "preserveInsertionOrder": "true",
        "numDeletionVectorsRemoved": str(result.num_deletion_vectors_removed),
    }
