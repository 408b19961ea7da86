"""A small SQL expression language for CHECK constraints and column invariants, compiled
to ``pyarrow.compute``.

The supported subset (Spark SQL spelling, keywords case-insensitive):

- column references: ``id``, ```weird name```, nested struct fields ``a.b.c`` (names
  matched case-insensitively, as Spark does; a column missing from the data is NULL, as
  in Delta's checker);
- literals: integers, decimals (``1.5``, ``1e3``), ``'strings'`` (``''`` escapes a quote),
  ``TRUE``, ``FALSE``, ``NULL``, ``DATE 'yyyy-mm-dd'``, ``TIMESTAMP 'yyyy-mm-dd[ hh:mm:ss[.ffffff]]'``;
- comparisons ``= == != <> < <= > >=``; ``AND``, ``OR``, ``NOT`` (three-valued logic);
- ``IS [NOT] NULL``, ``[NOT] IN (...)``, ``[NOT] BETWEEN x AND y``, ``[NOT] LIKE 'pattern'``
  (``%`` any run, ``_`` one character, ``\\`` escapes);
- arithmetic ``+ - * / %`` and unary minus (``/`` is floating-point division; division or
  modulo by zero gives NULL, as Spark without ANSI mode);
- parentheses; functions ``length``, ``lower``, ``upper``, ``abs``, ``coalesce``;
- ``CAST(x AS type)`` (simple types) and the date/time and string functions generated
  columns use: ``date``/``to_date``, ``year``, ``month``, ``day``/``dayofmonth``, ``hour``,
  ``date_format`` (``y M d H m s`` patterns), ``trunc``, ``date_trunc``, ``concat``,
  ``substring``/``substr``, ``current_date()``, ``current_timestamp()``. A timestamp with a
  time zone (Spark's session time zone, in the Arrow data Spark hands over) is taken in
  that zone's local time, as Spark does.

Anything else (``CASE``, other functions, ``||``, subqueries, ...) raises
:class:`UnsupportedConstraintError` when the expression is compiled, naming the construct,
so a writer can refuse the write instead of skipping the check.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import DeltaError
from deltalog.txn.protocol import sql_temporal
from deltalog.txn.protocol.sql_text_numbers import TextCastError, cast_text_to_number
from deltalog.txn.protocol.time_zones import arrow_zone_name, wall_clock_instants

__all__ = [
    "SESSION_ZONE",
    "Expr",
    "UnsupportedConstraintError",
    "column_paths",
    "column_values",
    "evaluate",
    "parse_expression",
    "strip_qualifier",
]


class UnsupportedConstraintError(DeltaError):
    """A constraint's expression is outside the SQL subset deltalog evaluates."""

    def __init__(self, expression: str, construct: str, *, problem: str | None = None) -> None:
        self.expression = expression
        self.construct = construct
        what = problem or f"{construct} is not in the SQL subset deltalog supports (see docs/log.md, 'Constraints')"
        self.problem = what
        super().__init__(
            f"cannot evaluate the constraint expression {expression!r}: {what}; "
            "refuse the write, or check the data with Spark"
        )


# -- syntax tree ------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    path: tuple[str, ...]

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class Literal:
    value: Any  # None, bool, int, float, Decimal, str, date, datetime
    kind: str  # "null", "bool", "int", "float", "decimal", "string", "date", "timestamp"


@dataclass(frozen=True)
class Unary:
    op: str  # "not", "neg", "is_null", "is_not_null"
    operand: Expr


@dataclass(frozen=True)
class Binary:
    op: str  # "and", "or", "=", "!=", "<", "<=", ">", ">=", "<=>", "+", "-", "*", "/", "%"
    left: Expr
    right: Expr


@dataclass(frozen=True)
class InList:
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool


@dataclass(frozen=True)
class Between:
    operand: Expr
    low: Expr
    high: Expr
    negated: bool


@dataclass(frozen=True)
class Like:
    operand: Expr
    pattern: str
    negated: bool


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Cast:
    operand: Expr
    type_name: str  # a Delta type name: date, timestamp, string, long, integer, ...


Expr = Column | Literal | Unary | Binary | InList | Between | Like | Call | Cast

#: function name -> number of arguments (-1: one or more)
FUNCTIONS = {"length": 1, "lower": 1, "upper": 1, "abs": 1, "coalesce": -1}
#: date/time and string functions -> (fewest, most) arguments (evaluated by :mod:`~deltalog.txn.protocol.sql_temporal`)
MORE_FUNCTIONS: dict[str, tuple[int, int]] = {
    "date": (1, 1),
    "to_date": (1, 1),
    "year": (1, 1),
    "month": (1, 1),
    "day": (1, 1),
    "dayofmonth": (1, 1),
    "hour": (1, 1),
    "date_format": (2, 2),
    "trunc": (2, 2),
    "date_trunc": (2, 2),
    "concat": (1, 64),
    "substring": (2, 3),
    "substr": (2, 3),
    "current_date": (0, 0),
    "current_timestamp": (0, 0),
}
#: CAST target names (Spark SQL spelling) -> Delta type names
CAST_TYPES = {
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "string": "string",
    "bigint": "long",
    "long": "long",
    "int": "integer",
    "integer": "integer",
    "smallint": "short",
    "short": "short",
    "tinyint": "byte",
    "byte": "byte",
    "double": "double",
    "float": "float",
    "boolean": "boolean",
}

