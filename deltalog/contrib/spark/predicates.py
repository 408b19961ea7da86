"""A small parser for partition predicates given as SQL text (``replaceWhere``).

Accepts a conjunction (``AND``) of ``column <op> literal`` terms with ``= == != <> < <= > >=``,
``column IN (v, ...)``, ``column NOT IN (...)``, ``column IS NULL`` and ``column IS NOT NULL``;
literals are single- or double-quoted strings, numbers, ``true``/``false`` or ``null``.
Columns may be quoted with backticks. The result is the engine's partition filter list
(``[(column, op, value), ...]``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.txn.protocol.collations import is_collated_type
from deltalog.txn.protocol.partition_filters import OR
from deltalog.txn.protocol.schema import split_column_name
from deltalog.txn.protocol.time_zones import parse_timestamp_text, session_time_zone

__all__ = [
    "INTEGRAL_TYPES",
    "OR",
    "at_session_time_zone",
    "exact_partition_filter",
    "in_session_time_zone",
    "literal_value",
    "numeric_literal",
    "parse_partition_predicate",
    "tokenize",
    "unescape_sql_string",
]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
      | (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<op><=>|<=|>=|<>|!=|==|=|<|>)
      | (?P<arith>\|\||[-+*/%&|^~])
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


def numeric_literal(text: str) -> int | decimal.Decimal | float:
    """A number literal as Spark's parser reads it: ``1`` an integer, ``1.5`` the exact
    decimal 1.5 (so ``9007199254740993.0`` keeps its last digit), ``1e3`` a double."""
    if "e" in text or "E" in text:
        return float(text)
    return decimal.Decimal(text) if "." in text else int(text)


def literal_value(kind: str, value: str) -> Any:
    """A literal token's value (``kind`` as :func:`tokenize` names it); raises
    :class:`DeltaAnalysisError` for a token that is no literal."""
    if kind == "str":
        return unescape_sql_string(value)
    if kind == "num":
        return numeric_literal(value)
    if kind == "ident" and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if kind == "ident" and value.lower() == "null":
        return None
    raise DeltaAnalysisError(f"expected a literal value, got {value!r}")


#: what a backslash and the character after it stand for in a Spark SQL string literal
#: (any other character stands for itself; ``\\%`` and ``\\_`` keep their backslash)
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_HEX = frozenset("0123456789abcdefABCDEF")


def unescape_sql_string(literal: str) -> str:
    """A quoted string literal's value as Spark's parser reads it (``unescapeSQLString``):
    a doubled quote stands for one; ``\\u`` and four hex digits, ``\\U`` and eight, three octal digits from
    ``\\000`` to ``\\177``, and the escapes of :data:`_ESCAPES`; a backslash before any other
    character (or last) is dropped (kept)."""
    quote, body = literal[0], literal[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == quote and body[i + 1 : i + 2] == quote:
            out.append(quote)
            i += 2
        elif c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
        else:
            out_char, i = _escape(body, i + 1)
            out.append(out_char)
    try:  # \\uD83D\\uDE00 is one character, as in Java's UTF-16 strings
        return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise DeltaAnalysisError(f"the string literal {literal} is not valid Unicode") from None


def _escape(body: str, i: int) -> tuple[str, int]:
    """The character the escape at ``body[i]`` (after its backslash) stands for, and the
    index after the escape."""
    c = body[i]
    for mark, digits in (("u", 4), ("U", 8)):
        code = body[i + 1 : i + 1 + digits]
        if c == mark and len(code) == digits and set(code) <= _HEX:
            point = int(code, 16)
            if point > 0x10FFFF:
                raise DeltaAnalysisError(f"\\{c}{code} is not a Unicode character")
            return chr(point), i + 1 + digits
    octal = body[i : i + 3]
    if len(octal) == 3 and octal[0] in "01" and all(d in "01234567" for d in octal[1:]):
        return chr(int(octal, 8)), i + 3
    return _ESCAPES.get(c, c), i + 1


def parse_partition_predicate(text: str, qualifier: str | None = None) -> list[tuple[str, str, Any]]:
    """Parse ``text`` into partition filters; raises :class:`DeltaAnalysisError` on bad input.
    A column qualified with ``qualifier`` (a DataFrame alias: ``t.day``) names the column
    ``day``, as Spark resolves it."""
    return _PredicateParser(text, qualifier).parse()


class _PredicateParser:
    """``column <op> literal``, ``column IS [NOT] NULL`` and ``column [NOT] IN (...)`` terms
    joined by ``AND``, one token at a time."""

    def __init__(self, text: str, qualifier: str | None = None) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.qualifier = qualifier.lower() if qualifier else None

    def parse(self) -> list[tuple[str, str, Any]]:
        filters: list[tuple[str, str, Any]] = []
        while self.i < len(self.tokens):
            filters.append(self._term(self._ident()))
            if self.i < len(self.tokens):
                kind, value = self.tokens[self.i]
                if kind != "ident" or value.lower() != "and":
                    raise DeltaAnalysisError(
                        f"only AND is supported between terms of a partition predicate, got {value!r} in {self.text!r}"
                    )
                self.i += 1
        if not filters:
            raise DeltaAnalysisError("the predicate is empty")
        return filters

    def _word(self) -> str | None:
        """The current token's text, lower-cased (None at the end)."""
        return self.tokens[self.i][1].lower() if self.i < len(self.tokens) else None

    def _ident(self) -> str:
        if self.i >= len(self.tokens) or self.tokens[self.i][0] != "ident":
            raise DeltaAnalysisError(f"expected a column name in {self.text!r}")
        token = self.tokens[self.i][1]
        self.i += 1
        # as Spark resolves a name: `s.a` is one column, s.a field a of s, t.a column a of alias t
        parts = split_column_name(token)
        if self.qualifier and len(parts) > 1 and parts[0].lower() == self.qualifier:
            parts = parts[1:]
        if len(parts) > 1:
            raise DeltaAnalysisError(f"{token} is a nested field, not a partition column, in {self.text!r}")
        return parts[0]

    def _term(self, column: str) -> tuple[str, str, Any]:
        if self.i >= len(self.tokens):
            raise DeltaAnalysisError(f"incomplete predicate {self.text!r}")
        kind, value = self.tokens[self.i]
        word = value.lower()
        if kind == "op" and value != "<=>":
            self.i += 1
            if self.i >= len(self.tokens):
                raise DeltaAnalysisError(f"missing value after {value!r} in {self.text!r}")
            literal = literal_value(*self.tokens[self.i])
            self.i += 1
            return column, "=" if value == "==" else ("!=" if value == "<>" else value), literal
        if kind == "ident" and word == "is":
            return self._is_null(column)
        if kind == "ident" and word in ("in", "not"):
            return self._in_list(column, negate=word == "not")
        raise DeltaAnalysisError(f"unsupported operator {value!r} in {self.text!r}")

    def _is_null(self, column: str) -> tuple[str, str, Any]:
        self.i += 1
        negate = self._word() == "not"
        self.i += 1 if negate else 0
        if self._word() != "null":
            raise DeltaAnalysisError(f"expected NULL after IS in {self.text!r}")
        self.i += 1
        return column, "!=" if negate else "=", None

    def _in_list(self, column: str, negate: bool) -> tuple[str, str, Any]:
        self.i += 1
        if negate:
            if self._word() != "in":
                raise DeltaAnalysisError(f"expected IN after NOT in {self.text!r}")
            self.i += 1
        if self._word() != "(":
            raise DeltaAnalysisError(f"expected '(' after IN in {self.text!r}")
        self.i += 1
        values: list[Any] = []
        while self.i < len(self.tokens) and self.tokens[self.i][1] != ")":
            if self.tokens[self.i][1] != ",":
                values.append(literal_value(*self.tokens[self.i]))
            self.i += 1
        if self.i >= len(self.tokens):
            raise DeltaAnalysisError(f"missing ')' in {self.text!r}")
        self.i += 1
        return column, "not in" if negate else "in", values


