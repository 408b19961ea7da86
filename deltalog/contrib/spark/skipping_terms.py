"""The file-skipping terms of a predicate given as SQL text (a read's ``where``, a DML
condition), as Delta's ``DataFiltersBuilder.constructDataFilters`` builds its skipping
predicate from a filter.

The text is a boolean expression of ``AND``, ``OR``, ``NOT`` and parentheses over
``column <op> literal`` (either side), ``column IS [NOT] NULL``, ``column [NOT] IN (...)``,
``column [NOT] BETWEEN a AND b`` and ``column [NOT] LIKE 'pattern'`` terms. As in Delta:

- an ``AND`` skips by each side that can skip; an ``OR`` only when both sides can (a
  disjunction term, :data:`~deltalog.contrib.spark.scan.OR`);
- ``NOT`` is pushed into ``AND``/``OR`` by De Morgan's laws and folded into the comparison
  it negates (``NOT a = 1`` is ``a != 1``, which skips a file whose values are all 1);
  any other negation (``NOT IN``, ``NOT LIKE``) skips nothing;
- ``LIKE 'abc%'`` skips as ``StartsWith('abc')`` (Spark's ``LikeSimplification`` rewrites it
  so), a pattern without wildcards as ``=``, and other patterns by their literal prefix.

Text outside this grammar (functions, arithmetic, column-to-column comparisons) skips no
file at all: Spark still evaluates the predicate on every row, so skipping only ever saves
work.
"""

from __future__ import annotations

from typing import Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.predicates import literal_value, tokenize
from deltalog.contrib.spark.scan import OR, Term

__all__ = ["skipping_terms"]

#: the comparison a swapped ``literal <op> column`` stands for
_SWAPPED = {"=": "=", "!=": "!=", "<=>": "<=>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: Delta folds NOT into these comparisons (``constructDataFilters``)
_NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "isnull": "notnull", "notnull": "isnull"}

# the parsed expression: ("and", left, right), ("or", left, right), ("not", child),
# ("term", Term), ("true",) for a term that skips nothing
_Node = tuple[Any, ...]


def skipping_terms(text: str, qualifier: str | None = None) -> list[Term]:
    """The skipping terms of the predicate ``text`` (a conjunction; empty when nothing can
    be skipped by it). A column qualified with ``qualifier`` (``t.day``) names ``day``."""
    try:
        node = _Parser(text, qualifier).parse()
    except DeltaAnalysisError:
        return []
    return _terms(node, negated=False)


def _terms(node: _Node, negated: bool) -> list[Term]:
    """``node`` (``NOT node`` when ``negated``) as a conjunction of skipping terms."""
    kind = node[0]
    if kind == "not":
        return _terms(node[1], not negated)
    if kind == "term":
        term: Term = node[1]
        if not negated:
            return [term]
        op = _NEGATED.get(term[1])
        return [] if op is None else [(term[0], op, term[2])]
    if kind in ("and", "or"):
        left, right = _terms(node[1], negated), _terms(node[2], negated)
        if (kind == "and") != negated:  # AND, or NOT OR (De Morgan)
            return [*left, *right]
        return _disjunction(left, right)
    return []  # "true": skips nothing


def _disjunction(left: list[Term], right: list[Term]) -> list[Term]:
    """``left OR right`` (each a conjunction): nothing when either side constrains nothing."""
    if not left or not right:
        return []

    def conjunctions(terms: list[Term]) -> tuple[tuple[Term, ...], ...]:
        if len(terms) == 1 and terms[0][1] == OR:
            return tuple(terms[0][2])
        return (tuple(terms),)

    return [("", OR, conjunctions(left) + conjunctions(right))]


