"""Write/read round trips: what goes in comes out, byte for byte, line for line."""

from __future__ import annotations

import hashlib

from deltalog.conformance.check import Check, describe_difference, expect
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed

__all__ = ["CHECKS", "UNICODE_LINES", "big_lines"]

#: Lines a Delta log can contain: JSON text with non-ASCII characters written raw, and
#: Unicode line separators that are NOT line breaks in the log (only ``\n`` is).
UNICODE_LINES = [
    '{"commitInfo":{"operation":"WRITE"}}',
    "",
    "café naïve façade",
    "日本語のテキスト",
    "emoji 😀 and astral 𝄞",
    "tab\tseparated",
    "U+2028 \u2028 line separator, U+2029 \u2029 paragraph separator",
    "NEL \x85 VT \x0b FF \x0c FS \x1c",
    "combining e\u0301 vs precomposed \u00e9",
    "zero width\u200bspace",
    '{"escaped":"a\\nb"}',
    "  leading and trailing spaces  ",
]

BIG_LINE_CHARS = 1023  # plus "\n": 1 KiB per line


def big_lines(mebibytes: int, tag: str = "") -> list[str]:
    """``mebibytes`` MiB of distinct 1 KiB lines (numbered, so reordering shows)."""
    filler = (tag + "x" * BIG_LINE_CHARS)[: BIG_LINE_CHARS - 9]
    return [f"{i:08d}|{filler}" for i in range(mebibytes * 1024)]


def _digest(lines: list[str]) -> str:
    hasher = hashlib.sha256()
    for line in lines:
        hasher.update(line.encode("utf-8"))
        hasher.update(b"\n")
    return hasher.hexdigest()[:16]


def roundtrip_empty(ctx: CheckContext) -> str:
    empty = ctx.uri("empty.json")
    ctx.write(empty, [])
    got = ctx.read(empty)
    expect(got == [], f"an empty file reads back as {len(got)} lines: {got[:3]!r}")
    one_blank = ctx.uri("blank-line.json")
    ctx.write(one_blank, [""])
    got = ctx.read(one_blank)
    expect(got == [""], f"a file holding one empty line reads back as {got[:3]!r}")
    return "an empty file reads back empty; one empty line reads back as ['']"


def roundtrip_unicode(ctx: CheckContext) -> str:
    uri = ctx.uri("unicode.json")
    ctx.write(uri, UNICODE_LINES)
    got = ctx.read(uri)
    expect(
        got == UNICODE_LINES,
        "non-ASCII lines do not round-trip: " + describe_difference(UNICODE_LINES, got),
    )
    return f"{len(UNICODE_LINES)} lines with non-ASCII text and U+2028/U+0085 separators intact"


def roundtrip_16mib(ctx: CheckContext) -> str:
    lines = big_lines(16)
    uri = ctx.uri("big.json")
    ctx.write(uri, iter(lines))
    got = ctx.read(uri)
    if got != lines:
        raise CheckFailed("a 16 MiB file does not round-trip: " + describe_difference(lines, got))
    return f"16 MiB in {len(lines)} lines, sha256 {_digest(lines)} read back identical"


CHECKS = (
    Check("roundtrip_empty", "an empty file and a file of one empty line round-trip", roundtrip_empty),
    Check(
        "roundtrip_unicode",
        "UTF-8 text round-trips; only \\n separates lines (U+2028, U+0085 do not)",
        roundtrip_unicode,
    ),
    Check("roundtrip_16mib", "a 16 MiB file (large checkpoint-sized commit) round-trips", roundtrip_16mib),
)
