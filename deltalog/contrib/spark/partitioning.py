"""Partition values and Hive-style partition directories, as Spark and Delta write them.

Delta keeps partition values in the log as strings (``None`` for null) and Spark lays the
files out in ``col=value/`` directories whose values are escaped like Hive's
``ExternalCatalogUtils.escapePathName``: ``%XX`` for control characters and
``"#%'*/:=?\\{[]^`` and DEL, ``__HIVE_DEFAULT_PARTITION__`` for null or empty.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Mapping
from typing import Any

from deltalog.txn.protocol.partition_paths import (
    HIVE_DEFAULT_PARTITION,
    escape_partition_value,
    partition_directory,
    unescape_partition_value,
)
from deltalog.txn.protocol.time_zones import parse_date_text, parse_timestamp_text

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "escape_path_name",
    "partition_directory",
    "partition_value",
    "partition_value_to_string",
    "typed_partition_value",
    "unescape_path_name",
    "written_partition_value",
]

# The directory layout itself is the txn layer's (one implementation for Spark writes,
# OPTIMIZE and the symlink manifests).
escape_path_name = escape_partition_value
unescape_path_name = unescape_partition_value


def partition_value_to_string(value: Any, type_name: str) -> str | None:
    """The log's string form of a partition value (PROTOCOL "Partition Value Serialization")."""
    if value is None:
        return None
    t = type_name.lower()
    if isinstance(value, bool) or t == "boolean":
        return "true" if value else "false"
    if t == "timestamp":
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
            text: str = value.isoformat(sep="T", timespec="microseconds")
            return text + "Z"
    if t == "timestamp_ntz" and isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, float) and t in ("float", "double"):
        if math.isnan(value):
            return "NaN"  # Spark's (Java's) spelling, not Python's nan / inf
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer():
            return repr(value)
    return str(value)


def written_partition_value(value: Any, type_name: str) -> str | None:
    """The log's value of a partition a write puts ``value`` in: as Delta's
    ``DelayedCommitProtocol`` parses it back from the Hive-style directory, where null, the
    empty string and the text ``__HIVE_DEFAULT_PARTITION__`` are all that directory: null."""
    text = partition_value_to_string(value, type_name)
    return None if text in ("", HIVE_DEFAULT_PARTITION) else text


def typed_partition_value(text: str | None, type_name: str) -> Any:
    """A partition value string as a Python value of the column's Spark type (PROTOCOL: an
    empty string, of any type, is null)."""
    if text is None or text == "":
        return None
    t = type_name.lower()
    if t in ("byte", "short", "integer", "long"):
        return int(text)
    if t in ("float", "double"):
        return float(text)
    if t.startswith("decimal"):
        return decimal.Decimal(text)
    if t == "boolean":
        return text.strip().lower() == "true"
    if t == "date":
        day = parse_date_text(text)
        if day is None:
            raise ValueError(f"partition value {text!r} is not a date")
        return day
    if t in ("timestamp", "timestamp_ntz"):
        parsed = parse_timestamp_text(text)  # as Spark's cast: one digit fields, an offset, a zone id
        if parsed is None:
            raise ValueError(f"partition value {text!r} is not a timestamp")
        if t == "timestamp":
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.timezone.utc)
            return parsed.astimezone(dt.timezone.utc)
        return parsed.replace(tzinfo=None)
    if t == "binary":
        return text.encode("latin-1")
    return text


def partition_value(values: Mapping[str, str | None], name: str) -> str | None:
    """The value of partition column ``name`` (its key in ``partitionValues``), matched
    exactly, else case-insensitively."""
    if name in values:
        return values[name]
    lowered = name.lower()
    for k, v in values.items():
        if k.lower() == lowered:
            return v
    return None
