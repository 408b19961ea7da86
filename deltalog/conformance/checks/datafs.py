"""The data filesystem: Parquet files written beside the log are seen by the log."""

from __future__ import annotations

from deltalog.conformance.check import Check, expect
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
    back = pq.read_table(path, filesystem=fs, use_threads=threads)
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
    nested_rows = pq.read_table(nested_path, filesystem=fs, use_threads=threads).num_rows
    expect(nested_rows == 3, "a partition directory file is unreadable")
    ctx.store.delete(nested)
    return f"{type(fs).__name__} writes Parquet that list_from and read_bytes see ({size} bytes)"


CHECKS = (
    Check(
        "data_filesystem",
        "filesystem()/fs_path write and read Parquet next to the log, and list_from sees it",
        data_filesystem,
    ),
)
