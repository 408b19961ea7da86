"""Spark's column name resolver (``SQLConf.resolver``): names are equal case-insensitively
unless the session sets ``spark.sql.caseSensitive=true``, then only when spelled alike.
Delta resolves the names a command assigns (UPDATE's and MERGE's SET targets) with it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CASE_INSENSITIVE", "CASE_SENSITIVE_CONF", "Resolver", "session_resolver"]

#: Spark's ``SQLConf.CASE_SENSITIVE`` (default false).
CASE_SENSITIVE_CONF = "spark.sql.caseSensitive"


@dataclass(frozen=True)
class Resolver:
    """How names are compared: ``case_sensitive`` as the session's ``spark.sql.caseSensitive``."""

    case_sensitive: bool = False

    def key(self, name: str) -> str:
        """``name`` as compared: itself, or lower-cased when case does not matter."""
        return name if self.case_sensitive else name.lower()

    def __call__(self, a: str, b: str) -> bool:
        return self.key(a) == self.key(b)

    def find(self, name: str, candidates: Iterable[str]) -> str | None:
        """The candidate ``name`` resolves to (None: none does)."""
        return next((c for c in candidates if self(c, name)), None)


#: Spark's default resolver (``spark.sql.caseSensitive=false``), where no session is at hand.
CASE_INSENSITIVE = Resolver()


def session_resolver(spark: SparkSession | None) -> Resolver:
    """The resolver of ``spark``'s ``spark.sql.caseSensitive`` (case-insensitive without a session)."""
    if spark is None:
        return CASE_INSENSITIVE
    return Resolver(str(spark.conf.get(CASE_SENSITIVE_CONF, "false")).strip().lower() == "true")
