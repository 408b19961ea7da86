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

__all__ = ["STORE_ASSIGNMENT_POLICIES", "STORE_ASSIGNMENT_POLICY", "store_assignment_cast"]

STORE_ASSIGNMENT_POLICY = "spark.sql.storeAssignmentPolicy"
#: the values Spark takes for :data:`STORE_ASSIGNMENT_POLICY` (upper case)
STORE_ASSIGNMENT_POLICIES = ("ANSI", "LEGACY", "STRICT")
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
                f"CANNOT_UP_CAST_DATATYPE: Cannot up cast {where} from {from_type.simpleString()} to "
                f"{to_type.simpleString()} ({STORE_ASSIGNMENT_POLICY}=STRICT allows only casts that lose nothing): "
                "cast the value explicitly, or set the policy to ANSI"
            )
        return value.cast(to_type)
    if policy == "LEGACY":
        return _cast_in_mode(spark, value, to_type, "Legacy")
    cast = _cast_in_mode(spark, value, to_type, "Ansi")
    if not _can_overflow(spark, from_type, to_type):
        return cast
    return _check_overflow_in_table_write(value, cast, from_type, to_type, where)


def _can_overflow(spark: SparkSession, from_type: DataType, to_type: DataType) -> bool:
    """Delta's ``canCauseCastOverflow``: the column's type holds integral or decimal values and
    the cast is not an up-cast. A string source is left out: its failures are Spark's
    ``CAST_INVALID_INPUT`` (a ``NumberFormatException``), which Delta does not rename."""
    from pyspark.sql.types import DecimalType, IntegralType

    def holds(data_type: DataType, kinds: tuple[type, ...]) -> bool:
        children = getattr(data_type, "fields", None) or [
            getattr(data_type, name) for name in ("elementType", "keyType", "valueType") if hasattr(data_type, name)
        ]
        nested = [getattr(c, "dataType", c) for c in children]
        return isinstance(data_type, kinds) or any(holds(c, kinds) for c in nested)

    from pyspark.sql.types import StringType

    if not holds(to_type, (IntegralType, DecimalType)) or holds(from_type, (StringType,)):
        return False
    jvm: Any = spark._jvm
    cast = jvm.org.apache.spark.sql.catalyst.expressions.Cast
    return not bool(cast.canUpCast(_java_type(spark, from_type), _java_type(spark, to_type)))


def _overflows(value: Column, from_type: DataType, to_type: DataType) -> Column:
    """Whether the ANSI cast of non-null ``value`` to ``to_type`` overflows: the ``try_cast``
    of the value (of each element, key and value of an array or map) is null."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType

    if isinstance(from_type, ArrayType) and isinstance(to_type, ArrayType):
        element_from, element_to = from_type.elementType, to_type.elementType
        return F.exists(value, lambda e: _overflows(e, element_from, element_to))
    if isinstance(from_type, MapType) and isinstance(to_type, MapType):
        keys = F.exists(F.map_keys(value), lambda k: _overflows(k, from_type.keyType, to_type.keyType))
        values = F.exists(F.map_values(value), lambda v: _overflows(v, from_type.valueType, to_type.valueType))
        return keys | values
    return value.isNotNull() & value.try_cast(to_type).isNull()


def _check_overflow_in_table_write(
    value: Column, cast: Column, from_type: DataType, to_type: DataType, where: str
) -> Column:
    """``cast``, failing with Delta's ``DELTA_CAST_OVERFLOW_IN_TABLE_WRITE`` (its
    ``CheckOverflowInTableWrite``) where ``value`` overflows ``to_type``."""
    from pyspark.sql import functions as F

    source, target = from_type.simpleString().upper(), to_type.simpleString().upper()
    message = (
        f"DELTA_CAST_OVERFLOW_IN_TABLE_WRITE: Failed to write a value of {source} type into the {target} type "
        f"column `{where}` due to an overflow. Use `try_cast` on the input value to tolerate overflow and return "
        f'NULL instead. If necessary, set {STORE_ASSIGNMENT_POLICY} to "LEGACY" to bypass this error or set '
        f"{_FOLLOWS_ANSI_FLAG} to true to revert to the old behaviour and follow spark.sql.ansi.enabled in UPDATE "
        "and MERGE."
    )
    return F.when(
        F.coalesce(_overflows(value, from_type, to_type), F.lit(False)), F.raise_error(F.lit(message))
    ).otherwise(cast)


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
