"""``deltalog checkpoint``, ``cleanup``, ``vacuum``, ``optimize``, ``restore``, ``clone``, ``convert``,
``drop-feature``, ``set-properties`` and ``unset-properties``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from deltalog.cli import EXIT_OK, CommandContext, command
from deltalog.cli_commands.arguments import at_least, human_bytes, parse_where, with_arguments
from deltalog.cli_commands.progress import ProgressBar, progress_enabled

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog

__all__ = [
    "checkpoint",
    "cleanup",
    "clone",
    "convert",
    "drop_feature",
    "optimize",
    "restore",
    "set_properties",
    "unset_properties",
    "vacuum",
]


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
        "--lite",
        action="store_true",
        help="find the files in the log's removes instead of listing the table (VACUUM LITE)",
    )
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
            lite=ctx.args.lite,
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
        f"(retention {result.retention_hours:g} hours)" + f", {result.num_dirs} empty director(ies)"
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
        "--target-size",
        type=at_least(1),
        metavar="BYTES",
        help="target file size (default: delta.targetFileSize, else 1 GiB)",
    )
    parser.add_argument(
        "--min-files",
        type=at_least(1),
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
    target.add_argument("--version", type=at_least(0), metavar="N", help="restore to version N")
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


def _clone_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="the new table's location (must be empty)")
    parser.add_argument("--deep", action="store_true", help="copy the data files (default: shallow, point at them)")
    version = parser.add_mutually_exclusive_group()
    version.add_argument("--version", type=at_least(0), metavar="N", help="clone version N (default: the latest)")
    version.add_argument("--timestamp", metavar="TS", help="clone the version current at TS (ISO-8601, UTC)")
    parser.add_argument(
        "--property", action="append", default=[], metavar="KEY=VALUE", help="a table property to set on the clone"
    )
    parser.add_argument(
        "--allow-arbitrary-properties",
        action="store_true",
        help="keep a delta.* property Delta does not know (else refused, as Delta's "
        "spark.databricks.delta.allowArbitraryProperties.enabled=false)",
    )


@command(
    "clone",
    "make a new table of this table's files at one version (a CLONE commit; shallow unless --deep)",
    arguments=with_arguments(_clone_arguments),
)
def clone(ctx: CommandContext) -> int:
    from deltalog.txn.commands.clone import clone as run_clone

    properties = dict(p.split("=", 1) for p in ctx.args.property if "=" in p)
    result = run_clone(
        ctx.delta_log(ctx.args.uri),
        ctx.args.target,
        version=ctx.args.version,
        timestamp=ctx.args.timestamp,
        shallow=not ctx.args.deep,
        properties=properties,
        storage_options=ctx.storage_options,
        lock=ctx.args.lock,
        allow_arbitrary_properties=ctx.args.allow_arbitrary_properties,
    )
    data = {"table": result.target_uri, "version": result.version, "source_version": result.source_version}
    if ctx.json:
        ctx.print_json({**data, "metrics": result.metrics})
    else:
        m = result.metrics
        kind = "deep" if ctx.args.deep else "shallow"
        ctx.print(
            f"{kind} clone of version {result.source_version} at {result.target_uri}: "
            f"{m['sourceNumOfFiles']} file(s), {m['numCopiedFiles']} copied"
        )
    return EXIT_OK


def _convert_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--partition-schema",
        metavar="COLUMNS",
        default="",
        help='the partition columns of the col=value directories, as "day date, region string"',
    )
    parser.add_argument(
        "--no-statistics",
        action="store_true",
        help="record no statistics for the files, not even their row counts (Delta's NO STATISTICS)",
    )


@command(
    "convert",
    "make a directory of Parquet files a Delta table (CONVERT TO DELTA, one commit)",
    arguments=with_arguments(_convert_arguments),
)
def convert(ctx: CommandContext) -> int:
    from deltalog.txn.commands.convert import convert_to_delta

    log = ctx.delta_log(ctx.args.uri)
    version = convert_to_delta(
        log, ctx.args.partition_schema, lock=ctx.args.lock, collect_stats=not ctx.args.no_statistics
    )
    snapshot = log.update()
    if ctx.json:
        ctx.print_json({"table": log.table_uri, "version": version, "num_files": snapshot.num_files})
    else:
        ctx.print(f"converted {snapshot.num_files} Parquet file(s) into a Delta table (version {version})")
    return EXIT_OK


def _drop_feature_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("feature", help="the table feature to drop, e.g. deletionVectors, columnMapping")
    parser.add_argument(
        "--truncate-history",
        action="store_true",
        help="drop a reader+writer feature by truncating the history that uses it (24-hour wait) "
        "instead of protecting checkpoints",
    )


@command(
    "drop-feature",
    "remove a table feature from the protocol (ALTER TABLE ... DROP FEATURE)",
    arguments=with_arguments(_drop_feature_arguments),
)
def drop_feature(ctx: CommandContext) -> int:
    from deltalog.txn.commands.drop_feature import drop_feature as run_drop_feature
    from deltalog.txn.protocol.features import protocol_features

    log = ctx.delta_log(ctx.args.uri)
    feature = ctx.args.feature
    version = run_drop_feature(log, feature, truncate_history=ctx.args.truncate_history, lock=ctx.args.lock)
    protocol = log.update().protocol
    reader, writer = protocol_features(protocol)
    data = {
        "table": log.table_uri,
        "feature": feature,
        "version": version,
        "min_reader_version": protocol.min_reader_version,
        "min_writer_version": protocol.min_writer_version,
        "features": sorted(reader | writer),
    }
    if ctx.json:
        ctx.print_json(data)
    else:
        ctx.print(
            f"dropped {feature} at version {version}; protocol ({protocol.min_reader_version}, "
            f"{protocol.min_writer_version}): {', '.join(data['features']) or 'no features'}"
        )
    return EXIT_OK


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _set_properties_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "properties", nargs="+", type=_property, metavar="KEY=VALUE", help="a table property and its value"
    )
    parser.add_argument(
        "--allow-arbitrary-properties",
        action="store_true",
        help="keep a delta.* property Delta does not know (else refused, as Delta's "
        "spark.databricks.delta.allowArbitraryProperties.enabled=false)",
    )


def _report_properties(ctx: CommandContext, log: DeltaLog, verb: str, version: int) -> None:
    """The version committed and the table's properties after it."""
    properties = dict(log.update().metadata.configuration)
    if ctx.json:
        ctx.print_json({"table": log.table_uri, "version": version, "properties": properties})
        return
    ctx.print(f"{verb} at version {version}; properties:{'' if properties else ' -'}")
    if properties:
        ctx.print_table(["key", "value"], sorted(properties.items()))


