"""Arguments shared by the table subcommands, and ``--where`` parsing."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from deltalog.txn.protocol.partition_filters import InvalidPartitionFilterError, PartitionFilter

__all__ = ["add_table_arguments", "at_least", "format_ms", "parse_where", "with_arguments"]

_COMPARISON = re.compile(r"^\s*([^\s=!<>]+)\s*(==|=|!=|<>|<=|>=|<|>)\s*(.*?)\s*$")
_MEMBERSHIP = re.compile(r"^\s*([^\s=!<>]+)\s+(not\s+in|in)\s*\((.*)\)\s*$", re.IGNORECASE)


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """``URI`` and ``--lock`` (the commit lock of commands that commit)."""
    parser.add_argument("uri", help="the table's location (a path or a URI: s3://, abfss://, gs://, ...)")
    parser.add_argument(
        "--lock",
        metavar="LOCK",
        help="commit lock for commands that commit: auto (default), none, in-process, redis://HOST:PORT/DB",
    )


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer of at least ``minimum`` (a version, a count, a size),
    so a bad one is refused with the usage (exit 2) rather than taken."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def with_arguments(
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Callable[[argparse.ArgumentParser], None]:
    def arguments(parser: argparse.ArgumentParser) -> None:
        add_table_arguments(parser)
        if extra is not None:
            extra(parser)

    return arguments


def _value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse_where(text: str) -> PartitionFilter:
    """``"p = a"``, ``"year >= 2020"``, ``"p in (a, b)"`` -> a ``(column, op, value)`` filter.
    Values are strings here; the filter compares them as the partition column's type."""
    m = _MEMBERSHIP.match(text)
    if m:
        op = "not in" if m.group(2).lower().startswith("not") else "in"
        values = [_value(v) for v in m.group(3).split(",") if v.strip()]
        return (m.group(1), op, values)
    m = _COMPARISON.match(text)
    if m and m.group(3):
        return (m.group(1), m.group(2), _value(m.group(3)))
    raise InvalidPartitionFilterError(
        f"cannot parse the partition filter {text!r}: write COLUMN OP VALUE (OP one of = != < <= > >=) "
        'or COLUMN in (V1, V2), e.g. --where "date >= 2024-01-01"'
    )


def format_ms(ms: Any) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc).isoformat(timespec="seconds")


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
