"""Overwrite semantics of ``write``."""

from __future__ import annotations

from deltalog.conformance.check import Check, describe_difference, expect
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed
from deltalog.logstores.errors import FileAlreadyExistsError

__all__ = ["CHECKS", "second_write_outcome"]


def overwrite_replaces(ctx: CheckContext) -> str:
    uri = ctx.uri("_last_checkpoint")
    long_first = ["first version " + "x" * 200, "second line"]
    ctx.write(uri, long_first)
    ctx.write(uri, ["second"], overwrite=True)
    got = ctx.read(uri)
    expect(
        got == ["second"],
        "write(overwrite=True) did not replace the whole file: " + describe_difference(["second"], got),
    )
    return "overwrite=True replaces a longer file entirely"


def second_write_outcome(ctx: CheckContext, uri: str) -> tuple[str, list[str]]:
    """Write ``original`` then ``intruder`` with ``overwrite=False``.

    Returns ``("refused" | "overwrote" | "error: ...", content after)``.
    """
    ctx.write(uri, ["original"])
    try:
        ctx.write(uri, ["intruder"], overwrite=False)
    except FileAlreadyExistsError:
        outcome = "refused"
    except Exception as exc:
        outcome = f"error: {type(exc).__name__}: {exc}"
    else:
        outcome = "overwrote"
    return outcome, ctx.read(uri)


def overwrite_false_raises(ctx: CheckContext) -> str:
    uri = ctx.uri("00000000000000000000.json")
    outcome, content = second_write_outcome(ctx, uri)
    if outcome == "overwrote":
        raise CheckFailed(
            "write(overwrite=False) to an existing file succeeded "
            f"(the file now reads {content[:1]!r}); it must raise FileAlreadyExistsError"
        )
    if outcome != "refused":
        raise CheckFailed(
            f"write(overwrite=False) to an existing file raised {outcome[len('error: ') :]} "
            "instead of deltalog.logstores.FileAlreadyExistsError"
        )
    expect(
        content == ["original"],
        f"the refused write changed the file: it now reads {content[:2]!r}",
    )
    return "raises FileAlreadyExistsError (a FileExistsError) and leaves the file intact"


CHECKS = (
    Check("overwrite_replaces", "write(overwrite=True) replaces an existing file", overwrite_replaces),
    Check(
        "overwrite_false_raises",
        "write(overwrite=False) on an existing file raises FileAlreadyExistsError, content intact",
        overwrite_false_raises,
    ),
)
