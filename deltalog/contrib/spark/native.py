"""Native reads: a Delta table as a DataFrame scanned by Spark's own Parquet reader.

``read_table(spark, uri, **options)`` resolves the snapshot on the driver with deltalog,
skips files by the log's partition values and statistics for an optional ``where``
predicate (:func:`~deltalog.contrib.spark.scan.plan_files`), and gives Spark's Parquet
source exactly the snapshot's files, so the scan is a ``FileSourceScanExec`` (column
pruning, filter pushdown, vectorized decoding, whole-stage codegen).

How Spark gets the files without listing anything: the driver writes the file list as
a one-batch file-sink metadata log (``_spark_metadata/0``) in a driver-local temporary
directory and reads that directory as Parquet. Spark's ``MetadataLogFileIndex`` takes
the files, sizes and times from that log and never lists or stats the table's storage
(100k files plan in well under a second once the JVM is warm). The log is read when the
DataFrame is created and deleted right after.

Partition columns come from the log:

- Hive-style layout (no column mapping; every file sits in the ``k=v/`` directories that
  its partition values escape to; types string, integral or date; no empty strings):
  Spark's partition discovery reads the same values from the paths, typed by the schema
  we pass, and prunes partitions for any later filter.
- Any other layout (column mapping's random prefixes, absolute paths, other types): a
  broadcast join of ``_metadata.file_path`` with the files' typed partition values.

Deletion vectors drop rows by their bitmap word, found by the row's file
(``_metadata.file_size``) and its position in it, which Spark's Parquet reader fills in
(:mod:`~deltalog.contrib.spark.native_dv`). Column mapping reads physical names (or
Parquet field ids in ``id`` mode, through ``spark.sql.parquet.fieldId.read.enabled``) and
renames to logical names after the scan. A table this path cannot read correctly falls
back to the ``deltalog`` Python data source, with the reason logged at INFO.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from deltalog.contrib.spark import schemas
from deltalog.contrib.spark.data_skipping import where_terms
from deltalog.contrib.spark.errors import DeltaAnalysisError, NativeReadUnsupportedError
from deltalog.contrib.spark.options import ReadOptions
from deltalog.contrib.spark.partitioning import HIVE_DEFAULT_PARTITION, partition_directory, typed_partition_value
from deltalog.contrib.spark.predicates import at_session_time_zone
from deltalog.contrib.spark.scan import Term, plan_files
from deltalog.contrib.spark.session_writes import session_read_defaults
from deltalog.contrib.spark.tablelog import open_log
from deltalog.txn.protocol.actions import DeletionVectorDescriptor
from deltalog.txn.protocol.features import READ_SUPPORTED
from deltalog.txn.protocol.generated_columns import partition_expressions
from deltalog.txn.protocol.type_widening import fields_widened_from_float

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "HIVE_TYPES",
    "NATIVE_READER_FEATURES",
    "hadoop_path",
    "hadoop_root",
    "read_table",
    "scan_paths",
    "scan_with_positions",
    "spark_can_reach",
]

log = logging.getLogger(__name__)

#: Reader features the native path honours: every feature deltalog reads; a table with any
#: other falls back. (Collated strings are read natively: the scan schema carries them;
#: variant columns when Spark's Parquet reader reads them, :func:`_variant_unsupported`.)
NATIVE_READER_FEATURES = READ_SUPPORTED
#: the first Spark whose Parquet reader reads variant columns, shredded ones too
_VARIANT_SPARK = (4, 1)
_SHREDDING_FEATURES = frozenset({"variantShredding", "variantShredding-preview"})
#: Spark's conf that lets its Parquet reader read shredded variants (true from Spark 4.1)
_READ_SHREDDED = "spark.sql.variant.allowReadingShredded"
#: Partition column types whose Hive directory value Spark parses back to the log's value.
HIVE_TYPES = frozenset({"string", "byte", "short", "integer", "long", "date"})
#: Delta's ``s3://`` URIs are read by Hadoop's S3A connector.
_HADOOP_SCHEMES = {"s3": "s3a"}
_URI_SAFE = "/-_.!~*'(),;:$&+=@"
#: Unicode categories java.net.URI percent-encodes outside ASCII (controls, spaces, separators).
_JAVA_QUOTED = frozenset({"Cc", "Zs", "Zl", "Zp"})
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/\-_.!~*'(),;:$&+=@]*\Z")
_BLOCK_SIZE = 128 * 1024 * 1024
PARTITION_FILE_KEY = "__deltalog_pfile"
#: Hadoop options of a scan (Spark passes a read's options to the Parquet reader) that stop
#: it from dropping row groups by their statistics, dictionaries, page indexes or bloom
#: filters: Parquet's min/max leave NaN out and its dictionaries and bloom filters tell -0.0
#: from 0.0, while Spark orders NaN above every number and has -0.0 = 0.0, so a pushed filter
#: on a float column would drop matching rows (pyarrow's and delta-rs's files)
_NO_ROW_GROUP_FILTERS = {
    f"parquet.filter.{kind}.enabled": "false" for kind in ("stats", "dictionary", "columnindex", "bloom")
}


def read_table(spark: SparkSession, uri: str, **options: Any) -> DataFrame:
    """The Delta table at ``uri`` as a DataFrame read by Spark's own Parquet reader.

    Options are those of ``format("deltalog")`` (``versionAsOf``, ``timestampAsOf``,
    storage options, ``logStore``) plus ``where`` (a predicate in SQL text: files whose
    partition values or statistics cannot match are skipped at planning, and the rows are
    filtered) and ``native`` (``True``/``False`` forces the path; by default the native
    path is used when Spark's file system reaches the table's storage and the table has
    nothing it cannot honour, the Python data source otherwise).

    The DataFrame is bound to the snapshot it was planned on: later commits are not seen
    by it (plan again to read them). ``explain()`` shows ``FileScan parquet`` for a native
    read and ``BatchScan deltalog`` for the Python path.
    """
    opts = {k: v for k, v in options.items() if v is not None}
    where = opts.pop("where", None)
    native = _native_flag(opts.pop("native", None))
    raw = {k: str(v) for k, v in opts.items()}
    raw = {**session_read_defaults(spark, raw), **raw}  # timestamps are read in the session's zone
    read = ReadOptions.parse({**raw, "path": uri})
    if native is False:
        return _python_read(spark, uri, raw, where)
    try:
        return _native_read(spark, read, where, check_reach=native is None)
    except NativeReadUnsupportedError as exc:
        if native:
            raise
        log.info("reading %s through the deltalog Python data source: %s", uri, exc)
        return _python_read(spark, uri, raw, where)


def _native_flag(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    if text in ("", "auto"):
        return None
    raise DeltaAnalysisError(f"option native must be true, false or auto, got {value!r}")


def _python_read(spark: SparkSession, uri: str, options: Mapping[str, str], where: str | None) -> DataFrame:
    from deltalog.contrib.spark.session import register

    register(spark)
    df = spark.read.format("deltalog").options(**options).load(uri)
    return df.filter(where) if where else df


# -- where the files are ------------------------------------------------------------------


def hadoop_path(table_uri: str, fs_path: str) -> str:
    """The table root as a Hadoop *path string*, what ``DataFrameReader/Writer.parquet``
    take (``new Path(String)`` escapes it itself: a ``%20`` in it is three characters)."""
    scheme, sep, rest = table_uri.partition("://")
    if not sep or scheme == "file":
        return "file:" + os.path.normpath(os.path.abspath(fs_path))
    authority, _, path = rest.partition("/")
    return f"{_HADOOP_SCHEMES.get(scheme, scheme)}://{authority}/" + unquote(path).rstrip("/")


def hadoop_root(table_uri: str, fs_path: str) -> str:
    """The table root as a Hadoop URI string (``file:/abs/path``, ``s3a://bucket/key``)."""
    scheme, sep, rest = table_uri.partition("://")
    if not sep or scheme == "file":
        return "file:" + _uri_path(os.path.normpath(os.path.abspath(fs_path)))
    scheme = _HADOOP_SCHEMES.get(scheme, scheme)
    authority, _, path = rest.partition("/")
    return f"{scheme}://{authority}/" + _uri_path(unquote(path).rstrip("/"))


def _uri_path(path: str) -> str:
    """``path`` escaped as ``java.net.URI`` escapes a path, so it reads as Spark names files
    (``_metadata.file_path``, Hadoop's ``Path.toUri``): ASCII outside the URI's path
    characters percent-encoded, other characters kept as they are except controls and
    spaces (``Character.isISOControl``/``isSpaceChar``)."""
    if path.isascii():
        return quote(path, safe=_URI_SAFE)
    return "".join(
        c if not c.isascii() and unicodedata.category(c) not in _JAVA_QUOTED else quote(c, safe=_URI_SAFE) for c in path
    )


def _file_uri(root: str, path: str) -> str:
    """A data file as the URI Spark names it (``_metadata.file_path``)."""
    if _PLAIN_PATH.match(path) and not path.startswith(("/", "file:")) and "://" not in path:
        return f"{root}/{path}"
    if path.startswith(("file:", "/")):
        raw = unquote(path[5:] if path.startswith("file:") else path)
        return "file:" + _uri_path(os.path.normpath("/" + raw.lstrip("/")))
    if "://" in path:
        scheme, _, rest = path.partition("://")
        return f"{_HADOOP_SCHEMES.get(scheme, scheme)}://" + _uri_path(unquote(rest))
    return root + "/" + _uri_path(unquote(path))


def spark_can_reach(spark: SparkSession, table_uri: str) -> bool:
    """Whether Spark's Hadoop file system has an implementation for the table's scheme."""
    scheme, sep, _ = table_uri.partition("://")
    if not sep or scheme == "file":
        return True
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return False
    try:
        conf = spark._jsc.hadoopConfiguration()
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(_HADOOP_SCHEMES.get(scheme, scheme), conf)
    except Exception:  # py4j raises the JVM's UnsupportedFileSystemException
        return False
    return True


# -- planning -------------------------------------------------------------------------------


@dataclass
class FileList:
    """The files of a native scan, column by column (cheap to build for 100k files)."""

    paths: list[str]  # as in the log (URI-encoded, relative or absolute)
    uris: list[str]  # as Spark names them
    sizes: list[int]
    modification_times: list[int]
    #: logical partition column -> each file's value as in the log (None: null)
    values: dict[str, list[str | None]]
    #: index of a file -> its deletion vector
    deletion_vectors: dict[int, DeletionVectorDescriptor]

    def __len__(self) -> int:
        return len(self.paths)

    def subset(self, indexes: Sequence[int]) -> FileList:
        if len(indexes) == len(self.paths):
            return self
        dvs = {new: self.deletion_vectors[old] for new, old in enumerate(indexes) if old in self.deletion_vectors}
        return FileList(
            [self.paths[i] for i in indexes],
            [self.uris[i] for i in indexes],
            [self.sizes[i] for i in indexes],
            [self.modification_times[i] for i in indexes],
            {c: [v[i] for i in indexes] for c, v in self.values.items()},
            dvs,
        )


def _file_list(files: Any, root: str, partition_keys: Mapping[str, str]) -> FileList:
    """A :class:`FileList` from a snapshot's Arrow files table (``partition_keys``: logical
    partition column -> its key in ``partitionValues``)."""
    import pyarrow.compute as pc

    paths = files.column("path").to_pylist()
    pv = files.column("partitionValues")
    values = {c: pc.map_lookup(pv, key, "first").to_pylist() for c, key in partition_keys.items()}
    dvs: dict[int, DeletionVectorDescriptor] = {}
    dv_column = files.column("deletionVector")
    if dv_column.null_count < len(dv_column):
        for i in pc.indices_nonzero(pc.is_valid(dv_column)).to_pylist():
            raw = {k: v for k, v in dv_column[i].as_py().items() if v is not None}
            dvs[i] = DeletionVectorDescriptor.from_dict(raw)
    return FileList(
        paths,
        [_file_uri(root, p) for p in paths],
        files.column("size").to_pylist(),
        files.column("modificationTime").to_pylist(),
        values,
        dvs,
    )


def _snapshot(read: ReadOptions) -> tuple[DeltaLog, Snapshot]:
    from deltalog.txn.protocol.errors import TableNotFoundError

    delta_log = open_log(read.path, read.storage_options, read.logstore)
    if read.version_as_of is not None or read.timestamp_as_of is not None:
        snapshot = delta_log.snapshot(
            version=read.version_as_of, timestamp=read.timestamp_as_of, enforce_retention=True
        )
    else:
        snapshot = delta_log.update()
    if snapshot.version < 0:
        raise TableNotFoundError(delta_log.table_uri, "no _delta_log; write to it first")
    return delta_log, snapshot


def _check_supported(spark: SparkSession, snapshot: Snapshot, schema: Mapping[str, Any]) -> None:
    from deltalog.contrib.spark.native_dv import ROW_INDEX
    from deltalog.txn.protocol.features import protocol_features

    reader, _ = protocol_features(snapshot.protocol)
    unsupported = sorted(set(reader) - NATIVE_READER_FEATURES)
    if unsupported:
        raise NativeReadUnsupportedError(f"the native path does not read the reader features {', '.join(unsupported)}")
    variant_reason = _variant_unsupported(spark, snapshot, reader)
    if variant_reason:
        raise NativeReadUnsupportedError(variant_reason)
    for f in schema["fields"]:
        if f["name"].lower().startswith("__deltalog_") or f["name"].lower() in ("_metadata", ROW_INDEX):
            raise NativeReadUnsupportedError(f"column {f['name']!r} collides with a column the native scan uses")


def _variant_unsupported(spark: SparkSession, snapshot: Snapshot, reader: Collection[str]) -> str | None:
    """Why Spark's Parquet scan cannot read the table's variant columns (None: it can, or
    there are none: delta-rs names ``variantType`` on tables with deletion vectors whatever
    their columns). Spark 4.1+ reads variants written unshredded (Spark, pyarrow, delta-rs)
    and shredded (a table with ``variantShredding`` may hold such files) when the session's
    ``spark.sql.variant.allowReadingShredded`` lets it; a session that forbids it would fail
    the scan of a shredded variant nested in a struct."""
    from deltalog.txn.protocol.protocol_requirements import active_features

    if "variantType" not in active_features(snapshot.metadata):
        return None
    version = tuple(int(p) for p in re.findall(r"\d+", spark.version)[:2])
    if version < _VARIANT_SPARK:
        return f"Spark {spark.version} does not read variant columns natively (Spark 4.1 and later do)"
    if _SHREDDING_FEATURES & set(reader) and str(spark.conf.get(_READ_SHREDDED, "true")).lower() != "true":
        return (
            f"the table may hold shredded variants, which the session's {_READ_SHREDDED}=false keeps Spark from reading"
        )
    return None


def _is_hive_layout(files: FileList, partition_columns: Sequence[str], types: Mapping[str, str], root: str) -> bool:
    """Whether Spark's partition discovery gives exactly the log's values for ``files``."""
    if not partition_columns:
        return False
    if any(types.get(c, "").lower() not in HIVE_TYPES for c in partition_columns):
        return False
    if "=" in unquote(root.rstrip("/").rsplit("/", 1)[-1]):
        return False  # discovery would walk on above the table root
    directories: dict[tuple[str | None, ...], str] = {}
    columns = [files.values[c] for c in partition_columns]
    for path, key in zip(files.paths, zip(*columns)):
        directory = directories.get(key)
        if directory is None:
            if any(v == "" or v == HIVE_DEFAULT_PARTITION for v in key):
                return False  # Spark reads both as null
            directory = partition_directory(partition_columns, dict(zip(partition_columns, key))) + "/"
            directories[key] = directory
        raw = unquote(path) if "%" in path else path
        if "://" in path or path.startswith(("/", "file:")) or not raw.startswith(directory):
            return False
        if "/" in raw[len(directory) :]:
            return False
    return True


def _read_schema(schema: Mapping[str, Any], mode: str, partition_columns: Sequence[str], hive: bool) -> Any:
    """The Spark schema to scan: physical names (and field ids in id mode) for data
    columns; partition columns only when Spark discovers them from Hive directories."""

    physical = schemas.physical_schema(dict(schema), mode)
    parts = {c.lower() for c in partition_columns}

    if mode == "id":
        physical = schemas.with_parquet_field_ids(physical)
    logical_names = [f["name"] for f in schema["fields"]]
    fields = [f for logical, f in zip(logical_names, physical["fields"]) if hive or logical.lower() not in parts]
    return schemas.spark_struct({"fields": fields})


def _write_file_log(directory: str, files: FileList) -> None:
    """A file-sink metadata log (batch 0) naming ``files``: what ``MetadataLogFileIndex`` reads."""
    meta = os.path.join(directory, "_spark_metadata")
    os.makedirs(meta)
    import pyarrow as pa
    import pyarrow.compute as pc

    def text(values: list[int]) -> Any:
        return pc.cast(pa.array(values, pa.int64()).fill_null(0), pa.string())

    # every URI is percent-encoded ASCII without quotes or backslashes: JSON-safe as is
    lines = pc.binary_join_element_wise(
        '{"path":"',
        pa.array(files.uris, pa.string()),
        '","size":',
        text(files.sizes),
        ',"isDir":false,"modificationTime":',
        text(files.modification_times),
        f',"blockReplication":1,"blockSize":{_BLOCK_SIZE},"action":"add"}}',
        "",
    )
    with open(os.path.join(meta, "0"), "w", encoding="utf-8") as out:
        out.write("v1\n")
        out.write("\n".join(lines.to_pylist()))


def _scan(spark: SparkSession, files: FileList, read_schema: Any, hive: bool, row_index: bool = False) -> DataFrame:
    """Spark's Parquet scan of exactly ``files``; with ``row_index``, each row's position in
    its file in the column ``native_dv.ROW_INDEX`` (filled in by Spark's Parquet reader)."""
    from pyspark.sql.types import LongType, StructField, StructType

    from deltalog.contrib.spark.native_dv import ROW_INDEX

    if row_index:
        read_schema = StructType([*read_schema.fields, StructField(ROW_INDEX, LongType())])
    directory = tempfile.mkdtemp(prefix="deltalog-native-")
    try:
        _write_file_log(directory, files)
        reader = spark.read.schema(read_schema)
        if _has_floats(read_schema):
            reader = reader.options(**_NO_ROW_GROUP_FILTERS)
        if not hive:
            reader = reader.option("recursiveFileLookup", "true")  # no partition discovery
        return reader.parquet(hadoop_path("file://", directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _has_floats(schema: Any) -> bool:
    """Whether the Spark ``schema`` holds a float or double at any depth."""
    from deltalog.txn.protocol.protocol_requirements import walk_types

    return any(t in ("float", "double") for t in walk_types(schema.jsonValue()))


def _check_file_names(spark: SparkSession, df: DataFrame, files: FileList) -> None:
    """The joins match ``_metadata.file_path`` with our URIs: they must be Spark's names."""
    jvm: Any = spark._jvm
    listed = jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(df._jdf.inputFiles())
    names = str(listed.mkString("\n")).split("\n")
    if set(names) != set(files.uris):
        raise NativeReadUnsupportedError("Spark names the table's files differently than deltalog does")


def _partition_frame(
    spark: SparkSession, files: FileList, partition_columns: Sequence[str], types: Mapping[str, str], logical: Any
) -> DataFrame:
    """:func:`_partition_table` as a DataFrame typed as the table's columns (``logical``):
    inferred from Arrow, a ``timestamp_ntz`` value would be read as a local time of the
    session and shift by its offset."""
    from pyspark.sql.types import StringType, StructField, StructType

    spark_types = {f.name: f.dataType for f in logical.fields}
    schema = StructType(
        [StructField(PARTITION_FILE_KEY, StringType()), *(StructField(c, spark_types[c]) for c in partition_columns)]
    )
    return spark.createDataFrame(_partition_table(files, partition_columns, types, spark_types), schema)


def _partition_table(
    files: FileList,
    partition_columns: Sequence[str],
    types: Mapping[str, str],
    spark_types: Mapping[str, Any],
) -> Any:
    """One row per file: its URI and its typed partition values (Arrow)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    columns: dict[str, Any] = {PARTITION_FILE_KEY: pa.array(files.uris, pa.string())}
    for c in partition_columns:
        values = [typed_partition_value(v, types[c]) for v in files.values[c]]
        columns[c] = pa.array(values, to_arrow_type(spark_types[c], timezone="UTC"))
    return pa.table(columns)


def _native_read(spark: SparkSession, read: ReadOptions, where: str | None, check_reach: bool) -> DataFrame:
    if getattr(spark, "_jvm", None) is None:
        raise NativeReadUnsupportedError("the session has no JVM (Spark Connect)")
    if read.read_change_feed:
        raise NativeReadUnsupportedError("the change data feed is read by the Python data source")
    delta_log, snapshot = _snapshot(read)
    if check_reach and not spark_can_reach(spark, delta_log.table_uri):
        raise NativeReadUnsupportedError(f"Spark has no Hadoop file system for {delta_log.table_uri}")
    table = _files_table(spark, snapshot, where_terms(where))
    if read.read_row_tracking:
        df = _scan_with_row_tracking(spark, delta_log, snapshot, table, where)
    else:
        df = _native_scan(spark, delta_log, snapshot, table, where)
    if read.version_as_of is None and read.timestamp_as_of is None:
        from deltalog.contrib.spark.source_reads import register_bound_read

        # a write of this DataFrame (or a MERGE from it) into the same table opens on this snapshot
        register_bound_read(df, delta_log.table_uri, snapshot.version)
    return df


def _scan_with_row_tracking(
    spark: SparkSession, delta_log: DeltaLog, snapshot: Snapshot, table: Any, where: str | None
) -> DataFrame:
    """The native scan of the files in ``table`` with ``readRowTracking``'s ``_metadata``
    column (``struct<row_id, row_commit_version>``, as the Python path gives it): each row's
    materialized values where its file has them, else its file's ``baseRowId`` + its
    position in the file and the file's ``defaultRowCommitVersion`` (Delta's
    ``RowId``/``RowCommitVersion`` columns)."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.native_dv import FILE_KEY, ROW_KEY
    from deltalog.contrib.spark.reads import ROW_TRACKING_COLUMN, row_tracking_columns, row_tracking_struct
    from deltalog.contrib.spark.row_tracking import stable_row_tracking

    row_id, commit_version = columns = row_tracking_columns(snapshot)  # refuses a table without row tracking
    paths = table.column("path").to_pylist()
    if not paths:
        df = _native_scan(spark, delta_log, snapshot, table, None)
        df = df.withColumn(ROW_TRACKING_COLUMN, F.lit(None).cast(row_tracking_struct()))
        return df.filter(where) if where else df
    df, uris = scan_with_positions(spark, delta_log, snapshot, paths, hidden=columns)
    adds = {a.path: a for a in snapshot.files}
    df = stable_row_tracking(df, {uri: adds[path] for uri, path in uris.items()}, columns, FILE_KEY, ROW_KEY)
    tracking = F.struct(
        F.col(_quoted(row_id)).alias("row_id"), F.col(_quoted(commit_version)).alias("row_commit_version")
    )
    df = df.withColumn(ROW_TRACKING_COLUMN, tracking).drop(row_id, commit_version, FILE_KEY, ROW_KEY)
    return df.filter(where) if where else df


def scan_with_positions(
    spark: SparkSession, delta_log: DeltaLog, snapshot: Snapshot, paths: Sequence[str], hidden: Sequence[str] = ()
) -> tuple[DataFrame, dict[str, str]]:
    """The live rows of the snapshot's files ``paths``, read natively, with ``FILE_KEY``
    (``_metadata.file_path``) and ``ROW_KEY`` (``native_dv.ROW_INDEX``: the row's position
    in its Parquet file, what a deletion vector counts), and the ``hidden`` long columns of
    the files (row tracking's materialized columns; null where a file lacks one); and each
    ``FILE_KEY`` URI's path as in the log. Raises :class:`NativeReadUnsupportedError` when
    the native path cannot read the table."""
    table = _scannable_paths(spark, delta_log, snapshot, paths)
    root = hadoop_root(delta_log.table_uri, delta_log.store.fs_path(delta_log.table_uri))
    df = _native_scan(spark, delta_log, snapshot, table, None, positions=True, hidden=hidden)
    return df, {_file_uri(root, p): p for p in paths}


def scan_paths(spark: SparkSession, delta_log: DeltaLog, snapshot: Snapshot, paths: Sequence[str]) -> DataFrame:
    """The live rows of the snapshot's files ``paths``, read natively: the table's columns
    only (no file or row position columns, so Spark's reader reads no row index and builds
    no ``_metadata`` values where no deletion vector needs them). Raises
    :class:`NativeReadUnsupportedError` when the native path cannot read the table."""
    return _native_scan(spark, delta_log, snapshot, _scannable_paths(spark, delta_log, snapshot, paths), None)


def _scannable_paths(spark: SparkSession, delta_log: DeltaLog, snapshot: Snapshot, paths: Sequence[str]) -> Any:
    """The snapshot's files table rows of ``paths``, once the session is known to reach
    the table natively (:class:`NativeReadUnsupportedError` otherwise)."""
    import pyarrow as pa

    if getattr(spark, "_jvm", None) is None:
        raise NativeReadUnsupportedError("the session has no JVM (Spark Connect)")
    if not spark_can_reach(spark, delta_log.table_uri):
        raise NativeReadUnsupportedError(f"Spark has no Hadoop file system for {delta_log.table_uri}")
    return _only_paths(snapshot.files_table, pa.array(list(paths), pa.string()))


def _native_scan(
    spark: SparkSession,
    delta_log: DeltaLog,
    snapshot: Snapshot,
    table: Any,
    where: str | None,
    positions: bool = False,
    hidden: Sequence[str] = (),
) -> DataFrame:
    """Spark's Parquet scan of the files in ``table`` (rows of the snapshot's files table),
    with ``FILE_KEY``/``ROW_KEY`` columns when ``positions``, and the files' ``hidden``
    long columns (not table columns) as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField

    from deltalog.contrib.spark.logical_schema import logical_schema
    from deltalog.contrib.spark.native_dv import FILE_KEY, ROW_KEY

    schema = json.loads(snapshot.metadata.schema_string)
    _check_supported(spark, snapshot, schema)
    mode = snapshot.properties.column_mapping_mode
    partition_columns = list(snapshot.metadata.partition_columns)
    types = schemas.top_level_types(schema)
    physical = schemas.physical_names(schema, mode)
    root = hadoop_root(delta_log.table_uri, delta_log.store.fs_path(delta_log.table_uri))
    files = _file_list(table, root, {c: physical.get(c, c) for c in partition_columns})
    log.info(
        "native scan of %s at version %d: %d of %d files",
        delta_log.table_uri,
        snapshot.version,
        len(files),
        snapshot.num_files,
    )
    logical = schemas.spark_struct(logical_schema(schema))
    if not len(files):
        df = spark.createDataFrame([], logical)
        return df.filter(where) if where else df
    hive = mode == "none" and _is_hive_layout(files, partition_columns, types, root)
    if mode == "id":
        spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "true")
    join_partitions = bool(partition_columns) and not hive
    read_schema = _read_schema(schema, mode, partition_columns, hive)
    for name in hidden:
        read_schema = read_schema.add(StructField(name, LongType(), True))
    df = _scan_live_rows(spark, delta_log, files, read_schema, hive, join_partitions, positions)
    if join_partitions:
        pv = _partition_frame(spark, files, partition_columns, types, logical)
        df = df.join(F.broadcast(pv), on=PARTITION_FILE_KEY, how="left")
    columns = _logical_columns(logical, partition_columns, physical, mode, df.schema)
    columns += [_quoted(name) for name in hidden]
    if positions:
        columns += [FILE_KEY, ROW_KEY]
    df = df.select(*columns)
    return df.filter(where) if where else df


def _only_paths(table: Any, paths: Any) -> Any:
    import pyarrow.compute as pc

    return table.filter(pc.is_in(table.column("path"), value_set=paths))


def _files_table(spark: SparkSession, snapshot: Snapshot, terms: Sequence[Term]) -> Any:
    """The snapshot's Arrow files table, less the files ``terms`` skip (also through the
    partition filters derived from generated partition columns, in the session time zone)."""
    table = snapshot.files_table
    if not terms:
        return table
    import pyarrow as pa

    metadata = snapshot.metadata
    schema = json.loads(metadata.schema_string)
    mode = snapshot.properties.column_mapping_mode
    types = schemas.top_level_types(schema)
    time_zone = spark.conf.get("spark.sql.session.timeZone")
    plan = plan_files(
        snapshot.files,
        snapshot.version,
        at_session_time_zone(terms, types, time_zone),
        list(metadata.partition_columns),
        types,
        schemas.physical_names(schema, mode),
        generated=partition_expressions(metadata, snapshot.protocol),
        time_zone=time_zone,
        float_widened=fields_widened_from_float(schema),
    )
    return _only_paths(table, pa.array([a.path for a in plan.files], pa.string()))


def _scan_live_rows(
    spark: SparkSession,
    delta_log: DeltaLog,
    files: FileList,
    read_schema: Any,
    hive: bool,
    join_partitions: bool,
    positions: bool = False,
) -> DataFrame:
    """Spark's Parquet scan of ``files`` without the rows their deletion vectors delete
    (with ``join_partitions``, each row's file path in ``PARTITION_FILE_KEY``; with
    ``positions``, its file and row index in ``FILE_KEY`` and ``ROW_KEY``)."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.native_dv import (
        FILE_KEY,
        ROW_INDEX,
        ROW_KEY,
        deleted_words,
        drop_deleted_rows,
        scan_groups,
    )

    # a file with a deletion vector is named by its size in its scan (native_dv.scan_groups)
    sizes = [s or 0 for s in files.sizes]  # what the file log hands Spark (_write_file_log)
    groups = [files.subset(g) for g in scan_groups(sizes, files.deletion_vectors.keys())]
    scans = []
    for group in groups:
        row_index = positions or bool(group.deletion_vectors)
        part = _scan(spark, group, read_schema, hive, row_index)
        if join_partitions or positions:
            _check_file_names(spark, part, group)
        if join_partitions:
            part = part.withColumn(PARTITION_FILE_KEY, F.col("_metadata.file_path"))
        if group.deletion_vectors:
            dvs = [(group.sizes[i] or 0, dv) for i, dv in sorted(group.deletion_vectors.items())]
            words = deleted_words(delta_log.store, delta_log.table_uri, dvs)
            part = drop_deleted_rows(spark, part, words, one_file=len(group) == 1)
        if positions:
            part = part.withColumn(FILE_KEY, F.col("_metadata.file_path")).withColumnRenamed(ROW_INDEX, ROW_KEY)
        elif row_index:
            part = part.drop(ROW_INDEX)
        scans.append(part)
    return functools.reduce(lambda a, b: a.unionByName(b), scans)


def _logical_columns(
    logical: StructType, partition_columns: Sequence[str], physical: Mapping[str, str], mode: str, scanned: StructType
) -> list[Column | str]:
    """The scan's columns (``scanned``) as the table's logical columns (column mapping:
    renamed from their physical names, nested types cast to their logical field names). A
    column the scan already names and describes as the table does is selected by its name
    (a Column with an alias costs about ten py4j round trips, a name one)."""
    from pyspark.sql import functions as F

    parts = {c.lower() for c in partition_columns}
    as_scanned = {f.name: f for f in scanned.fields}
    columns: list[Column | str] = []
    for f in logical.fields:
        source = f.name if f.name.lower() in parts else physical.get(f.name, f.name)
        nested = mode != "none" and _nested(f.dataType)
        same = as_scanned.get(source)
        if source == f.name and not nested and same is not None and same.metadata == f.metadata:
            columns.append(_quoted(source))
            continue
        col = F.col(_quoted(source))
        if nested:
            col = col.cast(f.dataType)
        columns.append(col.alias(f.name, metadata=f.metadata))
    return columns


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _nested(data_type: Any) -> bool:
    from pyspark.sql.types import ArrayType, MapType, StructType

    return isinstance(data_type, (ArrayType, MapType, StructType))
