"""``replaceWhere`` on data columns (Delta 2.x+), inside the write's transaction.

Delta's ``WriteIntoDelta`` runs a DELETE of the predicate's rows in the write's own
transaction and checks every written row against the predicate as a constraint
(``DELTA_REPLACE_WHERE_MISMATCH``). Here:

- the write tasks check each row (:func:`row_checker`, the CHECK-constraint evaluator of
  :mod:`deltalog.txn.protocol.constraints`): a row for which the predicate is false or NULL fails the
  task, nothing is committed;
- the commit reads the files of the transaction's read snapshot that the predicate's
  partition terms select (recorded as read, so the conflict checker sees them), and each
  file holding rows that match is removed and its other rows written again
  (:func:`~deltalog.contrib.spark.replace_where_rewrite.rewrite_outside`), as DELETE does.

The predicate is Spark SQL in the subset the constraint evaluator supports
(:mod:`deltalog.txn.protocol.constraint_sql`); anything else is refused before a file is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.contrib.spark.errors import InvalidWriteOptionError, ReplaceWhereMismatchError
from deltalog.contrib.spark.predicates import parse_partition_predicate
from deltalog.contrib.spark.resolver import CASE_INSENSITIVE, Resolver
from deltalog.txn.protocol.actions import AddFile, Metadata
from deltalog.txn.protocol.collations import has_collated_string
from deltalog.txn.protocol.constraints import (
    CompiledConstraint,
    Constraint,
    ConstraintViolationError,
    compile_constraints,
)

if TYPE_CHECKING:
    from deltalog.txn.commit.transaction import OptimisticTransaction

__all__ = [
    "compiled_predicate",
    "files_in_partition_groups",
    "names_data_columns",
    "partition_filter_groups",
    "partition_filters",
    "refuse_data_columns",
    "refuse_unresolved_names",
    "row_checker",
]


def compiled_predicate(predicate: str, time_zone: str | None = None) -> CompiledConstraint:
    """``predicate`` compiled by the CHECK-constraint evaluator, its zone-free timestamp texts
    read in Spark's session ``time_zone`` (None: UTC)."""
    return compile_constraints([Constraint("replaceWhere", predicate, "check")], time_zone)[0]


def names_data_columns(predicate: str, metadata: Metadata) -> bool:
    """False for a predicate naming partition columns only, whatever its shape (Delta's
    ``splitMetadataAndDataPredicates``: files selected by their partition values); True when
    it names data columns. Raises :class:`InvalidWriteOptionError` when it cannot be used."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, column_paths

    partitions = {c.lower() for c in metadata.partition_columns}
    try:
        filters = parse_partition_predicate(predicate)
    except DeltaAnalysisError:
        filters = None
    if filters is not None:
        _refuse_collated(predicate, {c.lower() for c, _, _ in filters}, metadata)
        if all(c.lower() in partitions for c, _, _ in filters):
            return False
    try:
        compiled = compiled_predicate(predicate)
    except (UnsupportedConstraintError, ValueError) as exc:
        raise InvalidWriteOptionError(
            f"replaceWhere {predicate!r} cannot be evaluated: {exc}. Use a partition predicate, or a predicate "
            "on columns in deltalog's SQL subset (comparisons, AND/OR/NOT, IN, BETWEEN, LIKE, IS NULL)"
        ) from None
    named = {p[0].lower() for p in column_paths(compiled.expr)}
    _refuse_collated(predicate, named, metadata)
    columns = {f["name"].lower() for f in json.loads(metadata.schema_string)["fields"]}
    missing = sorted({".".join(p) for p in column_paths(compiled.expr) if p[0].lower() not in columns})
    if missing:
        raise InvalidWriteOptionError(
            f"replaceWhere {predicate!r} uses {', '.join(missing)}, which is not a column of the table "
            f"(columns: {', '.join(f['name'] for f in json.loads(metadata.schema_string)['fields'])})"
        )
    return not named <= partitions


def refuse_data_columns(
    predicate: str,
    metadata: Metadata,
    why: str = "spark.databricks.delta.replaceWhere.dataColumns.enabled is false",
    resolver: Resolver = CASE_INSENSITIVE,
) -> None:
    """With ``spark.databricks.delta.replaceWhere.dataColumns.enabled=false`` (or in OPTIMIZE's
    ``where``: ``why`` says which) a predicate may name partition columns only: Delta's
    ``DELTA_NON_PARTITION_COLUMN_REFERENCE`` (``verifyPartitionPredicates``), names compared
    by the session's ``resolver``."""
    refuse_non_partition_names(_top_level_names(predicate) or [], metadata, why, resolver)


