"""Opening a table's data files (Parquet): the one place deltalog does it.

Delta timestamps are microseconds. Spark wrote ``TIMESTAMP`` columns as ``INT96`` for
years (``spark.sql.parquet.outputTimestampType``'s default until Spark 3.x, and still a
session choice Delta Spark honours); pyarrow reads INT96 as ``timestamp[ns]`` unless told
otherwise, which overflows outside 1677-2262 (9999-12-31 comes back as 1816-03-30). Every
reader of data files (Spark reads, DML rewrites, OPTIMIZE, CONVERT) opens them here, so
INT96 is read as microseconds everywhere.

INT96 carries no time-zone annotation, so pyarrow reads it as a timestamp without one;
Spark's type for it is ``TimestampType`` (an instant, UTC-normalised): the schema
inferred from a file (:func:`data_file_arrow_schema`) says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa

from deltalog.txn.log.deletion_vectors import dv_absolute_path
from deltalog.txn.protocol.actions import AddFile, absolute_path
from deltalog.txn.protocol.errors import DataFileNotFoundError

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from deltalog.logstores.base import LogStore

__all__ = [
    "ROW_GROUP_BYTES",
    "ROW_GROUP_ROWS",
    "data_file_arrow_schema",
    "missing_files",
    "name_missing",
    "open_data_file",
]

#: the unit Delta stores timestamps in (and INT96 is read as)
TIMESTAMP_UNIT = "us"

#: Row groups of up to this many rows / bytes in the data files deltalog writes (Spark's
#: writes, OPTIMIZE): small row groups (one per Arrow batch) make files larger and slower.
ROW_GROUP_ROWS = 1 << 20
ROW_GROUP_BYTES = 64 << 20


@contextmanager
def open_data_file(fs: pafs.FileSystem, path: str, *, pre_buffer: bool = True) -> Iterator[pq.ParquetFile]:
    """``path`` on ``fs`` as a :class:`pyarrow.parquet.ParquetFile` whose INT96 columns read
    as ``timestamp[us]`` (closed on exit); :class:`DataFileNotFoundError` (a
    ``FileNotFoundError``) when the file is gone, e.g. vacuumed. Never pre-buffered through
    a Python-backed filesystem: pre-buffering reads on pyarrow's IO threads
    (:func:`~deltalog.logstores.base.arrow_threads_allowed`)."""
    import pyarrow.parquet as pq

    from deltalog.logstores.base import arrow_threads_allowed

    pre_buffer = pre_buffer and arrow_threads_allowed(fs)

    try:
        opened = fs.open_input_file(path)
    except FileNotFoundError:
        raise DataFileNotFoundError(path) from None
    with opened as handle:
        yield pq.ParquetFile(handle, pre_buffer=pre_buffer, coerce_int96_timestamp_unit=TIMESTAMP_UNIT)


def missing_files(store: LogStore, table_uri: str, files: Sequence[AddFile]) -> list[str]:
    """The storage objects ``files`` read (each data file and its deletion-vector file, as
    URIs) that no longer exist, e.g. vacuumed: what RESTORE and CLONE check before they commit
    a version made of ``files``."""
    import pyarrow.fs as pafs

    uris: list[str] = []
    for f in files:
        uris.append(absolute_path(table_uri, f.path))
        dv = f.deletion_vector
        if dv is not None and dv.storage_type in ("u", "p"):
            uris.append(dv_absolute_path(table_uri, dv))
    uris = list(dict.fromkeys(uris))
    fs = store.filesystem()
    missing: list[str] = []
    for start in range(0, len(uris), 1000):
        chunk = uris[start : start + 1000]
        infos = fs.get_file_info([store.fs_path(u) for u in chunk])
        missing += [u for u, info in zip(chunk, infos) if info.type == pafs.FileType.NotFound]
    return missing


def name_missing(missing: Sequence[str], shown: int = 10) -> str:
    """The first ``shown`` of ``missing`` (:func:`missing_files`) for an error message."""
    more = len(missing) - shown
    return ", ".join(missing[:shown]) + (f" and {more} more" if more > 0 else "")


def data_file_arrow_schema(pf: pq.ParquetFile) -> pa.Schema:
    """The Arrow schema of a data file as Spark sees it: INT96 columns (nested ones too)
    are ``timestamp[us, UTC]``, Spark's ``TimestampType``."""
    schema = pf.schema_arrow
    parquet = pf.metadata.schema
    int96 = [parquet.column(i).physical_type == "INT96" for i in range(len(parquet))]
    if not any(int96):
        return schema
    leaves = iter(int96)  # Arrow leaves, depth first, are the Parquet leaf columns in order

    def retype(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(retype(f.type)) for f in t])
        if pa.types.is_map(t):
            return pa.map_(retype(t.key_type), t.item_field.with_type(retype(t.item_type)), t.keys_sorted)
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            item = t.value_field.with_type(retype(t.value_type))
            if pa.types.is_large_list(t):
                return pa.large_list(item)
            if pa.types.is_fixed_size_list(t):
                return pa.list_(item, t.list_size)
            return pa.list_(item)
        if next(leaves) and pa.types.is_timestamp(t):
            return pa.timestamp(TIMESTAMP_UNIT, tz="UTC")
        return t

    return pa.schema([f.with_type(retype(f.type)) for f in schema], metadata=schema.metadata)