#: Spark's functions that are a CAST (``FunctionRegistry.castAlias``); ``date`` is a MORE_FUNCTIONS one
CAST_ALIASES = frozenset({"boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "string", "timestamp"})


def column_paths(expr: Expr) -> list[tuple[str, ...]]:
    """The column paths an expression reads, in order of first use."""
    out: list[tuple[str, ...]] = []

    def walk(e: Expr) -> None:
        if isinstance(e, Column):
            if e.path not in out:
                out.append(e.path)
        elif isinstance(e, Unary):
            walk(e.operand)
        elif isinstance(e, Binary):
            walk(e.left)
            walk(e.right)
        elif isinstance(e, InList):
            walk(e.operand)
            for i in e.items:
                walk(i)
        elif isinstance(e, Between):
            walk(e.operand)
            walk(e.low)
            walk(e.high)
        elif isinstance(e, Like):
            walk(e.operand)
        elif isinstance(e, Call):
            for a in e.args:
                walk(a)
        elif isinstance(e, Cast):
            walk(e.operand)

    walk(expr)
    return out


# -- tokens -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[lLdD]?)
  | (?P<string>'(?:[^'\\]|''|\\.)*')
  | (?P<dstring>"(?:[^"\\]|""|\\.)*")
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=>|==|!=|<>|<=|>=|\|\||[=<>+\-*/%(),.])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Tok:
    kind: str  # number, string, ident, quoted, op, end
    text: str
    pos: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "ident" else ""


def _unescape(body: str, quote: str) -> str:
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
            i += 2
            continue
        if ch == quote and i + 1 < len(body) and body[i + 1] == quote:
            out.append(quote)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise UnsupportedConstraintError(text, f"the character {text[pos]!r} at position {pos}")
        kind = m.lastgroup
        assert kind is not None
        value = m.group(kind)
        if kind == "dstring":
            kind = "string"
            value = "'" + _unescape(value[1:-1], '"').replace("'", "''") + "'"
        if kind != "ws":
            tokens.append(_Tok(kind, value, pos))
        pos = m.end()
    tokens.append(_Tok("end", "", len(text)))
    return tokens


# -- parser -------------------------------------------------------------------------------

