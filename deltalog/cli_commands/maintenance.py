"""``deltalog checkpoint``, ``cleanup``, ``vacuum``, ``optimize`` and ``restore``."""

from __future__ import annotations

import argparse

from deltalog.cli import EXIT_OK, CommandContext, command
from deltalog.cli_commands.arguments import human_bytes, parse_where, with_arguments
from deltalog.cli_commands.progress import ProgressBar, progress_enabled

__all__ = ["checkpoint", "cleanup", "optimize", "restore", "vacuum"]


def _progress_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress", action="store_true", help="draw the progress bar even when stderr is not a terminal"
    )


def _bar(ctx: CommandContext, label: str) -> ProgressBar:
    forced = bool(getattr(ctx.args, "progress", False))
    return ProgressBar(label, ctx.err, progress_enabled(ctx.err, json_output=ctx.json, forced=forced))


@command("checkpoint", "write a checkpoint of the latest version (and _last_checkpoint)", arguments=with_arguments())
def checkpoint(ctx: CommandContext) -> int:
    log = ctx.delta_log(ctx.args.uri)
    result = log.checkpoint()
    data = {
        "table": log.table_uri,
        "version": result.version,
        "files": list(result.paths),
        "num_actions": result.num_actions,
        "num_add_files": result.num_add_files,
        "size_in_bytes": result.size_in_bytes,
    }
    if ctx.json:
        ctx.print_json(data)
    else:
        ctx.print(
            f"checkpoint of version {result.version}: {len(result.paths)} file(s), {result.num_actions} actions "
            f"({result.num_add_files} add files), {human_bytes(result.size_in_bytes)}"
        )
    return EXIT_OK


@command(
    "cleanup", "delete expired log files (delta.logRetentionDuration, behind a checkpoint)", arguments=with_arguments()
)
def cleanup(ctx: CommandContext) -> int:
    log = ctx.delta_log(ctx.args.uri)
    deleted = log.cleanup_expired_logs()
    if ctx.json:
        ctx.print_json({"table": log.table_uri, "deleted_log_files": deleted})
    else:
        ctx.print(f"deleted {deleted} expired log file(s)")
    return EXIT_OK


def _vacuum_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retain-hours",
        type=float,
        metavar="HOURS",
        help="retention (default: delta.deletedFileRetentionDuration, 168 hours)",
    )
    parser.add_argument("--dry-run", action="store_true", help="list the files that would be deleted")
    parser.add_argument(
        "--no-retention-check",
        action="store_true",
        help="allow a retention below delta.deletedFileRetentionDuration (only when no writer is running)",
    )
    _progress_argument(parser)


@command(
    "vacuum",
    "delete data files no longer referenced by the table and older than the retention",
    arguments=with_arguments(_vacuum_arguments),
)
def vacuum(ctx: CommandContext) -> int:
    from deltalog.txn.commands.vacuum import vacuum as run_vacuum

    log = ctx.delta_log(ctx.args.uri)
    bar = _bar(ctx, "vacuum")
    try:
        result = run_vacuum(
            log,
            ctx.args.retain_hours,
            dry_run=ctx.args.dry_run,
            enforce_retention=not ctx.args.no_retention_check,
            lock=ctx.args.lock,
            progress=bar,
        )
    finally:
        bar.close()
    if ctx.json:
        ctx.print_json(result.to_dict())
        return EXIT_OK
    verb = "would delete" if result.dry_run else "deleted"
    for path in result.files:
        ctx.print(path)
    ctx.print(
        f"{verb} {len(result.files)} file(s), {human_bytes(result.size_in_bytes)} "
        f"(retention {result.retention_hours:g} hours)"
        + ("" if result.dry_run else f", {result.num_dirs} empty director(ies)")
    )
    return EXIT_OK


def _optimize_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="FILTER",
        help='partition filter, e.g. "date >= 2024-01-01" or "p in (a, b)" (repeatable: AND)',
    )
    parser.add_argument(
        "--target-size", type=int, metavar="BYTES", help="target file size (default: delta.targetFileSize, else 1 GiB)"
    )
    parser.add_argument(
        "--min-files",
        type=int,
        default=2,
        metavar="N",
        help="compact a bin only when it has at least N files (default 2)",
    )
    parser.add_argument(
        "--purge",
        action="store_true",
        help="REORG TABLE ... APPLY (PURGE): rewrite the files with deletion vectors without their deleted rows",
    )
    _progress_argument(parser)


@command(
    "optimize",
    "compact small files per partition (bin-packing; dataChange=false)",
    arguments=with_arguments(_optimize_arguments),
)
def optimize(ctx: CommandContext) -> int:
    from deltalog.txn.commands.optimize import optimize as run_optimize

    where = [parse_where(w) for w in ctx.args.where]
    log = ctx.delta_log(ctx.args.uri)
    bar = _bar(ctx, "optimize")
    try:
        result = run_optimize(
            log,
            where or None,
            ctx.args.target_size,
            ctx.args.min_files,
            lock=ctx.args.lock,
            progress=bar,
            purge=ctx.args.purge,
        )
    finally:
        bar.close()
    if ctx.json:
        ctx.print_json(result.to_dict())
    elif result.version is None:
        ctx.print("nothing to compact")
    else:
        ctx.print(
            f"version {result.version}: {result.num_files_removed} files ({human_bytes(result.bytes_removed)}) "
            f"compacted into {result.num_files_added} ({human_bytes(result.bytes_added)}) "
            f"in {result.partitions_optimized} partition(s)"
        )
    return EXIT_OK


def _restore_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--version", type=int, metavar="N", help="restore to version N")
    target.add_argument("--timestamp", metavar="TS", help="restore to the version current at TS (ISO-8601, UTC)")


@command(
    "restore",
    "set the table back to an earlier version (a new RESTORE commit)",
    arguments=with_arguments(_restore_arguments),
)
def restore(ctx: CommandContext) -> int:
    from deltalog.txn.commands.restore import restore as run_restore

    log = ctx.delta_log(ctx.args.uri)
    result = run_restore(log, version=ctx.args.version, timestamp=ctx.args.timestamp, lock=ctx.args.lock)
    if ctx.json:
        ctx.print_json(result.to_dict())
    else:
        m = result.metrics
        ctx.print(
            f"restored version {result.restored_version} as version {result.version}: "
            f"{m['numRestoredFiles']} file(s) restored, {m['numRemovedFiles']} removed; "
            f"{m['numOfFilesAfterRestore']} files now"
        )
    return EXIT_OK
