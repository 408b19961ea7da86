"""Every conformance check, in report order."""

from __future__ import annotations

from collections.abc import Iterable

from deltalog.conformance.check import Check
from deltalog.conformance.checks import (
    contention,
    datafs,
    engine,
    housekeeping,
    listing,
    names,
    overwrite,
    roundtrip,
    semantics,
    spec,
    visibility,
)
from deltalog.errors import DeltaError

__all__ = ["CHECKS", "UnknownCheckError", "check_names", "get_check", "select_checks"]

CHECKS: tuple[Check, ...] = (
    *semantics.CHECKS,
    *roundtrip.CHECKS,
    *overwrite.CHECKS,
    *contention.CHECKS,
    *visibility.CHECKS,
    *listing.CHECKS,
    *names.CHECKS,
    *housekeeping.CHECKS,
    *datafs.CHECKS,
    *engine.CHECKS,
    *spec.CHECKS,
)


class UnknownCheckError(DeltaError, LookupError):
    """A check name that is not in the catalog."""


def check_names() -> list[str]:
    return [check.name for check in CHECKS]


def get_check(name: str) -> Check:
    for check in CHECKS:
        if check.name == name:
            return check
    raise UnknownCheckError(f"no conformance check is named {name!r}; the checks are: {', '.join(check_names())}")


def select_checks(names: Iterable[str] | None) -> list[Check]:
    """The named checks (all when ``names`` is empty or None), in catalog order."""
    wanted = list(names or ())
    if not wanted:
        return list(CHECKS)
    for name in wanted:
        get_check(name)
    return [check for check in CHECKS if check.name in wanted]
