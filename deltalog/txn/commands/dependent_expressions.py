"""The CHECK constraints and generated columns that read a column (Delta's
``checkDependentExpressions``): ALTER refuses to rename, drop or retype a column one of
them reads, which would leave an expression naming a column the table no longer has (or
evaluating to another type)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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

    @property
    def error_class(self) -> str | None:
        """Delta's error class for changing the column; None when nothing reads it."""
        if self.check_constraints:
            return "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE"
        return "DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE" if self.generated_columns else None

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
        reason = dependent_expressions(metadata, diff.path).describe_type_change(
            shown, diff.table.simple_string(), diff.data.simple_string()
        )
        if reason is not None:
            raise SchemaMismatchError(
                f"{reason}; cast the data to {diff.table.simple_string()}, or drop the constraint or "
                "generated column first; nothing was written"
            )


# Spark SQL tokens, enough to find the column references of any expression: literals are
# skipped whole, so a name inside a string never counts; a run of word characters is a name
# when it names a column (Spark's identifiers may start with a digit: `1st`), a number else
_TOKEN = re.compile(
    r"""\s+
    | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<quoted>`(?:[^`]|``)*`)
    | (?P<ident>\w+)
    | (?P<op>.)""",
    re.VERBOSE | re.DOTALL,
)


def _tokens(expression: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of each token; a backquoted name is an ``ident`` without its quotes."""
    out = []
    for m in _TOKEN.finditer(expression):
        kind = m.lastgroup
        if kind == "quoted":
            out.append(("ident", m.group(kind)[1:-1].replace("``", "`")))
        elif kind is not None:
            out.append((kind, m.group(kind)))
    return out


def _field(t: Any, name: str) -> dict[str, Any] | None:
    if not (isinstance(t, dict) and t.get("type") == "struct"):
        return None
    return next((f for f in t.get("fields") or [] if f["name"].lower() == name.lower()), None)


def _closing(tokens: Sequence[tuple[str, str]], i: int) -> int:
    """The index of the ``]`` closing the ``[`` at ``i`` (the end when there is none)."""
    depth = 0
    for j in range(i, len(tokens)):
        text = tokens[j][1] if tokens[j][0] == "op" else ""
        depth += {"[": 1, "]": -1}.get(text, 0)
        if depth == 0:
            return j
    return len(tokens)


def _kind(t: Any) -> str | None:
    return str(t.get("type")) if isinstance(t, dict) else None


def _dot(t: Any, name: str) -> tuple[tuple[str, ...], Any]:
    """``.name`` after a value of type ``t``: a struct's field, or the field of an array's
    struct elements (Spark's ``GetArrayStructFields``); ``()`` when it is neither."""
    f = _field(t, name)
    if f is not None:
        return (f["name"],), f["type"]
    f = _field(t["elementType"], name) if _kind(t) == "array" else None
    return (("element", f["name"]), f["type"]) if f is not None else ((), None)


def _chain(tokens: Sequence[tuple[str, str]], i: int, top: dict[str, Any]) -> list[tuple[str, ...]]:
    """The column paths the reference starting at ``i`` reads, resolved against the schema as
    Delta's ``collectUsedColumns``: ``.f`` a struct field (an array of structs' ``element.f``),
    ``[i]`` an array's ``element``, ``[k]`` a map's ``value`` (its ``key`` read too)."""
    path: tuple[str, ...] = (top["name"],)
    t: Any = top["type"]
    out: list[tuple[str, ...]] = []
    i += 1
    while i < len(tokens):
        if tokens[i] == ("op", ".") and i + 1 < len(tokens) and tokens[i + 1][0] == "ident":
            steps, t = _dot(t, tokens[i + 1][1])
            i += 2
        elif tokens[i] == ("op", "[") and _kind(t) in ("array", "map"):
            if _kind(t) == "map":
                out.append((*path, "key"))
            steps, t = (("element",), t["elementType"]) if _kind(t) == "array" else (("value",), t["valueType"])
            i = _closing(tokens, i) + 1
        else:
            break
        if not steps:
            break
        path = (*path, *steps)
    return [*out, path]


def expression_columns(expression: str, schema: dict[str, Any]) -> list[tuple[str, ...]]:
    """The column paths an expression (any Spark SQL, not only deltalog's evaluable subset)
    reads, as Delta's ``containsDependentExpression`` collects them from the analyzed
    expression: every name that resolves to a top-level column (in any case; not a function's
    name nor a field after a dot), extended through the struct fields, array subscripts and map
    lookups that follow it."""
    tokens = _tokens(expression)
    out: list[tuple[str, ...]] = []
    for i, (kind, text) in enumerate(tokens):
        after_dot = i > 0 and tokens[i - 1] == ("op", ".")
        called = i + 1 < len(tokens) and tokens[i + 1] == ("op", "(")
        top = _field(schema, text) if kind == "ident" and not after_dot and not called else None
        if top is not None:
            out += [p for p in _chain(tokens, i, top) if p not in out]
    return out


def references(expression: str, column: Sequence[str], schema: dict[str, Any]) -> bool:
    """Whether a SQL expression reads ``column`` (a path with ``element``/``key``/``value``
    steps), a field of it or the struct, array or map holding it: Delta's V2 check, where one
    path is a prefix of the other (names in any case)."""
    wanted = [p.lower() for p in column]
    return any(
        all(a.lower() == b for a, b in zip(path, wanted, strict=False))
        for path in expression_columns(expression, schema)
    )


def dependent_expressions(metadata: Metadata, column: Sequence[str]) -> DependentExpressions:
    """The CHECK constraints and generated columns of ``metadata`` that read ``column``
    (a path with ``element``/``key``/``value`` steps into arrays and maps)."""
    schema = json.loads(metadata.schema_string)
    checks = {
        c.name: c.expression
        for c in table_constraints(metadata)
        if c.kind == "check" and references(c.expression, column, schema)
    }
    generated: dict[str, str] = {}
    for f in schema.get("fields") or []:
        expression = (f.get("metadata") or {}).get(GENERATION_EXPRESSION)
        if expression is not None and references(str(expression), column, schema):
            generated[str(f["name"])] = str(expression)
    return DependentExpressions(checks, generated)
