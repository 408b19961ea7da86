"""Planning a scan: which files a read needs, from partition values and file statistics.

Filters are kept as simple ``(column, op, value)`` terms (a conjunction), translated from
the filters Spark pushes down. Terms on partition columns prune by partition values
(:class:`~deltalog.txn.protocol.partition_filters.PartitionPredicate`); terms on data columns skip
files whose ``minValues``/``maxValues``/``nullCount`` prove no row can match. Skipping is
conservative: a file is kept whenever its statistics are missing or not comparable, and it
follows Delta's ``DataSkippingReader``: floats are ordered as Spark orders them (NaN above
every number), and timestamp max statistics (truncated to milliseconds) are widened by 1 ms.
Spark evaluates every filter again on the rows, so pruning only ever saves work.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.contrib.spark.partitioning import partition_value, typed_partition_value
from deltalog.contrib.spark.predicates import exact_partition_filter
from deltalog.txn.protocol.actions import AddFile
from deltalog.txn.protocol.collations import collated_type_name, field_collation, is_collated_type
from deltalog.txn.protocol.generated_columns import PartitionExpression, derived_partition_terms
from deltalog.txn.protocol.partition_filters import SparkFloat

__all__ = ["ScanPlan", "Term", "bounds_may_match", "physical_column", "plan_files", "stats_column"]

log = logging.getLogger(__name__)

Term = tuple[str, str, Any]  # (column, op, value); op in = < <= > >= in isnull notnull
_PHYSICAL = "delta.columnMapping.physicalName"
#: a term's operator as the engine's partition filter spells it (:func:`_engine_filters`)
_ENGINE_OPS = {"isnull": "=", "notnull": "!="}


@dataclass
class ScanPlan:
    version: int
    files: list[AddFile]
    total_files: int
    partition_terms: list[Term] = field(default_factory=list)
    data_terms: list[Term] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "totalFiles": self.total_files,
            "scannedFiles": sorted(f.path for f in self.files),
            "partitionFilters": [list(map(_jsonable, t)) for t in self.partition_terms],
            "dataFilters": [list(map(_jsonable, t)) for t in self.data_terms],
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _stat(stats: Mapping[str, Any], kind: str, column: str) -> Any:
    node: Any = stats.get(kind) or {}
    for part in column.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _typed(raw: Any, type_name: str) -> Any:
    """A statistic as a value of the column's type: a float column's bound is the nearest
    float (Delta writes ``0.7`` for the float 0.7f, which is 0.69999998807907 as a double)."""
    if raw is None or isinstance(raw, (dict, list)):
        return None
    try:
        value = typed_partition_value(str(raw), type_name)
    except (ValueError, ArithmeticError):
        return None
    if type_name == "float" and isinstance(value, float):
        try:
            return struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            return None  # beyond a float's range: no bound
    return value


def _comparable(value: Any, type_name: str) -> Any:
    if isinstance(value, dt.datetime) and type_name == "timestamp" and value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    if (
        isinstance(value, (int, float, decimal.Decimal))
        and not isinstance(value, bool)
        and type_name in ("float", "double")
    ):
        return SparkFloat(float(value))
    return value


def _literal(value: Any, type_name: str) -> Any:
    """A term's literal as Spark compares it with a column of ``type_name``: a fraction
    written as ``0.1`` is the decimal 0.1 (the parser hands it over as the double nearest
    to it). (Spark compares a float column with an integer as doubles, as the bounds are.)"""
    if isinstance(value, float) and math.isfinite(value) and type_name.startswith("decimal"):
        return decimal.Decimal(repr(value))
    return _comparable(value, type_name)


def _max_stat(hi: Any, type_name: str) -> Any:
    """The max statistic as an upper bound: timestamps are written truncated to
    milliseconds, so Delta's ``DataSkippingReader`` widens their max by 1 ms (saturating)."""
    if hi is not None and type_name in ("timestamp", "timestamp_ntz"):
        try:
            return hi + dt.timedelta(milliseconds=1)
        except OverflowError:
            return None  # no upper bound
    return hi


def _may_match(add: AddFile, stats: Mapping[str, Any], term: Term, type_name: str | None) -> bool:
    column, op, _ = term
    if type_name is None or (type_name in ("float", "double") and _nan_matches(term)):
        return True
    if type_name == "variant" and op not in ("isnull", "notnull"):
        return True  # Delta's variant bounds (footer-parsed, Z85 text) bound no SQL value: only nullCount
    return bounds_may_match(
        term,
        _typed(_stat(stats, "minValues", column), type_name),
        _max_stat(_typed(_stat(stats, "maxValues", column), type_name), type_name),
        _stat(stats, "nullCount", column),
        stats.get("numRecords"),
        type_name,
        # numRecords counts the rows a deletion vector deletes; nullCount may not
        all_null_is_exact=add.deletion_vector is None,
    )


def _nan_matches(term: Term) -> bool:
    """Whether a NaN row may match ``term``: a float column's max statistic does not bound
    NaN, which Spark orders above every number, because writers that take it from Parquet
    (delta-rs) leave NaN out of it as Parquet does (Delta Spark writes NaN; deltalog no
    bounds)."""
    _, op, value = term
    if op in (">", ">="):
        return True
    values = value if op == "in" else (value,) if op == "=" else ()
    return any(isinstance(v, float) and math.isnan(v) for v in values)


