"""Table properties (``metaData.configuration``) with Delta's defaults, typed.

Durations use Delta's ``CalendarInterval`` spelling (``"interval 1 week"``,
``"interval 30 days"``, ``"2 hours"``); months and years are refused, as Delta refuses them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from deltalog.txn.protocol.errors import DeltaLogError

__all__ = ["InvalidPropertyError", "TableProperties", "parse_bool", "parse_interval"]


class InvalidPropertyError(DeltaLogError, ValueError):
    """A table property has a value Delta does not accept."""


_UNITS_MS = {
    "nanosecond": 1e-6,
    "microsecond": 1e-3,
    "millisecond": 1.0,
    "second": 1000.0,
    "minute": 60_000.0,
    "hour": 3_600_000.0,
    "day": 86_400_000.0,
    "week": 604_800_000.0,
}
_UNIT_ALIASES = {
    "ns": "nanosecond",
    "us": "microsecond",
    "ms": "millisecond",
    "s": "second",
    "sec": "second",
    "secs": "second",
    "min": "minute",
    "mins": "minute",
    "h": "hour",
    "d": "day",
}
_PART = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+)")


def parse_interval(value: str, key: str = "interval") -> timedelta:
    """Parse ``"interval 1 week"`` / ``"30 days"`` / ``"1 day 12 hours"`` into a timedelta."""
    text = value.strip().lower()
    if text.startswith("interval"):
        text = text[len("interval") :].strip()
    if not text:
        raise InvalidPropertyError(f"{key}={value!r} is not an interval; write e.g. 'interval 7 days'")
    total_ms = 0.0
    pos = 0
    for m in _PART.finditer(text):
        if text[pos : m.start()].strip():
            break
        unit = m.group(2)
        unit = _UNIT_ALIASES.get(unit, unit.rstrip("s") if unit.endswith("s") and unit != "s" else unit)
        if unit in ("month", "year"):
            raise InvalidPropertyError(
                f"{key}={value!r}: months and years are not allowed in Delta retention intervals; use days or weeks"
            )
        if unit not in _UNITS_MS:
            raise InvalidPropertyError(f"{key}={value!r}: unknown unit {m.group(2)!r}")
        total_ms += float(m.group(1)) * _UNITS_MS[unit]
        pos = m.end()
    if pos == 0 or text[pos:].strip():
        raise InvalidPropertyError(f"{key}={value!r} is not an interval; write e.g. 'interval 7 days'")
    if total_ms < 0:
        raise InvalidPropertyError(f"{key}={value!r} must not be negative")
    return timedelta(milliseconds=total_ms)


def parse_bool(value: str, key: str) -> bool:
    lowered = value.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise InvalidPropertyError(f"{key}={value!r} must be 'true' or 'false'")


def _parse_int(value: str, key: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise InvalidPropertyError(f"{key}={value!r} must be an integer") from None


@dataclass(frozen=True)
class TableProperties:
    """Typed view of a table's configuration; every accessor applies Delta's default."""

    configuration: Mapping[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.configuration.get(key, default)

    def _bool(self, key: str, default: bool) -> bool:
        raw = self.configuration.get(key)
        return default if raw is None else parse_bool(raw, key)

    def _interval(self, key: str, default: str | None) -> timedelta | None:
        raw = self.configuration.get(key, default)
        return None if raw is None else parse_interval(raw, key)

    @property
    def checkpoint_interval(self) -> int:
        raw = self.configuration.get("delta.checkpointInterval")
        value = 10 if raw is None else _parse_int(raw, "delta.checkpointInterval")
        if value <= 0:
            raise InvalidPropertyError(f"delta.checkpointInterval={raw!r} must be > 0")
        return value

    @property
    def log_retention(self) -> timedelta:
        value = self._interval("delta.logRetentionDuration", "interval 30 days")
        assert value is not None
        return value

    @property
    def deleted_file_retention(self) -> timedelta:
        value = self._interval("delta.deletedFileRetentionDuration", "interval 1 week")
        assert value is not None
        return value

    @property
    def checkpoint_retention(self) -> timedelta:
        value = self._interval("delta.checkpointRetentionDuration", "interval 2 days")
        assert value is not None
        return value

    @property
    def set_transaction_retention(self) -> timedelta | None:
        """``delta.setTransactionRetentionDuration``; ``None`` (the default) keeps them forever."""
        return self._interval("delta.setTransactionRetentionDuration", None)

    @property
    def enable_expired_log_cleanup(self) -> bool:
        return self._bool("delta.enableExpiredLogCleanup", True)

    @property
    def append_only(self) -> bool:
        return self._bool("delta.appendOnly", False)

    @property
    def isolation_level(self) -> str:
        raw = self.configuration.get("delta.isolationLevel", "Serializable")
        valid = {
            "serializable": "Serializable",
            "writeserializable": "WriteSerializable",
            "snapshotisolation": "SnapshotIsolation",
        }
        if raw.strip().lower() not in valid:
            raise InvalidPropertyError(f"delta.isolationLevel={raw!r} must be Serializable or WriteSerializable")
        return valid[raw.strip().lower()]

    @property
    def enable_change_data_feed(self) -> bool:
        raw = self.configuration.get(
            "delta.enableChangeDataFeed", self.configuration.get("delta.enableChangeDataCapture")
        )
        return False if raw is None else parse_bool(raw, "delta.enableChangeDataFeed")

    @property
    def data_skipping_num_indexed_cols(self) -> int:
        raw = self.configuration.get("delta.dataSkippingNumIndexedCols")
        value = 32 if raw is None else _parse_int(raw, "delta.dataSkippingNumIndexedCols")
        if value < -1:
            raise InvalidPropertyError(f"delta.dataSkippingNumIndexedCols={raw!r} must be >= -1")
        return value

    @property
    def data_skipping_stats_columns(self) -> tuple[str, ...] | None:
        raw = self.configuration.get("delta.dataSkippingStatsColumns")
        return None if raw is None else tuple(c.strip() for c in raw.split(",") if c.strip())

    @property
    def checkpoint_write_stats_as_json(self) -> bool:
        return self._bool("delta.checkpoint.writeStatsAsJson", True)

    @property
    def checkpoint_write_stats_as_struct(self) -> bool:
        """PROTOCOL.md gives ``false`` as the default (Delta Spark's code says true)."""
        return self._bool("delta.checkpoint.writeStatsAsStruct", False)

    @property
    def checkpoint_policy(self) -> str:
        raw = self.configuration.get("delta.checkpointPolicy", "classic").strip().lower()
        if raw not in ("classic", "v2"):
            raise InvalidPropertyError(f"delta.checkpointPolicy={raw!r} must be 'classic' or 'v2'")
        return raw

    @property
    def column_mapping_mode(self) -> str:
        raw = self.configuration.get("delta.columnMapping.mode", "none").strip().lower()
        if raw not in ("none", "name", "id"):
            raise InvalidPropertyError(f"delta.columnMapping.mode={raw!r} must be none, name or id")
        return raw

    @property
    def column_mapping_max_id(self) -> int:
        raw = self.configuration.get("delta.columnMapping.maxColumnId")
        return 0 if raw is None else _parse_int(raw, "delta.columnMapping.maxColumnId")

    @property
    def enable_deletion_vectors(self) -> bool:
        return self._bool("delta.enableDeletionVectors", False)

    @property
    def enable_in_commit_timestamps(self) -> bool:
        raw = self.configuration.get(
            "delta.enableInCommitTimestamps", self.configuration.get("delta.enableInCommitTimestamps-preview")
        )
        return False if raw is None else parse_bool(raw, "delta.enableInCommitTimestamps")

    @property
    def in_commit_timestamp_enablement_version(self) -> int | None:
        raw = self.configuration.get("delta.inCommitTimestampEnablementVersion")
        return None if raw is None else _parse_int(raw, "delta.inCommitTimestampEnablementVersion")

    @property
    def in_commit_timestamp_enablement_timestamp(self) -> int | None:
        raw = self.configuration.get("delta.inCommitTimestampEnablementTimestamp")
        return None if raw is None else _parse_int(raw, "delta.inCommitTimestampEnablementTimestamp")

    @property
    def enable_row_tracking(self) -> bool:
        return self._bool("delta.enableRowTracking", False)

    @property
    def enable_type_widening(self) -> bool:
        return self._bool("delta.enableTypeWidening", False)

    @property
    def check_constraints(self) -> dict[str, str]:
        """``delta.constraints.<name>`` -> SQL expression (writers must enforce them)."""
        prefix = "delta.constraints."
        return {k[len(prefix) :]: v for k, v in self.configuration.items() if k.startswith(prefix)}

    @property
    def target_file_size(self) -> int | None:
        raw = self.configuration.get("delta.targetFileSize")
        return None if raw is None else _parse_int(raw, "delta.targetFileSize")

    def validate(self) -> None:
        """Parse every known property once; raises :class:`InvalidPropertyError` on a bad one."""
        for name in (
            "checkpoint_interval",
            "log_retention",
            "deleted_file_retention",
            "checkpoint_retention",
            "set_transaction_retention",
            "enable_expired_log_cleanup",
            "append_only",
            "isolation_level",
            "enable_change_data_feed",
            "data_skipping_num_indexed_cols",
            "checkpoint_write_stats_as_json",
            "checkpoint_write_stats_as_struct",
            "checkpoint_policy",
            "column_mapping_mode",
            "enable_deletion_vectors",
            "enable_in_commit_timestamps",
        ):
            getattr(self, name)
