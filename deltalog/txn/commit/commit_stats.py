"""Statistics of one commit, like Delta's ``CommitStats`` (logged at DEBUG and handed to
``EngineSettings.on_commit_stats``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["CommitStats"]


@dataclass
class CommitStats:
    table: str
    operation: str
    read_version: int
    version: int = -1
    attempts: int = 0
    winning_versions_checked: list[int] = field(default_factory=list)
    isolation_level: str = ""
    is_blind_append: bool = False
    num_adds: int = 0
    num_removes: int = 0
    num_cdc_files: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    #: rows of the added files (their ``numRecords``); ``None`` when one has no row count
    rows_added: int | None = 0
    num_actions: int = 0
    time_conflict_checking_ms: float = 0.0
    time_writing_ms: float = 0.0
    time_backoff_ms: float = 0.0
    time_total_ms: float = 0.0
    time_post_commit_ms: float = 0.0
    resolved_by_txn_id: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
