"""What Delta refuses in the conditions of DELETE, UPDATE and MERGE, refused before anything
is read or written (Delta's ``PreprocessTableDelete`` / ``PreprocessTableUpdate`` /
``PreprocessTableMerge``):

- a subquery, in any of them (``DELTA_UNSUPPORTED_SUBQUERY``): the command would run it
  once per pass, and against a table it may be changing;
- a non-deterministic expression (``rand()``, ``uuid()``, ...) in MERGE's search or clause
  conditions (``DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED``): MERGE evaluates them in
  more than one pass, which could disagree about which rows match;
- a non-deterministic expression anywhere in a DELETE or UPDATE (its condition, an UPDATE's
  values): Spark's ``CheckAnalysis`` refuses such an expression in Delta's ``DeleteCommand`` and
  ``UpdateCommand`` (``INVALID_NON_DETERMINISTIC_EXPRESSIONS``; only MERGE's clause values,
  ``SupportsNonDeterministicExpression``, may be).

- a window, aggregate or generator function in a value UPDATE or MERGE assigns (Spark's
  ``CheckAnalysis`` refuses them in Delta's commands, ``UNSUPPORTED_EXPR_FOR_OPERATOR``):
  evaluated over the rewritten rows they would give each row a value of whichever rows the
  job happened to read.

The condition is analysed by Spark over a DataFrame holding the columns it may name (no job
runs) and its resolved expression inspected.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaAnalysisError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyspark.sql import Column, DataFrame

__all__ = [
    "refuse_non_deterministic",
    "refuse_special_expressions",
    "refuse_unresolved",
    "refuse_unsupported_condition",
]


def refuse_unresolved(
    rows: DataFrame, expression: Column, where: str, names: Sequence[str], *, aggregates: bool = False
) -> None:
    """Delta's ``DELTA_MERGE_UNRESOLVED_EXPRESSION`` (``ResolveDeltaMergeInto.resolveOrFail``)
    when ``expression`` names a column ``rows`` lacks; ``where`` names the clause, ``names`` the
    columns it may use. With ``aggregates`` (a condition), one holding an aggregate is MERGE's
    ``DELTA_AGGREGATION_NOT_SUPPORTED`` (``PreprocessTableMerge.checkCondition``), found by the
    same analysis."""
    from pyspark.errors import AnalysisException

    try:
        selected = rows.select(expression)._jdf.queryExecution().analyzed().expressions().head()
    except AnalysisException as exc:
        if exc.getCondition() == "MISSING_GROUP_BY":  # an aggregate beside a column: Spark's words for it
            jc: Any = expression._jc
            raise _aggregation_not_supported(f"{where} of MERGE operation", jc.toString()) from None
        if not (exc.getCondition() or "").startswith("UNRESOLVED_COLUMN"):
            raise
        name = (exc.getMessageParameters() or {}).get("objectName", "").replace("`", "")
        raise DeltaAnalysisError(
            f"DELTA_MERGE_UNRESOLVED_EXPRESSION: Cannot resolve {name} in {where} given columns {', '.join(names)}."
        ) from None
    jvm = rows.sparkSession._jvm
    assert jvm is not None  # a classic session: the table API runs Spark jobs from the driver
    if aggregates and jvm.org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression.containsAggregate(
        selected
    ):
        raise _aggregation_not_supported(f"{where} of MERGE operation", selected.child().sql())


def _aggregation_not_supported(where: str, text: str) -> DeltaAnalysisError:
    """MERGE's ``DELTA_AGGREGATION_NOT_SUPPORTED`` (``PreprocessTableMerge.checkCondition``)."""
    return DeltaAnalysisError(
        f"DELTA_AGGREGATION_NOT_SUPPORTED: Aggregate functions are not supported in the {where} (condition = {text})."
    )


