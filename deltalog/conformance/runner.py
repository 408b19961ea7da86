"""Running checks: each in a fresh directory under one run directory, cleaned up after."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable

from deltalog.conformance.catalog import select_checks
from deltalog.conformance.check import Check
from deltalog.conformance.context import CheckContext, remove_tree
from deltalog.conformance.report import Report
from deltalog.conformance.result import CheckFailed, CheckResult, NotApplicable, Outcome
from deltalog.logstores.base import LogStore

__all__ = ["ConformanceRun", "run_conformance"]

log = logging.getLogger(__name__)


class ConformanceRun:
    """A run directory ``<base_uri>/deltalog-conformance-<id>`` and the checks run in it.

    Use as a context manager, or call :meth:`close` to remove the run directory (and
    ``base_uri`` itself when the run created it and left it empty).
    """

    def __init__(self, store: LogStore, base_uri: str) -> None:
        self.store = store
        self.base_uri = base_uri.rstrip("/")
        self.run_uri = f"{self.base_uri}/deltalog-conformance-{uuid.uuid4().hex[:12]}"
        self._base_existed = self._is_dir(self.base_uri)

    def __enter__(self) -> ConformanceRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, check: Check) -> CheckResult:
        ctx = CheckContext(self.store, f"{self.run_uri}/{check.name}")
        started = time.monotonic()
        try:
            detail = check.run(ctx)
            outcome = Outcome.PASSED
        except CheckFailed as failure:
            outcome, detail = Outcome.FAILED, str(failure)
        except NotApplicable as reason:
            outcome, detail = Outcome.NOT_APPLICABLE, str(reason)
        except Exception as exc:
            log.debug("check %s raised", check.name, exc_info=True)
            outcome, detail = Outcome.FAILED, f"unexpected {type(exc).__name__}: {exc}"
        finally:
            problems = ctx.cleanup()
        if problems and outcome is not Outcome.FAILED:
            outcome, detail = Outcome.FAILED, f"{detail}; but cleanup failed: {problems[0]}"
        return CheckResult(check.name, outcome, detail, time.monotonic() - started)

    def close(self) -> None:
        remove_tree(self.store, self.run_uri)
        if not self._base_existed and self._is_dir(self.base_uri) and self._is_empty(self.base_uri):
            remove_tree(self.store, self.base_uri)

    def _is_dir(self, uri: str) -> bool:
        try:
            import pyarrow.fs as pafs

            fs = self.store.filesystem()
            return bool(fs.get_file_info(self.store.fs_path(uri)).type == pafs.FileType.Directory)
        except Exception:
            return False

    def _is_empty(self, uri: str) -> bool:
        try:
            import pyarrow.fs as pafs

            fs = self.store.filesystem()
            selector = pafs.FileSelector(self.store.fs_path(uri), allow_not_found=True)
            return not fs.get_file_info(selector)
        except Exception:
            return False


def run_conformance(
    store: LogStore,
    base_uri: str,
    checks: Iterable[str] | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> Report:
    """Run the named checks (all by default) against ``store`` under ``base_uri``."""
    selected = select_checks(checks)
    results: list[CheckResult] = []
    with ConformanceRun(store, base_uri) as run:
        for check in selected:
            result = run.run(check)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return Report(store=store.describe(), base_uri=base_uri, results=results)
