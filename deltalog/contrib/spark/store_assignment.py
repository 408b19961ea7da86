"""The cast of an atomic value written into a column, as Delta's ``UpdateExpressionsSupport.cast``.

Delta casts an UPDATE or MERGE value (and a value written into a table) whose type differs
from its column's by ``spark.sql.storeAssignmentPolicy``, not by ``spark.sql.ansi.enabled``:

- ``ANSI`` (the default): an ANSI cast, whatever ``spark.sql.ansi.enabled`` says: a string
  that is not a number, or a value that overflows the column's type, fails the command;
- ``LEGACY``: a non-ANSI cast: such a value becomes null (a string) or wraps / saturates (a
  number), as Spark's cast with ANSI off;
- ``STRICT``: only an up-cast (``int`` into ``long``, ...); any other is refused before
  anything runs (Spark's ``UpCast``).

Setting ``spark.databricks.delta.updateAndMergeCastingFollowsAnsiEnabledFlag=true`` brings
back the older rule (the cast follows ``spark.sql.ansi.enabled``), as in Delta.

Spark's ``Column.cast`` always follows ``spark.sql.ansi.enabled``; the cast with an explicit
evaluation mode is built in the JVM (Spark's ``Cast`` column node). Without a JVM (Spark
Connect) the value is cast with ``Column.cast``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaAnalysisError

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.types import DataType

__all__ = ["STORE_ASSIGNMENT_POLICY", "store_assignment_cast"]

STORE_ASSIGNMENT_POLICY = "spark.sql.storeAssignmentPolicy"
_FOLLOWS_ANSI_FLAG = "spark.databricks.delta.updateAndMergeCastingFollowsAnsiEnabledFlag"


def _conf(spark: SparkSession, key: str, default: str) -> str:
    return str(spark.conf.get(key, default) or default).strip()


def store_assignment_cast(value: Column, from_type: DataType, to_type: DataType, where: str) -> Column:
    """``value`` (of atomic type ``from_type``) cast to ``to_type`` by the session's
    ``spark.sql.storeAssignmentPolicy``; ``where`` names the column in errors."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None or _conf(spark, _FOLLOWS_ANSI_FLAG, "false").lower() == "true":
        return value.cast(to_type)
    policy = _conf(spark, STORE_ASSIGNMENT_POLICY, "ANSI").upper()
    jvm: Any = getattr(spark, "_jvm", None)
    if jvm is None:
        return value.cast(to_type)
    if policy == "STRICT":
        cast = jvm.org.apache.spark.sql.catalyst.expressions.Cast
        if not cast.canUpCast(_java_type(spark, from_type), _java_type(spark, to_type)):
            raise DeltaAnalysisError(
                f"Cannot up cast {where} from {from_type.simpleString()} to {to_type.simpleString()} "
                f"({STORE_ASSIGNMENT_POLICY}=STRICT allows only casts that lose nothing): cast the value "
                "explicitly, or set the policy to ANSI"
            )
        return value.cast(to_type)
    return _cast_in_mode(spark, value, to_type, "Legacy" if policy == "LEGACY" else "Ansi")


def _java_type(spark: SparkSession, data_type: DataType) -> Any:
    jsession: Any = spark._jsparkSession
    return jsession.parseDataType(data_type.json())


def _cast_in_mode(spark: SparkSession, value: Column, to_type: DataType, mode: str) -> Column:
    """Spark's ``Cast`` column node with evaluation mode ``mode`` (``Ansi`` or ``Legacy``)."""
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm: Any = spark._jvm
    internal = jvm.org.apache.spark.sql.internal
    eval_mode = getattr(getattr(internal, f"Cast${mode}$"), "MODULE$")
    node_class = internal.Cast
    origin = getattr(node_class, "apply$default$4")()
    jc: Any = value._jc
    node = node_class.apply(jc.node(), _java_type(spark, to_type), jvm.scala.Some(eval_mode), origin)
    return ClassicColumn(jvm.org.apache.spark.sql.Column(node))