def bounds_may_match(
    term: Term,
    lo: Any,
    hi: Any,
    nulls: Any,
    num: Any,
    type_name: str,
    *,
    all_null_is_exact: bool = True,
) -> bool:
    """Whether rows whose values of the term's column lie in ``[lo, hi]`` (None: unbounded)
    with ``nulls`` nulls among ``num`` rows (None: unknown) may match ``term``: the test of
    file skipping (the log's statistics) and row-group skipping (footer statistics)."""
    _, op, value = term
    if op == "isnull":
        return not (isinstance(nulls, int) and nulls == 0)
    if op == "notnull":
        return not (isinstance(nulls, int) and isinstance(num, int) and nulls >= num and all_null_is_exact)
    lo = _comparable(lo, type_name)
    hi = _comparable(hi, type_name)
    try:
        if op == "in":
            candidates = [_literal(v, type_name) for v in value if v is not None]
            if not candidates:
                return False
            return any((lo is None or c >= lo) and (hi is None or c <= hi) for c in candidates)
        v = _literal(value, type_name)
        if v is None:
            return True
        if op == "=":
            return (lo is None or v >= lo) and (hi is None or v <= hi)
        if op == ">":
            return hi is None or hi > v
        if op == ">=":
            return hi is None or hi >= v
        if op == "<":
            return lo is None or lo < v
        if op == "<=":
            return lo is None or lo <= v
    except TypeError:
        return True
    return True


def _engine_filters(partition_terms: Sequence[Term]) -> list[tuple[str, str, Any]]:
    """Partition terms as the engine's partition filters (``isnull`` is ``= None``)."""
    out: list[tuple[str, str, Any]] = []
    for column, op, value in partition_terms:
        if op == "isnull":
            out.append((column, "=", None))
        elif op == "notnull":
            out.append((column, "!=", None))
        else:
            out.append((column, op, list(value) if op == "in" else value))
    return out


def plan_files(
    files: Sequence[AddFile],
    version: int,
    terms: Sequence[Term],
    partition_columns: Sequence[str],
    column_types: Mapping[str, str],
    physical_names: Mapping[str, str] | None = None,
    generated: Sequence[PartitionExpression] = (),
    time_zone: str | None = None,
) -> ScanPlan:
    """The files that may hold rows matching every term. Terms on the source column of a
    generated partition column (``generated``) also prune by that partition column
    (:func:`~deltalog.txn.protocol.generated_columns.derived_partition_terms`, in the
    session ``time_zone`` when known)."""
    from deltalog.txn.protocol.partition_filters import PartitionPredicate

    if generated:
        terms = [*terms, *derived_partition_terms(terms, generated, time_zone)]

    part_lower = {c.lower(): c for c in partition_columns}
    partition_terms: list[Term] = []
    data_terms: list[Term] = []
    for column, op, value in terms:
        if column.lower() in part_lower:
            name = part_lower[column.lower()]
            if exact_partition_filter(column_types.get(name, "string"), _ENGINE_OPS.get(op, op), value):
                partition_terms.append((name, op, value))
        else:
            data_terms.append((column, op, value))
    engine_filters = _engine_filters(partition_terms)
    predicate = PartitionPredicate(engine_filters, {c: column_types.get(c, "string") for c in partition_columns})
    physical = physical_names or {}
    # partitionValues are keyed by physical name under column mapping
    partition_keys = {c: physical.get(c, c) for c in partition_columns}
    # each data term by the name its column has in the statistics, with the column's type
    stats_terms: list[tuple[Term, str | None]] = []
    for column, op, value in data_terms:
        name, type_name = stats_column(column, column_types, physical)
        stats_terms.append(((name, op, value), type_name))
    selected: list[AddFile] = []
    for add in files:
        if engine_filters:
            values = {c: partition_value(add.partition_values, key) for c, key in partition_keys.items()}
            if not predicate.matches(values):
                continue
        if data_terms and add.stats:
            try:
                # decimals exactly: a double can round a max below the file's largest value
                stats = json.loads(add.stats, parse_float=decimal.Decimal)
            except ValueError:
                stats = {}
            if not all(_may_match(add, stats, term, type_name) for term, type_name in stats_terms):
                continue
        selected.append(add)
    return ScanPlan(version, selected, len(files), partition_terms, data_terms)


def stats_column(column: str, column_types: Mapping[str, str], physical: Mapping[str, str]) -> tuple[str, str | None]:
    """A (dotted, case-insensitive) column as the statistics name it (physical names under
    column mapping, nested fields too) and its Spark type name; None for the type when the
    column is not a primitive field of the schema or is a collated string (a term on it
    skips no file)."""
    top = column if column in column_types else None
    rest: list[str] = []
    if top is None:
        head, *rest = column.split(".")
        top = next((c for c in column_types if c.lower() == head.lower()), None)
    if top is None:
        return physical_column(column, physical), None
    mapped = top in physical
    path = [physical.get(top, top)]
    node: Any = column_types[top]
    if isinstance(node, str) and node.startswith("{"):
        node = json.loads(node)
    for part in rest:
        fields = node.get("fields", []) if isinstance(node, dict) and node.get("type") == "struct" else []
        field = next((f for f in fields if f["name"].lower() == part.lower()), None)
        if field is None:
            return ".".join([*path, part]), None
        path.append((field.get("metadata") or {}).get(_PHYSICAL, field["name"]) if mapped else field["name"])
        node = field["type"]
        if field_collation(field):
            node = collated_type_name(str(field_collation(field)))
    # statistics order strings binary: a collated string's bounds do not bound its values
    return ".".join(path), node if isinstance(node, str) and not is_collated_type(node) else None


def physical_column(column: str, physical: Mapping[str, str]) -> str:
    """A (dotted) column by its physical top-level name (column mapping)."""
    head, _, rest = column.partition(".")
    mapped = physical.get(head, head)
    return f"{mapped}.{rest}" if rest else mapped
