"""One current time for a whole MERGE, as Delta's ``PreprocessTableMerge.transformTimestamps``.

A MERGE reads its source and evaluates its conditions and values in several Spark jobs (the
source's first read, pass 1, pass 2), and Spark fixes ``current_timestamp()`` / ``now()`` /
``current_date()`` / ``localtimestamp()`` / ``current_timezone()`` once per job. Delta
replaces them, in the source, the search and clause conditions and the assigned values, by
literals of one instant, so ``ON s.ts = now()`` matches rows whose source column is
``current_timestamp()``, and ``SET a = s.ts, b = now()`` writes equal values.

Here one Spark plan holds the source and every expression that may name such a function, and
Spark's own ``ComputeCurrentTime`` rule fixes the source's at once, giving the instant's
literals (``TIMESTAMP '...'``, ``DATE '...'``, ``TIMESTAMP_NTZ '...'``, the zone). The source
continues as that rewritten plan; a condition or value naming one of the functions continues as
its SQL text with the calls replaced by those literals (a Column given as such, as the SQL text
Spark prints for it once resolved, used only when Spark resolves that text again). The others
are left as they are, and nothing is built when neither the source nor an expression names
one. It needs a classic session (the table API's MERGE does); the rewrite uses Spark's
internal classes through py4j.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = ["PinnedTime", "pin_current_time", "substitute_current_time"]

log = logging.getLogger(__name__)

_NAMES = "current_timestamp|now|current_date|curdate|localtimestamp|current_timezone|unix_timestamp"
_CURRENT_LIKE = re.compile(rf"(?i)\b({_NAMES})\b")

#: SQL text: a string literal or a quoted identifier (kept as it is), or a name of one of them
_SCAN = re.compile(
    r"""(?P<skip>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`]|``)*`)"""
    rf"""|(?<![\w.`])(?P<name>{_NAMES})(?![\w`])(?P<parens>\s*\(\s*\))?""",
    re.IGNORECASE,
)

#: the probe's literal columns, in order, and the functions each one replaces
_LITERALS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("current_timestamp()", ("current_timestamp", "now")),
    ("current_date()", ("current_date", "curdate")),
    ("localtimestamp()", ("localtimestamp",)),
    ("current_timezone()", ("current_timezone",)),
)
#: the functions SQL also calls without parentheses (where no column has the name)
_BARE = ("current_timestamp", "current_date", "localtimestamp")


@dataclass(frozen=True)
class PinnedTime:
    """The MERGE's inputs with one current time: the source, the expressions evaluated on the
    joined rows, and those evaluated on the target's rows alone (``whenNotMatchedBySource``),
    each in the order given."""

    source: DataFrame
    joint: list[str | Column | None]
    by_source: list[str | Column | None]


def substitute_current_time(text: str, literals: Mapping[str, str], columns: frozenset[str]) -> str:
    """``text`` (SQL) with each call of a current-time function replaced by the literal
    ``literals`` gives for that function (lower-case names); string literals and quoted
    identifiers are kept, and a bare ``current_date`` stays a column when ``columns`` (lower
    case) has one of that name."""

    def replace(m: re.Match[str]) -> str:
        name = (m.group("name") or "").lower()
        if not name or (not m.group("parens") and (name not in _BARE or name in columns)):
            return m.group(0)
        return literals[name]

    return _SCAN.sub(replace, text)


def _may_read_time(source: DataFrame, expressions: Sequence[str | Column | None]) -> bool:
    if any(e is not None and _CURRENT_LIKE.search(e if isinstance(e, str) else str(e)) for e in expressions):
        return True
    return bool(_CURRENT_LIKE.search(source._jdf.queryExecution().analyzed().toString()))


def _columns(prefix: str, exprs: Sequence[str | Column | None]) -> list[Column]:
    from pyspark.sql import functions as F

    out = [F.lit(True) if e is None else F.expr(e) if isinstance(e, str) else e for e in exprs]
    return [c.alias(f"__deltalog_{prefix}{i}") for i, c in enumerate(out)]


def _probe(
    source: DataFrame,
    target: DataFrame,
    joint: Sequence[str | Column | None],
    by_source: Sequence[str | Column | None],
) -> DataFrame:
    """One plan: (source x target) projected to ``joint`` and the current-time literals, next
    to the target projected to ``by_source``; a None expression is a true literal."""
    from pyspark.sql import functions as F

    times = [F.expr(call).alias(f"__deltalog_t{i}") for i, (call, _) in enumerate(_LITERALS)]
    left = source.crossJoin(target).select(*_columns("j", joint), *times)
    return left.crossJoin(target.select(*_columns("b", by_source)))


def pin_current_time(
    source: DataFrame,
    target_schema: Callable[[], StructType],
    target_alias: str,
    joint: Sequence[str | Column | None],
    by_source: Sequence[str | Column | None],
) -> PinnedTime | None:
    """The MERGE's ``source`` and expressions with their current-time functions fixed to one
    instant, or None when neither names one (or the session is not classic). ``joint``
    expressions are resolved over the source and the target (aliased ``target_alias``, of
    ``target_schema()``), ``by_source`` ones over the target alone."""
    spark = source.sparkSession
    jvm: Any = getattr(spark, "_jvm", None)
    if jvm is None or not _may_read_time(source, [*joint, *by_source]):
        return None
    target = spark.createDataFrame([], target_schema()).alias(target_alias)
    analyzed = _probe(source, target, joint, by_source)._jdf.queryExecution().analyzed()
    rule = getattr(getattr(jvm.org.apache.spark.sql.catalyst.optimizer, "ComputeCurrentTime$"), "MODULE$")
    left = rule.apply(analyzed).left()
    source_plan = left.child().left()
    if not source_plan.fastEquals(analyzed.left().child().left()):
        from pyspark.sql import DataFrame as PyDataFrame

        source = PyDataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, source_plan), spark)
    projected = left.projectList()
    literals = {
        name: str(projected.apply(len(joint) + i).child().sql())
        for i, (_, names) in enumerate(_LITERALS)
        for name in names
    }
    literals["unix_timestamp"] = f"unix_timestamp({literals['now']})"  # no argument: the current time
    columns = frozenset(c.lower() for c in [*source.columns, *target.columns])
    pinned = _Pinning(source, target, literals, columns)
    return PinnedTime(
        source=source,
        joint=[pinned.expression(e, analyzed.left().projectList().apply(i).child(), True) for i, e in enumerate(joint)],
        by_source=[
            pinned.expression(e, analyzed.right().projectList().apply(i).child(), False)
            for i, e in enumerate(by_source)
        ],
    )


@dataclass(frozen=True)
class _Pinning:
    source: DataFrame
    target: DataFrame
    literals: Mapping[str, str]
    columns: frozenset[str]

    def expression(self, e: str | Column | None, resolved: Any, joint: bool) -> str | Column | None:
        """``e`` with its current-time calls replaced: a string's own text, a Column's text
        as Spark prints it resolved (``resolved``), kept only when Spark resolves it again
        (over the source and target when ``joint``, else the target)."""
        if e is None:
            return e
        text = e if isinstance(e, str) else str(resolved.sql())
        pinned = substitute_current_time(text, self.literals, self.columns)
        if pinned == text:
            return e
        if isinstance(e, str):
            return pinned
        rows = self.source.crossJoin(self.target) if joint else self.target
        try:
            rows.select(_columns("c", [pinned]))._jdf.queryExecution().analyzed()
        except Exception as exc:  # Spark's parse or analysis error: keep the Column
            log.warning(
                "MERGE keeps Spark's per-job current time in %s: its SQL text %r does not resolve (%s)", e, pinned, exc
            )
            return e
        return pinned
