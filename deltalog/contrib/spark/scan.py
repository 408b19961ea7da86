"""Planning a scan: which files a read needs, from partition values and file statistics.

Filters are kept as simple ``(column, op, value)`` terms (a conjunction), translated from
the filters Spark pushes down. Terms on partition columns prune by partition values
(:class:`~deltalog.txn.protocol.partition_filters.PartitionPredicate`); terms on data columns skip
files whose ``minValues``/``maxValues``/``nullCount`` prove no row can match. Skipping is
conservative: a file is kept whenever its statistics are missing or not comparable, and it
follows Delta's ``DataSkippingReader``: floats are ordered as Spark orders them (NaN above
every number), and timestamp max statistics (truncated to milliseconds) are widened by 1 ms.
The bounds of a ``double`` column widened from ``float`` also bound the float a statistic may
have been written for (Delta writes 0.7f as ``0.7``; unlike Delta, which reads it as the double).
Spark evaluates every filter again on the rows, so pruning only ever saves work.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import math
import struct
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.contrib.spark.partitioning import partition_value, typed_partition_value
from deltalog.contrib.spark.predicates import INTEGRAL_TYPES, OR, exact_partition_filter
from deltalog.txn.protocol.actions import AddFile
from deltalog.txn.protocol.collations import collated_type_name, field_collation, is_collated_type
from deltalog.txn.protocol.generated_columns import PartitionExpression, derived_partition_terms
from deltalog.txn.protocol.partition_filters import SparkFloat

__all__ = [
    "OR",
    "ScanPlan",
    "Term",
    "bounds_may_match",
    "map_term_columns",
    "physical_column",
    "plan_files",
    "stats_column",
]

log = logging.getLogger(__name__)

#: ``(column, op, value)``; ``op`` one of ``= != < <= > >= in isnull notnull startswith``,
#: or ``OR`` for a disjunction, Delta's skipping predicate of an ``OR``: ``("", OR,
#: (conjunction, ...))``, each conjunction a tuple of terms; a file is read when any
#: conjunction may match.
Term = tuple[str, str, Any]
_PHYSICAL = "delta.columnMapping.physicalName"
#: a term's operator as the engine's partition filter spells it (:func:`_engine_filters`)
_ENGINE_OPS = {"isnull": "=", "notnull": "!="}
#: the operators the engine's partition filters take (other terms on partition columns are
#: tested file by file against the typed partition value)
_PARTITION_FILTER_OPS = frozenset({"=", "!=", "<", "<=", ">", ">=", "in", "isnull", "notnull"})


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
        return _as_float(value)  # beyond a float's range: no bound
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
    """A term's literal as Spark compares it with a column of ``type_name`` (a fraction
    written as ``0.1`` is the exact decimal 0.1; a double literal such as ``1e-1`` makes
    :func:`bounds_may_match` compare an integral or decimal column as doubles). (Spark
    compares a float column with an integer as doubles, as the bounds are.)"""
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


def _may_match(
    add: AddFile, stats: Mapping[str, Any], term: Term, type_name: str | None, float_written: bool = False
) -> bool:
    """Whether ``add`` may hold a row matching ``term`` by its statistics; ``float_written``:
    the ``double`` column was widened from ``float``, so its bounds may be a float's."""
    column, op, _ = term
    if type_name is None or (type_name in ("float", "double") and _nan_matches(term)):
        return True
    if type_name == "variant" and op not in ("isnull", "notnull"):
        return True  # Delta's variant bounds (footer-parsed, Z85 text) bound no SQL value: only nullCount
    lo = _typed(_stat(stats, "minValues", column), type_name)
    hi = _typed(_stat(stats, "maxValues", column), type_name)
    if float_written:
        lo, hi = _float_written_bound(lo, upper=False), _float_written_bound(hi, upper=True)
    return bounds_may_match(
        term,
        lo,
        _max_stat(hi, type_name),
        _stat(stats, "nullCount", column),
        stats.get("numRecords"),
        type_name,
        # numRecords counts the rows a deletion vector deletes; nullCount may not
        all_null_is_exact=add.deletion_vector is None,
    )


def _float_written_bound(bound: Any, upper: bool) -> Any:
    """A ``double`` bound of a column widened from ``float`` as a bound of the float the
    statistic may have been written for too: Delta writes a float as its shortest decimal,
    ``0.7`` for 0.7f, which is 0.699999988079071 as a double, below the bound read. A bound
    beyond a float's range (a double written after the widening) is its own."""
    if not isinstance(bound, float):
        return bound
    candidates = (bound, *_nearest_floats(bound))
    return max(candidates) if upper else min(candidates)


