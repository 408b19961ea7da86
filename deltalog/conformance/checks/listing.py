"""``list_from``: order, start semantics, read-after-write, missing directories."""

from __future__ import annotations

import random
import time

from deltalog.conformance.check import Check, expect
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable

__all__ = ["CHECKS", "ORDERING_NAMES"]

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
    return (
        "listFrom(0)=(1)=[1,2,3], (2)=[2,3], (3)=[3], (4)=[] as Delta's LogStoreSuite; listed paths read back"
    )


def read_after_write_listing(ctx: CheckContext) -> str:
    if not ctx.store.semantics.consistent_listing:
        raise NotApplicable("the store declares eventually consistent listing")
    first = ctx.uri(f"{0:020d}.json")
    now_ms = int(time.time() * 1000)
    for version in range(10):
        uri = ctx.uri(f"{version:020d}.json")
        lines = [f'{{"version":{version}}}', "é" * version]
        ctx.write(uri, lines)
        statuses = {status.name: status for status in ctx.store.list_from(first)}
        name = f"{version:020d}.json"
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


CHECKS = (
    Check(
        "list_from_ordering",
        "list_from returns one directory's files sorted by UTF-8 bytes",
        list_from_ordering,
    ),
    Check(
        "list_from_start", "list_from(p) starts at p's name, inclusive (Delta's listFrom)", list_from_start
    ),
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
)
