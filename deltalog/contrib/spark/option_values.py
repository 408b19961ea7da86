"""One option's value read as Delta's ``DeltaOptionParser`` reads it: names are matched
without case (Spark lower-cases a Python data source's option names), a boolean is
``true`` or ``false`` in any case, and a value Delta refuses is ``DELTA_ILLEGAL_OPTION``."""

from __future__ import annotations

from collections.abc import Mapping

from deltalog.contrib.spark.errors import InvalidWriteOptionError

__all__ = ["delta_boolean", "get_option", "illegal_option"]


def get_option(options: Mapping[str, str], key: str) -> str | None:
    """The value of option ``key`` (any case), None when not given."""
    lowered = key.lower()
    return next((v for k, v in options.items() if k.lower() == lowered), None)


def illegal_option(name: str, value: str | None, explain: str) -> InvalidWriteOptionError:
    """Delta's ``DeltaErrors.illegalDeltaOptionException`` (``DELTA_ILLEGAL_OPTION``)."""
    return InvalidWriteOptionError(f"DELTA_ILLEGAL_OPTION: Invalid value '{value}' for option '{name}', {explain}")


def delta_boolean(options: Mapping[str, str], name: str) -> bool | None:
    """Delta's ``DeltaOptionParser.toBoolean``: ``true`` / ``false`` (any case), else refused;
    None when not given."""
    value = get_option(options, name)
    if value is None:
        return None
    if value.strip().lower() not in ("true", "false"):
        raise illegal_option(name, value, "must be 'true' or 'false'")
    return value.strip().lower() == "true"