def _top_level_names(predicate: str) -> list[str] | None:
    """The top-level columns ``predicate`` names (a nested field by its column); None when
    it is neither a partition predicate nor in the constraint evaluator's SQL subset."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, column_paths

    try:
        return [c for c, _, _ in parse_partition_predicate(predicate)]
    except DeltaAnalysisError:
        try:
            return [p[0] for p in column_paths(compiled_predicate(predicate).expr)]
        except (UnsupportedConstraintError, ValueError):
            return None


def refuse_unresolved_names(predicate: str, metadata: Metadata, resolver: Resolver) -> None:
    """Spark's ``UNRESOLVED_COLUMN`` when a column ``predicate`` names is no column of the table
    by the session's ``resolver``: Delta resolves a ``replaceWhere`` against the table before
    it uses it, so under ``spark.sql.caseSensitive=true`` ``KEY = 2`` names no column ``key``."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    names = _top_level_names(predicate)
    if names is None:
        return  # names_data_columns says why the predicate cannot be used
    columns = [f["name"] for f in json.loads(metadata.schema_string)["fields"]]
    unresolved = [n for n in names if resolver.find(n, columns) is None]
    if unresolved:
        raise DeltaAnalysisError(
            f"UNRESOLVED_COLUMN.WITH_SUGGESTION: replaceWhere {predicate!r} names {unresolved[0]!r}, which is not "
            f"a column of the table ({', '.join(columns)}; "
            f"spark.sql.caseSensitive={str(resolver.case_sensitive).lower()})"
        )


def refuse_non_partition_names(
    names: list[str], metadata: Metadata, why: str, resolver: Resolver = CASE_INSENSITIVE
) -> None:
    """Delta's ``DELTA_NON_PARTITION_COLUMN_REFERENCE`` (``verifyPartitionPredicates``) when
    one of a predicate's column ``names`` is no partition column of ``metadata`` by the
    session's ``resolver`` (``spark.sql.caseSensitive``); ``why`` says which rule asks for
    partition columns only."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    outside = [n for n in names if resolver.find(n, metadata.partition_columns) is None]
    if outside:
        raise DeltaAnalysisError(
            f"DELTA_NON_PARTITION_COLUMN_REFERENCE: Predicate references non-partition column '{outside[0]}'. "
            f"Only the partition columns may be referenced: [{', '.join(metadata.partition_columns)}] ({why})"
        )


def _refuse_collated(predicate: str, columns: set[str], metadata: Metadata) -> None:
    """Raise :class:`InvalidWriteOptionError` when ``predicate`` names a column holding a
    collated string: deltalog checks the written rows and selects the replaced files by
    comparing values binary, where Delta compares by the column's collation."""
    fields = json.loads(metadata.schema_string)["fields"]
    collated = sorted(f["name"] for f in fields if f["name"].lower() in columns and has_collated_string([f]))
    if collated:
        raise InvalidWriteOptionError(
            f"replaceWhere {predicate!r} names the collated column(s) {', '.join(collated)}, which deltalog "
            "would compare binary (Delta compares by the collation); use DeltaTable.delete with the predicate, "
            "then an append"
        )


