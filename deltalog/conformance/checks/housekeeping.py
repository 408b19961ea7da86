"""Missing files, deletes, path resolution and checksum files."""

from __future__ import annotations

from deltalog.conformance.check import Check, expect
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed
from deltalog.logstores.base import split_uri
from deltalog.logstores.errors import FileAlreadyExistsError

__all__ = ["CHECKS"]


def read_missing_file(ctx: CheckContext) -> str:
    uri = ctx.uri("00000000000000000007.json")
    try:
        got = ctx.read(uri)
    except FileNotFoundError:
        return "reading a missing file raises FileNotFoundError"
    except Exception as exc:
        raise CheckFailed(
            f"reading a missing file raised {type(exc).__name__}: {exc}; it must raise FileNotFoundError"
        ) from None
    raise CheckFailed(f"reading a missing file returned {got!r} instead of raising FileNotFoundError")


def delete_files(ctx: CheckContext) -> str:
    uri = ctx.uri("00000000000000000000.json")
    ctx.write(uri, ["doomed"])
    ctx.store.delete(uri)
    try:
        got = ctx.read(uri)
    except FileNotFoundError:
        pass
    else:
        raise CheckFailed(f"a deleted file still reads as {got!r}")
    listed = ctx.list_names(uri)
    expect(uri.rsplit("/", 1)[-1] not in listed, "a deleted file is still listed")
    try:
        ctx.store.delete(uri)
        ctx.store.delete(ctx.uri("no-such-directory", "00000000000000000000.json"))
    except Exception as exc:
        raise CheckFailed(f"deleting a missing file raised {type(exc).__name__}: {exc}") from None
    ctx.write(uri, ["reborn"])
    expect(ctx.read(uri) == ["reborn"], "a deleted name cannot be written again")
    return "delete removes the file and frees the name; deleting a missing file is not an error"


def resolve_path_idempotent(ctx: CheckContext) -> str:
    uri = ctx.uri("00000000000000000000.json")
    resolved = ctx.store.resolve_path(uri)
    expect(bool(split_uri(resolved)[0]), f"resolve_path({uri!r}) = {resolved!r} has no URI scheme")
    again = ctx.store.resolve_path(resolved)
    expect(again == resolved, f"resolve_path is not idempotent: {resolved!r} -> {again!r}")
    ctx.write(uri, ["via the given path"])
    expect(ctx.read(resolved) == ["via the given path"], "the resolved path does not read the same file")
    statuses = [s for s in ctx.store.list_from(resolved) if s.name == uri.rsplit("/", 1)[-1]]
    expect(len(statuses) == 1, f"list_from(resolved path) did not list the file: {statuses}")
    listed = ctx.store.resolve_path(statuses[0].path)
    expect(listed == resolved, f"the listed path resolves to {listed!r}, not {resolved!r}")
    return f"resolve_path gives {split_uri(resolved)[0]}://... and is idempotent; both forms name one file"


def checksum_files(ctx: CheckContext) -> str:
    """``write_auxiliary``, which the engine writes ``N.crc`` with after each commit."""
    uri = ctx.uri("00000000000000000003.crc")
    ctx.store.write_auxiliary(uri, ['{"numFiles":1}'])
    expect(ctx.read(uri) == ['{"numFiles":1}'], f"write_auxiliary wrote {ctx.read(uri)!r}")
    try:
        ctx.store.write_auxiliary(uri, ['{"numFiles":2}'])
    except FileAlreadyExistsError:
        pass
    except Exception as exc:
        raise CheckFailed(
            f"a second write_auxiliary of an existing file raised {type(exc).__name__}: {exc} "
            "instead of FileAlreadyExistsError"
        ) from None
    else:
        raise CheckFailed("write_auxiliary overwrote an existing checksum file; it must never overwrite")
    expect(ctx.read(uri) == ['{"numFiles":1}'], f"the refused write changed the file: {ctx.read(uri)!r}")
    return "write_auxiliary writes a checksum file and never overwrites one"


CHECKS = (
    Check("read_missing_file", "reading a missing file raises FileNotFoundError", read_missing_file),
    Check("delete_files", "delete removes a file; deleting a missing file is not an error", delete_files),
    Check("resolve_path_idempotent", "resolve_path is fully qualified and idempotent", resolve_path_idempotent),
    Check("checksum_files", "write_auxiliary (N.crc) writes and never overwrites", checksum_files),
)