_COMPARISONS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}
_RESERVED = {
    "AND",
    "OR",
    "NOT",
    "IS",
    "NULL",
    "IN",
    "BETWEEN",
    "LIKE",
    "TRUE",
    "FALSE",
    "DATE",
    "TIMESTAMP",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "AS",
    "SELECT",
    "FROM",
    "WHERE",
    "EXISTS",
    "INTERVAL",
    "RLIKE",
    "REGEXP",
    "ILIKE",
    "ANY",
    "ALL",
    "SOME",
    "DIV",
}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    # helpers
    def peek(self, ahead: int = 0) -> _Tok:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> _Tok:
        tok = self.tokens[self.i]
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return tok

    def unsupported(self, what: str) -> UnsupportedConstraintError:
        return UnsupportedConstraintError(self.text, what)

    def at_keyword(self, *words: str) -> bool:
        return self.peek().upper in words

    def expect_op(self, op: str) -> None:
        tok = self.next()
        if tok.kind != "op" or tok.text != op:
            shown = tok.text or "the end of the expression"
            raise self.unsupported(f"{shown!r} at position {tok.pos} (expected {op!r})")

    def parse(self) -> Expr:
        if self.peek().kind == "end":
            raise self.unsupported("an empty expression")
        expr = self.parse_or()
        tok = self.peek()
        if tok.kind != "end":
            raise self.unsupported(f"{tok.text!r} at position {tok.pos}")
        return expr

    # grammar
    def parse_or(self) -> Expr:
        left = self.parse_and()
        while self.at_keyword("OR"):
            self.next()
            left = Binary("or", left, self.parse_and())
        return left

    def parse_and(self) -> Expr:
        left = self.parse_not()
        while self.at_keyword("AND"):
            self.next()
            left = Binary("and", left, self.parse_not())
        return left

    def parse_not(self) -> Expr:
        if self.at_keyword("NOT"):
            self.next()
            return Unary("not", self.parse_not())
        if self.peek().kind == "op" and self.peek().text == "!":
            raise self.unsupported("'!'")
        return self.parse_predicate()

    def parse_predicate(self) -> Expr:
        left = self.parse_additive()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in _COMPARISONS:
                self.next()
                left = Binary(_COMPARISONS[tok.text], left, self.parse_additive())
                continue
            if tok.kind == "op" and tok.text == "||":
                raise self.unsupported(f"the operator {tok.text!r}")
            if tok.upper == "IS":
                self.next()
                negated = False
                if self.at_keyword("NOT"):
                    self.next()
                    negated = True
                nxt = self.next()
                if nxt.upper != "NULL":
                    raise self.unsupported(f"IS {'NOT ' if negated else ''}{nxt.text.upper() or '<end>'}")
                left = Unary("is_not_null" if negated else "is_null", left)
                continue
            negated = False
            if tok.upper == "NOT" and self.peek(1).upper in ("IN", "BETWEEN", "LIKE"):
                self.next()
                negated = True
                tok = self.peek()
            if tok.upper == "IN":
                self.next()
                self.expect_op("(")
                if self.at_keyword("SELECT"):
                    raise self.unsupported("a subquery")
                items = [self.parse_or()]
                while self.peek().kind == "op" and self.peek().text == ",":
                    self.next()
                    items.append(self.parse_or())
                self.expect_op(")")
                left = InList(left, tuple(items), negated)
                continue
            if tok.upper == "BETWEEN":
                self.next()
                low = self.parse_additive()
                if not self.at_keyword("AND"):
                    raise self.unsupported("BETWEEN without AND")
                self.next()
                high = self.parse_additive()
                left = Between(left, low, high, negated)
                continue
            if tok.upper == "LIKE":
                self.next()
                pat = self.next()
                if pat.kind != "string":
                    raise self.unsupported("LIKE with a pattern that is not a string literal")
                if self.at_keyword("ESCAPE"):
                    raise self.unsupported("LIKE ... ESCAPE")
                left = Like(left, _unescape(pat.text[1:-1], "'"), negated)
                continue
            if tok.upper in ("RLIKE", "REGEXP", "ILIKE"):
                raise self.unsupported(tok.upper)
            return left

    def parse_additive(self) -> Expr:
        left = self.parse_multiplicative()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            op = self.next().text
            left = Binary(op, left, self.parse_multiplicative())
        return left

    def parse_multiplicative(self) -> Expr:
        left = self.parse_unary()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in ("*", "/", "%"):
                self.next()
                left = Binary(tok.text, left, self.parse_unary())
            elif tok.upper == "DIV":
                raise self.unsupported("DIV")
            else:
                return left

    def parse_unary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "-":
            self.next()
            operand = self.parse_unary()
            if isinstance(operand, Literal) and operand.kind in ("int", "float"):
                return Literal(-operand.value, operand.kind)
            return Unary("neg", operand)
        if tok.kind == "op" and tok.text == "+":
            self.next()
            return self.parse_unary()
        return self.parse_primary()

    def parse_primary(self) -> Expr:
        tok = self.next()
        if tok.kind == "number":
            return _number(self.text, tok.text)
        if tok.kind == "string":
            return Literal(_unescape(tok.text[1:-1], "'"), "string")
        if tok.kind == "op" and tok.text == "(":
            if self.at_keyword("SELECT"):
                raise self.unsupported("a subquery")
            inner = self.parse_or()
            self.expect_op(")")
            return inner
        if tok.kind == "quoted":
            return self.parse_column(tok.text[1:-1].replace("``", "`"))
        if tok.kind == "ident":
            word = tok.upper
            if word == "NULL":
                return Literal(None, "null")
            if word in ("TRUE", "FALSE"):
                return Literal(word == "TRUE", "bool")
            if word in ("DATE", "TIMESTAMP") and self.peek().kind == "string":
                text = _unescape(self.next().text[1:-1], "'")
                return _typed_literal(self.text, word, text)
            if word == "CAST" and self.peek().kind == "op" and self.peek().text == "(":
                return self.parse_cast()
            if self.peek().kind == "op" and self.peek().text == "(":
                return self.parse_call(tok.text)
            if word in _RESERVED:
                raise self.unsupported(word)
            return self.parse_column(tok.text)
        shown = tok.text or "the end of the expression"
        raise self.unsupported(f"{shown!r} at position {tok.pos}")

    def parse_column(self, first: str) -> Column:
        path = [first]
        while self.peek().kind == "op" and self.peek().text == ".":
            self.next()
            tok = self.next()
            if tok.kind == "ident":
                path.append(tok.text)
            elif tok.kind == "quoted":
                path.append(tok.text[1:-1].replace("``", "`"))
            else:
                raise self.unsupported(f"{tok.text!r} after '.' at position {tok.pos}")
        if self.peek().kind == "op" and self.peek().text == "(":
            raise self.unsupported(f"the function {'.'.join(path)}()")
        return Column(tuple(path))

    def parse_cast(self) -> Expr:
        self.expect_op("(")
        operand = self.parse_or()
        if not self.at_keyword("AS"):
            raise self.unsupported("CAST without AS")
        self.next()
        target = self.next()
        type_name = CAST_TYPES.get(target.text.lower()) if target.kind == "ident" else None
        if type_name is None:
            raise self.unsupported(f"CAST to {target.text or '<end>'}")
        self.expect_op(")")
        return Cast(operand, type_name)

    def parse_call(self, name: str) -> Expr:
        lname = name.lower()
        if lname in MORE_FUNCTIONS:
            return self.parse_more_call(name, lname)
        if lname in CAST_ALIASES:  # Spark's cast functions: int(x) is CAST(x AS INT)
            args = self.parse_arguments()
            if len(args) != 1:
                raise self.unsupported(f"{name}() with {len(args)} argument(s) (it takes 1 argument)")
            return Cast(args[0], CAST_TYPES[lname])
        if lname not in FUNCTIONS:
            raise self.unsupported(f"the function {name}()")
        args = self.parse_arguments()
        arity = FUNCTIONS[lname]
        if (arity >= 0 and len(args) != arity) or (arity < 0 and not args):
            want = f"{arity} argument" if arity >= 0 else "at least one argument"
            raise self.unsupported(f"{name}() with {len(args)} argument(s) (it takes {want})")
        return Call(lname, tuple(args))

    def parse_arguments(self) -> list[Expr]:
        """``(expr, ...)``: a call's arguments, parentheses included."""
        self.expect_op("(")
        args: list[Expr] = []
        if not (self.peek().kind == "op" and self.peek().text == ")"):
            args.append(self.parse_or())
            while self.peek().kind == "op" and self.peek().text == ",":
                self.next()
                args.append(self.parse_or())
        self.expect_op(")")
        return args

    def parse_more_call(self, name: str, lname: str) -> Expr:
        args = self.parse_arguments()
        low, high = MORE_FUNCTIONS[lname]
        if not low <= len(args) <= high:
            raise self.unsupported(f"{name}() with {len(args)} argument(s)")
        return Call(lname, tuple(args))


