"""Atomic visibility: a reader sees a log file whole or not at all."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from deltalog.conformance.check import Check
from deltalog.conformance.checks.roundtrip import big_lines
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable
from deltalog.txn.protocol.file_names import delta_file

__all__ = ["CHECKS"]

FILES = 3
MEBIBYTES = 8


def _needs_invisible_partial_writes(ctx: CheckContext) -> None:
    if ctx.store.semantics.partial_write_visible:
        raise NotApplicable(
            "the store declares partial writes visible, so the engine writes through a temp "
            "file and rename and takes an in-process commit lock"
        )


def _slowly(lines: list[str]) -> Iterator[str]:
    """Hand the lines over with short pauses, so a streaming writer is caught mid-file."""
    for index, line in enumerate(lines):
        if index % 512 == 0:
            time.sleep(0.002)
        yield line


def atomic_visibility(ctx: CheckContext) -> str:
    _needs_invisible_partial_writes(ctx)
    store = ctx.store
    polls = 0
    seen_whole = 0
    for file_no in range(FILES):
        lines = big_lines(MEBIBYTES, tag=f"file{file_no}")
        size = sum(len(line.encode("utf-8")) + 1 for line in lines)
        uri = ctx.uri(delta_file(file_no))
        failure: list[BaseException] = []

        def write(uri: str = uri, lines: list[str] = lines, failure: list[BaseException] = failure) -> None:
            try:
                store.write(uri, _slowly(lines))
            except BaseException as exc:
                failure.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        done = False
        while not done:
            done = not writer.is_alive()  # one last look after the writer has finished
            polls += 1
            for status in store.list_from(uri):
                if status.name == uri.rsplit("/", 1)[-1] and status.size != size:
                    raise CheckFailed(
                        f"a listing showed {status.name} with {status.size} of its {size} bytes "
                        "while it was being written"
                    )
            try:
                got = list(store.read(uri))
            except FileNotFoundError:
                continue
            if got != lines:
                raise CheckFailed(
                    f"a reader saw a partial file: {len(got)} of {len(lines)} lines while it was being written"
                )
            seen_whole += 1
        writer.join()
        if failure:
            raise CheckFailed(f"writing {MEBIBYTES} MiB failed: {type(failure[0]).__name__}: {failure[0]}")
    if seen_whole < FILES:
        raise CheckFailed(f"only {seen_whole} of {FILES} files were readable after their write returned")
    return f"{polls} reads and listings during {FILES} writes of {MEBIBYTES} MiB never saw a partial file"


class _WriterCrashed(Exception):
    pass


def _crashing(lines: list[str], after: int) -> Iterator[str]:
    for index, line in enumerate(lines):
        if index == after:
            raise _WriterCrashed("the writer died halfway")
        yield line


def aborted_write_invisible(ctx: CheckContext) -> str:
    _needs_invisible_partial_writes(ctx)
    uri = ctx.uri("00000000000000000000.json")
    lines = big_lines(2)
    try:
        ctx.write(uri, _crashing(lines, after=len(lines) // 2))
    except _WriterCrashed:
        pass
    except Exception as exc:
        raise CheckFailed(
            f"a failing line iterator surfaced as {type(exc).__name__}: {exc}; the caller's "
            "exception should propagate unchanged"
        ) from None
    else:
        raise CheckFailed("write() returned normally although its lines raised an exception")
    try:
        got = ctx.read(uri)
    except FileNotFoundError:
        pass
    else:
        raise CheckFailed(f"a write that failed halfway left a visible file of {len(got)} lines")
    names = ctx.list_names(uri)
    target = uri.rsplit("/", 1)[-1]
    if target in names:
        raise CheckFailed(f"a write that failed halfway left {target} in the listing")
    ctx.write(uri, ["after the crash"])
    return "a write whose lines raise halfway leaves no file; the name stays free"


def checkpoint_stream_invisible(ctx: CheckContext) -> str:
    """Where the store declares its file writes atomic (an object store's PUT), the engine
    writes a checkpoint in place through :meth:`LogStore.open_output_stream`, with no temp
    name: until the stream closes, no reader may list or read it."""
    store = ctx.store
    name = "00000000000000000020.checkpoint.parquet"
    uri = ctx.uri(name)
    if store.needs_temp_file_for(uri):
        raise NotApplicable(
            "the engine writes checkpoints through a temp name and a rename on this store "
            "(partial writes declared visible, or atomic_file_writes is false)"
        )
    ctx.write(ctx.uri(delta_file(20)), ['{"commitInfo":{}}'])
    chunk = b"PAR1" + bytes(MEBIBYTES * 1024 * 128 - 4)
    stream = store.open_output_stream(uri)
    try:
        for _ in range(8):
            stream.write(chunk)
            stream.flush()
            if name in ctx.list_names(ctx.uri("00000000000000000020")):
                raise CheckFailed(f"a listing showed {name} while it was being written through open_output_stream")
            try:
                seen = store.read_bytes(uri)
            except FileNotFoundError:
                continue
            raise CheckFailed(f"read_bytes returned {len(seen)} bytes of {name} while it was being written")
    finally:
        stream.close()
    size = 8 * len(chunk)
    listed = {s.name: s.size for s in store.list_from(ctx.uri("00000000000000000020"))}
    if listed.get(name) != size:
        raise CheckFailed(f"after its stream closed, {name} was listed as {listed.get(name)} bytes, not {size}")
    return f"a {size // 1024 // 1024} MiB file written through open_output_stream appeared only when it was closed"


CHECKS = (
    Check(
        "atomic_visibility",
        "a reader polling while an 8 MiB file is written never sees part of it",
        atomic_visibility,
    ),
    Check(
        "aborted_write_invisible",
        "a write that fails halfway leaves no file behind and the name stays free",
        aborted_write_invisible,
    ),
    Check(
        "checkpoint_stream_invisible",
        "a checkpoint written in place (open_output_stream) is not listed or read until it is closed",
        checkpoint_stream_invisible,
    ),
)
