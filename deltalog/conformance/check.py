"""A conformance check: a name, what it proves, and the function that proves it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable

__all__ = ["Check", "describe_difference", "expect", "operation"]


@dataclass(frozen=True)
class Check:
    """``run(ctx)`` returns the detail of a pass, raises :class:`CheckFailed` or
    :class:`~deltalog.conformance.result.NotApplicable`."""

    name: str
    proves: str
    run: Callable[[CheckContext], str]


def expect(condition: bool, detail: str) -> None:
    """Fail the check with ``detail`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(detail)


@contextmanager
def operation(what: str) -> Iterator[None]:
    """Name what the block does: an error it raises fails the check with the operation
    and what the store answered (``writing the checkpoint of version 3: OSError: ...``)."""
    try:
        yield
    except (CheckFailed, NotApplicable):
        raise
    except Exception as exc:
        raise CheckFailed(f"{what}: the store answered {type(exc).__name__}: {_one_line(exc)}") from exc


def _one_line(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_difference(expected: Sequence[str], got: Sequence[str]) -> str:
    """A one-line account of how two lists of lines differ."""
    for index, (want, have) in enumerate(zip(expected, got)):
        if want != have:
            return f"line {index} differs: expected {_short(want)}, read {_short(have)}"
    if len(expected) != len(got):
        return f"expected {len(expected)} lines, read {len(got)}"
    return "identical"
