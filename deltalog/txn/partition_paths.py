"""Hive-style partition directories, as Spark writes them.

``escape_partition_value`` follows Spark's ``ExternalCatalogUtils.escapePathName``: control
characters and ``"#%'*/:=?\\{[]^`` (and DEL) become ``%XX``. A null value is the
directory ``__HIVE_DEFAULT_PARTITION__``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["HIVE_DEFAULT_PARTITION", "escape_partition_value", "partition_directory", "unescape_partition_value"]

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_SPECIAL = frozenset("\"#%'*/:=?\\\x7f{[]^")


def escape_partition_value(value: str) -> str:
    out = []
    for ch in value:
        if ch in _SPECIAL or ord(ch) < 0x20:
            out.append(f"%{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


def unescape_partition_value(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and i + 3 <= len(text):
            code = text[i + 1 : i + 3]
            try:
                out.append(chr(int(code, 16)))
                i += 3
                continue
            except ValueError:
                pass
        out.append(ch)
        i += 1
    return "".join(out)


def partition_directory(partition_columns: Sequence[str], values: Mapping[str, str | None]) -> str:
    """``a=1/b=x%3Ay`` for the partition values of one file ('' when unpartitioned)."""
    parts = []
    for column in partition_columns:
        value = values.get(column)
        rendered = HIVE_DEFAULT_PARTITION if value is None or value == "" else escape_partition_value(value)
        parts.append(f"{escape_partition_value(column)}={rendered}")
    return "/".join(parts)
