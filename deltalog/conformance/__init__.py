"""The LogStore conformance kit.

Run every check against a store and get a capability report::

    deltalog conformance s3://bucket/scratch --storage-option AWS_REGION=eu-west-1
    pytest --pyargs deltalog.conformance --logstore-uri s3://bucket/scratch

or from Python::

    from deltalog.conformance import run_conformance
    report = run_conformance(store, "s3://bucket/scratch")
    print(report.to_text())

This package is imported by the pytest plugin in every pytest run, so it imports
nothing at module level; the names below load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deltalog.conformance.catalog import CHECKS, check_names, get_check
    from deltalog.conformance.report import Report
    from deltalog.conformance.result import CheckResult, Outcome
    from deltalog.conformance.runner import ConformanceRun, run_conformance

__all__ = [
    "CHECKS",
    "CheckResult",
    "ConformanceRun",
    "Outcome",
    "Report",
    "check_names",
    "get_check",
    "run_conformance",
]

_LAZY = {
    "CHECKS": "deltalog.conformance.catalog",
    "check_names": "deltalog.conformance.catalog",
    "get_check": "deltalog.conformance.catalog",
    "Report": "deltalog.conformance.report",
    "CheckResult": "deltalog.conformance.result",
    "Outcome": "deltalog.conformance.result",
    "ConformanceRun": "deltalog.conformance.runner",
    "run_conformance": "deltalog.conformance.runner",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'deltalog.conformance' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