def _nearest_floats(value: float) -> tuple[float, ...]:
    """The floats (as doubles) a decimal read as the double ``value`` is nearest to: one, or
    two when ``value`` lies half-way between them (a decimal near the middle may round to it);
    none beyond a float's range (no float was written as ``value``)."""
    nearest = _as_float(value)
    if nearest is None:
        return ()
    mirrored = 2 * value - nearest  # the float on value's other side when value is half-way
    return (nearest, mirrored) if mirrored != nearest and _as_float(mirrored) == mirrored else (nearest,)


def _as_float(value: float) -> float | None:
    """The float nearest ``value`` (as a double); None beyond a float's range."""
    try:
        result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return None
    return result


def _nan_matches(term: Term) -> bool:
    """Whether a NaN row may match ``term``: a float column's max statistic does not bound
    NaN, which Spark orders above every number, because writers that take it from Parquet
    (delta-rs) leave NaN out of it as Parquet does (Delta Spark writes NaN; deltalog no
    bounds)."""
    _, op, value = term
    if op in (">", ">=", "!="):
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
    if (type_name in INTEGRAL_TYPES or type_name.startswith("decimal")) and _double_literal(op, value):
        type_name = "double"  # Spark casts an integral or decimal column to double to compare with a double
    lo = _comparable(lo, type_name)
    hi = _comparable(hi, type_name)
    try:
        if op == "in":
            candidates = [_literal(v, type_name) for v in value if v is not None]
            if not candidates:
                return False
            return any((lo is None or c >= lo) and (hi is None or c <= hi) for c in candidates)
        if op == "startswith":
            return _prefix_may_match(value, lo, hi)
        v = _literal(value, type_name)
        if v is None:
            return True
        if op == "!=":  # Delta's notEqualTo: only a file of that one value is skipped
            return lo is None or hi is None or not (lo == v == hi)
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


def _double_literal(op: str, value: Any) -> bool:
    """Whether the term's literal (any of an ``IN`` list's) is a double (``1e3``, not the
    exact decimal ``1.5``): Spark then casts an integral or decimal column to double."""
    values = value if op == "in" and isinstance(value, (list, tuple)) else (value,)
    return any(isinstance(v, float) for v in values)


def _prefix_may_match(prefix: Any, lo: Any, hi: Any) -> bool:
    """Delta's skipping of ``StartsWith``: ``substring(min, 0, n) <= prefix AND
    substring(max, 0, n) >= prefix`` for a prefix of ``n`` characters."""
    if not isinstance(prefix, str):
        return True
    n = len(prefix)
    low_ok = not isinstance(lo, str) or lo[:n] <= prefix
    return low_ok and (not isinstance(hi, str) or hi[:n] >= prefix)


def map_term_columns(term: Term, column: Callable[[str], str | None]) -> Term | None:
    """``term`` with each column renamed by ``column``; a leaf whose column maps to None
    constrains nothing (its conjunction drops it), and None is returned when the whole
    term then constrains nothing (a disjunction with an unconstrained conjunction)."""
    name, op, value = term
    if op != OR:
        mapped = column(name)
        return None if mapped is None else (mapped, op, value)
    conjunctions = []
    for conjunction in value:
        kept = tuple(t for t in (map_term_columns(t, column) for t in conjunction) if t is not None)
        if not kept:
            return None
        conjunctions.append(kept)
    return ("", OR, tuple(conjunctions))


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


@dataclass(frozen=True)
class _Columns:
    """What a term's columns are: partition columns (lower-cased name -> name, and the key
    of their partition values), Spark type names, physical names under column mapping, and
    the (lower-cased) paths of ``double`` columns widened from ``float``."""

    partitions: Mapping[str, str]
    partition_keys: Mapping[str, str]
    types: Mapping[str, str]
    physical: Mapping[str, str]
    float_widened: frozenset[str] = frozenset()


#: whether a file (its add and parsed statistics) may hold a row matching a term
_FileTest = Callable[[AddFile, Mapping[str, Any]], bool]


def _file_test(term: Term, columns: _Columns) -> _FileTest:
    """The test of ``term`` on a file: a disjunction passes when any of its conjunctions
    may match, a term on a partition column tests the file's partition value, any other
    the file's statistics."""
    column, op, value = term
    if op == OR:
        conjunctions = [[_file_test(t, columns) for t in c] for c in value]
        return lambda add, stats: any(all(test(add, stats) for test in c) for c in conjunctions)
    name = columns.partitions.get(column.lower())
    if name is not None:
        return _partition_test((name, op, value), columns)
    stats_name, type_name = stats_column(column, columns.types, columns.physical)
    float_written = type_name == "double" and column.lower() in columns.float_widened
    return lambda add, stats: _may_match(add, stats, (stats_name, op, value), type_name, float_written)