def _number(text: str, token: str) -> Literal:
    """A numeric literal as Spark types it: an exponent or a ``D`` suffix makes a double, a
    point a decimal, an integer beyond ``long`` a decimal too."""
    body = token.rstrip("lLdD")
    suffix = token[len(body) :].upper()
    if suffix == "D" or any(c in body for c in "eE"):
        return Literal(float(body), "float")
    if "." in body or not -(2**63) <= int(body) < 2**63:
        return Literal(Decimal(body), "decimal")
    return Literal(int(body), "int")


def _typed_literal(text: str, word: str, value: str) -> Literal:
    try:
        if word == "DATE":
            return Literal(dt.date.fromisoformat(value.strip()), "date")
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UnsupportedConstraintError(text, f"the {word} literal {value!r}") from None
    if parsed.tzinfo is not None:  # an instant; a zone-free text stays a wall-clock time (see SESSION_ZONE)
        parsed = parsed.astimezone(dt.timezone.utc)
    return Literal(parsed, "timestamp")


def parse_expression(text: str) -> Expr:
    """Parse ``text``; raises :class:`UnsupportedConstraintError` outside the subset."""
    return _Parser(text).parse()


def strip_qualifier(text: str, qualifier: str, same_name: Callable[[str, str], bool]) -> str:
    """``text`` with ``qualifier`` removed from the start of each column reference of more
    than one part that starts with it (``t.id`` -> ``id``, ``t.s.x`` -> ``s.x``; ``same_name``
    compares names, as the session's resolver), as Delta's ``stripTargetAliasIfExists``; the
    rest of the text is kept as written."""
    tokens = _tokenize(text)
    cut: list[tuple[int, int]] = []
    for i, tok in enumerate(tokens[:-2]):
        if tok.kind not in ("ident", "quoted") or (i > 0 and tokens[i - 1].text == "." and tokens[i - 1].kind == "op"):
            continue
        dot, after = tokens[i + 1], tokens[i + 2]
        name = tok.text[1:-1].replace("``", "`") if tok.kind == "quoted" else tok.text
        if dot.kind == "op" and dot.text == "." and after.kind in ("ident", "quoted") and same_name(name, qualifier):
            cut.append((tok.pos, after.pos))
    for start, end in reversed(cut):
        text = text[:start] + text[end:]
    return text


# -- evaluation ---------------------------------------------------------------------------

# pa.Table | pa.RecordBatch and pa.Array | pa.ChunkedArray | pa.Scalar (pyarrow has no stubs)
Data: TypeAlias = Any
Value: TypeAlias = Any


def _length(value: Value) -> int:
    return 1 if isinstance(value, pa.Scalar) else len(value)


def _find(names: Sequence[str], wanted: str) -> int | None:
    for i, n in enumerate(names):
        if n == wanted:
            return i
    lowered = wanted.lower()
    for i, n in enumerate(names):
        if n.lower() == lowered:
            return i
    return None


def column_values(data: Data, path: tuple[str, ...]) -> Value:
    """The values of the (nested) column at ``path`` in ``data``, matched case-insensitively;
    nulls where a column is missing."""
    n = data.num_rows
    i = _find(data.schema.names, path[0])
    if i is None:
        return pa.nulls(n)
    value: Any = data.column(i)
    for part in path[1:]:
        typ = value.type
        if not pa.types.is_struct(typ):
            return pa.nulls(n)
        j = _find([typ.field(k).name for k in range(typ.num_fields)], part)
        if j is None:
            return pa.nulls(n)
        value = pc.struct_field(value, [j])
    return value


def _literal(lit: Literal) -> pa.Scalar:
    if lit.kind == "null":
        return pa.scalar(None, pa.null())
    if lit.kind == "int":  # an INT where it fits, as Spark types it (so i + 1 overflows as an int)
        return pa.scalar(lit.value, pa.int32() if -(2**31) <= lit.value < 2**31 else pa.int64())
    if lit.kind == "float":
        return pa.scalar(lit.value, pa.float64())
    if lit.kind == "decimal":
        exponent = int(lit.value.as_tuple().exponent)
        scale = max(0, -exponent)
        precision = max(len(lit.value.as_tuple().digits) + max(0, exponent), scale, 1)
        if precision > _MAX_DECIMAL_PRECISION:
            return pa.scalar(float(lit.value), pa.float64())
        return pa.scalar(lit.value, pa.decimal128(precision, scale))
    if lit.kind == "bool":
        return pa.scalar(lit.value, pa.bool_())
    if lit.kind == "date":
        return pa.scalar(lit.value, pa.date32())
    if lit.kind == "timestamp":
        return pa.scalar(lit.value, pa.timestamp("us", tz="UTC" if lit.value.tzinfo is not None else None))
    return pa.scalar(lit.value, pa.string())


_MAX_DECIMAL_PRECISION = 38
#: an intermediate decimal (``id - 1`` of a ``decimal(38, 0)`` has 39 digits) as decimal256
_MAX_WIDE_PRECISION = 76
#: the digits of each integer type, as Spark's ``DecimalType.forType``
_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}