class _Parser:
    """Recursive descent over :func:`~deltalog.contrib.spark.predicates.tokenize`'s tokens:
    ``OR`` binds loosest, then ``AND``, then ``NOT``."""

    def __init__(self, text: str, qualifier: str | None) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.prefix = f"{qualifier.lower()}." if qualifier else None

    def parse(self) -> _Node:
        node = self._or()
        if self.i != len(self.tokens):
            self._fail()
        return node

    def _fail(self) -> Any:
        raise DeltaAnalysisError(f"no skipping terms in {self.text!r}")

    def _word(self, offset: int = 0) -> str | None:
        j = self.i + offset
        return self.tokens[j][1].lower() if j < len(self.tokens) else None

    def _take(self, word: str) -> bool:
        if self._word() == word:
            self.i += 1
            return True
        return False

    def _or(self) -> _Node:
        node = self._and()
        while self._take("or"):
            node = ("or", node, self._and())
        return node

    def _and(self) -> _Node:
        node = self._not()
        while self._take("and"):
            node = ("and", node, self._not())
        return node

    def _not(self) -> _Node:
        if self._take("not"):
            return ("not", self._not())
        if self._take("("):
            node = self._or()
            return node if self._take(")") else self._fail()
        return self._predicate()

    def _predicate(self) -> _Node:
        """One predicate: a comparison, IS [NOT] NULL, [NOT] IN / BETWEEN / LIKE. A side that
        is no plain column or literal (arithmetic, a function call) makes it skip nothing."""
        left = self._operand()
        negate = self._take("not")
        word = self._word()
        if word == "is" and not negate:
            self.i += 1
            op = "notnull" if self._take("not") else "isnull"
            if not self._take("null"):
                self._fail()
            return ("term", (left[1], op, None)) if left[0] == "column" else ("true",)
        if word in ("in", "between", "like"):
            self.i += 1
            node = {"in": self._in, "between": self._between, "like": self._like}[word]()
            node = _on_column(left, node)
            return ("not", node) if negate else node
        if negate or self.i >= len(self.tokens) or self.tokens[self.i][0] != "op":
            self._fail()
        op = self._op()
        return _comparison(left, op, self._operand())

    def _operand(self) -> tuple[str, Any]:
        """``("column", name)``, ``("literal", value)`` or ``("other", None)`` for an
        expression of several primaries joined by arithmetic operators or a function call."""
        kind, value = self._primary()
        while self.i < len(self.tokens) and self.tokens[self.i][0] == "arith":
            self.i += 1
            self._primary()
            kind, value = "other", None
        return kind, value

    def _primary(self) -> tuple[str, Any]:
        if self.i >= len(self.tokens):
            self._fail()
        kind, text = self.tokens[self.i]
        if kind == "arith" and text in "-+~":  # a unary operator
            self.i += 1
            self._primary()
            return "other", None
        if kind != "ident" or text.lower() in ("true", "false", "null"):
            return "literal", self._literal()
        if text.lower() in _OPAQUE_WORDS:
            self._fail()
        self.i += 1
        if self._word() == "(":  # a function call
            self._skip_parenthesized()
            return "other", None
        if text.startswith("`") and "." in text:  # a term's column is a path: s.a is field a of s
            return "other", None
        return "column", self._column(text)

    def _skip_parenthesized(self) -> None:
        depth = 0
        while self.i < len(self.tokens):
            depth += {"(": 1, ")": -1}.get(self.tokens[self.i][1], 0)
            if self._word() in _OPAQUE_WORDS:
                self._fail()
            self.i += 1
            if depth == 0:
                return
        self._fail()

    def _column(self, text: str) -> str:
        name = text.strip("`")
        if self.prefix and name.lower().startswith(self.prefix):
            return name[len(self.prefix) :]
        return name

    def _literal(self) -> Any:
        if self.i >= len(self.tokens):
            self._fail()
        value = literal_value(*self.tokens[self.i])
        self.i += 1
        return value

    def _op(self) -> str:
        op = self.tokens[self.i][1]
        self.i += 1
        return {"==": "=", "<>": "!="}.get(op, op)

    def _in(self) -> _Node:
        if not self._take("("):
            self._fail()
        values = [self._operand()]
        while self._take(","):
            values.append(self._operand())
        if not self._take(")"):
            self._fail()
        if any(kind != "literal" for kind, _ in values):
            return ("true",)
        return ("term", ("", "in", tuple(v for _, v in values)))

    def _between(self) -> _Node:
        low = self._operand()
        if not self._take("and"):
            self._fail()
        high = self._operand()
        return ("and", _comparison(("column", ""), ">=", low), _comparison(("column", ""), "<=", high))

    def _like(self) -> _Node:
        kind, pattern = self._operand()
        if kind != "literal" or not isinstance(pattern, str):
            return ("true",)
        cut = min((j for j, c in enumerate(pattern) if c in "%_\\"), default=len(pattern))
        if cut == len(pattern):
            return ("term", ("", "=", pattern))
        # the literal prefix bounds the values (its NOT skips nothing: startswith has no negation)
        return ("term", ("", "startswith", pattern[:cut])) if cut else ("true",)


#: words that open an expression the parser does not follow (CASE ... WHEN a AND b ...)
_OPAQUE_WORDS = frozenset({"case", "when", "then", "else", "end", "exists", "select"})


def _comparison(left: tuple[str, Any], op: str, right: tuple[str, Any]) -> _Node:
    """``left <op> right`` as a term when one side is a column and the other a literal."""
    if left[0] == "literal" and right[0] == "column":
        left, right, op = right, left, _SWAPPED[op]
    if left[0] != "column" or right[0] != "literal":
        return ("true",)
    column, value = left[1], right[1]
    if op == "<=>":  # null-safe equality: Delta's And(IsNotNull(a), a = v), or IsNull(a)
        if value is None:
            return ("term", (column, "isnull", None))
        return ("and", ("term", (column, "notnull", None)), ("term", (column, "=", value)))
    if value is None:  # a comparison with NULL is never true: it skips as IS NULL would
        return ("term", (column, "isnull", None))
    return ("term", (column, op, value))


def _on_column(left: tuple[str, Any], node: _Node) -> _Node:
    """``node`` (built with the column left blank) on the column ``left``; a term on another
    operand skips nothing."""
    if node[0] == "term":
        if left[0] != "column":
            return ("true",)
        return ("term", (left[1], *node[1][1:]))
    if node[0] in ("and", "or"):
        return (node[0], _on_column(left, node[1]), _on_column(left, node[2]))
    return node
