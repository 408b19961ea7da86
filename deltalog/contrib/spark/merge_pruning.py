"""Which target files a MERGE can touch: terms implied by the merge condition.

The condition (SQL text) is read as a conjunction. A conjunct ``t.c = s.k`` (target column
``c``, source column ``k`` of the same type) gives the target the source's value range,
``c >= min(k) AND c <= max(k)``, or ``c IN (distinct k)`` on a partition column with few
values; a conjunct ``t.c <op> literal`` is a term as it stands. Any other conjunct (OR,
functions, casts, ...) is left out, which only keeps more files. A group holding ``OR``,
``BETWEEN`` or ``CASE`` at its top level is left out whole, so an ``AND`` inside them is
never taken for a conjunction. A target row outside these terms satisfies no term, so it
matches no source row; the terms feed :func:`deltalog.contrib.spark.scan.plan_files`.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.predicates import INTEGRAL_TYPES, numeric_literal, tokenize, unescape_sql_string
from deltalog.contrib.spark.scan import Term
from deltalog.txn.protocol.schema import split_column_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["ConditionTerms", "condition_terms", "source_range_terms"]

_RANGE_TYPES = ("byte", "short", "integer", "long", "float", "double", "string", "date")
_OPAQUE_WORDS = ("or", "between", "case", "when")
_FLIP = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
MAX_IN_VALUES = 100


@dataclass
class ConditionTerms:
    literal_terms: list[Term]  # target column <op> literal
    key_pairs: list[tuple[str, str]]  # (target column, source column) joined by equality


def _split(tokens: list[tuple[str, str]], word: str) -> list[list[tuple[str, str]]] | None:
    """Split at top-level ``word``; None when a top-level OR/BETWEEN/CASE makes the group opaque."""
    parts: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for kind, value in tokens:
        if value == "(":
            depth += 1
        elif value == ")":
            depth -= 1
        if depth == 0 and kind == "ident" and value.lower() in _OPAQUE_WORDS:
            return None
        if depth == 0 and kind == "ident" and value.lower() == word:
            parts.append([])
        else:
            parts[-1].append((kind, value))
    return parts


def _wrapped(tokens: list[tuple[str, str]]) -> bool:
    if len(tokens) < 2 or tokens[0][1] != "(" or tokens[-1][1] != ")":
        return False
    depth = 0
    for i, (_, value) in enumerate(tokens):
        depth += value == "("
        depth -= value == ")"
        if depth == 0 and i < len(tokens) - 1:
            return False
    return True


def _conjuncts(tokens: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    while _wrapped(tokens):
        tokens = tokens[1:-1]
    parts = _split(tokens, "and")
    if parts is None:
        return []
    if len(parts) == 1:
        return parts
    return [c for p in parts for c in _conjuncts(p)]


def _literal(kind: str, value: str) -> tuple[bool, Any]:
    if kind == "str":  # as Spark's parser reads it: r"'a\\b'" is a, one backslash, b
        return True, unescape_sql_string(value)
    if kind == "num":
        return True, numeric_literal(value)
    return False, None


def _typed_literal(kind: str, value: Any, type_name: str) -> Any:
    """The literal as a value of the column's type, or None when Spark would cast the column."""
    whole = isinstance(value, decimal.Decimal) and value == value.to_integral_value()
    if type_name in INTEGRAL_TYPES and (isinstance(value, int) or whole):
        return int(value)  # 5.0 is 5; 1.5 compares the column as a decimal: no partition filter
    if type_name.startswith("decimal") and isinstance(value, (int, decimal.Decimal)):
        return value  # Spark compares a decimal literal exactly
    if type_name in ("float", "double") and kind == "num":
        return float(value)
    if type_name == "string" and kind == "str":
        return value
    if type_name == "date" and kind == "str":
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return None
    return None