def _common_decimal(ta: pa.DataType, tb: pa.DataType) -> pa.DataType:
    """The decimal type Spark compares two exact numeric types (one a decimal) in
    (``DecimalPrecision.widerDecimalType``): their integer digits and places, and beyond 38
    digits ``decimal(38, s)`` keeping the integer digits (``boundedPreferIntegralDigits``), the
    places cut (:func:`_to_decimal` rounds them half up)."""
    shapes = [_decimal_shape(t) for t in (ta, tb)]
    scale = max(s for _, s in shapes)
    precision = max(p - s for p, s in shapes) + scale
    if precision <= _MAX_DECIMAL_PRECISION:
        return pa.decimal128(precision, scale)
    return pa.decimal128(_MAX_DECIMAL_PRECISION, max(0, scale - (precision - _MAX_DECIMAL_PRECISION)))


def _to_decimal(value: Value, target: pa.DataType, text: str) -> Value:
    """``value`` (an exact number) as the decimal ``target``, rounded half up to its places as
    Spark casts it."""
    if pa.types.is_decimal(value.type) and value.type.scale > target.scale:
        room = pa.decimal256(value.type.precision + 1, value.type.scale)  # 0.9 rounds to 1
        value = pc.round(value.cast(room), target.scale, round_mode="half_towards_infinity")
    return _cast(value, target, text)


def _is_numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _cast(value: Value, target: pa.DataType, text: str) -> Value:
    if value.type == target:
        return value
    if _is_text(value.type) and (pa.types.is_integer(target) or pa.types.is_floating(target)):
        try:
            return cast_text_to_number(value, target)
        except TextCastError as exc:
            raise UnsupportedConstraintError(text, f"{value.type} as {target}", problem=str(exc)) from None
    try:
        if pa.types.is_floating(target) and (pa.types.is_integer(value.type) or pa.types.is_decimal(value.type)):
            return value.cast(target, safe=False)  # rounded to the nearest double, as Spark casts
        return value.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        what = f"{value.type} as {target}"
        raise UnsupportedConstraintError(text, what, problem=f"cannot use {what} ({exc})") from None


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _text_meets(other: pa.DataType) -> pa.DataType:
    """The type Spark casts text to when it meets ``other``: a long for an integer, a double for
    a fraction or decimal (ANSI type coercion); ``other`` itself for the rest."""
    if pa.types.is_integer(other):
        return pa.int64()
    if pa.types.is_floating(other) or pa.types.is_decimal(other):
        return pa.float64()
    return other


def _unify(a: Value, b: Value, text: str) -> tuple[Value, Value]:
    """Implicit casts as Spark does them for comparisons and arithmetic."""
    ta, tb = a.type, b.type
    if ta == tb:
        return a, b
    if pa.types.is_null(ta):
        return _cast(a, tb, text), b
    if pa.types.is_null(tb):
        return a, _cast(b, ta, text)
    if _is_numeric(ta) and _is_numeric(tb):
        common = max(ta, tb, key=lambda t: getattr(t, "bit_width", 64))  # Spark widens to the wider integer
        if any(pa.types.is_decimal(t) for t in (ta, tb)) and not any(pa.types.is_floating(t) for t in (ta, tb)):
            common = _common_decimal(ta, tb)
            return _to_decimal(a, common, text), _to_decimal(b, common, text)
        if any(pa.types.is_floating(t) or pa.types.is_decimal(t) for t in (ta, tb)):
            common = pa.float64()
        return _cast(a, common, text), _cast(b, common, text)
    if _is_text(ta) and _is_numeric(tb):
        return _unify(_cast(a, _text_meets(tb), text), b, text)
    if _is_text(tb) and _is_numeric(ta):
        return _unify(a, _cast(b, _text_meets(ta), text), text)
    if _is_text(ta):
        return _cast(_ts_text(a, tb), tb, text), b
    if _is_text(tb):
        return a, _cast(_ts_text(b, ta), ta, text)
    if pa.types.is_temporal(ta) and pa.types.is_temporal(tb):
        a, b = _in_session_zone(a, tb), _in_session_zone(b, ta)
        ta, tb = a.type, b.type
        if pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb):
            common = pa.timestamp("us", ta.tz or tb.tz)
            return _cast(a, common, text), _cast(b, common, text)
        if pa.types.is_date(ta) and pa.types.is_timestamp(tb):
            return _cast(a, tb, text), b
        if pa.types.is_timestamp(ta) and pa.types.is_date(tb):
            return a, _cast(b, ta, text)
    return a, b


#: Spark's session time zone while a compiled constraint evaluates (None: UTC): a zone-free
#: timestamp text or literal, or a date, that meets a ``timestamp`` value (an instant, not a
#: ``timestamp_ntz`` wall-clock time) is the instant its wall-clock time is in this zone, as
#: Spark casts it; against a ``timestamp_ntz`` value it stays a wall-clock time.
SESSION_ZONE: ContextVar[dt.tzinfo | None] = ContextVar("deltalog_session_zone", default=None)


def _instant(wall_clock: dt.datetime) -> dt.datetime:
    """A wall-clock time of the session zone as the (zone-free) UTC instant it is."""
    zone = SESSION_ZONE.get()
    if zone is None:
        return wall_clock
    return wall_clock.replace(tzinfo=zone).astimezone(dt.timezone.utc).replace(tzinfo=None)