def _partition_test(term: Term, columns: _Columns) -> _FileTest:
    """A term on a partition column as a test of a file's partition value: the engine's
    partition filter where it takes the term exactly, a prefix test for ``startswith`` on
    a string column, and no test (every file may match) otherwise."""
    from deltalog.txn.protocol.partition_filters import PartitionPredicate

    name, op, value = term
    key = columns.partition_keys[name]
    type_name = columns.types.get(name, "string")
    if op == "startswith" and type_name == "string" and isinstance(value, str):

        def starts_with(add: AddFile, stats: Mapping[str, Any]) -> bool:
            raw = partition_value(add.partition_values, key)
            return raw is not None and raw.startswith(value)

        return starts_with
    if op not in _PARTITION_FILTER_OPS or not exact_partition_filter(type_name, _ENGINE_OPS.get(op, op), value):
        return lambda add, stats: True
    predicate = PartitionPredicate(_engine_filters([term]), {name: type_name})
    return lambda add, stats: predicate.matches({name: partition_value(add.partition_values, key)})


def _file_stats(add: AddFile) -> Mapping[str, Any]:
    if not add.stats:
        return {}
    try:
        # decimals exactly: a double can round a max below the file's largest value
        value: Mapping[str, Any] = json.loads(add.stats, parse_float=decimal.Decimal)
    except ValueError:
        return {}
    return value


def plan_files(
    files: Sequence[AddFile],
    version: int,
    terms: Sequence[Term],
    partition_columns: Sequence[str],
    column_types: Mapping[str, str],
    physical_names: Mapping[str, str] | None = None,
    generated: Sequence[PartitionExpression] = (),
    time_zone: str | None = None,
    float_widened: Collection[str] = (),
) -> ScanPlan:
    """The files that may hold rows matching every term. Terms on the source column of a
    generated partition column (``generated``) also prune by that partition column
    (:func:`~deltalog.txn.protocol.generated_columns.derived_partition_terms`, in the
    session ``time_zone`` when known). ``float_widened``: the (dotted, lower-cased) columns
    widened from ``float`` to ``double``, whose bounds may be a float's
    (:func:`~deltalog.txn.protocol.type_widening.fields_widened_from_float`)."""
    from deltalog.txn.protocol.partition_filters import PartitionPredicate

    # a term's column is a path (``s.a`` is field ``a`` of ``s``): it never names a
    # top-level column whose name has a dot
    if generated:
        top_level = [t for t in terms if "." not in t[0]]
        terms = [*terms, *derived_partition_terms(top_level, generated, time_zone)]

    part_lower = {c.lower(): c for c in partition_columns if "." not in c}
    partition_terms: list[Term] = []
    data_terms: list[Term] = []
    for column, op, value in terms:
        name = part_lower.get(column.lower())
        if name is not None and op in _PARTITION_FILTER_OPS:
            if exact_partition_filter(column_types.get(name, "string"), _ENGINE_OPS.get(op, op), value):
                partition_terms.append((name, op, value))
        else:  # data columns, disjunctions, other partition terms (startswith): file by file
            data_terms.append((column, op, value))
    engine_filters = _engine_filters(partition_terms)
    predicate = PartitionPredicate(engine_filters, {c: column_types.get(c, "string") for c in partition_columns})
    physical = physical_names or {}
    # partitionValues are keyed by physical name under column mapping
    keys = {c: physical.get(c, c) for c in partition_columns}
    columns = _Columns(part_lower, keys, column_types, physical, frozenset(float_widened))
    tests = [_file_test(term, columns) for term in data_terms]
    selected: list[AddFile] = []
    for add in files:
        if engine_filters:
            values = {c: partition_value(add.partition_values, key) for c, key in columns.partition_keys.items()}
            if not predicate.matches(values):
                continue
        if tests:
            stats = _file_stats(add)
            if not all(test(add, stats) for test in tests):
                continue
        selected.append(add)
    return ScanPlan(version, selected, len(files), partition_terms, data_terms)


def stats_column(column: str, column_types: Mapping[str, str], physical: Mapping[str, str]) -> tuple[str, str | None]:
    """A (dotted, case-insensitive) column as the statistics name it (physical names under
    column mapping, nested fields too) and its Spark type name; None for the type when the
    column is not a primitive field of the schema or is a collated string (a term on it
    skips no file)."""
    head, *rest = column.split(".")  # a path: never a top-level column named with a dot
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