def refuse_unsupported_condition(rows: DataFrame, condition: Column, where: str, *, deterministic: bool) -> None:
    """Raise :class:`DeltaAnalysisError` when ``condition`` (resolved over ``rows``) holds a
    subquery, or, with ``deterministic``, a non-deterministic expression; ``where`` names it
    in the message (``"DELETE"``, ``"search condition of MERGE operation"``, ...)."""
    jvm = rows.sparkSession._jvm
    assert jvm is not None  # a classic session: the table API runs Spark jobs from the driver
    analyzed = rows.filter(condition)._jdf.queryExecution().analyzed()
    expression = analyzed.condition()
    text = expression.sql()
    if jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery(expression):
        raise DeltaAnalysisError(
            f"DELTA_UNSUPPORTED_SUBQUERY: Subqueries are not supported in the {where} (condition = {text}); "
            "join the subquery's rows into the source, or collect its values into a literal list first"
        )
    if deterministic and not expression.deterministic():
        raise DeltaAnalysisError(
            f"DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED: Non-deterministic functions are not supported in "
            f"the {where} (condition = {text}); compute the value once into a column of the source"
        )


def refuse_non_deterministic(rows: DataFrame, expressions: Sequence[Column], where: str) -> None:
    """Raise :class:`DeltaAnalysisError` when one of ``expressions`` (resolved over ``rows``)
    is non-deterministic, as Spark's ``CheckAnalysis`` refuses it in a DELETE or UPDATE
    command (``INVALID_NON_DETERMINISTIC_EXPRESSIONS``); ``where`` names the command."""
    for expression in expressions:
        resolved = rows.select(expression)._jdf.queryExecution().analyzed().expressions().head()
        if not resolved.deterministic():
            raise DeltaAnalysisError(
                f"INVALID_NON_DETERMINISTIC_EXPRESSIONS: The operator expects a deterministic expression, but the "
                f"actual expression is {resolved.sql()} (in the {where}); compute the values first, e.g. into a "
                "column of a source DataFrame to MERGE"
            )


#: A plan node Spark's analyzer puts a window, aggregate or generator function in, as a line of
#: the plan's tree string (``+- Aggregate [...]``)
_SPECIAL_NODE = re.compile(r"^[\s:|+-]*(Window|Aggregate|Generate) ", re.MULTILINE)


def _special_nodes(rows: DataFrame, expressions: Sequence[Column]) -> int | None:
    """How many window, aggregate and generator nodes the plan of ``expressions`` selected over
    ``rows`` holds (``rows``' own included); None when they do not resolve together."""
    from pyspark.errors import AnalysisException

    try:
        plan = (rows.select(*expressions) if expressions else rows)._jdf.queryExecution().analyzed()
    except AnalysisException:
        return None
    return len(_SPECIAL_NODE.findall(plan.treeString()))


def refuse_special_expressions(rows: DataFrame, expressions: Sequence[Column], where: str) -> None:
    """Raise :class:`DeltaAnalysisError` when one of ``expressions`` (resolved over ``rows``)
    is or holds a window, aggregate or generator function, as Spark's ``CheckAnalysis``
    refuses them in Delta's UPDATE and MERGE commands (``UNSUPPORTED_EXPR_FOR_OPERATOR``);
    ``where`` names the command. Only the plan nodes the expressions add count (a source that
    aggregates is no aggregate in a value); one analysis for all, one per expression only when
    they do not pass together. An expression that does not resolve here is left to the
    command's own resolution, which reports it."""
    if not expressions:
        return
    own = _special_nodes(rows, [])
    if _special_nodes(rows, expressions) == own:
        return
    for expression in expressions:
        found = _special_nodes(rows, [expression])
        if found is not None and own is not None and found > own:
            jc: Any = expression._jc
            raise DeltaAnalysisError(
                "UNSUPPORTED_EXPR_FOR_OPERATOR: A query operator contains one or more unsupported expressions. "
                "Consider to rewrite it to avoid window functions, aggregate functions, and generator functions "
                f"in the WHERE clause. Invalid expressions: [{jc.toString()}] (in the {where}); compute the values "
                "first, e.g. into a column of a source DataFrame to MERGE"
            )