def _in_session_zone(value: Value, other: pa.DataType) -> Value:
    """``value`` (a zone-free timestamp -- a ``timestamp_ntz`` or a wall-clock time -- or a
    date) met with a zoned timestamp of type ``other``: the instant of its wall-clock time in
    the session zone (Spark casts it to ``timestamp``), as a zone-free UTC time."""
    if not (pa.types.is_timestamp(other) and other.tz):
        return value
    if not isinstance(value, pa.Scalar):
        return _column_in_session_zone(value)
    if not value.is_valid:
        return value
    if pa.types.is_date(value.type):
        return pa.scalar(_instant(dt.datetime.combine(value.as_py(), dt.time())), pa.timestamp("us"))
    if pa.types.is_timestamp(value.type) and value.type.tz is None:
        return pa.scalar(_instant(value.as_py()), pa.timestamp("us"))
    return value


def _column_in_session_zone(value: Value) -> Value:
    """Zone-free timestamps or dates of a column as the UTC instants of their wall-clock
    times in the session zone (:func:`_in_session_zone`)."""
    zone = SESSION_ZONE.get()
    t = value.type
    if zone is None or not (pa.types.is_date(t) or (pa.types.is_timestamp(t) and t.tz is None)):
        return value
    wall_clock = value.cast(pa.timestamp("us"))
    instants = wall_clock_instants(wall_clock, arrow_zone_name(zone))
    return instants.cast(pa.timestamp("us", "UTC")).cast(pa.timestamp("us"))


def _ts_text(value: Value, target: pa.DataType) -> Value:
    """String literals compared with timestamps: ISO text with 'T' or ' '."""
    if pa.types.is_timestamp(target) and isinstance(value, pa.Scalar) and value.is_valid:
        text = str(value.as_py()).strip().replace("Z", "+00:00")
        try:
            parsed = dt.datetime.fromisoformat(text)
        except ValueError:
            return value
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(dt.timezone.utc).replace(tzinfo=None)
        elif target.tz is not None:  # a wall-clock time of the session zone (SESSION_ZONE)
            parsed = _instant(parsed)
        return pa.scalar(parsed, pa.timestamp("us"))
    return value


_COMPARE: dict[str, Callable[..., Any]] = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def _nan_ordered(op: str, a: Value, b: Value) -> Value:
    """``a op b`` of floating values as Spark compares them: NaN equals NaN and is above every
    other value (IEEE's ``NaN > 1.5`` is false; Spark's is true). NULL stays NULL."""
    if op in (">", ">="):
        return _nan_ordered("<" if op == ">" else "<=", b, a)
    a_nan, b_nan = pc.is_nan(a), pc.is_nan(b)
    if op in ("=", "!="):
        equal = pc.or_(pc.equal(a, b), pc.and_(a_nan, b_nan))
        return equal if op == "=" else pc.invert(equal)
    either_null = pc.or_(pc.is_null(a), pc.is_null(b))
    less = pc.if_else(
        either_null, pa.scalar(None, pa.bool_()), pc.if_else(a_nan, False, pc.if_else(b_nan, True, pc.less(a, b)))
    )
    if op == "<":
        return less
    return pc.or_(less, pc.or_(pc.equal(a, b), pc.and_(a_nan, b_nan)))


def _compare(op: str, a: Value, b: Value, text: str) -> Value:
    """``a op b`` (``op`` one of :data:`_COMPARE`'s) of two unified values, NaN as in Spark."""
    try:
        if pa.types.is_floating(a.type) and pa.types.is_floating(b.type):
            return _nan_ordered(op, a, b)
        return _COMPARE[op](a, b)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as exc:
        what = f"comparing {a.type} with {b.type}"
        raise UnsupportedConstraintError(text, what, problem=f"cannot evaluate {what} ({exc})") from None


def _zero_to_null(divisor: Value) -> Value:
    zero = pa.scalar(0, divisor.type)
    return pc.if_else(pc.equal(divisor, zero), pa.scalar(None, divisor.type), divisor)


def _as_bool(value: Value, text: str, what: str) -> Value:
    if pa.types.is_boolean(value.type):
        return value
    if pa.types.is_null(value.type):
        return value.cast(pa.bool_())
    raise UnsupportedConstraintError(text, what, problem=f"{what} of type {value.type}, which is not a boolean")


