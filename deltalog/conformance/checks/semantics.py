"""Declared semantics against observed behaviour.

The engine trusts the declaration: a store that declares CONDITIONAL_WRITE or
ATOMIC_RENAME gets no commit lock, so if it lets a second writer overwrite a commit,
commits are lost silently. That is the loudest failure the kit reports.
"""

from __future__ import annotations

from deltalog.conformance.check import Check
from deltalog.conformance.checks.contention import RaceTally, race_threads
from deltalog.conformance.checks.overwrite import second_write_outcome
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable
from deltalog.logstores.base import MutualExclusion
from deltalog.txn.protocol.file_names import delta_file

__all__ = ["CHECKS"]

RACES = 5
RACERS = 8


def declared_semantics(ctx: CheckContext) -> str:
    store = ctx.store
    declared = store.semantics
    probe = ctx.uri("00000000000000000000.json")
    per_path = store.is_partial_write_visible(probe)
    if per_path != declared.partial_write_visible:
        raise CheckFailed(
            f"is_partial_write_visible() says {per_path} but semantics.partial_write_visible "
            f"says {declared.partial_write_visible}"
        )
    outcome, content = second_write_outcome(ctx, probe)
    tally = RaceTally()
    for race in range(RACES):
        race_threads(store, ctx.uri(f"race-{delta_file(race)}"), race, RACERS, tally)
    evidence: list[str] = []
    if outcome == "overwrote":
        evidence.append(f"a second writer overwrote an existing file (it now reads {content[:1]!r})")
    elif outcome != "refused":
        evidence.append(f"a second writer got {outcome[len('error: ') :]} instead of FileAlreadyExistsError")
    if tally.several_winners:
        evidence.append(f"{tally.several_winners} of {RACES} races of {RACERS} threads had several winners")
    mode = declared.mutual_exclusion
    if mode is MutualExclusion.NONE:
        seen = "; ".join(evidence) if evidence else "no overwrite was observed in this run"
        raise NotApplicable(
            "declares MutualExclusion.NONE: needs a commit lock (redis://... for many writers, or an "
            f"explicit single-writer opt-in); {seen}"
        )
    if evidence:
        raise CheckFailed(
            f"declares {mode.name} but {'; '.join(evidence)}. The engine commits to such a store "
            "without a lock and would silently lose commits: make write(overwrite=False) refuse "
            "existing files atomically, or declare MutualExclusion.NONE"
        )
    return f"declares {declared.describe()}; observed: a second writer is refused, {RACES} races had one winner"


CHECKS = (
    Check(
        "declared_semantics",
        "the declared mutual exclusion and partial-write visibility match what the store does",
        declared_semantics,
    ),
)
