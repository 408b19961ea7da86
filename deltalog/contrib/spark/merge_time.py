"""One current time for a whole MERGE, as Delta's ``PreprocessTableMerge.transformTimestamps``.

A MERGE reads its source and evaluates its conditions and values in several Spark jobs (the
source's first read, pass 1, pass 2), and Spark fixes ``current_timestamp()`` / ``now()`` /
``current_date()`` / ``localtimestamp()`` / ``current_timezone()`` once per job. Delta
replaces them, in the source, the search and clause conditions and the assigned values, by
literals of one instant, so ``ON s.ts = now()`` matches rows whose source column is
``current_timestamp()``, and ``SET a = s.ts, b = now()`` writes equal values.

Here one Spark plan holds the source and every expression that may name such a function, and
Spark's own ``ComputeCurrentTime`` rule fixes them all at once. The source then continues as
that rewritten plan; an expression that changed continues as the SQL text of its rewritten
form (``TIMESTAMP '...'`` literals). Expressions and sources without these functions are left
as they are (no plan is built for them). It needs a classic session (the table API's MERGE
does); the rewrite uses Spark's internal classes through py4j.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = ["PinnedTime", "pin_current_time"]

#: the names of the functions Spark's ``CURRENT_LIKE`` pattern covers, as SQL text and as
#: an analyzed plan prints them
_CURRENT_LIKE = re.compile(r"(?i)\b(current_timestamp|now|current_date|curdate|localtimestamp|current_timezone)\b")


@dataclass(frozen=True)
class PinnedTime:
    """The MERGE's inputs with one current time: the source, the expressions evaluated on the
    joined rows, and those evaluated on the target's rows alone (``whenNotMatchedBySource``),
    each in the order given."""

    source: DataFrame
    joint: list[str | Column | None]
    by_source: list[str | Column | None]


def _text(e: str | Column | None) -> str:
    return "" if e is None else e if isinstance(e, str) else str(e)


def _may_read_time(source: DataFrame, expressions: Sequence[str | Column | None]) -> bool:
    if any(_CURRENT_LIKE.search(_text(e)) for e in expressions):
        return True
    return bool(_CURRENT_LIKE.search(source._jdf.queryExecution().analyzed().toString()))


def _probe(
    source: DataFrame,
    target: DataFrame,
    joint: Sequence[str | Column | None],
    by_source: Sequence[str | Column | None],
) -> DataFrame:
    """One plan: (source x target) projected to ``joint``, next to target projected to
    ``by_source``; a None expression is a true literal."""
    from pyspark.sql import functions as F

    def columns(prefix: str, exprs: Sequence[str | Column | None]) -> list[Column]:
        out = [F.lit(True) if e is None else F.expr(e) if isinstance(e, str) else e for e in exprs]
        return [c.alias(f"__deltalog_{prefix}{i}") for i, c in enumerate(out)]

    left = source.crossJoin(target).select(*columns("j", joint), F.current_timestamp().alias("__deltalog_now"))
    return left.crossJoin(target.select(*columns("b", by_source)))


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
    pinned = rule.apply(analyzed)
    left, right = pinned.left(), pinned.right()
    source_plan, old_source_plan = left.child().left(), analyzed.left().child().left()
    if not source_plan.fastEquals(old_source_plan):
        from pyspark.sql import DataFrame as PyDataFrame

        jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, source_plan)
        source = PyDataFrame(jdf, spark)
    return PinnedTime(
        source=source,
        joint=_rewritten(joint, analyzed.left().projectList(), left.projectList()),
        by_source=_rewritten(by_source, analyzed.right().projectList(), right.projectList()),
    )


def _rewritten(exprs: Sequence[str | Column | None], before: Any, after: Any) -> list[str | Column | None]:
    """Each of ``exprs`` unchanged, or as the SQL text of its rewritten form when the rule
    replaced a function in it (``before``/``after``: the probe's projections, aliases)."""
    out: list[str | Column | None] = []
    for i, e in enumerate(exprs):
        old, new = before.apply(i).child(), after.apply(i).child()
        out.append(e if e is None or old.fastEquals(new) else str(new.sql()))
    return out
