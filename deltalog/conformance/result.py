"""What one conformance check found."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["CheckFailed", "CheckResult", "NotApplicable", "Outcome"]


class Outcome(enum.Enum):
    """The verdict of one check."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    NOT_APPLICABLE = "NOT_APPLICABLE"


class CheckFailed(Exception):
    """Raised inside a check: the store broke the contract. The message is the detail."""


class NotApplicable(Exception):
    """Raised inside a check: the check does not apply to this store (the message says why)."""


@dataclass(frozen=True)
class CheckResult:
    """One row of the capability report."""

    check: str
    outcome: Outcome
    detail: str
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.FAILED

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "result": self.outcome.value,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }
