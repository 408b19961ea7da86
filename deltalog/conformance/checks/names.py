"""File and directory names with spaces, ``%``, ``=`` and non-ASCII characters."""

from __future__ import annotations

from deltalog.conformance.check import Check, expect, operation
from deltalog.conformance.context import CheckContext

__all__ = ["CHECKS", "PARTITION_VALUES", "SPECIAL_DIRS", "SPECIAL_NAMES"]

#: Partition-style directories, a literal "%2F" (must not become a slash) and non-ASCII.
SPECIAL_DIRS = ("table with space", "k=v%2Fliteral", "日本-ü")
SPECIAL_NAMES = (
    "with space.json",
    "100%.json",
    "%41%25.json",
    "key=value.json",
    "ü-日本-😀.json",
    "a+b,c;d@e.json",
)


def special_names(ctx: CheckContext) -> str:
    written: dict[str, list[str]] = {}
    for name in SPECIAL_NAMES:
        uri = ctx.uri(*SPECIAL_DIRS, name)
        lines = [f"content of {name}"]
        ctx.write(uri, lines)
        written[name] = lines
    for name, lines in written.items():
        got = ctx.read(ctx.uri(*SPECIAL_DIRS, name))
        expect(got == lines, f"{name!r} read back as {got!r}")
    statuses = list(ctx.store.list_from(ctx.uri(*SPECIAL_DIRS, "%")))
    listed = {status.name for status in statuses}
    expect(
        listed == set(SPECIAL_NAMES),
        f"listing gave {sorted(listed)}, expected {sorted(SPECIAL_NAMES)} "
        "(names must not be percent-encoded or decoded)",
    )
    for status in statuses:
        got = list(ctx.store.read(status.path))
        expect(got == written[status.name], f"the listed path {status.path!r} read back as {got!r}")
    return f"{len(SPECIAL_NAMES)} names under {'/'.join(SPECIAL_DIRS)!r} write, list and read back unchanged"


#: Partition values Delta escapes in directory names (``%XX``) and in the log's paths
#: (URI encoding): space, ``%``, ``=``, ``/``, ``:``, ``#``, ``?``, and non-ASCII.
PARTITION_VALUES = ("with space", "100%", "a=b", "x/y", "t:12:00", "#hash?q", "ü-日本-😀", "%41")


def partition_value_names(ctx: CheckContext) -> str:
    """Data files in partition directories named as Delta names them, committed through
    the engine with the paths it writes into the log, then found again from the log."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.conformance.checks.engine import KitTable
    from deltalog.txn.commit.operations import Write
    from deltalog.txn.protocol.actions import AddFile, decode_path, encode_path
    from deltalog.txn.protocol.partition_paths import partition_directory

    table = KitTable(ctx, "escaped")
    table.create()
    fs = ctx.store.filesystem()
    adds = []
    for index, value in enumerate(PARTITION_VALUES):
        relative = f"{partition_directory(['p'], {'p': value})}/part-{index:05d}.parquet"
        uri = f"{table.uri}/{relative}"
        with operation(f"writing the data file of partition value {value!r} at {uri}"):
            fs.create_dir(ctx.store.fs_path(uri).rsplit("/", 1)[0], recursive=True)
            pq.write_table(pa.table({"id": [index]}), ctx.store.fs_path(uri), filesystem=fs)
        adds.append(AddFile(encode_path(relative), {"p": value}, 1, 1, stats='{"numRecords":1}'))
    with operation(f"committing {len(adds)} files with escaped paths to {table.uri}"):
        table.transaction().commit(adds, Write())
    with operation(f"loading {table.uri}"):
        files = table.log().update().files
    by_value = {add.partition_values.get("p"): add for add in files}
    expect(
        set(by_value) == set(PARTITION_VALUES),
        f"the partition values read back as {sorted(map(str, by_value))}",
    )
    for index, value in enumerate(PARTITION_VALUES):
        add = by_value[value]
        uri = f"{table.uri}/{decode_path(add.path)}"
        with operation(f"reading the data file of partition value {value!r} at the log's path {add.path!r}"):
            rows = (
                pq.read_table(ctx.store.fs_path(uri), filesystem=fs, use_threads=False, pre_buffer=False)
                .column("id")
                .to_pylist()
            )
        expect(rows == [index], f"the data file of partition value {value!r} holds {rows}")
        directory, _, name = uri.rpartition("/")
        with operation(f"listing the partition directory {directory}"):
            listed = ctx.list_dir(directory)
        expect(listed == [name], f"the partition directory {directory!r} lists {listed}, expected [{name!r}]")
    shown = ", ".join(repr(v) for v in PARTITION_VALUES[:4])
    return f"{len(PARTITION_VALUES)} partition values ({shown}, ...) escaped as Delta does round-trip"


CHECKS = (
    Check(
        "special_names",
        "names with spaces, %, = and non-ASCII round-trip through write/list/read",
        special_names,
    ),
    Check(
        "partition_value_names",
        "partition directories as Delta escapes them (space, %, =, /, non-ASCII) hold data files the log finds",
        partition_value_names,
    ),
)
