"""The verdict that ends a conformance report: what a platform team can do with the store.

- **safe**: every operation deltalog performs passed, and the commit lock the engine
  picks by itself is enough;
- **safe with configuration**: deltalog works on the store once configured as the
  verdict says (a commit lock, another store implementation for the URI);
- **unsafe**: something deltalog needs is broken and no configuration fixes it (lost or
  repeated listing entries, checkpoints that cannot be written, half-visible commits).

The verdict reads the failed checks by what they are about; :data:`TOPICS` maps each
check to its topic.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.conformance.result import CheckResult, Outcome

__all__ = ["TOPICS", "Verdict", "VerdictLevel", "judge"]

MUTUAL_EXCLUSION = "mutual exclusion"
VISIBILITY = "atomic visibility"

#: What each check is about, where the verdict treats it apart from "the rest".
TOPICS: dict[str, str] = {
    "declared_semantics": MUTUAL_EXCLUSION,
    "overwrite_false_raises": MUTUAL_EXCLUSION,
    "put_if_absent_threads": MUTUAL_EXCLUSION,
    "put_if_absent_processes": MUTUAL_EXCLUSION,
    "engine_commit": MUTUAL_EXCLUSION,  # two writers lose commits when put-if-absent lies
    "atomic_visibility": VISIBILITY,
    "aborted_write_invisible": VISIBILITY,
    "checkpoint_stream_invisible": VISIBILITY,
}

#: What an "unsafe" failure of a check means for a table.
CONSEQUENCES: dict[str, str] = {
    "list_past_one_page": "the engine would miss, repeat or misorder commits and data files in long directories",
    "list_from_ordering": "the engine would read commits out of order",
    "list_from_start": "the engine would miss the commit it lists from",
    "read_after_write_listing": "a writer would not see the commit it just made",
    "checkpoints": "the table would never get a checkpoint: reads replay the whole log, cleanup never runs",
    "checkpoint_v2_sidecars": "V2-checkpoint tables would never get a checkpoint",
    "log_cleanup": "the log would grow forever",
    "checksum_files": "version checksums (N.crc) would be overwritten or fail: readers validate snapshots against them",
    "data_file_ranged_reads": "Parquet data files and checkpoints could not be read",
    "data_file_deletes": "VACUUM could not delete data files",
    "partition_value_names": "partitions whose values Delta escapes would be lost",
}

LOCK_CHOICE = "`deltalog.commitLock=redis://HOST:PORT/DB` (several writer processes) or `deltalog.singleWriter=true`"


class VerdictLevel(enum.Enum):
    SAFE = "safe"
    SAFE_WITH_CONFIGURATION = "safe with configuration"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Verdict:
    """The level, the configuration it needs (for "safe with configuration") and why."""

    level: VerdictLevel
    reasons: tuple[str, ...]
    configuration: str | None = None
    partial: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        head = f"Verdict: {self.level.value.upper()}"
        if self.configuration:
            head += f": {self.configuration}"
        lines = [head, *(f"  - {reason}" for reason in self.reasons)]
        if self.partial:
            lines.append("  (only some checks ran: the verdict covers those)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.level.value,
            "configuration": self.configuration,
            "reasons": list(self.reasons),
            "partial": self.partial,
        }


def _none_store_for(store: Mapping[str, Any]) -> str:
    """Which store implementation to use instead of one that lies about put-if-absent."""
    schemes = [s for s in store.get("schemes", []) if not s.endswith("*")]
    if store.get("name") == "s3" or "s3" in schemes:
        return "use `deltalog.logstore.s3.impl=s3-no-conditional-put`"
    if str(store.get("name", "")).startswith("fsspec"):
        return "set `FSSPEC_MUTUAL_EXCLUSION=none`"
    scheme = schemes[0] if schemes else "<scheme>"
    return f"use a store that declares MutualExclusion.NONE for it (`deltalog.logstore.{scheme}.impl=...`)"


def judge(store: Mapping[str, Any], results: Sequence[CheckResult], complete: bool) -> Verdict:
    """The verdict on ``store`` (its ``describe()``) from the check ``results``;
    ``complete`` says whether every check of the catalog ran."""
    failed = [r for r in results if r.outcome is Outcome.FAILED]
    by_name = {r.check: r for r in results}
    partial = not complete
    mode = str(store.get("mutual_exclusion"))
    exclusion_failed = [r for r in failed if TOPICS.get(r.check) == MUTUAL_EXCLUSION]
    visibility_failed = [r for r in failed if TOPICS.get(r.check) == VISIBILITY]
    rest = [r for r in failed if r.check not in TOPICS]
    if exclusion_failed and all(r.check == "engine_commit" for r in exclusion_failed):
        rest += exclusion_failed  # the engine failed on its own: not put-if-absent's fault
        exclusion_failed = []

    unsafe: list[str] = []
    for r in rest:
        consequence = CONSEQUENCES.get(r.check, "deltalog relies on it")
        unsafe.append(f"{r.check} failed ({r.detail}): {consequence}")
    if visibility_failed:
        unsafe.append(
            "declares atomic visibility but shows partial writes "
            f"({'; '.join(r.detail for r in visibility_failed)}): readers can load half a commit. The store must "
            "publish log files whole (temp file and rename inside write()), and declare "
            "partial_write_visible=True if its data filesystem shows files while they are written"
        )
    if unsafe:
        return Verdict(VerdictLevel.UNSAFE, tuple(unsafe), partial=partial)

    if exclusion_failed:
        evidence = "; ".join(f"{r.check}: {r.detail}" for r in exclusion_failed)
        return Verdict(
            VerdictLevel.SAFE_WITH_CONFIGURATION,
            (
                f"declares {mode} but ignores put-if-absent (If-None-Match): two writers can both publish "
                f"a version and one commit is lost silently ({evidence})",
                "a store that declares MutualExclusion.NONE makes the engine refuse to commit without a lock",
            ),
            f"{_none_store_for(store)} with {LOCK_CHOICE}",
            partial=partial,
        )

    reasons: list[str] = []
    configuration: str | None = None
    engine = by_name.get("engine_commit")
    if mode == "NONE":
        if engine is not None and engine.outcome is Outcome.PASSED:
            reasons.append(
                f"declares NONE (a plain put); the configured commit lock serializes writers: {engine.detail}"
            )
        else:
            configuration = LOCK_CHOICE
            reasons.append(
                "declares NONE (a plain put): two writers could publish the same version, so the engine "
                "refuses to commit without a commit lock"
            )
    if store.get("partial_write_visible"):
        configuration = configuration or (
            "one writer process (the in-process commit lock is chosen), or `deltalog.commitLock=redis://HOST:PORT/DB`"
        )
        reasons.append(
            "shows partial writes (declared): the in-process commit lock is chosen and checkpoints are written "
            "through a temp file and a rename; writers in other processes need a shared lock"
        )
    if configuration:
        return Verdict(VerdictLevel.SAFE_WITH_CONFIGURATION, tuple(reasons), configuration, partial=partial)
    if not reasons:
        lock = "no commit lock needed" if mode != "NONE" else "the configured commit lock"
        reasons.append(
            f"declares {mode} with atomic visibility, and every operation deltalog performs on it passed; {lock}"
        )
    return Verdict(VerdictLevel.SAFE, tuple(reasons), partial=partial)