def evaluate(expr: Expr, data: Data, text: str) -> Value:
    """The value of ``expr`` on every row of ``data`` (SQL NULL semantics)."""

    def ev(e: Expr) -> Value:
        if isinstance(e, Column):
            return column_values(data, e.path)
        if isinstance(e, Literal):
            return _literal(e)
        if isinstance(e, Unary):
            return _unary(e.op, ev(e.operand), text)
        if isinstance(e, Binary):
            if e.op in ("and", "or"):
                left = _as_bool(ev(e.left), text, f"{e.op.upper()} applied to a value")
                right = _as_bool(ev(e.right), text, f"{e.op.upper()} applied to a value")
                return pc.and_kleene(left, right) if e.op == "and" else pc.or_kleene(left, right)
            return _binary(e.op, ev(e.left), ev(e.right), text)
        if isinstance(e, InList):
            operand = ev(e.operand)
            result: Value | None = None
            for item in e.items:
                eq = _compare("=", *_unify(operand, ev(item), text), text)
                result = eq if result is None else pc.or_kleene(result, eq)
            assert result is not None
            return pc.invert(result) if e.negated else result
        if isinstance(e, Between):
            operand = ev(e.operand)
            low = _compare(">=", *_unify(operand, ev(e.low), text), text)
            inside = pc.and_kleene(low, _compare("<=", *_unify(operand, ev(e.high), text), text))
            return pc.invert(inside) if e.negated else inside
        if isinstance(e, Like):
            operand = ev(e.operand)
            if pa.types.is_null(operand.type):
                operand = operand.cast(pa.string())
            if not (pa.types.is_string(operand.type) or pa.types.is_large_string(operand.type)):
                operand = sql_temporal.cast_to(operand, "string", _failure(text))
            matched = pc.match_like(operand, e.pattern)
            return pc.invert(matched) if e.negated else matched
        if isinstance(e, Cast):
            return sql_temporal.cast_to(ev(e.operand), e.type_name, _failure(text))
        assert isinstance(e, Call)
        if e.name in MORE_FUNCTIONS:
            return sql_temporal.call_function(e.name, [ev(a) for a in e.args], _failure(text))
        return _call(e, [ev(a) for a in e.args], text)

    try:
        return ev(expr)
    except pa.ArrowInvalid as exc:  # an integer overflow of + - * abs or unary minus
        if "overflow" not in str(exc):
            raise
        raise UnsupportedConstraintError(
            text, "integer overflow", problem=f"an integer overflows ({exc}); Spark without ANSI mode wraps it"
        ) from None


def _binary(op: str, left: Value, right: Value, text: str) -> Value:
    """``left op right`` of a comparison or arithmetic operator."""
    if op in _ARITH_OPS and _is_decimal_arith(left.type, right.type):
        return _decimal_arith(op, left, right)
    a, b = _unify(left, right, text)
    if op in _COMPARE:
        return _compare(op, a, b, text)
    if op == "<=>":
        a_null, b_null = pc.is_null(a), pc.is_null(b)
        return pc.if_else(pc.or_(a_null, b_null), pc.and_(a_null, b_null), _compare("=", a, b, text))
    return _arith(op, a, b, text)


def _unary(op: str, v: Value, text: str) -> Value:
    if op == "not":
        return pc.invert(_as_bool(v, text, "NOT applied to a value"))
    if op == "neg":
        return pc.negate_checked(v)
    if op == "is_null":
        return pc.is_null(v)
    return pc.is_valid(v)


def _failure(text: str) -> Callable[[str, str], Exception]:
    def fail(construct: str, problem: str) -> Exception:
        return UnsupportedConstraintError(text, construct, problem=problem)

    return fail


_EXACT_ARITH: dict[str, Callable[..., Any]] = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}


_ARITH_OPS = frozenset({"+", "-", "*", "/", "%"})


def _is_decimal_arith(ta: pa.DataType, tb: pa.DataType) -> bool:
    """Whether Spark computes ``a op b`` of these types as decimals: both exact numbers (or
    NULL), one a decimal."""
    exact = all(pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_null(t) for t in (ta, tb))
    return exact and any(pa.types.is_decimal(t) for t in (ta, tb))


def _decimal_shape(t: pa.DataType) -> tuple[int, int]:
    """(precision, scale) of a decimal, or of an integer type as Spark widens it."""
    if pa.types.is_decimal(t):
        return t.precision, t.scale
    return _INTEGER_DIGITS.get(getattr(t, "bit_width", 0), 1), 0


def _adjust_precision_scale(precision: int, scale: int) -> tuple[int, int]:
    """Spark's ``DecimalType.adjustPrecisionScale`` (``allowPrecisionLoss``, the default): a
    result wider than 38 digits keeps its integer digits and at least 6 (or its) places."""
    if precision <= _MAX_DECIMAL_PRECISION:
        return precision, scale
    min_scale = min(scale, 6)
    return _MAX_DECIMAL_PRECISION, max(_MAX_DECIMAL_PRECISION - (precision - scale), min_scale)


