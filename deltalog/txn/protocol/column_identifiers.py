"""Column names as Spark SQL spells them, for the table properties that list columns.

:func:`parse_column_list` reads a comma-separated list of column paths the way Delta does
(``DeltaSqlParserUtils.parseMultipartColumnList``: the SQL grammar's
``multipartIdentifierList``): ``a, s.b, `col with spaces`, `a.b`.c``. A name part is a
letter/digit/underscore word (ASCII only; keywords are names too) or a backquoted name
(a doubled backquote for one in the name); whitespace and SQL comments may surround the parts. As in
Spark, a word that is a number (``123``, ``1e5``, ``2L``) is not a name, ``a-b`` is refused
(it must be quoted), and the parser stops at the first text that cannot continue the list,
leaving it unread (:attr:`ColumnList.rest`): ``a b`` lists ``a``.

:func:`quote_if_needed` and :func:`column_sql` write names back (Spark's ``quoteIfNeeded``
and ``UnresolvedAttribute.sql``): a part is backquoted unless it is a plain word that does
not start with a digit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ColumnList", "ColumnPath", "column_sql", "parse_column_list", "quote_if_needed"]

#: a column's name parts, outermost first: ``("s", "x")`` for field ``x`` of struct ``s``
ColumnPath = tuple[str, ...]

_PLAIN = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_UNQUOTED = re.compile(r"[a-zA-Z0-9_]+")
_DOUBLE_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_RAW_STRING = re.compile(r"[rR](?:'[^']*'|\"[^\"]*\")")
_URI = re.compile(r"[^\W\d_]+://[\w/\-.?=&#%]+")
# Spark's lexer: its whitespace (WS), and its number tokens, which win over a word as long
_SPACE = frozenset(" \t\n\f\r\u000b\u00a0\u1680\u2028\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}
_INTEGER_NUMBER = re.compile(r"[0-9]+(?:[lsy]|(?:e[+-]?[0-9]+)?(?:bd|[fd])?)", re.IGNORECASE)
_DECIMAL_NUMBER = re.compile(r"(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?(?:bd|[fd])?", re.IGNORECASE)


def quote_if_needed(part: str) -> str:
    """``part`` as Spark writes a name: bare when a plain word, else backquoted."""
    return part if _PLAIN.fullmatch(part) else "`" + part.replace("`", "``") + "`"


def column_sql(path: Sequence[str]) -> str:
    """A column path as SQL text that :func:`parse_column_list` reads back as ``path``."""
    return ".".join(quote_if_needed(p) for p in path)


@dataclass(frozen=True)
class ColumnList:
    """The columns a list names, and the text Spark's parser leaves unread after them."""

    paths: tuple[ColumnPath, ...]
    rest: str = ""


@dataclass(frozen=True)
class _Token:
    kind: str  # word, quoted, string ("..."), "," "." "-", other, end
    value: str
    start: int
    end: int


def _skip_hidden(text: str, i: int) -> int:
    """The position after whitespace and comments at ``i`` (an unclosed ``/*`` runs to the end)."""
    while i < len(text):
        if text[i] in _SPACE:
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        elif text.startswith("/*", i) and not text.startswith("/*+", i):
            i = _comment_end(text, i)
        else:
            return i
    return i


def _comment_end(text: str, i: int) -> int:
    """The end of the (nested) bracketed comment starting at ``i``."""
    depth = 0
    while i < len(text):
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    return i


def _is_word_char(ch: str) -> bool:
    return ch.isalpha() or ch in "0123456789_"


def _word_end(text: str, i: int) -> int:
    while i < len(text) and _is_word_char(text[i]):
        i += 1
    return i


def _number_end(text: str, i: int) -> int:
    """The end of the number token at ``i`` (``i``: none). One with a decimal point counts
    only when no ASCII letter, digit or underscore follows it (Spark's ``isValidDecimal``)."""
    end = i
    integer = _INTEGER_NUMBER.match(text, i)
    if integer:
        end = integer.end()
    decimal = _DECIMAL_NUMBER.match(text, i)
    if decimal:
        after = text[decimal.end() : decimal.end() + 1]
        if not (after and after.isascii() and (after.isalnum() or after == "_")):
            end = max(end, decimal.end())
    return end


