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
from deltalog.txn.protocol.errors import SchemaMismatchError
from deltalog.txn.protocol.generated_columns import GENERATION_EXPRESSION
from deltalog.txn.protocol.schema import StructType, parse_schema, type_differences

if TYPE_CHECKING:
    from deltalog.txn.protocol.actions import Metadata

__all__ = ["DependentExpressions", "check_write_types", "dependent_expressions"]


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

    def describe_type_change(self, column: str, table_type: str, data_type: str) -> str | None:
        """Why data of ``data_type`` cannot be written into ``column`` of ``table_type``, with
        Delta's error class; None when nothing reads the column."""
        change = f"column {column} has data type {table_type} and cannot be altered to data type {data_type}"
        if self.check_constraints:
            listed = ", ".join(f"{n!r} ({e})" for n, e in self.check_constraints.items())
            return f"DELTA_CONSTRAINT_DATA_TYPE_MISMATCH: {change}: the CHECK constraint(s) {listed} read it"
        if self.generated_columns:
            listed = ", ".join(f"{n!r} ({e})" for n, e in self.generated_columns.items())
            return f"DELTA_GENERATED_COLUMNS_DATA_TYPE_MISMATCH: {change}: the generated column(s) {listed} read it"
        return None


def check_write_types(metadata: Metadata, data: StructType) -> None:
    """Delta's ``ImplicitMetadataOperation.checkDependentExpressions``, before a write merges
    its schema: a column the data types differently from the table (wider, as ``mergeSchema``
    would widen it, or narrower) must not be read by a CHECK constraint or a generated column.
    Raises :class:`SchemaMismatchError`."""
    for diff in type_differences(parse_schema(metadata.schema_string), data):
        shown = ".".join(diff.path)
        reason = dependent_expressions(metadata, diff.struct_path).describe_type_change(
            shown, diff.table.simple_string(), diff.data.simple_string()
        )
        if reason is not None:
            raise SchemaMismatchError(
                f"{reason}; cast the data to {diff.table.simple_string()}, or drop the constraint or "
                "generated column first; nothing was written"
            )


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
