"""pytest plugin of the conformance kit (registered through the ``pytest11`` entry point).

Run the kit against any store::

    pytest --pyargs deltalog.conformance --logstore-uri s3://bucket/scratch \\
        --logstore-option AWS_REGION=eu-west-1 [--logstore NAME]

pytest loads this plugin in every run of every project once deltalog is installed, so
it only adds options and fixtures; the fixtures do something only when a test asks for
them, and nothing heavy is imported here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from deltalog.conformance.report import Report
    from deltalog.conformance.result import CheckResult
    from deltalog.conformance.runner import ConformanceRun

__all__ = ["ConformanceSession", "parse_options"]

_SESSIONS = pytest.StashKey["ConformanceSession"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("deltalog-conformance", "deltalog LogStore conformance kit")
    group.addoption(
        "--logstore-uri",
        default=None,
        metavar="URI",
        help="base URI the conformance checks write under (a scratch location)",
    )
    group.addoption(
        "--logstore-option",
        action="append",
        default=[],
        metavar="K=V",
        help="storage option for the store under test (repeatable)",
    )
    group.addoption(
        "--logstore",
        default=None,
        metavar="NAME",
        help="LogStore entry-point name or dotted path (default: chosen by the URI scheme)",
    )


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``["K=V", ...]`` to a dict; a pair without ``=`` is a usage error."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"--logstore-option expects KEY=VALUE, got {key.strip() or pair!r}")
        options[key.strip()] = value
    return options


class ConformanceSession:
    """The store under test, its run directory and the results gathered so far."""

    def __init__(self, run: ConformanceRun, results: list[CheckResult]) -> None:
        self.run = run
        self.results = results

    def check(self, name: str) -> CheckResult:
        from deltalog.conformance.catalog import get_check

        result = self.run.run(get_check(name))
        self.results.append(result)
        return result

    def report(self) -> Report:
        from deltalog.conformance.report import Report

        return Report(self.run.store.describe(), self.run.base_uri, list(self.results))


@pytest.fixture(scope="session")
def deltalog_conformance(request: pytest.FixtureRequest) -> Iterator[ConformanceSession]:
    """The store named by ``--logstore-uri`` in a fresh run directory (removed afterwards)."""
    config = request.config
    uri = config.getoption("--logstore-uri")
    if not uri:
        pytest.fail(
            "the deltalog conformance kit needs a store to test: pass --logstore-uri URI "
            "(and --logstore-option K=V for its storage options)",
            pytrace=False,
        )
    options = parse_options(config.getoption("--logstore-option"))
    from deltalog.conformance.runner import ConformanceRun
    from deltalog.logstores.registry import logstore_for

    store = logstore_for(uri, options, config.getoption("--logstore"))
    session = ConformanceSession(ConformanceRun(store, uri), [])
    config.stash[_SESSIONS] = session
    try:
        yield session
    finally:
        session.run.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    session = config.stash.get(_SESSIONS, None)
    if session is None or not session.results:
        return
    terminalreporter.write_sep("=", "deltalog conformance report")
    terminalreporter.write_line(session.report().to_text())
