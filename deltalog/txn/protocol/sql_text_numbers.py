"""Text cast to a number as Spark's ANSI cast reads it (``CAST(s AS BIGINT)``, and the implicit
cast of ``s = 1`` on a string column).

Spark trims blanks and ASCII control characters from both ends and takes a leading sign
(``' 1 '``, ``'+2'``); an integer is digits only (``'1.5'`` is malformed, not truncated); a
double is Java's ``Double.parseDouble`` (``'.5'``, ``'1.'``, ``'1e2'``, a ``d``/``f`` suffix,
``NaN``, ``Infinity``) plus Spark's case-free ``inf``/``infinity``/``nan``. Text that does not
read fails, as with ANSI mode on (Spark 4's default): a :class:`TextCastError` naming the value,
as Spark's ``CAST_INVALID_INPUT``. Java's hexadecimal doubles (``0x1p3``) are not read.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["TextCastError", "cast_text_to_number"]

Value: TypeAlias = Any  # pa.Array | pa.ChunkedArray | pa.Scalar of strings

_BLANKS = "".join(chr(c) for c in range(33))  # what Spark's UTF8String.trimAll removes
_INTEGER = r"^[+-]?[0-9]+$"
_DOUBLE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[dDfF]?$"
_SPECIAL_DOUBLES = {
    **dict.fromkeys(("inf", "+inf", "infinity", "+infinity"), float("inf")),
    **dict.fromkeys(("-inf", "-infinity"), float("-inf")),
    "nan": float("nan"),
}
_JAVA_SPECIALS = {"NaN", "+NaN", "-NaN", "Infinity", "+Infinity", "-Infinity"}


class TextCastError(ValueError):
    """Text that Spark's ANSI cast cannot read as the number type (``CAST_INVALID_INPUT``)."""


def cast_text_to_number(values: Value, target: pa.DataType) -> Value:
    """``values`` (strings; nulls stay null) as the integer or floating ``target``."""
    if isinstance(values, pa.Scalar):
        return cast_text_to_number(pa.array([values.as_py()], pa.string()), target)[0]
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    text = pc.utf8_trim(values.cast(pa.string()), characters=_BLANKS)
    if pa.types.is_integer(target):
        _refuse_malformed(values, text, pc.match_substring_regex(text, _INTEGER), target)
        return _integers(values, text, target)
    if pa.types.is_floating(target):
        return _doubles(values, text, target).cast(target, safe=False)
    raise TypeError(f"not a number type: {target}")


def _spark_name(target: pa.DataType) -> str:
    names = {8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}
    if pa.types.is_integer(target):
        return names[target.bit_width]
    return "FLOAT" if target == pa.float32() else "DOUBLE"


def _malformed(original: object, target: pa.DataType) -> TextCastError:
    return TextCastError(
        f'[CAST_INVALID_INPUT] The value {original!r} of the type "STRING" cannot be cast to '
        f'"{_spark_name(target)}" because it is malformed'
    )


def _refuse_malformed(values: pa.Array, text: pa.Array, ok: pa.Array, target: pa.DataType) -> None:
    """Raise for the first non-null text ``ok`` does not accept."""
    bad = pc.and_kleene(pc.is_valid(text), pc.invert(ok))
    if pc.any(bad).as_py():
        raise _malformed(values.filter(bad)[0].as_py(), target)


def _integers(values: pa.Array, text: pa.Array, target: pa.DataType) -> pa.Array:
    """Digits read as the integer ``target``; one it cannot hold is malformed, as Spark's
    ``toLongExact``/``toIntExact`` find it."""
    digits = pc.replace_substring_regex(text, r"^\+", "")
    low, high = -(2 ** (target.bit_width - 1)), 2 ** (target.bit_width - 1) - 1
    try:
        return digits.cast(pa.int64()).cast(target)
    except pa.ArrowInvalid:
        pairs = zip(values.to_pylist(), digits.to_pylist(), strict=True)
        raise _malformed(next(v for v, d in pairs if d is not None and not low <= int(d) <= high), target) from None


def _doubles(values: pa.Array, text: pa.Array, target: pa.DataType) -> pa.Array:
    """Java's ``Double.parseDouble`` forms and Spark's special words."""
    special = pc.or_kleene(
        pc.is_in(pc.utf8_lower(text), pa.array(list(_SPECIAL_DOUBLES))), pc.is_in(text, pa.array(list(_JAVA_SPECIALS)))
    )
    _refuse_malformed(values, text, pc.or_kleene(special, pc.match_substring_regex(text, _DOUBLE)), target)
    parsed = pc.replace_substring_regex(pc.if_else(special, pa.scalar("0"), text), r"[dDfF]$", "").cast(pa.float64())
    if not pc.any(special).as_py():
        return parsed
    # the Java forms not in Spark's own list are a signed NaN
    words = [
        _SPECIAL_DOUBLES.get(t.lower(), float("nan")) if s else None
        for t, s in zip(text.to_pylist(), special.to_pylist(), strict=True)
    ]
    return pc.if_else(special, pa.array(words, pa.float64()), parsed)
