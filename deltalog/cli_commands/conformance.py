"""``deltalog conformance``: run the LogStore conformance kit against a location."""

from __future__ import annotations

import argparse

from deltalog.cli import EXIT_FAILURE, EXIT_OK, CommandContext, command

__all__ = ["conformance"]


def _conformance_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("uri", help="a scratch location the checks may write under (cleaned up afterwards)")
    parser.add_argument("--check", action="append", default=[], metavar="NAME", help="run only this check (repeatable)")


@command(
    "conformance",
    "run the LogStore conformance kit against URI and print the capability report",
    arguments=_conformance_arguments,
)
def conformance(ctx: CommandContext) -> int:
    from deltalog.conformance.catalog import select_checks
    from deltalog.conformance.result import CheckResult
    from deltalog.conformance.runner import run_conformance

    uri: str = ctx.args.uri
    checks = [check.name for check in select_checks(ctx.args.check)]
    store = ctx.open_store(uri)
    done = 0

    def show(result: CheckResult) -> None:
        nonlocal done
        done += 1
        ctx.progress(f"[{done}/{len(checks)}] {result.check}: {result.outcome.value}")

    report = run_conformance(store, uri, checks, on_result=show)
    if ctx.json:
        ctx.print(report.to_json())
    else:
        ctx.print(report.to_text())
    return EXIT_OK if report.ok else EXIT_FAILURE