_KINDS = {
    "string": ("string",),
    "boolean": ("bool",),
    "date": ("date",),
    **{t: ("int", "float", "decimal") for t in ("byte", "short", "integer", "long", "float", "double")},
}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def partition_filters(predicate: str, metadata: Metadata) -> list[tuple[str, str, Any]]:
    """The top-level ``AND`` terms of ``predicate`` that only test a partition column
    against literals of its type (``=``, ``!=``, ``<``..., ``IN``, ``IS [NOT] NULL``), as the
    engine's partition filters: a file outside them holds no row the predicate selects, so
    only the other files are read. Terms of other shapes (and every term on a ``timestamp``
    column, whose texts Spark reads in the session time zone) are left to the row evaluation."""
    return _expression_partition_filters(compiled_predicate(predicate).expr, metadata)


def partition_filter_groups(predicate: str, metadata: Metadata) -> list[list[tuple[str, str, Any]]]:
    """``predicate``'s partition filters as groups a file's partition values may satisfy any
    of (``[[]]``: every partition): each row the predicate selects lies in a partition some
    group holds. An ``AND`` of terms is one group of its partition terms (Delta's
    ``filterFiles`` records the conjuncts naming only partition columns), an ``OR`` of
    partition terms nested anywhere is a group per disjunct (``(p = 'a' OR p = 'b') AND x >
    1``: ``[[p = a], [p = b]]``), a ``NOT`` is pushed to the terms (De Morgan); a disjunct
    without a partition term, or too many groups, reads every partition."""
    groups = _partition_groups(compiled_predicate(predicate).expr, metadata)
    return [g for i, g in enumerate(groups) if g not in groups[:i]]  # each group scans the files once


#: At most this many groups (each scans the snapshot's files): a larger disjunction reads
#: every partition, a larger product of conjuncts keeps the conjunct with fewer groups (either
#: holds every row the predicate selects)
_MAX_GROUPS = 16


def _partition_groups(e: Any, metadata: Metadata) -> list[list[tuple[str, str, Any]]]:
    """:func:`partition_filter_groups` of a compiled expression."""
    from deltalog.txn.protocol.constraint_sql import Binary, Unary

    if isinstance(e, Unary) and e.op == "not" and isinstance(e.operand, Unary) and e.operand.op == "not":
        return _partition_groups(e.operand.operand, metadata)
    if isinstance(e, Unary) and e.op == "not" and isinstance(e.operand, Binary) and e.operand.op in ("and", "or"):
        inner = e.operand  # NOT (a AND b) is NOT a OR NOT b: true for the same rows (three-valued)
        e = Binary("or" if inner.op == "and" else "and", Unary("not", inner.left), Unary("not", inner.right))
    if isinstance(e, Binary) and e.op == "or":
        groups = _partition_groups(e.left, metadata) + _partition_groups(e.right, metadata)
        return [[]] if len(groups) > _MAX_GROUPS or not all(groups) else groups
    if isinstance(e, Binary) and e.op == "and":
        left, right = _partition_groups(e.left, metadata), _partition_groups(e.right, metadata)
        if len(left) * len(right) > _MAX_GROUPS:
            return min(left, right, key=len)
        return [a + b for a in left for b in right]
    return [_expression_partition_filters(e, metadata)]


def files_in_partition_groups(
    txn: OptimisticTransaction,
    groups: list[list[tuple[str, str, Any]]],
    data_skipping: Callable[[list[AddFile]], list[AddFile]] | None = None,
) -> list[AddFile]:
    """The files of ``txn``'s snapshot in any of the :func:`partition_filter_groups`, each group
    recorded as a read predicate (Delta's ``filterFiles`` of their disjunction): group by group,
    each in snapshot order."""
    found: dict[str, AddFile] = {}
    for filters in groups:
        found.update((f.path, f) for f in txn.filter_files(filters, data_skipping=data_skipping) if f.path not in found)
    return list(found.values())


_NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _negated(e: Any) -> Any:
    """``NOT e`` as a term (``NOT p = 'a'`` is ``p != 'a'``: true for the same rows, a null
    ``p`` included), None when ``e`` is no comparison, ``IN`` or ``IS [NOT] NULL``."""
    from deltalog.txn.protocol.constraint_sql import Binary, InList, Unary

    if isinstance(e, Binary) and e.op in _NEGATED:
        return Binary(_NEGATED[e.op], e.left, e.right)
    if isinstance(e, InList):
        return InList(e.operand, e.items, not e.negated)
    if isinstance(e, Unary) and e.op in ("is_null", "is_not_null"):
        return Unary("is_not_null" if e.op == "is_null" else "is_null", e.operand)
    return None


def _expression_partition_filters(expr: Any, metadata: Metadata) -> list[tuple[str, str, Any]]:
    """:func:`partition_filters` of a compiled expression."""
    from deltalog.txn.protocol.constraint_sql import Binary, Column, InList, Literal, Unary
    from deltalog.txn.protocol.partition_filters import partition_column_types

    column_types = partition_column_types(metadata.schema_string, metadata.partition_columns)
    types = {c.lower(): (c, t) for c, t in column_types.items()}
    out: list[tuple[str, str, Any]] = []

    def partition(e: Any) -> tuple[str, tuple[str, ...]] | None:
        if isinstance(e, Column) and len(e.path) == 1 and e.path[0].lower() in types:
            name, type_name = types[e.path[0].lower()]
            return name, _KINDS.get(type_name, ())
        return None

    def literal(e: Any, kinds: tuple[str, ...]) -> bool:
        return isinstance(e, Literal) and e.kind in kinds

    def value(e: Any) -> Any:  # a decimal literal (1.5) stays exact: Spark compares an integer column with it so
        return e.value

    def walk(e: Any) -> None:
        if isinstance(e, Binary) and e.op == "and":
            walk(e.left)
            walk(e.right)
        elif isinstance(e, Binary) and e.op in _FLIP:
            left: Any = e.left
            right: Any = e.right
            op = e.op
            if partition(left) is None:
                left, right, op = right, left, _FLIP[op]
            found = partition(left)
            if found is not None and literal(right, found[1]):
                out.append((found[0], op, value(right)))
        elif isinstance(e, InList) and (found := partition(e.operand)) is not None:
            items: tuple[Any, ...] = e.items
            if all(literal(item, found[1]) for item in items):
                out.append((found[0], "not in" if e.negated else "in", [value(item) for item in items]))
        elif isinstance(e, Unary) and e.op in ("is_null", "is_not_null") and (found := partition(e.operand)):
            out.append((found[0], "=" if e.op == "is_null" else "!=", None))
        elif isinstance(e, Unary) and e.op == "not" and (term := _negated(e.operand)) is not None:
            walk(term)

    walk(expr)
    return out


def checked_terms(predicate: str, time_zone: str | None = None) -> list[CompiledConstraint]:
    """The constraints the written rows must satisfy: the top-level ``AND`` terms of
    ``predicate`` that name a column (Delta's ``extractConstraints``; ``1 = 2`` checks no row)."""
    from dataclasses import replace

    from deltalog.txn.protocol.constraint_sql import Binary, column_paths

    compiled = compiled_predicate(predicate, time_zone)
    terms: list[Any] = []

    def split(e: Any) -> None:
        if isinstance(e, Binary) and e.op == "and":
            split(e.left)
            split(e.right)
        elif column_paths(e):
            terms.append(e)

    split(compiled.expr)
    if len(terms) == 1 and terms[0] is compiled.expr:
        return [compiled]
    return [replace(compiled, expr=t, columns=tuple(column_paths(t))) for t in terms]


def row_checker(predicate: str, time_zone: str | None = None) -> Callable[[pa.Table], None]:
    """The check a write task runs on its rows: each must satisfy ``predicate``'s terms
    that name a column (read in Spark's session ``time_zone``)."""
    compiled = checked_terms(predicate, time_zone)

    def check(table: pa.Table) -> None:
        from deltalog.txn.protocol.constraints import check_constraints

        if not compiled:
            return
        try:
            check_constraints(table, compiled)
        except ConstraintViolationError as exc:
            raise ReplaceWhereMismatchError(predicate, exc.violations, exc.values) from None

    return check
