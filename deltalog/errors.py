"""The root of deltalog's error hierarchy.

Every error deltalog raises on purpose derives from :class:`DeltaError`, so callers can
catch one class. Errors from each layer live next to that layer
(``deltalog.logstores.errors``, ``deltalog.txn.errors``) and subclass this one.
"""

from __future__ import annotations

__all__ = ["DeltaError"]


class DeltaError(Exception):
    """Base class of every error deltalog raises deliberately."""
