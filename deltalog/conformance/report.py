"""The capability report: one row per check, a summary line, and the verdict
(:mod:`deltalog.conformance.verdict`)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from typing import Any

from deltalog.conformance.result import CheckResult, Outcome
from deltalog.conformance.verdict import Verdict, judge

__all__ = ["Report"]

DETAIL_WIDTH = 88


@dataclass
class Report:
    """What a conformance run found about one store."""

    store: dict[str, Any]
    base_uri: str
    results: list[CheckResult] = field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for result in self.results if result.outcome is outcome)

    @property
    def ok(self) -> bool:
        """True when no check FAILED."""
        return self.count(Outcome.FAILED) == 0

    @property
    def failed_checks(self) -> list[str]:
        return [result.check for result in self.results if result.failed]

    @property
    def needs_commit_lock(self) -> bool:
        return self.store.get("mutual_exclusion") == "NONE"

    @property
    def verdict(self) -> Verdict:
        """safe / safe with configuration / unsafe, and why."""
        from deltalog.conformance.catalog import check_names

        complete = set(check_names()) <= {result.check for result in self.results}
        return judge(self.store, self.results, complete)

    def summary(self) -> str:
        passed = self.count(Outcome.PASSED)
        not_applicable = self.count(Outcome.NOT_APPLICABLE)
        failed = self.count(Outcome.FAILED)
        counts = f"{passed} passed, {failed} failed, {not_applicable} not applicable"
        if failed:
            names = ", ".join(self.failed_checks)
            line = f"FAILED: {failed} of {len(self.results)} checks failed ({names}); {counts}"
        else:
            line = f"All checks passed: {counts}"
        if self.needs_commit_lock:
            line += "; the store declares NONE and needs a commit lock (redis://... or single-writer)"
        return line

    def to_text(self) -> str:
        name_width = max([len("check"), *(len(r.check) for r in self.results)])
        result_width = len(Outcome.NOT_APPLICABLE.value)
        semantics = ", ".join(
            [
                str(self.store.get("mutual_exclusion")),
                "partial writes visible" if self.store.get("partial_write_visible") else "atomic visibility",
                "consistent listing" if self.store.get("consistent_listing") else "eventual listing",
            ]
        )
        lines = [
            f"LogStore {self.store.get('name')} ({semantics}) at {self.base_uri}",
            "",
            f"{'check':<{name_width}}  {'result':<{result_width}}  detail",
            f"{'-' * name_width}  {'-' * result_width}  {'-' * 6}",
        ]
        indent = " " * (name_width + result_width + 4)
        for result in self.results:
            wrapped = textwrap.wrap(result.detail, DETAIL_WIDTH) or [""]
            lines.append(f"{result.check:<{name_width}}  {result.outcome.value:<{result_width}}  {wrapped[0]}")
            lines.extend(indent + more for more in wrapped[1:])
        lines += ["", self.summary(), "", self.verdict.text()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "base_uri": self.base_uri,
            "ok": self.ok,
            "summary": self.summary(),
            "verdict": self.verdict.to_dict(),
            "counts": {outcome.value: self.count(outcome) for outcome in Outcome},
            "results": [result.to_dict() for result in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
