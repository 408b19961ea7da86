"""Column definitions for ``DeltaTable.create(spark).addColumn(...)``: generated columns,
identity columns and column defaults, as delta-spark's ``DeltaTableBuilder`` spells them::

    DeltaTable.create(spark).location(uri) \\
        .addColumn("id", "long", generatedAlwaysAs=IdentityGenerator(start=1, step=1)) \\
        .addColumn("ts", "timestamp") \\
        .addColumn("day", "date", generatedAlwaysAs="CAST(ts AS DATE)") \\
        .addColumn("status", "string", default="'new'") \\
        .partitionedBy("day").execute()

``default`` (a Spark SQL expression, stored as ``CURRENT_DEFAULT``) is deltalog's
addition: delta-spark sets defaults with SQL (``DEFAULT`` in ``CREATE TABLE``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.txn.protocol.column_defaults import CURRENT_DEFAULT
from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, parse_expression
from deltalog.txn.protocol.generated_columns import GENERATION_EXPRESSION
from deltalog.txn.protocol.identity import ALLOW_EXPLICIT_INSERT, START, STEP

__all__ = ["IdentityGenerator", "column_metadata"]


@dataclass(frozen=True)
class IdentityGenerator:
    """An identity column's start and step (delta-spark's ``IdentityGenerator``)."""

    start: int = 1
    step: int = 1


def column_metadata(
    name: str,
    type_name: str,
    generated_always_as: str | IdentityGenerator | None = None,
    generated_by_default_as: IdentityGenerator | None = None,
    default: str | None = None,
) -> dict[str, Any]:
    """The field metadata of a column defined with these options (delta-spark's checks:
    one kind of default per column, identity columns are ``long`` with a non-zero step)."""
    chosen = [x for x in (generated_always_as, generated_by_default_as, default) if x is not None]
    if len(chosen) > 1:
        raise DeltaAnalysisError(f"column {name}: give only one of generatedAlwaysAs, generatedByDefaultAs and default")
    if isinstance(generated_always_as, str):
        return {GENERATION_EXPRESSION: generated_always_as}
    identity = generated_always_as if generated_always_as is not None else generated_by_default_as
    if identity is not None:
        if not isinstance(identity, IdentityGenerator):
            raise DeltaAnalysisError(f"column {name}: generatedByDefaultAs takes an IdentityGenerator")
        if type_name != "long":
            raise DeltaAnalysisError(f"column {name}: identity columns must be long (bigint), not {type_name}")
        if identity.step == 0:
            raise DeltaAnalysisError(f"column {name}: an identity column's step cannot be 0")
        return {START: identity.start, STEP: identity.step, ALLOW_EXPLICIT_INSERT: generated_always_as is None}
    if default is not None:
        try:
            parse_expression(default)
        except UnsupportedConstraintError as exc:
            raise DeltaAnalysisError(f"column {name}: cannot use the default {default!r}: {exc}") from None
        return {CURRENT_DEFAULT: default}
    return {}
