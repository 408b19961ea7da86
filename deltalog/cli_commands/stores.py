"""``deltalog stores``: the installed storage backends, their semantics and the commit lock
``lock="auto"`` picks on each."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deltalog.cli import EXIT_OK, CommandContext, command, one_line

if TYPE_CHECKING:
    from deltalog.logstores.base import StoreSemantics

__all__ = ["default_commit_lock", "stores"]


def default_commit_lock(semantics: StoreSemantics) -> str:
    """The commit lock ``lock="auto"`` uses on a store with these semantics (docs/locks.md)."""
    from deltalog.txn.commit.locks.selection import describe_default_lock

    return describe_default_lock(semantics)


def _store_row(name: str) -> dict[str, Any]:
    from deltalog.logstores.registry import installed_stores

    entry = installed_stores()[name]
    row: dict[str, Any] = {
        "name": name,
        "class": entry.target,
        "distribution": entry.distribution,
        "builtin": entry.builtin,
    }
    try:
        cls = entry.load()
    except Exception as exc:
        row.update(schemes=[], status=f"cannot load: {one_line(exc)}")
        return row
    semantics = cls.default_semantics
    missing = [m for m in cls.requires if importlib.util.find_spec(m.split(".")[0]) is None]
    if missing:
        install = f"pip install 'deltalog[{cls.extra}]'" if cls.extra else f"pip install {missing[0]}"
        status = f"missing {', '.join(missing)}: {install}"
    else:
        status = "ok"
    row.update(
        schemes=[*cls.schemes, *(p + "*" for p in cls.scheme_prefixes)],
        mutual_exclusion=semantics.mutual_exclusion.name,
        partial_write_visible=semantics.partial_write_visible,
        consistent_listing=semantics.consistent_listing,
        commit_lock=default_commit_lock(semantics),
        extra=cls.extra,
        status=status,
    )
    return row


def _schemes_cell(schemes: Sequence[str], shown: int = 6) -> str:
    cell = ", ".join(f"{scheme}://" for scheme in schemes[:shown])
    if len(schemes) > shown:
        cell += f" (+{len(schemes) - shown} more, see --json)"
    return cell


@command("stores", "list the installed storage backends, their semantics and default commit lock")
def stores(ctx: CommandContext) -> int:
    from deltalog.logstores.registry import installed_stores

    rows = [_store_row(name) for name in sorted(installed_stores())]
    if ctx.json:
        ctx.print_json(rows)
        return EXIT_OK
    table = []
    for row in rows:
        if "mutual_exclusion" in row:
            semantics = ", ".join(
                [
                    row["mutual_exclusion"],
                    "partial writes visible" if row["partial_write_visible"] else "atomic",
                    "consistent listing" if row["consistent_listing"] else "eventual listing",
                ]
            )
        else:
            semantics = ""
        schemes = _schemes_cell(row["schemes"])
        origin = "built-in" if row["builtin"] else (row["distribution"] or row["class"])
        table.append([row["name"], schemes, semantics, row.get("commit_lock", ""), origin, row["status"]])
    ctx.print_table(["name", "schemes", "semantics", "commit lock (auto)", "from", "status"], table)
    return EXIT_OK
