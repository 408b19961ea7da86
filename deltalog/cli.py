"""The ``deltalog`` command line.

Every subcommand is one function registered with :func:`command`; it receives a
:class:`CommandContext` (parsed arguments, storage options, output helpers) and returns
the exit status. To add one::

    @command("describe", "show a table's protocol, metadata and size", arguments=_uri_argument)
    def describe(ctx: CommandContext) -> int:
        log = ctx.delta_log(ctx.args.uri)
        ...
        return 0

Every subcommand accepts the global options ``--storage-option K=V`` (repeatable),
``--logstore NAME``, ``--json`` and ``--debug``. Errors print one line to stderr and
exit non-zero; ``--debug`` adds the traceback. Secret option values are never printed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from deltalog.errors import DeltaError
from deltalog.logstores.options import StorageOptions, redact

if TYPE_CHECKING:
    from deltalog.logstores.base import LogStore
    from deltalog.txn.delta_log import DeltaLog

__all__ = [
    "Command",
    "CommandContext",
    "build_parser",
    "command",
    "format_table",
    "main",
    "one_line",
]

log = logging.getLogger("deltalog.cli")

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Modules whose import registers more subcommands (for commands kept outside this file).
COMMAND_MODULES: tuple[str, ...] = (
    "deltalog.cli_commands.table",
    "deltalog.cli_commands.maintenance",
    "deltalog.cli_commands.stores",
    "deltalog.cli_commands.conformance",
)


# -- the frame ------------------------------------------------------------------------


@dataclass
class CommandContext:
    """What a subcommand gets: its arguments, the global options and output helpers."""

    args: argparse.Namespace
    storage_options: StorageOptions
    logstore: str | None = None
    json: bool = False
    debug: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)

    def redact(self, text: str) -> str:
        """``text`` with every secret storage-option value replaced."""
        return redact(text, self.storage_options)

    def print(self, text: str = "") -> None:
        self.out.write(self.redact(text) + "\n")

    def print_json(self, data: Any) -> None:
        self.print(json.dumps(data, indent=2, ensure_ascii=False, default=str))

    def print_table(self, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        self.print(format_table(headers, rows))

    def progress(self, text: str) -> None:
        """A progress line on stderr, only when stderr is a terminal and output is not JSON."""
        if not self.json and self.err.isatty():
            self.err.write(self.redact(text) + "\n")
            self.err.flush()

    def open_store(self, uri: str) -> LogStore:
        """The LogStore for ``uri`` with the global ``--storage-option``/``--logstore``."""
        from deltalog.logstores.registry import logstore_for

        return logstore_for(uri, self.storage_options, self.logstore)

    def delta_log(self, uri: str) -> DeltaLog:
        """The :class:`~deltalog.txn.delta_log.DeltaLog` of the table at ``uri``."""
        from deltalog.txn.delta_log import DeltaLog

        return DeltaLog.for_table(uri, self.storage_options, self.logstore)


CommandFunction = Callable[[CommandContext], int]
ArgumentsFunction = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: CommandFunction
    arguments: ArgumentsFunction | None = None


_COMMANDS: dict[str, Command] = {}


def command(
    name: str, help: str, *, arguments: ArgumentsFunction | None = None
) -> Callable[[CommandFunction], CommandFunction]:
    """Register the decorated function as the subcommand ``name``."""

    def register(function: CommandFunction) -> CommandFunction:
        if name in _COMMANDS and _COMMANDS[name].run is not function:
            raise ValueError(f"the deltalog subcommand {name!r} is registered twice")
        _COMMANDS[name] = Command(name, help, function, arguments)
        return function

    return register


def _storage_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        # Never echo the argument: it may be a secret typed without its key.
        raise argparse.ArgumentTypeError("expected KEY=VALUE (the argument has no key, or no '=')")
    return key.strip(), value


def _global_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("global options")
    group.add_argument(
        "--storage-option",
        dest="storage_options",
        action="append",
        type=_storage_option,
        default=[],
        metavar="KEY=VALUE",
        help="storage option for the backend, e.g. AWS_REGION=eu-west-1 (repeatable)",
    )
    group.add_argument(
        "--logstore", metavar="NAME", help="LogStore entry-point name or dotted path (default: by URI scheme)"
    )
    group.add_argument("--json", action="store_true", help="print machine-readable JSON")
    group.add_argument("--debug", action="store_true", help="debug logging, and tracebacks on errors")
    return common


def build_parser() -> argparse.ArgumentParser:
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    from deltalog import __version__

    parser = argparse.ArgumentParser(
        prog="deltalog",
        description="Inspect and maintain Delta tables, and check storage backends.",
    )
    parser.add_argument("--version", action="version", version=f"deltalog {__version__}")
    common = _global_options()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in _COMMANDS.values():
        sub_parser = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help, parents=[common])
        if cmd.arguments is not None:
            cmd.arguments(sub_parser)
    return parser


def one_line(exc: BaseException) -> str:
    """An error as the one line the CLI prints: a deltalog error's message, else ``Type: message``."""
    text = " ".join(str(exc).split())
    if isinstance(exc, DeltaError) and text:
        return text
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    options = StorageOptions(dict(args.storage_options))
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    ctx = CommandContext(args, options, logstore=args.logstore, json=args.json, debug=args.debug)
    try:
        return _COMMANDS[args.command].run(ctx)
    except KeyboardInterrupt:
        sys.stderr.write(f"deltalog {args.command}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (``deltalog files ... | head``): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        if args.debug:
            sys.stderr.write(ctx.redact(traceback.format_exc()))
        message = ctx.redact(one_line(exc))
        hint = "" if args.debug or isinstance(exc, DeltaError) else " (run with --debug for the traceback)"
        sys.stderr.write(f"deltalog {args.command}: error: {message}{hint}\n")
        return EXIT_FAILURE


# -- output helpers -------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table, columns left-aligned and separated by two spaces."""
    cells = [[str(h) for h in headers], *([("" if v is None else str(v)) for v in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


if __name__ == "__main__":
    # Run the imported module's main: ``python -m deltalog.cli`` executes this file as
    # ``__main__``, but the command modules register with ``deltalog.cli``.
    from deltalog.cli import main as _main

    sys.exit(_main())
