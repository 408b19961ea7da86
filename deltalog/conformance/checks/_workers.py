"""Code that runs in the writer processes of ``put_if_absent_processes``.

It lives in its own small module because "spawn" imports it afresh in each child.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from deltalog.logstores.base import LogStoreSpec
from deltalog.logstores.errors import FileAlreadyExistsError

__all__ = ["contention_worker", "marker_lines", "writer_lines"]

PAYLOAD_LINES = 200


def writer_lines(writer: int, round_no: int) -> list[str]:
    """The content writer ``writer`` tries to create in round ``round_no`` (~20 KiB)."""
    head = f'{{"writer":{writer},"round":{round_no}}}'
    return [head] + [f"{writer}:{round_no}:{k}:" + "w" * 96 for k in range(PAYLOAD_LINES)]


def marker_lines() -> list[str]:
    return ['{"deltalog-conformance":"marker"}']


def contention_worker(
    spec: LogStoreSpec,
    marker_uri: str,
    uris: Sequence[str],
    index: int,
    barrier: threading.Barrier,
    go: Any,
    proceed: Any,
    results: Any,
    wait_seconds: float,
) -> None:
    """Report whether the marker is visible, then race on each of ``uris``.

    Puts ``(index, -1, "visible" | "isolated" | "error: ...")`` and then
    ``(index, round, "won" | "lost" | "error: ...")`` on ``results``.
    """
    try:
        store = spec.build()
        seen = list(store.read(marker_uri))
        probe = "visible" if seen == marker_lines() else f"error: the marker reads {seen[:1]!r}"
    except FileNotFoundError:
        probe = "isolated"
    except Exception as exc:
        probe = f"error: {type(exc).__name__}: {exc}"
    results.put((index, -1, probe))
    if probe != "visible" or not go.wait(wait_seconds) or not proceed.value:
        return
    for round_no, uri in enumerate(uris):
        try:
            barrier.wait(timeout=wait_seconds)
            store.write(uri, writer_lines(index, round_no), overwrite=False)
            outcome = "won"
        except FileAlreadyExistsError:
            outcome = "lost"
        except Exception as exc:
            outcome = f"error: {type(exc).__name__}: {exc}"
        results.put((index, round_no, outcome))
