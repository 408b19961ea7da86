"""A small parser for partition predicates given as SQL text (``replaceWhere``).

Accepts a conjunction (``AND``) of ``column <op> literal`` terms with ``= == != <> < <= > >=``,
``column IN (v, ...)``, ``column NOT IN (...)``, ``column IS NULL`` and ``column IS NOT NULL``;
literals are single- or double-quoted strings, numbers, ``true``/``false`` or ``null``.
Columns may be quoted with backticks. The result is the engine's partition filter list
(``[(column, op, value), ...]``).
"""

from __future__ import annotations

import re
from typing import Any

from deltalog.contrib.spark.errors import DeltaAnalysisError

__all__ = ["parse_partition_predicate", "tokenize"]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*")
      | (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<op><=|>=|<>|!=|==|=|<|>)
      | (?P<punct>[(),])
      | (?P<ident>`[^`]+`|[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)


def tokenize(text: str) -> list[tuple[str, str]]:
    """``text`` as ``(kind, text)`` tokens of the predicate grammar."""
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise DeltaAnalysisError(
                f"cannot parse the predicate {text!r} at {text[pos : pos + 20]!r}: use "
                "`column <op> literal` terms joined by AND"
            )
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _literal(kind: str, value: str) -> Any:
    if kind == "str":
        body = value[1:-1]
        return body.replace("''", "'").replace("\\'", "'").replace('\\"', '"')
    if kind == "num":
        return float(value) if any(c in value for c in ".eE") else int(value)
    if kind == "ident" and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if kind == "ident" and value.lower() == "null":
        return None
    raise DeltaAnalysisError(f"expected a literal value, got {value!r}")


def parse_partition_predicate(text: str) -> list[tuple[str, str, Any]]:
    """Parse ``text`` into partition filters; raises :class:`DeltaAnalysisError` on bad input."""
    tokens = tokenize(text)
    filters: list[tuple[str, str, Any]] = []
    i = 0

    def expect_ident() -> str:
        nonlocal i
        if i >= len(tokens) or tokens[i][0] != "ident":
            raise DeltaAnalysisError(f"expected a column name in {text!r}")
        name = tokens[i][1].strip("`")
        i += 1
        return name

    while i < len(tokens):
        column = expect_ident()
        if i >= len(tokens):
            raise DeltaAnalysisError(f"incomplete predicate {text!r}")
        kind, value = tokens[i]
        word = value.lower()
        if kind == "op":
            i += 1
            if i >= len(tokens):
                raise DeltaAnalysisError(f"missing value after {value!r} in {text!r}")
            literal = _literal(*tokens[i])
            i += 1
            filters.append((column, "=" if value == "==" else ("!=" if value == "<>" else value), literal))
        elif kind == "ident" and word == "is":
            i += 1
            negate = i < len(tokens) and tokens[i][1].lower() == "not"
            i += 1 if negate else 0
            if i >= len(tokens) or tokens[i][1].lower() != "null":
                raise DeltaAnalysisError(f"expected NULL after IS in {text!r}")
            i += 1
            filters.append((column, "!=" if negate else "=", None))
        elif kind == "ident" and word in ("in", "not"):
            negate = word == "not"
            i += 1
            if negate:
                if i >= len(tokens) or tokens[i][1].lower() != "in":
                    raise DeltaAnalysisError(f"expected IN after NOT in {text!r}")
                i += 1
            if i >= len(tokens) or tokens[i][1] != "(":
                raise DeltaAnalysisError(f"expected '(' after IN in {text!r}")
            i += 1
            values: list[Any] = []
            while i < len(tokens) and tokens[i][1] != ")":
                if tokens[i][1] == ",":
                    i += 1
                    continue
                values.append(_literal(*tokens[i]))
                i += 1
            if i >= len(tokens):
                raise DeltaAnalysisError(f"missing ')' in {text!r}")
            i += 1
            filters.append((column, "not in" if negate else "in", values))
        else:
            raise DeltaAnalysisError(f"unsupported operator {value!r} in {text!r}")
        if i < len(tokens):
            if tokens[i][0] == "ident" and tokens[i][1].lower() == "and":
                i += 1
            else:
                raise DeltaAnalysisError(
                    f"only AND is supported between terms of a partition predicate, got {tokens[i][1]!r} in {text!r}"
                )
    if not filters:
        raise DeltaAnalysisError("the predicate is empty")
    return filters
