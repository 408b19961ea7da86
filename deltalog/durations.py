"""The one duration parser of deltalog: table properties, commit-lock settings and storage
options all read their durations here.

Delta writes durations as a Spark ``CalendarInterval`` string (``DeltaConfigs.parseCalendarInterval``,
the grammar of Spark's ``IntervalUtils`` and Delta Kernel's ``IntervalParserUtils``)::

    [interval] <number> <unit> [<number> <unit> ...]

- the ``interval`` prefix is optional; case does not matter; a number may carry a sign;
- units, singular or plural: ``week``, ``day``, ``hour``, ``minute``, ``second``,
  ``millisecond``, ``microsecond`` (``"interval 7 days"``, ``"1 day 12 hours"``);
- only seconds take a fraction (``"1.5 seconds"``); a number and its unit are separated by
  a space (``"7days"`` is refused, as Delta refuses it);
- months and years are refused (their length varies), and so is a negative total.

:func:`parse_interval` accepts exactly that, so every value it accepts in a table property
is one Delta accepts too. :func:`parse_duration`, for deltalog's own settings (the Redis
lock, storage retries), also accepts the compact ``500ms``, ``15s``, ``2m``/``2min``, ``1h``,
``1d`` and a bare number of seconds.

A bad value raises :class:`InvalidDurationError`, naming the setting and the value. This
module sits below every layer (it imports only the error façade), so the log stores use it
as well as the engine.
"""

from __future__ import annotations

import re
from datetime import timedelta

from deltalog.errors import DeltaError

__all__ = ["InvalidDurationError", "parse_duration", "parse_interval"]


class InvalidDurationError(DeltaError, ValueError):
    """A duration setting has a value that is not a duration (or one Delta refuses)."""


_MICROS = {
    "week": 7 * 86_400_000_000,
    "day": 86_400_000_000,
    "hour": 3_600_000_000,
    "minute": 60_000_000,
    "second": 1_000_000,
    "millisecond": 1_000,
    "microsecond": 1,
}
#: longest first, so ``millisecond`` is not read as ``minute``... and ``month`` is caught
_UNIT_NAMES = ("millisecond", "microsecond", "minute", "second", "month", "week", "hour", "year", "day")
_PART = re.compile(r"([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)\s+([a-z]+)")
_COMPACT = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)?$")
_COMPACT_MICROS = {
    "ms": _MICROS["millisecond"],
    "s": _MICROS["second"],
    "": _MICROS["second"],
    "m": _MICROS["minute"],
    "min": _MICROS["minute"],
    "h": _MICROS["hour"],
    "d": _MICROS["day"],
}
_EXAMPLE = "write e.g. 'interval 7 days' or '1 day 12 hours'"


def _unit(word: str, name: str, value: str) -> str:
    for unit in _UNIT_NAMES:
        if word in (unit, unit + "s"):
            if unit in ("month", "year"):
                raise InvalidDurationError(
                    f"{name}={value!r}: months and years are not allowed in a Delta interval "
                    "(their length varies); use days or weeks"
                )
            return unit
    raise InvalidDurationError(
        f"{name}={value!r}: unknown unit {word!r}; use week, day, hour, minute, second, millisecond or microsecond"
    )


def _part_micros(sign: str, number: str, unit: str, name: str, value: str) -> int:
    whole, _, fraction = number.partition(".")
    if fraction and unit != "second":
        raise InvalidDurationError(f"{name}={value!r}: only seconds can have a fractional part, not {unit}s")
    if len(fraction) > 9:
        raise InvalidDurationError(f"{name}={value!r}: an interval has at most nanosecond precision")
    micros = int(whole or "0") * _MICROS[unit] + int(fraction[:6].ljust(6, "0"))
    return -micros if sign == "-" else micros


def parse_interval(value: str, name: str = "interval") -> timedelta:
    """Delta's ``CalendarInterval`` spelling (``"interval 7 days"``) as a timedelta;
    :class:`InvalidDurationError` (naming ``name``) when Delta would refuse it."""
    text = value.strip().lower()
    if not text:
        raise InvalidDurationError(f"{name}={value!r}: an interval cannot be blank; {_EXAMPLE}")
    if text.startswith("interval"):
        rest = text[len("interval") :]
        if not rest[:1].isspace():
            raise InvalidDurationError(f"{name}={value!r} is not an interval; {_EXAMPLE}")
        text = rest.strip()
    total = 0
    pos = 0
    while pos < len(text):
        m = _PART.match(text, pos)
        end = m.end() if m is not None else pos
        if m is None or (end < len(text) and not text[end].isspace()):
            raise InvalidDurationError(f"{name}={value!r} is not an interval; {_EXAMPLE}")
        unit = _unit(m.group(3), name, value)
        total += _part_micros(m.group(1), m.group(2), unit, name, value)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if total < 0:
        raise InvalidDurationError(f"{name}={value!r}: an interval must not be negative")
    return timedelta(microseconds=total)


def parse_duration(value: str | float | int, name: str) -> timedelta:
    """A duration setting of deltalog's own: Delta's interval spelling, or the compact
    ``500ms`` / ``15s`` / ``2m`` / ``2min`` / ``1h`` / ``1d``, or a bare number of seconds."""
    if isinstance(value, bool):
        raise InvalidDurationError(f"{name}={value!r} is not a duration; write e.g. 500ms, 15s, 2m, 1d")
    if isinstance(value, (int, float)):
        if value < 0:
            raise InvalidDurationError(f"{name}={value!r}: a duration must not be negative")
        return timedelta(seconds=value)
    m = _COMPACT.match(value.strip().lower())
    if m is not None:
        return timedelta(microseconds=round(float(m.group(1)) * _COMPACT_MICROS[m.group(2) or ""]))
    try:
        return parse_interval(value, name)
    except InvalidDurationError:
        raise InvalidDurationError(
            f"{name}={value!r} is not a duration; write e.g. 500ms, 15s, 2m, 1d or 'interval 7 days'"
        ) from None
