"""The data filesystem: Parquet files written beside the log are seen by the log, read by
range and by several readers at once as Parquet readers do, and deleted as VACUUM does."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from deltalog.conformance.check import Check, expect, operation
from deltalog.conformance.context import CheckContext
from deltalog.logstores.base import arrow_threads_allowed

__all__ = ["CHECKS"]


def data_filesystem(ctx: CheckContext) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "ü", None]})
    name = "00000000000000000010.checkpoint.parquet"
    uri = ctx.uri(name)
    ctx.write(ctx.uri("00000000000000000010.json"), ['{"commitInfo":{}}'])
    fs = ctx.store.filesystem()
    path = ctx.store.fs_path(uri)
    parent = path.rsplit("/", 1)[0]
    if parent:
        fs.create_dir(parent, recursive=True)
    pq.write_table(table, path, filesystem=fs)
    threads = arrow_threads_allowed(fs)
    back = pq.read_table(path, filesystem=fs, use_threads=threads, pre_buffer=threads)
    expect(back.equals(table), f"the Parquet file read back differently: {back.to_pylist()}")
    size = fs.get_file_info(path).size
    statuses = {s.name: s for s in ctx.store.list_from(ctx.uri("00000000000000000010"))}
    expect(
        name in statuses,
        f"list_from does not see {name} written through filesystem(); it listed {sorted(statuses)}",
    )
    expect(statuses[name].size == size, f"listed size {statuses[name].size} != file size {size}")
    data = ctx.store.read_bytes(uri)
    with fs.open_input_file(path) as handle:
        raw = handle.read()
    expect(data == raw, f"read_bytes returned {len(data)} bytes, the filesystem holds {len(raw)}")
    nested = ctx.uri("part=1", "part-00000.parquet")
    nested_path = ctx.store.fs_path(nested)
    fs.create_dir(nested_path.rsplit("/", 1)[0], recursive=True)
    pq.write_table(table, nested_path, filesystem=fs)
    nested_rows = pq.read_table(nested_path, filesystem=fs, use_threads=threads, pre_buffer=threads).num_rows
    expect(nested_rows == 3, "a partition directory file is unreadable")
    ctx.store.delete(nested)
    return f"{type(fs).__name__} writes Parquet that list_from and read_bytes see ({size} bytes)"


ROW_GROUPS = 4
ROWS_PER_GROUP = 2_000


def _parquet_bytes(table: object, rows_per_group: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=rows_per_group)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def data_file_ranged_reads(ctx: CheckContext) -> str:
    """A data file written as the engine and Spark write one (one stream through the data
    filesystem, into a partition directory), then read as Parquet readers read it: the
    size, the footer from the end of the file, one row group and one column by range."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = ROW_GROUPS * ROWS_PER_GROUP
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "text": [f"row {i} ü" for i in range(rows)]})
    data = _parquet_bytes(table, ROWS_PER_GROUP)
    size = len(data)
    uri = ctx.uri("p=a b", "part-00000-ranged.snappy.parquet")  # the file is remembered, not its directory
    fs = ctx.store.filesystem()
    path = ctx.store.fs_path(uri)
    with operation(f"writing the data file {uri} ({size} bytes) through {type(fs).__name__}.open_output_stream"):
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as out:
            half = size // 2
            out.write(data[:half])  # in two writes, as a streaming writer does
            out.write(data[half:])
    with operation(f"getting the size of {uri}"):
        info = fs.get_file_info(path)
    expect(info.size == size, f"get_file_info says {info.size} bytes, {size} were written")
    footer_len = int.from_bytes(data[-8:-4], "little")
    with operation(f"opening {uri} for random access"):
        handle = fs.open_input_file(path)
    with handle:
        reads = {
            "the last 8 bytes (footer length and magic)": (size - 8, 8),
            "the footer, read from the end": (size - 8 - footer_len, footer_len + 8),
            "the first 4 bytes (magic)": (0, 4),
            "a range in the middle": (size // 3, 1000),
        }
        for what, (offset, length) in reads.items():
            with operation(f"reading {what} of {uri}: bytes {offset}..{offset + length - 1}"):
                got = handle.read_at(length, offset)
            want = data[offset : offset + length]
            expect(
                got == want,
                f"reading {what} (bytes {offset}..{offset + length - 1} of {size}) returned "
                f"{len(got)} bytes that differ from what was written",
            )
        with operation(f"reading past the end of {uri} (bytes {size - 4}..{size + 95})"):
            tail = handle.read_at(100, size - 4)
        expect(tail == data[-4:], f"a read running past the end returned {len(tail)} bytes, expected the last 4")
    with operation(f"reading {uri} as Parquet: the footer, row group 2, the column 'text'"):
        parquet = pq.ParquetFile(fs.open_input_file(path))
        groups = parquet.metadata.num_row_groups
        group = parquet.read_row_group(2, columns=["id"])
        column = parquet.read(columns=["text"])
    expect(groups == ROW_GROUPS, f"the footer read back names {groups} row groups, {ROW_GROUPS} were written")
    first_id = group.column("id")[0].as_py() if group.num_rows else None
    expect(
        group.num_rows == ROWS_PER_GROUP and first_id == 2 * ROWS_PER_GROUP,
        f"row group 2 read back {group.num_rows} rows from id {first_id}",
    )
    expect(column.column("text").equals(table.column("text")), "the column 'text' read back differently")
    return (
        f"a {size}-byte Parquet file in a partition directory: size, footer read from the end, "
        f"reads past the end, row group 2 and one column read by range"
    )


def data_file_deletes(ctx: CheckContext) -> str:
    """Deleting data files as VACUUM does: list the partition directory through the data
    filesystem, delete files with ``delete_file``, and see them gone from both listings."""
    import pyarrow.fs as pafs

    fs = ctx.store.filesystem()
    directory = ctx.directory("p=x%3Dy")
    names = [f"part-{i:05d}.parquet" for i in range(3)]
    for name in names:
        with operation(f"writing the data file {directory}/{name}"):
            fs.create_dir(ctx.store.fs_path(directory), recursive=True)
            with fs.open_output_stream(ctx.store.fs_path(f"{directory}/{name}")) as out:
                out.write(b"PAR1 not really PAR1")
    selector = pafs.FileSelector(ctx.store.fs_path(directory), recursive=True, allow_not_found=True)
    with operation(f"listing {directory} through the data filesystem (as VACUUM does)"):
        seen = sorted(i.base_name for i in fs.get_file_info(selector) if i.type == pafs.FileType.File)
    expect(seen == names, f"the data filesystem lists {seen} in {directory}, expected {names}")
    for name in names[:2]:
        with operation(f"deleting the data file {directory}/{name} (FileSystem.delete_file)"):
            fs.delete_file(ctx.store.fs_path(f"{directory}/{name}"))
    with operation(f"listing {directory} after the deletes"):
        left = sorted(i.base_name for i in fs.get_file_info(selector) if i.type == pafs.FileType.File)
        listed = ctx.list_dir(directory)
    expect(left == names[2:], f"after deleting 2 of 3 files the data filesystem still lists {left}")
    expect(listed == names[2:], f"after deleting 2 of 3 files list_from still lists {listed}")
    with operation(f"getting the status of the deleted file {directory}/{names[0]}"):
        kind = fs.get_file_info(ctx.store.fs_path(f"{directory}/{names[0]}")).type
    expect(kind == pafs.FileType.NotFound, f"a deleted data file still has status {kind}")
    return "data files listed and deleted through the data filesystem are gone from both listings"


READER_THREADS = 4


def _read_whole(fs: Any, path: str, chunk: int) -> bytes:
    with fs.open_input_stream(path) as stream:
        parts = []
        while piece := stream.read(chunk):
            parts.append(piece)
    return b"".join(parts)


def data_file_concurrent_readers(ctx: CheckContext) -> str:
    """Readers of one file at once, as threads loading one checkpoint or a DataFrame's tasks
    reading one data file: each reads from a position of its own."""
    data = bytes(range(256)) * 4096
    uri = ctx.uri("part-00000-readers.parquet")
    fs = ctx.store.filesystem()
    path = ctx.store.fs_path(uri)
    with operation(f"writing {uri} ({len(data)} bytes) through the data filesystem"):
        parent = path.rsplit("/", 1)[0]
        if parent:
            fs.create_dir(parent, recursive=True)
        with fs.open_output_stream(path) as out:
            out.write(data)
    with operation(f"reading {uri} through two streams opened one after the other"):
        with fs.open_input_stream(path) as first:
            head = first.read(1000)
            with fs.open_input_stream(path) as second:
                other = second.read(500)
                rest = first.read(1000)
    expect(
        head == data[:1000] and rest == data[1000:2000] and other == data[:500],
        "opening a second stream on a file moved the first one's position: readers of one file share it",
    )
    threads = ThreadPoolExecutor(READER_THREADS)
    with operation(f"reading {uri} whole in {READER_THREADS} threads at once"), threads as pool:
        copies = list(pool.map(lambda n: _read_whole(fs, path, 4096 * (n + 1)), range(READER_THREADS)))
    bad = [n for n, copy in enumerate(copies) if copy != data]
    expect(not bad, f"{len(bad)} of {READER_THREADS} threads reading the file at once got other bytes")
    return f"two streams and {READER_THREADS} threads read one {len(data)}-byte file, each from its own position"


CHECKS = (
    Check(
        "data_filesystem",
        "filesystem()/fs_path write and read Parquet next to the log, and list_from sees it",
        data_filesystem,
    ),
    Check(
        "data_file_ranged_reads",
        "a data file streamed into a partition directory reads back by range: footer from the end, row groups",
        data_file_ranged_reads,
    ),
    Check(
        "data_file_concurrent_readers",
        "readers of one data file at once (two streams, threads) each read from their own position",
        data_file_concurrent_readers,
    ),
    Check(
        "data_file_deletes",
        "data files listed and deleted through the data filesystem (as VACUUM does) are gone",
        data_file_deletes,
    ),
)
