"""Hive-style partition directories, as Spark writes them.

``escape_partition_value`` follows Spark's ``ExternalCatalogUtils.escapePathName``: control
characters (0x01-0x1F) and ``"#%'*/:=?\\{[]^`` (and DEL) become ``%XX``. A null (or empty)
value is the directory ``__HIVE_DEFAULT_PARTITION__``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["HIVE_DEFAULT_PARTITION", "escape_partition_value", "partition_directory", "unescape_partition_value"]

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = frozenset([chr(c) for c in range(0x01, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))


def escape_partition_value(value: str) -> str:
    """Escape one partition directory name component like Hive/Spark."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in value)


def unescape_partition_value(text: str) -> str:
    """Undo :func:`escape_partition_value` (``%XX`` with two hex digits)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        code = text[i + 1 : i + 3]
        if text[i] == "%" and len(code) == 2 and all(c in "0123456789abcdefABCDEF" for c in code):
            out.append(chr(int(code, 16)))
            i += 3
        else:
            out.append(text[i])
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
