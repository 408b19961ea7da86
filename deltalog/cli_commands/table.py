"""``deltalog describe``, ``history`` and ``files``: read-only views of a table."""

from __future__ import annotations

import argparse
import json
from typing import Any

from deltalog.cli import EXIT_OK, CommandContext, command
from deltalog.cli_commands.arguments import at_least, format_ms, human_bytes, with_arguments

__all__ = ["describe", "files", "history"]


def _version_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", type=at_least(0), metavar="N", help="describe version N (time travel)")


def describe_table(snapshot: Any) -> dict[str, Any]:
    """Everything ``deltalog describe`` shows, as plain data."""
    from deltalog.txn.log.checkpoint_lag import checkpoint_lag
    from deltalog.txn.protocol.features import protocol_features

    protocol = snapshot.protocol
    metadata = snapshot.metadata
    reader, writer = protocol_features(protocol)
    return {
        "table": snapshot.table_uri,
        "version": snapshot.version,
        "timestamp": snapshot.timestamp,
        "id": metadata.id,
        "name": metadata.name,
        "description": metadata.description,
        "created_time": metadata.created_time,
        "protocol": {
            "min_reader_version": protocol.min_reader_version,
            "min_writer_version": protocol.min_writer_version,
            "reader_features": sorted(reader),
            "writer_features": sorted(writer),
        },
        "schema": json.loads(metadata.schema_string),
        "partition_columns": list(metadata.partition_columns),
        "properties": dict(metadata.configuration),
        "num_files": snapshot.num_files,
        "size_in_bytes": snapshot.size_in_bytes,
        "checkpoint_version": snapshot.checkpoint_version,
        "checkpoint": checkpoint_lag(snapshot).to_dict(),
        "checkpoint_interval": snapshot.properties.checkpoint_interval,
    }


def _type_text(t: Any) -> str:
    """A column's type in the compact form Spark prints, with Delta's type names
    (``struct<a:integer,b:array<string>>``)."""
    from deltalog.txn.protocol.errors import InvalidSchemaError
    from deltalog.txn.protocol.schema import data_type_from_json

    try:
        return data_type_from_json(t).simple_string()
    except InvalidSchemaError:  # a type deltalog does not know: shown as the log holds it
        return t if isinstance(t, str) else json.dumps(t, separators=(",", ":"))


@command(
    "describe",
    "show a table's version, protocol and features, schema, partitioning, properties and size",
    arguments=with_arguments(_version_argument),
)
def describe(ctx: CommandContext) -> int:
    log = ctx.delta_log(ctx.args.uri)
    snapshot = log.snapshot(ctx.args.version) if ctx.args.version is not None else log.require_table()
    info = describe_table(snapshot)
    if ctx.json:
        ctx.print_json(info)
        return EXIT_OK
    p = info["protocol"]
    ctx.print(f"table:        {info['table']}")
    ctx.print(f"version:      {info['version']} ({format_ms(info['timestamp'])})")
    ctx.print(f"id:           {info['id']}" + (f"  name: {info['name']}" if info["name"] else ""))
    if info["description"]:
        ctx.print(f"description:  {info['description']}")
    ctx.print(f"protocol:     reader {p['min_reader_version']}, writer {p['min_writer_version']}")
    ctx.print(f"  reader features: {', '.join(p['reader_features']) or '-'}")
    ctx.print(f"  writer features: {', '.join(p['writer_features']) or '-'}")
    ctx.print(f"partitioned by: {', '.join(info['partition_columns']) or '-'}")
    size = info["size_in_bytes"]
    ctx.print(f"files:        {info['num_files']} ({human_bytes(size)}, {size} bytes)")
    lag = info["checkpoint"]
    behind = f"{lag['commits_behind']} commits behind"
    where = "no checkpoint yet" if lag["version"] is None else f"last checkpoint at {lag['version']}"
    late = lag["commits_behind"] >= info["checkpoint_interval"]
    ctx.print(
        f"checkpoint:   {where}, {behind}"
        + (f" (checkpointInterval {info['checkpoint_interval']}: overdue; `deltalog checkpoint`)" if late else "")
    )
    ctx.print("")
    ctx.print("schema:")
    rows = [
        [f["name"], _type_text(f["type"]), "yes" if f.get("nullable", True) else "no"]
        for f in info["schema"].get("fields", [])
    ]
    ctx.print_table(["column", "type", "nullable"], rows)
    ctx.print("")
    ctx.print("properties:" if info["properties"] else "properties: -")
    if info["properties"]:
        ctx.print_table(["key", "value"], sorted(info["properties"].items()))
    return EXIT_OK


def _limit_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=at_least(1), metavar="N", help="only the N latest commits")


@command(
    "history",
    "list a table's commits, newest first (operation, parameters, metrics)",
    arguments=with_arguments(_limit_argument),
)
def history(ctx: CommandContext) -> int:
    log = ctx.delta_log(ctx.args.uri)
    records = log.history(ctx.args.limit)
    if ctx.json:
        ctx.print_json([r.to_dict() for r in records])
        return EXIT_OK
    rows = []
    for r in records:
        info = r.commit_info
        params = "" if info is None else json.dumps(info.operation_parameters or {}, separators=(",", ":"))
        rows.append(
            [
                r.version,
                format_ms(r.timestamp),
                r.operation or "",
                "" if info is None or info.read_version is None else info.read_version,
                "" if info is None else (info.isolation_level or ""),
                params if len(params) <= 60 else params[:57] + "...",
            ]
        )
    ctx.print_table(["version", "timestamp", "operation", "read", "isolation", "parameters"], rows)
    return EXIT_OK


@command(
    "files", "list the active data files of a table (or of --version N)", arguments=with_arguments(_version_argument)
)
def files(ctx: CommandContext) -> int:
    log = ctx.delta_log(ctx.args.uri)
    snapshot = log.snapshot(ctx.args.version) if ctx.args.version is not None else log.require_table()
    active = sorted(snapshot.files, key=lambda f: f.path)
    if ctx.json:
        ctx.print_json(
            [
                {
                    "path": f.path,
                    "partition_values": f.partition_values,
                    "size": f.size,
                    "modification_time": f.modification_time,
                    "num_records": f.num_records(),
                    "deletion_vector": None if f.deletion_vector is None else f.deletion_vector.to_dict(),
                }
                for f in active
            ]
        )
        return EXIT_OK
    rows = [
        [
            f.path,
            ",".join(f"{k}={v}" for k, v in sorted(f.partition_values.items())),
            f.size,
            format_ms(f.modification_time),
            "" if f.num_records() is None else f.num_records(),
            "" if f.deletion_vector is None else f.deletion_vector.cardinality,
        ]
        for f in active
    ]
    ctx.print_table(["path", "partition", "size", "modified", "records", "deleted rows"], rows)
    ctx.print(f"{len(active)} files, {snapshot.size_in_bytes} bytes at version {snapshot.version}")
    return EXIT_OK
