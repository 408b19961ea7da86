"""The table's data constraints: ``CHECK`` constraints and column invariants.

A writer that adds data to a table with constraints must make sure every new row
satisfies them (Delta's checkConstraints and invariants writer features). The
transaction engine cannot see the rows, so it refuses a commit that adds data files
(``dataChange=true``) to such a table unless the writer declared it checked them
(:meth:`OptimisticTransaction.mark_constraints_checked`).

- ``CHECK`` constraints: table properties ``delta.constraints.<name> = <SQL expression>``.
- Invariants: a field's metadata ``delta.invariants`` holds
  ``{"expression": {"expression": "<SQL expression>"}}`` (nested fields by their path).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from deltalog.txn.actions import Metadata

__all__ = ["Constraint", "table_constraints"]


@dataclass(frozen=True)
class Constraint:
    """One constraint: a ``CHECK`` constraint or a column invariant."""

    name: str
    expression: str
    kind: str  # "check" or "invariant"
    column: str | None = None


def _fields(data_type: Any, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(data_type, dict) and data_type.get("type") == "struct":
        for f in data_type.get("fields") or []:
            path = f"{prefix}{f.get('name')}"
            yield path, f
            yield from _fields(f.get("type"), path + ".")


def table_constraints(metadata: Metadata) -> list[Constraint]:
    """Every ``CHECK`` constraint and column invariant of the table."""
    found = [
        Constraint(key[len("delta.constraints.") :], value, "check")
        for key, value in sorted(metadata.configuration.items())
        if key.startswith("delta.constraints.")
    ]
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError:
        return found
    for path, f in _fields(schema, ""):
        raw = (f.get("metadata") or {}).get("delta.invariants")
        if raw is None:
            continue
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
            expression = parsed["expression"]["expression"]
        except (ValueError, KeyError, TypeError):
            expression = str(raw)
        found.append(Constraint(f"invariant on {path}", str(expression), "invariant", path))
    return found