def at_session_time_zone(
    filters: Sequence[tuple[str, str, Any]], column_types: Mapping[str, str], time_zone: str | None
) -> list[tuple[str, str, Any]]:
    """``filters`` with each string literal compared with a ``timestamp`` column read as Spark
    casts it: a local time of the session ``time_zone`` unless the text names an offset (the
    engine reads a bare text as UTC). Unchanged without a time zone, or one Python cannot read."""
    zone = session_time_zone(time_zone)
    if zone is None:
        return list(filters)
    types = {c.lower(): t.lower() for c, t in column_types.items()}
    out: list[tuple[str, str, Any]] = []
    for column, op, value in filters:
        if op == OR:
            value = tuple(tuple(at_session_time_zone(c, column_types, time_zone)) for c in value)
        elif types.get(column.lower()) == "timestamp":
            value = [_in_zone(v, zone) for v in value] if isinstance(value, (list, tuple)) else _in_zone(value, zone)
        out.append((column, op, value))
    return out


def _in_zone(value: Any, zone: dt.tzinfo) -> Any:
    if not isinstance(value, str):
        return value
    parsed = parse_timestamp_text(value)
    if parsed is None:
        return value
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=zone)


def in_session_time_zone(text: str, time_zone: str | None) -> str:
    """A timestamp option (``timestampAsOf``) as Spark casts it: text without an offset is a
    local time of the session ``time_zone``; returned as ISO text with its offset (other
    text, or no readable zone: unchanged)."""
    zone = session_time_zone(time_zone)
    value = _in_zone(text, zone) if zone is not None else text
    return value.isoformat() if isinstance(value, dt.datetime) else text


#: Spark's integral type names.
INTEGRAL_TYPES = frozenset({"byte", "short", "integer", "long"})


def exact_partition_filter(column_type: str, op: str, value: Any) -> bool:
    """Whether the partition filters compare ``value`` with a column of ``column_type`` as
    Spark does. Spark casts a string column to the type of a number or boolean it is
    compared with (``s = 1`` matches ``'01'``), an integral column and a fraction to a
    fraction (``k < 1.5`` holds for 1), and reads text as a boolean or a date by its own
    rules (``'t'``, ``'2024-1-2'``), so those terms must prune nothing."""
    if value is None and op in ("=", "!="):
        return True  # IS [NOT] NULL
    if is_collated_type(column_type):
        return False  # the partition values compare binary; Spark compares by the collation
    values = value if op in ("in", "not in") and isinstance(value, (list, tuple, set, frozenset)) else [value]
    return all(_exact_literal(column_type.lower(), v) for v in values if v is not None)


def _exact_literal(t: str, v: Any) -> bool:
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if t in INTEGRAL_TYPES:  # a whole decimal (5.0) is the integer; 1.5 compares the column as a decimal
        return isinstance(v, int) or (isinstance(v, decimal.Decimal) and v == v.to_integral_value())
    if t in ("float", "double") or t.startswith("decimal"):
        return isinstance(v, (int, float, decimal.Decimal))
    if isinstance(v, (dt.date, dt.datetime)) or not isinstance(v, str):
        return isinstance(v, dt.datetime) if t.startswith("timestamp") else isinstance(v, dt.date)
    try:
        if t == "date":
            dt.date.fromisoformat(v.strip())
        elif t in ("timestamp", "timestamp_ntz"):
            dt.datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
        else:
            return False
    except ValueError:
        return False
    return True