def _decimal_result_shape(op: str, ta: pa.DataType, tb: pa.DataType) -> tuple[int, int]:
    """The decimal type Spark's ``DecimalPrecision`` gives ``a op b``."""
    (p1, s1), (p2, s2) = _decimal_shape(ta), _decimal_shape(tb)
    if op in ("+", "-"):
        scale = max(s1, s2)
        return _adjust_precision_scale(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return _adjust_precision_scale(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(6, s1 + p2 + 1)
        return _adjust_precision_scale(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)
    return min(min(p1 - s1, p2 - s2) + scale, _MAX_DECIMAL_PRECISION), scale


def _decimal_arith(op: str, a: Value, b: Value) -> Value:
    """``a op b`` of exact numbers (one a decimal) as Spark computes it without ANSI mode:
    exactly, rounded half up to the result type of :func:`_decimal_result_shape`, NULL when
    it does not fit in that type (or the divisor is zero)."""
    precision, scale = _decimal_result_shape(op, a.type, b.type)
    target = pa.decimal128(precision, scale)
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        return _python_decimal_arith(op, a, b, precision, scale)
    exact: Value | None = None
    if op in _EXACT_ARITH:
        try:
            exact = _EXACT_ARITH[op](_as_decimal256(a), _as_decimal256(b))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            exact = None
    if exact is None:
        return _python_decimal_arith(op, a, b, precision, scale)
    digits = exact.type.precision - exact.type.scale  # the result has at most scale <= exact.type.scale places
    rounded = pc.round(exact, scale, round_mode="half_towards_infinity").cast(pa.decimal256(digits + scale, scale))
    limit = pa.scalar(Decimal(10) ** (precision - scale), pa.decimal256(precision - scale + 1, 0))
    fits = pc.less(pc.abs(rounded), limit)
    return pc.if_else(fits, rounded, pa.scalar(None, rounded.type)).cast(target)


def _as_decimal256(v: Value) -> Value:
    precision, scale = _decimal_shape(v.type)
    return v.cast(pa.decimal256(precision, scale))


def _python_decimal_arith(op: str, a: Value, b: Value, precision: int, scale: int) -> Value:
    """:func:`_decimal_arith` row by row with Python decimals (a division or remainder, or a
    product too wide for decimal256)."""

    def one(x: Decimal | None, y: Decimal | None) -> Decimal | None:
        if x is None or y is None or (op in ("/", "%") and y == 0):
            return None
        with localcontext() as ctx:
            ctx.prec = 2 * _MAX_WIDE_PRECISION
            ctx.rounding = ROUND_HALF_UP
            exact = {"+": x + y, "-": x - y, "*": x * y, "/": x / y, "%": x % y}[op]
            value = exact.quantize(Decimal(1).scaleb(-scale))
        return value if abs(value) < Decimal(10) ** (precision - scale) else None

    return _row_by_row(lambda x, y: one(_as_decimal(x), _as_decimal(y)), a, b, pa.decimal128(precision, scale))


def _row_by_row(one: Callable[[Any, Any], Any], a: Value, b: Value, target: pa.DataType) -> Value:
    """``one`` of each row's Python values of ``a`` and ``b`` (arrays or scalars), as ``target``."""
    if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar):
        return pa.scalar(one(a.as_py(), b.as_py()), target)
    n = len(b if isinstance(a, pa.Scalar) else a)
    xs = [a.as_py()] * n if isinstance(a, pa.Scalar) else a.to_pylist()
    ys = [b.as_py()] * n if isinstance(b, pa.Scalar) else b.to_pylist()
    return pa.array([one(x, y) for x, y in zip(xs, ys)], target)


def _as_decimal(x: Any) -> Decimal | None:
    return None if x is None else Decimal(x)


def _arith(op: str, a: Value, b: Value, text: str) -> Value:
    if not all(_is_numeric(t) or pa.types.is_null(t) for t in (a.type, b.type)):
        what = f"{a.type} {op} {b.type}"
        raise UnsupportedConstraintError(text, what, problem=f"no arithmetic {what}")
    if pa.types.is_null(a.type) and pa.types.is_null(b.type):
        return pa.scalar(None, pa.null())
    if op in _EXACT_ARITH:
        return _EXACT_ARITH[op](a, b)
    if op == "/":  # a long beyond 2**53 rounds to the nearest double, as Spark casts it
        fa, fb = a.cast(pa.float64(), safe=False), b.cast(pa.float64(), safe=False)
        return pc.divide(fa, _zero_to_null(fb))
    # % : the sign follows the dividend (Java's remainder)
    b = _zero_to_null(b)
    if pa.types.is_integer(a.type) and pa.types.is_integer(b.type):
        return pc.subtract(a, pc.multiply(b, pc.divide(a, b)))
    return _float_remainder(a.cast(pa.float64(), safe=False), b.cast(pa.float64(), safe=False))


def _float_remainder(a: Value, b: Value) -> Value:
    """Java's ``%`` of doubles (C's ``fmod``, exact: ``0 % inf`` is 0, ``inf % 2`` NaN), row by
    row; NULL where either is NULL."""

    def one(x: float | None, y: float | None) -> float | None:
        if x is None or y is None:
            return None
        try:
            return math.fmod(x, y)
        except ValueError:  # an infinite dividend
            return math.nan

    return _row_by_row(one, a, b, pa.float64())


def _call(e: Call, args: list[Value], text: str) -> Value:
    if e.name == "coalesce":
        values = list(args)
        target = next((v.type for v in values if not pa.types.is_null(v.type)), pa.null())
        if pa.types.is_null(target):
            return values[0]
        for i in range(1, len(values)):
            values[0], values[i] = _unify(values[0], values[i], text)
        target = values[0].type
        return pc.coalesce(*[_cast(v, target, text) for v in values])
    (value,) = args
    if pa.types.is_null(value.type):
        return pa.scalar(None, pa.int64() if e.name == "length" else pa.string() if e.name != "abs" else pa.null())
    if e.name == "abs":
        if not _is_numeric(value.type):
            raise UnsupportedConstraintError(text, "abs()", problem=f"abs() of {value.type}")
        return pc.abs_checked(value)
    if e.name == "length":
        if pa.types.is_binary(value.type) or pa.types.is_large_binary(value.type):
            return pc.binary_length(value)
        if not (pa.types.is_string(value.type) or pa.types.is_large_string(value.type)):
            value = sql_temporal.cast_to(value, "string", _failure(text))
        return pc.utf8_length(value)
    if not (pa.types.is_string(value.type) or pa.types.is_large_string(value.type)):
        value = sql_temporal.cast_to(value, "string", _failure(text))
    return pc.utf8_lower(value) if e.name == "lower" else pc.utf8_upper(value)
