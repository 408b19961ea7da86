"""The CHECK constraints and generated columns that read a column (Delta's
``checkDependentExpressions``): ALTER refuses to rename, drop or retype a column one of
them reads, which would leave an expression naming a column the table no longer has (or
evaluating to another type)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, column_paths, parse_expression
from deltalog.txn.protocol.constraints import table_constraints
from deltalog.txn.protocol.generated_columns import GENERATION_EXPRESSION

if TYPE_CHECKING:
    from deltalog.txn.protocol.actions import Metadata

__all__ = ["DependentExpressions", "dependent_expressions"]


@dataclass(frozen=True)
class DependentExpressions:
    """``{name: expression}`` of the CHECK constraints and the generated columns reading a column."""

    check_constraints: dict[str, str]
    generated_columns: dict[str, str]

    def describe(self, column: str) -> str | None:
        """Why ``column`` cannot change, with Delta's error class; None when nothing reads it."""
        if self.check_constraints:
            listed = ", ".join(f"{n!r} ({e})" for n, e in self.check_constraints.items())
            return (
                f"the CHECK constraint(s) {listed} read {column}; drop them first "
                "(Delta's DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE)"
            )
        if self.generated_columns:
            listed = ", ".join(f"{n!r} ({e})" for n, e in self.generated_columns.items())
            return (
                f"the generated column(s) {listed} are computed from {column}; drop them first "
                "(Delta's DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE)"
            )
        return None


def references(expression: str, column: Sequence[str]) -> bool:
    """Whether a SQL expression reads ``column`` (a path), its parent or one of its fields;
    an expression outside deltalog's SQL subset counts when it names the column's first part."""
    wanted = [p.lower() for p in column]
    try:
        paths = column_paths(parse_expression(expression))
    except (UnsupportedConstraintError, ValueError):
        return (
            re.search(rf"(?<![\w`]){re.escape(column[0])}(?![\w`])|`{re.escape(column[0])}`", expression, re.I)
            is not None
        )
    for path in paths:
        parts = [p.lower() for p in path]
        n = min(len(parts), len(wanted))
        if parts[:n] == wanted[:n]:
            return True
    return False


def dependent_expressions(metadata: Metadata, column: Sequence[str]) -> DependentExpressions:
    """The CHECK constraints and generated columns of ``metadata`` that read ``column``
    (a struct path, array/map steps left out)."""
    checks = {
        c.name: c.expression
        for c in table_constraints(metadata)
        if c.kind == "check" and references(c.expression, column)
    }
    generated: dict[str, str] = {}
    for f in json.loads(metadata.schema_string).get("fields") or []:
        expression = (f.get("metadata") or {}).get(GENERATION_EXPRESSION)
        if expression is not None and references(str(expression), column):
            generated[str(f["name"])] = str(expression)
    return DependentExpressions(checks, generated)
