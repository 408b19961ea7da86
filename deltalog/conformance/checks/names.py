"""File and directory names with spaces, ``%``, ``=`` and non-ASCII characters."""

from __future__ import annotations

from deltalog.conformance.check import Check, expect
from deltalog.conformance.context import CheckContext

__all__ = ["CHECKS", "SPECIAL_DIRS", "SPECIAL_NAMES"]

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


CHECKS = (
    Check(
        "special_names",
        "names with spaces, %, = and non-ASCII round-trip through write/list/read",
        special_names,
    ),
)
