"""Which columns a table's data files carry statistics for: Delta's ``StatisticsCollection``.

:class:`StatsColumns` is the one rule every writer of ``add.stats`` follows (Delta's
``getIndexedColumns`` over the table's data schema, the columns that are not partition
columns), and what checkpoints' ``stats_parsed``, Z-order and clustering checks ask:

- ``delta.dataSkippingStatsColumns`` set: exactly the columns it lists, matched ignoring
  case, in the schema's order; a struct stands for all its fields, ``s.x`` for one field
  (``filterSchema``). A listed column the schema lacks is skipped. An empty value lists none.
- otherwise the first ``delta.dataSkippingNumIndexedCols`` (32) leaf columns, counting the
  fields of structs (``truncateSchema``); ``-1``: all of them.

It also carries how many characters of a string its statistics keep
(:attr:`StatsColumns.string_prefix_length`): ``delta.dataSkippingStringPrefixLength``, else
the writer's session default (Delta's ``spark.databricks.io.skipping.stringPrefixLength``),
else 32, as Delta's ``getDataSkippingStringPrefixLength``.

Every leaf has a null count; only skipping-eligible types (:func:`is_skipping_eligible`)
have a minimum and a maximum. Statistics are keyed by physical names (column mapping);
:attr:`StatsColumns.schema` keeps the logical names with each field's metadata.

:func:`validate_stats_columns` is Delta's ``validateDeltaStatsColumns`` (run on every
metadata change, as Delta's ``updateMetadata`` does); :func:`renamed_stats_columns` and
:func:`dropped_stats_columns` are Delta's ``renameDeltaStatsColumn`` /
``dropDeltaStatsColumns`` for ALTER TABLE RENAME/DROP COLUMN.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.txn.protocol.column_identifiers import ColumnPath, column_sql
from deltalog.txn.protocol.properties import InvalidPropertyError, TableProperties
from deltalog.txn.protocol.schema import DecimalType, PrimitiveType, StructField, StructType

if TYPE_CHECKING:
    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.schema import DataType

__all__ = [
    "SKIPPING_ELIGIBLE_TYPES",
    "STRING_PREFIX_LENGTH",
    "InvalidStatsColumnsError",
    "StatsColumns",
    "dropped_stats_columns",
    "is_skipping_eligible",
    "renamed_stats_columns",
]

#: primitive types data skipping keeps a minimum and a maximum for (Delta's
#: ``SkippingEligibleDataType``, with ``variant`` as ``collectVariantDataSkippingStats`` has it),
#: besides decimals
SKIPPING_ELIGIBLE_TYPES = frozenset(
    {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string", "variant"}
)

#: characters of a string statistics keep when neither the table nor the session says (Delta's
#: ``spark.databricks.io.skipping.stringPrefixLength`` default)
STRING_PREFIX_LENGTH = 32


def is_skipping_eligible(data_type: DataType) -> bool:
    """Delta's ``SkippingEligibleDataType``: numbers, dates, timestamps, strings (and variant)."""
    return isinstance(data_type, DecimalType) or (
        isinstance(data_type, PrimitiveType) and data_type.name in SKIPPING_ELIGIBLE_TYPES
    )


class InvalidStatsColumnsError(InvalidPropertyError):
    """``delta.dataSkippingStatsColumns`` lists a column Delta refuses: one the table does
    not have, a partition column, a column of a type without statistics, or a column twice.
    ``error_class`` is Delta's error class, ``columns`` the columns at fault."""

    def __init__(self, error_class: str, message: str, columns: Sequence[str]) -> None:
        super().__init__(f"{error_class}: {message}; nothing was changed")
        self.error_class = error_class
        self.columns = tuple(columns)