@command(
    "set-properties",
    "set table properties (ALTER TABLE ... SET TBLPROPERTIES)",
    arguments=with_arguments(_set_properties_arguments),
)
def set_properties(ctx: CommandContext) -> int:
    from deltalog.txn.commands.alter import set_table_properties
    from deltalog.txn.protocol.properties import CHECK_CONSTRAINT_PREFIX, InvalidPropertyError

    properties = dict(ctx.args.properties)
    if constraints := [k for k in properties if k.lower().startswith(CHECK_CONSTRAINT_PREFIX)]:
        raise InvalidPropertyError(
            f"[DELTA_ADD_CONSTRAINTS] cannot set {', '.join(constraints)}: a new CHECK constraint must be checked "
            "against the table's rows, which the command line does not read. Add it from Spark "
            "(DeltaTable.setProperties, Delta's ALTER TABLE ADD CONSTRAINT); nothing was committed"
        )
    log = ctx.delta_log(ctx.args.uri)
    version = set_table_properties(
        log, properties, lock=ctx.args.lock, allow_arbitrary_properties=ctx.args.allow_arbitrary_properties
    )
    _report_properties(ctx, log, f"set {len(ctx.args.properties)} property(ies)", version)
    return EXIT_OK


def _unset_properties_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("keys", nargs="+", metavar="KEY", help="a table property to remove")
    parser.add_argument(
        "--if-exists", action="store_true", help="ignore a property the table does not have (else an error)"
    )


@command(
    "unset-properties",
    "remove table properties (ALTER TABLE ... UNSET TBLPROPERTIES [IF EXISTS])",
    arguments=with_arguments(_unset_properties_arguments),
)
def unset_properties(ctx: CommandContext) -> int:
    from deltalog.txn.commands.alter import unset_table_properties

    log = ctx.delta_log(ctx.args.uri)
    version = unset_table_properties(log, ctx.args.keys, if_exists=ctx.args.if_exists, lock=ctx.args.lock)
    _report_properties(ctx, log, f"unset {len(ctx.args.keys)} property(ies)", version)
    return EXIT_OK
