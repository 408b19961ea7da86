"""``list_from``: order, start semantics, read-after-write, missing directories."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

from deltalog.conformance.check import Check, expect, operation
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable
from deltalog.txn.protocol.file_names import delta_file

__all__ = ["CHECKS", "LONG_LISTING", "ORDERING_NAMES"]

#: Names whose UTF-8 byte order differs from case-insensitive, natural and UTF-16 order.
ORDERING_NAMES = [
    "00000000000000000009.json",
    "00000000000000000010.checkpoint.0000000001.0000000002.parquet",
    "00000000000000000010.checkpoint.parquet",
    "00000000000000000010.crc",
    "00000000000000000010.json",
    "00000000000000000100.json",
    "Zeta",
    "_last_checkpoint",
    "alpha",
    "alpha-1",
    "alpha.1",
    "alpha1",
    "alpha_1",
    "~tilde",
    "\u00e4-umlaut",
    "\uff5e-fullwidth-tilde",
    "\U0001f600-emoji",
]


def _utf8_sorted(names: list[str]) -> list[str]:
    return sorted(names, key=lambda name: name.encode("utf-8"))


def list_from_ordering(ctx: CheckContext) -> str:
    shuffled = list(ORDERING_NAMES)
    random.Random(20240229).shuffle(shuffled)
    for name in shuffled:
        ctx.write(ctx.uri(name), [name])
    ctx.write(ctx.uri("sub", "00000000000000000001.json"), ["nested"])
    expected = _utf8_sorted(ORDERING_NAMES)
    listed = [name for name in ctx.list_names(ctx.uri("!")) if name != "sub"]
    expect(
        not any("/" in name for name in listed) and "00000000000000000001.json" not in listed,
        f"list_from returned files of a sub-directory: {listed}",
    )
    expect(
        sorted(listed) == sorted(expected),
        f"list_from returned other files than were written: missing {sorted(set(expected) - set(listed))}, "
        f"extra {sorted(set(listed) - set(expected))}",
    )
    if listed != expected:
        wrong = next(i for i, (a, b) in enumerate(zip(listed, expected)) if a != b)
        raise CheckFailed(
            f"list_from is not sorted by UTF-8 bytes: position {wrong} is {listed[wrong]!r}, "
            f"expected {expected[wrong]!r} (listed: {listed[:6]}...)"
        )
    middle = ctx.list_names(ctx.uri("alpha"))
    expect(
        [n for n in middle if n != "sub"] == [n for n in expected if n >= "alpha"],
        f"list_from('alpha') returned {middle}",
    )
    return f"{len(expected)} names (versions, checkpoints, case, punctuation, non-ASCII) in UTF-8 byte order"


def list_from_start(ctx: CheckContext) -> str:
    # Delta's LogStoreSuite "listFrom": files 1, 2, 3; list from 0, 1, 2, 3 and 4.
    contents = {"1": "zero", "2": "one", "3": "two"}
    for name, text in contents.items():
        ctx.write(ctx.uri(name), [text])
    expectations = {0: ["1", "2", "3"], 1: ["1", "2", "3"], 2: ["2", "3"], 3: ["3"], 4: []}
    for start, expected in expectations.items():
        listed = ctx.list_names(ctx.uri(str(start)))
        expect(listed == expected, f"list_from('{start}') returned {listed}, expected {expected}")
    for status in ctx.store.list_from(ctx.uri("1")):
        same = ctx.store.resolve_path(status.path) == ctx.store.resolve_path(ctx.uri(status.name))
        expect(same, f"list_from returned the path {status.path!r}, which is not {ctx.uri(status.name)!r}")
        got = list(ctx.store.read(status.path))
        expect(got == [contents[status.name]], f"reading the listed path {status.path!r} gave {got!r}")
    return "listFrom(0)=(1)=[1,2,3], (2)=[2,3], (3)=[3], (4)=[] as Delta's LogStoreSuite; listed paths read back"


def read_after_write_listing(ctx: CheckContext) -> str:
    if not ctx.store.semantics.consistent_listing:
        raise NotApplicable("the store declares eventually consistent listing")
    first = ctx.uri(delta_file(0))
    now_ms = int(time.time() * 1000)
    for version in range(10):
        uri = ctx.uri(delta_file(version))
        lines = [f'{{"version":{version}}}', "é" * version]
        ctx.write(uri, lines)
        statuses = {status.name: status for status in ctx.store.list_from(first)}
        name = delta_file(version)
        expect(name in statuses, f"{name} was not listed right after its write returned")
        expect(
            len(statuses) == version + 1,
            f"after {version + 1} writes list_from returned {len(statuses)} files",
        )
        size = sum(len(line.encode("utf-8")) + 1 for line in lines)
        status = statuses[name]
        expect(status.size == size, f"{name} is listed with size {status.size}, it holds {size} bytes")
        expect(
            now_ms - 86_400_000 < status.modification_time < now_ms + 86_400_000,
            f"{name} is listed with modification_time {status.modification_time}, "
            f"which is not milliseconds since the epoch around now ({now_ms})",
        )
        expect(ctx.read(uri) == lines, f"{name} did not read back right after its write returned")
    return "each of 10 writes is listed at once with its byte size and a millisecond timestamp"


def list_missing_directory(ctx: CheckContext) -> str:
    ctx.write(ctx.uri("missing-sibling", "00000000000000000000.json"), ["x"])
    listed = ctx.list_names(ctx.uri("missing", "00000000000000000000.json"))
    expect(listed == [], f"listing a directory that does not exist returned {listed}")
    return "a missing directory lists empty (a sibling sharing its prefix does not leak in)"


#: More names than one page of S3's ListObjectsV2, Azure's List Blobs or GCS's objects.list
#: (1,000): a table's log or a partition directory is listed across pages.
LONG_LISTING = 1_001
WRITE_THREADS = 16


def _counted(names: list[str]) -> tuple[list[str], list[str]]:
    """(repeated names, in order of first repeat), (the same, deduplicated)."""
    seen: set[str] = set()
    repeated = []
    for name in names:
        if name in seen:
            repeated.append(name)
        seen.add(name)
    return repeated, sorted(seen)


def _judge_long_listing(what: str, names: list[str], expected: list[str]) -> None:
    repeated, unique = _counted(names)
    missing = sorted(set(expected) - set(unique))
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing (first {missing[0]!r})")
    if repeated:
        problems.append(f"{len(repeated)} repeated (first {repeated[0]!r})")
    if problems:
        raise CheckFailed(
            f"{what} returned {len(names)} names for {len(expected)} files: {', '.join(problems)}; "
            "a listing longer than one page (1,000 keys) loses or repeats keys at the page boundary, "
            "so the engine would miss commits or data files"
        )
    if names != expected:
        wrong = next(i for i, (a, b) in enumerate(zip(names, expected)) if a != b)
        raise CheckFailed(f"{what} is out of order at position {wrong}: {names[wrong]!r}, expected {expected[wrong]!r}")


def list_past_one_page(ctx: CheckContext) -> str:
    import pyarrow.fs as pafs

    directory = ctx.directory("long")
    expected = [delta_file(i) for i in range(LONG_LISTING)]
    started = time.monotonic()

    def write(name: str) -> None:
        with operation(f"writing {directory}/{name}"):
            ctx.store.write(f"{directory}/{name}", [name], overwrite=True)  # one plain PUT each

    with ThreadPoolExecutor(WRITE_THREADS) as pool:
        list(pool.map(write, expected))
    wrote = time.monotonic() - started
    with operation(f"listing {directory} ({LONG_LISTING} files)"):
        listed = [s.name for s in ctx.store.list_from(f"{directory}/{expected[0]}")]
    _judge_long_listing("list_from", listed, expected)
    start = expected[998]
    with operation(f"listing {directory} from {start}"):
        tail = [s.name for s in ctx.store.list_from(f"{directory}/{start}")]
    _judge_long_listing(f"list_from({start!r})", tail, expected[998:])
    fs = ctx.store.filesystem()
    selector = pafs.FileSelector(ctx.store.fs_path(directory), recursive=True, allow_not_found=True)
    with operation(f"listing {directory} through the data filesystem (as VACUUM does)"):
        infos = fs.get_file_info(selector)
    also = ""
    if infos:  # (a store may keep its log files outside its data filesystem)
        _judge_long_listing("the data filesystem's listing", sorted(i.base_name for i in infos), expected)
        also = " and by the data filesystem"
    return (
        f"{LONG_LISTING} files (written in {wrote:.1f}s by {WRITE_THREADS} threads) listed once each, "
        f"in order, by list_from, from a start past the first page{also}"
    )


CHECKS = (
    Check(
        "list_from_ordering",
        "list_from returns one directory's files sorted by UTF-8 bytes",
        list_from_ordering,
    ),
    Check("list_from_start", "list_from(p) starts at p's name, inclusive (Delta's listFrom)", list_from_start),
    Check(
        "read_after_write_listing",
        "a file is listed, with its size, as soon as its write returns",
        read_after_write_listing,
    ),
    Check(
        "list_missing_directory",
        "listing a directory that does not exist is empty, not an error",
        list_missing_directory,
    ),
    Check(
        "list_past_one_page",
        f"{LONG_LISTING} files (more than one 1,000-key page) are listed once each, in order",
        list_past_one_page,
    ),
)
