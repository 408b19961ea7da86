"""The argument checks of delta-spark's Python ``DeltaTable`` API, with its exception types and
messages, so code written for ``delta.tables`` fails the same way on bad arguments.

delta-spark checks before it calls the JVM: a condition is SQL text or a ``Column``
(``_condition_to_jcolumn``, else ``TypeError``); a ``set``/``values`` mapping is required
(``ValueError`` ``... cannot be None``), a dict (``TypeError``) of column-name strings
(``TypeError``) to SQL text or ``Column`` values (``TypeError``) (``_dict_to_jmap``); the
scalar arguments of RESTORE, CLONE and the feature methods are checked by type
(``_verify_type_*``, ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deltalog.contrib.spark.errors import DeltaAnalysisError

__all__ = [
    "check_builder_column",
    "check_column_mapping",
    "check_condition",
    "check_source",
    "check_str",
    "check_type",
    "column_names",
    "refuse_type",
]


def _is_column(value: object) -> bool:
    from pyspark.sql import Column

    return isinstance(value, Column)


def check_condition(condition: object, argname: str = "'condition'") -> None:
    """A condition (optional) must be SQL text or a ``Column``: delta-spark's ``TypeError``."""
    if condition is None or isinstance(condition, str) or _is_column(condition):
        return
    raise TypeError(
        f"{argname} must be a Spark SQL Column or a string (expression in SQL syntax), "
        f"found to be of type {type(condition)}"
    )


def check_column_mapping(mapping: object, argname: str) -> Mapping[str, Any]:
    """``set``/``values``: a dict of column names to SQL text or ``Column`` values."""
    if mapping is None:
        raise DeltaAnalysisError(f"{argname} cannot be None")
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{argname} must be a dict, found to be {type(mapping)}")
    for name, value in mapping.items():
        if not isinstance(name, str):
            raise TypeError(
                f"Keys of dict in {argname} must contain only strings with column names, "
                f"found '{name}' of type '{type(name)}'"
            )
        if not (isinstance(value, str) or _is_column(value)):
            raise TypeError(
                f"Values of dict in {argname} must contain only Spark SQL Columns or strings "
                f"(expressions in SQL syntax) as values, found '{value}' of type '{type(value)}'"
            )
    return mapping


def check_source(source: object) -> None:
    """MERGE's source must be a DataFrame (delta-spark: ``ValueError`` when None, else ``TypeError``)."""
    from pyspark.sql import DataFrame

    if source is None:
        raise DeltaAnalysisError("'source' in merge cannot be None")
    if not isinstance(source, DataFrame):
        raise TypeError("Type of 'source' in merge must be DataFrame.")


_TYPE_NAMES = {bool: "a boolean", str: "a string", int: "an int", dict: "a dict"}


def check_type(value: object, expected: type, name: str) -> None:
    """delta-spark's ``_verify_type_*``: ``ValueError`` ``<name> needs to be <type> but got
    '<class>'.`` (a bool is an int there, as in Python)."""
    if not isinstance(value, expected):
        raise DeltaAnalysisError(f"{name} needs to be {_TYPE_NAMES[expected]} but got '{type(value)}'.")


def refuse_type(message: str, *objs: object) -> None:
    """delta-spark's ``DeltaTableBuilder._raise_type_error``."""
    raise TypeError(message + "".join(f" Found {o} with type {type(o)}" for o in objs))


def check_str(value: object, message: str) -> None:
    """A builder argument that must be a ``str`` (``type(value) is str``, as delta-spark)."""
    if type(value) is not str:
        refuse_type(message, value)


def check_builder_column(
    name: object, data_type: object, nullable: object, generated_always_as: object, by_default_as: object
) -> None:
    """``DeltaTableBuilder.addColumn``'s argument types (delta-spark's ``TypeError``s); the
    identity and default checks are :func:`~deltalog.contrib.spark.table_builder.column_metadata`'s."""
    from pyspark.sql.types import DataType

    from deltalog.contrib.spark.table_builder import IdentityGenerator

    check_str(name, "Column name must be str.")
    if type(data_type) is not str and not isinstance(data_type, DataType):
        refuse_type("Column data type must be str or DataType.", data_type)
    if type(nullable) is not bool:
        refuse_type("Column nullable must be bool.", nullable)
    if generated_always_as is not None and by_default_as is not None:
        raise DeltaAnalysisError("generatedByDefaultAs and generatedAlwaysAs cannot both be set.")
    if generated_always_as is not None and not isinstance(generated_always_as, (str, IdentityGenerator)):
        refuse_type("Generated always as expression must be str or IdentityGenerator.", generated_always_as)
    if by_default_as is not None and not isinstance(by_default_as, IdentityGenerator):
        refuse_type("Generated by default expression must be IdentityGenerator.", by_default_as)


def column_names(cols: tuple[Any, ...], message: str) -> list[str]:
    """``partitionedBy``/``clusterBy``'s columns: names, or one list or tuple of names."""
    names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
    for c in names:
        check_str(c, message)
    return list(names)