@dataclass(frozen=True)
class StatsColumns:
    """The columns of a table whose files carry statistics: :attr:`schema` is its data
    schema pruned to them (Delta's ``statCollectionLogicalSchema``); :attr:`string_prefix_length`
    the characters a string's minimum keeps (and its maximum before the tie-breaker)."""

    schema: StructType
    string_prefix_length: int = STRING_PREFIX_LENGTH

    @classmethod
    def of(cls, metadata: Metadata, session_prefix_length: int = STRING_PREFIX_LENGTH) -> StatsColumns:
        """The stats columns of a table with ``metadata``; strings keep the table's
        ``delta.dataSkippingStringPrefixLength``, else ``session_prefix_length``."""
        schema = StructType.from_json(metadata.schema_string)
        return cls.for_schema(schema, metadata.partition_columns, metadata.configuration, session_prefix_length)

    @classmethod
    def for_schema(
        cls,
        schema: StructType,
        partition_columns: Collection[str] = (),
        configuration: Mapping[str, str] | None = None,
        session_prefix_length: int = STRING_PREFIX_LENGTH,
    ) -> StatsColumns:
        """The stats columns of a table of ``schema`` (logical) with those partition
        columns and properties; raises :class:`InvalidPropertyError` on a value Delta cannot read."""
        properties = TableProperties(configuration or {})
        prefix = properties.data_skipping_string_prefix_length
        prefix = session_prefix_length if prefix is None else prefix
        partitions = {c.lower() for c in partition_columns}
        data = StructType(tuple(f for f in schema.fields if f.name.lower() not in partitions))
        listed = properties.data_skipping_stats_columns
        if listed is not None:
            return cls(_filter_schema(data, [tuple(p.lower() for p in path) for path in listed.paths]), prefix)
        num_indexed = properties.data_skipping_num_indexed_cols
        return cls(data if num_indexed < 0 else _truncate_schema(data, num_indexed)[0], prefix)

    def leaves(self) -> Iterator[tuple[ColumnPath, ColumnPath, StructField]]:
        """Each leaf column with statistics: its logical path, physical path and field."""

        def walk(
            struct: StructType, logical: ColumnPath, physical: ColumnPath
        ) -> Iterator[tuple[ColumnPath, ColumnPath, StructField]]:
            for f in struct.fields:
                names, stored = (*logical, f.name), (*physical, f.physical_name)
                if isinstance(f.type, StructType):
                    yield from walk(f.type, names, stored)
                else:
                    yield names, stored, f

        return walk(self.schema, (), ())

    @property
    def physical_paths(self) -> tuple[ColumnPath, ...]:
        """The leaf columns with statistics as data files and ``add.stats`` name them."""
        return tuple(physical for _, physical, _ in self.leaves())

    @property
    def logical_paths(self) -> tuple[ColumnPath, ...]:
        return tuple(logical for logical, _, _ in self.leaves())

    def covers(self, path: Sequence[str]) -> bool:
        """Whether the column at the logical ``path`` (any case) has statistics: a leaf of
        it, or, for a struct, of one of its fields."""
        wanted = tuple(p.lower() for p in path)
        return any(tuple(p.lower() for p in logical[: len(wanted)]) == wanted for logical in self.logical_paths)


def _filter_schema(schema: StructType, paths: Sequence[ColumnPath]) -> StructType:
    """Delta's ``filterSchema``: the fields ``paths`` (lower-cased) name. A field named
    whole by every path naming it is kept whole; otherwise a struct keeps the fields the
    longer paths name (as Delta, ``s`` listed with ``s.x`` keeps only ``s.x``)."""
    by_name: dict[str, list[ColumnPath]] = {}
    for path in paths:
        by_name.setdefault(path[0], []).append(path[1:])
    fields = []
    for f in schema.fields:
        rests = by_name.get(f.name.lower())
        if rests is None:
            continue
        if all(not rest for rest in rests):
            fields.append(f)
        elif isinstance(f.type, StructType):
            fields.append(dataclasses.replace(f, type=_filter_schema(f.type, [r for r in rests if r])))
    return StructType(tuple(fields))


def _truncate_schema(schema: StructType, limit: int) -> tuple[StructType, int]:
    """Delta's ``truncateSchema``: the first ``limit`` leaf columns, and how many it kept."""
    fields: list[StructField] = []
    count = 0
    for f in schema.fields:
        if count >= limit:
            break
        if isinstance(f.type, StructType):
            inner, kept = _truncate_schema(f.type, limit - count)
            fields.append(dataclasses.replace(f, type=inner))
            count += kept
        else:
            fields.append(f)
            count += 1
    return StructType(tuple(fields)), count


# -- ALTER TABLE RENAME / DROP COLUMN ---------------------------------------------------------


def _under(path: ColumnPath, column: ColumnPath) -> bool:
    """Whether ``path`` is ``column`` or inside it (names compared ignoring case)."""
    return len(path) >= len(column) and all(a.lower() == b.lower() for a, b in zip(path, column, strict=False))


def _with_paths(configuration: Mapping[str, str], paths: Sequence[ColumnPath]) -> dict[str, str]:
    return {**configuration, "delta.dataSkippingStatsColumns": ",".join(column_sql(p) for p in paths)}


def renamed_stats_columns(configuration: Mapping[str, str], old: ColumnPath, new: ColumnPath) -> dict[str, str]:
    """``configuration`` after the column at ``old`` is renamed ``new`` (Delta's
    ``renameDeltaStatsColumn``): the listed columns at or inside ``old`` move to ``new``,
    and the list is written back as Spark writes column names."""
    listed = TableProperties(configuration).data_skipping_stats_columns
    if listed is None or old == new:
        return dict(configuration)
    paths = [(*new, *p[len(old) :]) if _under(p, old) else p for p in listed.paths]
    return _with_paths(configuration, paths)


def dropped_stats_columns(configuration: Mapping[str, str], dropped: Collection[ColumnPath]) -> dict[str, str]:
    """``configuration`` after the columns ``dropped`` are dropped (Delta's
    ``dropDeltaStatsColumns``): the listed columns at or inside them leave the list, which
    stays set when it empties (statistics for no column, as in Delta)."""
    listed = TableProperties(configuration).data_skipping_stats_columns
    if listed is None or not dropped:
        return dict(configuration)
    return _with_paths(configuration, [p for p in listed.paths if not any(_under(p, d) for d in dropped)])
