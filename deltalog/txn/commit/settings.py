"""Engine settings, named after Delta's configuration where Delta has one.

| setting | Delta's name | default |
|---|---|---|
| ``max_commit_attempts`` | ``spark.databricks.delta.maxCommitAttempts`` | 1000 |
| ``commit_info_enabled`` | ``spark.databricks.delta.commitInfo.enabled`` | true |
| ``user_metadata`` | ``spark.databricks.delta.commitInfo.userMetadata`` | none |
| ``operation_metrics_enabled`` | ``spark.databricks.delta.history.metricsEnabled`` | true |
| ``backoff_base_ms`` / ``backoff_max_ms`` | (deltalog) retry backoff with jitter | 2 / 500 |
| ``post_commit_checkpoint`` | (deltalog) checkpoint every ``delta.checkpointInterval`` | true |
| ``write_checksum_file`` | ``spark.databricks.delta.writeChecksumFile.enabled`` | true |
| ``skip_recording_empty_commits`` | ``spark.databricks.delta.skipRecordingEmptyCommits`` | true |
| ``allow_unenforced_not_null`` | ``spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled`` | false |
| ``auto_compact`` | ``spark.databricks.delta.autoCompact.enabled`` | none (the table's property decides) |
| ``auto_compact_max_file_size`` | ``spark.databricks.delta.autoCompact.maxFileSize`` | 128 MiB |
| ``auto_compact_min_file_size`` | ``spark.databricks.delta.autoCompact.minFileSize`` | half the max |
| ``auto_compact_min_num_files`` | ``spark.databricks.delta.autoCompact.minNumFiles`` | 50 |
| ``auto_compact_modified_partitions_only`` | ``...autoCompact.modifiedPartitionsOnly.enabled`` | true |
| ``auto_compact_max_num_modified_partitions`` | ``...autoCompact.maxNumModifiedPartitions`` | 128 |

Each can be given as an option ``deltalog.<name>`` (e.g. ``deltalog.maxCommitAttempts``) or
under Delta's name, in the storage options of ``DeltaLog.for_table``.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from deltalog.logstores.options import StorageOptions
from deltalog.txn.protocol.properties import InvalidAutoCompactTypeError, parse_auto_compact

if TYPE_CHECKING:
    from deltalog.txn.commit.commit_stats import CommitStats

__all__ = ["DELTA_SESSION_CONFS", "EngineSettings", "default_engine_info"]


def default_engine_info() -> str:
    from deltalog import __version__

    return f"deltalog/{__version__} Python/{platform.python_version()}"


_KEYS: dict[str, tuple[str, ...]] = {
    "max_commit_attempts": ("deltalog.maxCommitAttempts", "spark.databricks.delta.maxCommitAttempts"),
    "commit_info_enabled": ("deltalog.commitInfo.enabled", "spark.databricks.delta.commitInfo.enabled"),
    "user_metadata": ("deltalog.commitInfo.userMetadata", "spark.databricks.delta.commitInfo.userMetadata"),
    "operation_metrics_enabled": (
        "deltalog.history.metricsEnabled",
        "spark.databricks.delta.history.metricsEnabled",
    ),
    "backoff_base_ms": ("deltalog.commit.backoffBaseMs",),
    "backoff_max_ms": ("deltalog.commit.backoffMaxMs",),
    "post_commit_checkpoint": ("deltalog.postCommitCheckpoint.enabled",),
    "write_checksum_file": (
        "deltalog.writeChecksumFile.enabled",
        "spark.databricks.delta.writeChecksumFile.enabled",
    ),
    "skip_recording_empty_commits": (
        "deltalog.skipRecordingEmptyCommits",
        "spark.databricks.delta.skipRecordingEmptyCommits",
    ),
    "allow_unenforced_not_null": (
        "deltalog.constraints.allowUnenforcedNotNull.enabled",
        "spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled",
    ),
    **{
        attr: (f"deltalog.autoCompact.{name}", f"spark.databricks.delta.autoCompact.{name}")
        for attr, name in (
            ("auto_compact", "enabled"),
            ("auto_compact_max_file_size", "maxFileSize"),
            ("auto_compact_min_file_size", "minFileSize"),
            ("auto_compact_min_num_files", "minNumFiles"),
            ("auto_compact_modified_partitions_only", "modifiedPartitionsOnly.enabled"),
            ("auto_compact_max_num_modified_partitions", "maxNumModifiedPartitions"),
        )
    },
}


#: The settings' names as Delta's session confs (``spark.databricks.delta.*``): what an
#: integration with a session reads from it (see ``deltalog.contrib.spark.tablelog``).
DELTA_SESSION_CONFS = tuple(k for keys in _KEYS.values() for k in keys if k.startswith("spark.databricks.delta."))

_FLAGS = (
    "commit_info_enabled",
    "operation_metrics_enabled",
    "post_commit_checkpoint",
    "write_checksum_file",
    "skip_recording_empty_commits",
    "allow_unenforced_not_null",
    "auto_compact_modified_partitions_only",
)
_INTS = (
    "max_commit_attempts",
    "auto_compact_max_file_size",
    "auto_compact_min_file_size",
    "auto_compact_min_num_files",
    "auto_compact_max_num_modified_partitions",
)


@dataclass(frozen=True)
class EngineSettings:
    """How the transaction engine commits."""

    max_commit_attempts: int = 1000
    commit_info_enabled: bool = True
    user_metadata: str | None = None
    operation_metrics_enabled: bool = True
    backoff_base_ms: float = 2.0
    backoff_max_ms: float = 500.0
    post_commit_checkpoint: bool = True
    #: write ``N.crc`` after each commit (see :mod:`deltalog.txn.log.checksum`)
    write_checksum_file: bool = True
    #: ``commit_if_needed`` may skip an empty commit (false: it is always recorded)
    skip_recording_empty_commits: bool = True
    #: a schema change with NOT NULL inside arrays or maps drops those instead of failing
    #: (see :mod:`deltalog.txn.commit.nested_not_null`)
    allow_unenforced_not_null: bool = False
    #: auto compaction after a write (see :mod:`deltalog.txn.commands.auto_compact`): None
    #: leaves it to the table's ``delta.autoOptimize.autoCompact``
    auto_compact: bool | None = None
    auto_compact_max_file_size: int = 128 * 1024 * 1024
    #: files below it are compacted (None: half of ``auto_compact_max_file_size``)
    auto_compact_min_file_size: int | None = None
    auto_compact_min_num_files: int = 50
    auto_compact_modified_partitions_only: bool = True
    auto_compact_max_num_modified_partitions: int = 128
    engine_info: str = ""
    on_commit_stats: Callable[[CommitStats], None] | None = None

    def __post_init__(self) -> None:
        if self.max_commit_attempts < 1:
            raise ValueError(f"max_commit_attempts must be >= 1, got {self.max_commit_attempts}")
        for name in ("auto_compact_max_file_size", "auto_compact_min_file_size", "auto_compact_min_num_files"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        partitions = self.auto_compact_max_num_modified_partitions
        if partitions < 1:
            raise ValueError(f"auto_compact_max_num_modified_partitions must be >= 1, got {partitions}")
        if not self.engine_info:
            object.__setattr__(self, "engine_info", default_engine_info())

    @classmethod
    def from_options(cls, options: Mapping[str, object] | None) -> EngineSettings:
        """Settings from storage options / Spark-style configuration keys."""
        opts = options if isinstance(options, StorageOptions) else StorageOptions(options)
        values: dict[str, object] = {}
        for attr, keys in _KEYS.items():
            raw = opts.first(*keys)
            if raw is None:
                continue
            try:
                if attr in _INTS:
                    values[attr] = int(raw)
                elif attr == "auto_compact":
                    values[attr] = parse_auto_compact(raw)
                elif attr in ("backoff_base_ms", "backoff_max_ms"):
                    values[attr] = float(raw)
                elif attr in _FLAGS:
                    values[attr] = raw.strip().lower() in ("1", "true", "yes", "on")
                else:
                    values[attr] = raw
            except InvalidAutoCompactTypeError:
                raise  # Delta's own error, typed
            except ValueError as exc:
                raise ValueError(f"invalid value {raw!r} for {keys[0]}: {exc}") from exc
        return cls(**values)  # type: ignore[arg-type]

    def with_(self, **changes: object) -> EngineSettings:
        return replace(self, **changes)  # type: ignore[arg-type]