def condition_terms(
    condition: Any,
    target_alias: str | None,
    target_types: Mapping[str, str],
    source_columns: Sequence[str],
) -> ConditionTerms:
    """The terms of a merge condition usable for pruning (none for a Column condition)."""
    out = ConditionTerms([], [])
    if not isinstance(condition, str):
        return out
    try:
        tokens = tokenize(condition)
    except DeltaAnalysisError:
        return out
    target_cols = {c.lower(): c for c in target_types}
    source_cols = {c.lower(): c for c in source_columns}
    alias = (target_alias or "").lower()

    def side(ident: str) -> tuple[str, str] | None:
        """("t" | "s", column) of an identifier, None when not a plain top-level column."""
        parts = split_column_name(ident)  # `t.x` is one name, not alias t and column x
        if len(parts) == 2:
            qualifier, name = parts[0].lower(), parts[1].lower()
            if qualifier == alias:
                return ("t", target_cols[name]) if name in target_cols else None
            return ("s", source_cols[name]) if name in source_cols else None
        if len(parts) == 1:
            name = parts[0].lower()
            if name in target_cols and name not in source_cols:
                return ("t", target_cols[name])
            if name in source_cols and name not in target_cols:
                return ("s", source_cols[name])
        return None

    for conj in _conjuncts(tokens):
        while _wrapped(conj):
            conj = conj[1:-1]
        if len(conj) != 3 or conj[1][0] != "op":
            continue
        (lk, lv), (_, op), (rk, rv) = conj
        op = "=" if op == "==" else op
        if op not in _FLIP:
            continue
        left = side(lv) if lk == "ident" else None
        right = side(rv) if rk == "ident" else None
        if left and right:
            if op == "=" and {left[0], right[0]} == {"t", "s"}:
                t, s = (left[1], right[1]) if left[0] == "t" else (right[1], left[1])
                out.key_pairs.append((t, s))
            continue
        if left and left[0] == "t" and rk != "ident":
            column, (is_lit, value), kind = left[1], _literal(rk, rv), rk
        elif right and right[0] == "t" and lk != "ident":
            column, (is_lit, value), kind, op = right[1], _literal(lk, lv), lk, _FLIP[op]
        else:
            continue
        typed = _typed_literal(kind, value, target_types[column]) if is_lit else None
        if typed is not None:
            out.literal_terms.append((column, op, typed))
    return out


def source_range_terms(
    pairs: Sequence[tuple[str, str]],
    source: DataFrame,
    target_types: Mapping[str, str],
    partition_columns: Sequence[str],
) -> tuple[list[Term], int]:
    """``(terms on the target implied by the source's key values, source row count)``, in one
    Spark job. A key whose source values are all null gives ``c IN ()``: nothing can match."""
    from pyspark.sql import functions as F

    parts = {c.lower() for c in partition_columns}
    source_types = {f.name: f.dataType.typeName() for f in source.schema.fields}
    # partition values are compared as plain Python values: no NaN ordering, so no floats there
    usable = [
        (t, s)
        for t, s in pairs
        if target_types.get(t) in _RANGE_TYPES
        and source_types.get(s) == target_types.get(t)
        and not (t.lower() in parts and target_types.get(t) in ("float", "double"))
    ]
    # as SQL text: a Column built in Python costs a dozen py4j round trips per function
    aggs = [F.expr("count(1) AS n")]
    for i, (t, s) in enumerate(usable):
        quoted = f"`{s.replace('`', '``')}`"
        aggs += [F.expr(f"min({quoted}) AS lo{i}"), F.expr(f"max({quoted}) AS hi{i}")]
        if t.lower() in parts:
            aggs.append(F.expr(f"slice(collect_set({quoted}), 1, {MAX_IN_VALUES + 1}) AS in{i}"))
    row = source.agg(*aggs).collect()[0]
    terms: list[Term] = []
    for i, (t, _) in enumerate(usable):
        lo, hi = row[f"lo{i}"], row[f"hi{i}"]
        if lo is None:
            terms.append((t, "in", []))
            continue
        values = row[f"in{i}"] if t.lower() in parts else None
        if values is not None and len(values) <= MAX_IN_VALUES:
            terms.append((t, "in", list(values)))
        else:
            terms += [(t, ">=", lo), (t, "<=", hi)]
    return terms, int(row["n"])