def _quoted(text: str, i: int) -> _Token:
    """The backquoted name at ``i``: the longest `...` with ```` `` ```` for a backquote (an
    unclosed one is not a name to Spark's lexer)."""
    j, closing = i + 1, -1
    while j < len(text):
        if text[j] == "`":
            closing = j  # the name may end here, or go on if this backquote is doubled
            if not text.startswith("``", j):
                break
            j += 2
        else:
            j += 1
    if closing < 0:
        return _Token("other", "`", i, i + 1)
    return _Token("quoted", text[i + 1 : closing].replace("``", "`"), i, closing + 1)


def _next_token(text: str, i: int) -> _Token:
    if i >= len(text):
        return _Token("end", "", i, i)
    number, word = _number_end(text, i), _word_end(text, i)
    if number > i and number >= word:  # Spark's number tokens come before IDENTIFIER
        return _Token("other", text[i:number], i, number)
    raw = _RAW_STRING.match(text, i)  # r'...': a string, not the name r
    if raw:
        return _Token("other", raw.group(), i, raw.end())
    if word > i:
        uri = _URI.match(text, i)  # Spark's lexer reads scheme://path as one (invalid) name
        end = uri.end() if uri else word
        return _Token("word", text[i:end], i, end)
    if text[i] == "`":
        return _quoted(text, i)
    if text[i] == '"':
        string = _DOUBLE_QUOTED.match(text, i)
        if string:
            return _Token("string", string.group(), i, string.end())
    if text.startswith("->", i):
        return _Token("other", "->", i, i + 2)
    return _Token(text[i] if text[i] in ",.-" else "other", text[i], i, i + 1)


#: what Spark's parser takes for the start of a name when it decides how a path goes on: a
#: "double-quoted" text too (a name where spark.sql.ansi.doubleQuotedIdentifiers is on),
#: which it then refuses
_NAME_LIKE = ("word", "quoted", "string")


class _Tokens:
    """The tokens of ``text``, read as the parser looks ahead (Spark reads no further)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ahead: list[_Token] = []
        self.position = _skip_hidden(text, 0)

    def peek(self, k: int = 0) -> _Token:
        while len(self.ahead) <= k:
            token = _next_token(self.text, self.position)
            self.position = _skip_hidden(self.text, token.end)
            self.ahead.append(token)
        return self.ahead[k]

    def take(self) -> _Token:
        token = self.peek()
        self.ahead.pop(0)
        return token


def _name(tokens: _Tokens) -> str:
    """One name part (Spark's ``errorCapturingIdentifier``); ValueError when there is none."""
    token = tokens.peek()
    if token.kind not in ("word", "quoted"):
        shown = "the end of the text" if token.kind == "end" else repr(token.value)
        raise ValueError(f"a column name was expected at position {token.start}, found {shown}")
    tokens.take()
    if token.kind == "word" and not _UNQUOTED.fullmatch(token.value):
        raise ValueError(f"the name {token.value!r} must be quoted in backquotes: `{token.value}`")
    if tokens.peek().kind == "-" and tokens.peek(1).kind in _NAME_LIKE:
        shown = token.value + "-" + tokens.peek(1).value
        raise ValueError(f"the name {shown!r} must be quoted in backquotes: `{shown}`")
    return token.value


def _path(tokens: _Tokens) -> ColumnPath:
    parts = [_name(tokens)]
    # Spark's parser continues a path only when a name follows the dot ("a." lists "a"), a
    # list on any comma ("a," is refused)
    while tokens.peek().kind == "." and tokens.peek(1).kind in _NAME_LIKE:
        tokens.take()
        parts.append(_name(tokens))
    return tuple(parts)


def parse_column_list(text: str) -> ColumnList:
    """The column paths ``text`` lists (Delta's ``parseMultipartColumnList``); a blank text
    lists none. Raises ValueError, saying where, when it does not start as a list."""
    if not text.strip():
        return ColumnList(())
    tokens = _Tokens(text)
    paths = [_path(tokens)]
    while tokens.peek().kind == ",":
        tokens.take()
        paths.append(_path(tokens))
    return ColumnList(tuple(paths), text[tokens.peek().start :].strip())
