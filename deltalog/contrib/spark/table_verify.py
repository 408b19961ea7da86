"""CREATE TABLE of a location that holds a table: Delta checks the definition against it.

Delta's ``CreateDeltaTableCommand`` handles ``CREATE OR REPLACE TABLE delta.`/path``` (what
``DeltaTable.createOrReplace(spark).location(path)`` runs) as a CREATE: a path identifier has
no catalog entry, so the table is never "replaced", and CREATE TABLE of a name the catalog
does not have at such a location is the same (:func:`~deltalog.contrib.spark.table_builder.creation_step`);
when the log already holds one,
``verifyTableMetadata`` checks that the builder's schema, partitioning, clustering and
properties (when any are given) match it, and commits nothing. (delta-io/delta#827 notes
that this differs from ``replace``, which does replace.) A builder given the name of a
table Spark's catalog has (``tableName("t").location(path)``) replaces, as Delta's does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.logical_schema import without_internal_delta_metadata
from deltalog.txn.protocol.properties import COLUMN_MAPPING_MAX_ID, FEATURE_PROPERTY_PREFIX
from deltalog.txn.protocol.schema import split_column_name

__all__ = ["verify_existing_definition"]

#: the protocol's properties, which Delta leaves out of the comparison
#: (``Protocol.filterProtocolPropsFromTableProps``)
_PROTOCOL_PROPERTIES = frozenset({"delta.minReaderVersion", "delta.minWriterVersion"})


def verify_existing_definition(
    path: str,
    existing: tuple[str, Sequence[str], Mapping[str, str], Sequence[str] | None],
    fields: list[dict[str, Any]],
    partitions: Sequence[str],
    cluster_by: Sequence[str],
    properties: Mapping[str, str],
) -> None:
    """Delta's ``verifyTableMetadata``: raise :class:`DeltaAnalysisError` when the builder's
    definition differs from the table at ``path``, whose ``existing`` schema string,
    partition columns, configuration and clustering columns (``None``: not clustered) are
    given."""
    schema_string, existing_partitions, configuration, existing_clustering = existing
    if fields:  # as Delta's, the schema (when given) decides the partitioning and clustering too
        _verify_layout(path, (schema_string, existing_partitions, existing_clustering), fields, partitions, cluster_by)
    if properties and _compared(properties) != _compared(configuration):
        raise DeltaAnalysisError(
            f"DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY: The specified properties do not match the existing "
            f"properties at {path}. Specified: {_compared(properties)}; existing: {_compared(configuration)}"
        )


def _verify_layout(
    path: str,
    existing: tuple[str, Sequence[str], Sequence[str] | None],
    fields: list[dict[str, Any]],
    partitions: Sequence[str],
    cluster_by: Sequence[str],
) -> None:
    schema_string, existing_partitions, existing_clustering = existing
    existing_fields = without_internal_delta_metadata(json.loads(schema_string)).get("fields") or []
    differences = _differences(existing_fields, fields)
    if differences:
        raise DeltaAnalysisError(
            f"DELTA_CREATE_TABLE_SCHEME_MISMATCH: The specified schema does not match the existing schema at {path}."
            f" Differences: {'; '.join(differences)}. Omit the schema, or give the existing one"
        )
    if list(partitions) != list(existing_partitions):
        raise DeltaAnalysisError(
            f"DELTA_CREATE_TABLE_WITH_DIFFERENT_PARTITIONING: The specified partitioning does not match the existing "
            f"partitioning at {path}. Specified: {list(partitions)}; existing: {list(existing_partitions)}"
        )
    specified_clustering = list(cluster_by) if cluster_by else None
    specified = [split_column_name(c) for c in specified_clustering] if specified_clustering else None
    existing_parts = [split_column_name(c) for c in existing_clustering] if existing_clustering is not None else None
    if specified != existing_parts:
        raise DeltaAnalysisError(
            f"DELTA_CREATE_TABLE_WITH_DIFFERENT_CLUSTERING: The specified clustering columns do not match the "
            f"existing clustering columns at {path}. Specified: {specified_clustering}; existing: "
            f"{existing_clustering}"
        )


def _compared(properties: Mapping[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in properties.items()
        if k != COLUMN_MAPPING_MAX_ID and k not in _PROTOCOL_PROPERTIES and not k.startswith(FEATURE_PROPERTY_PREFIX)
    }


def _differences(existing: list[dict[str, Any]], specified: list[dict[str, Any]]) -> list[str]:
    """Delta's ``SchemaUtils.reportDifferences`` of the top-level fields, in short."""
    old = {str(f["name"]): f for f in existing}
    new = {str(f["name"]): f for f in specified}
    out = []
    if [n for n in old if n not in new]:
        out.append(f"specified schema is missing field(s): {', '.join(n for n in old if n not in new)}")
    if [n for n in new if n not in old]:
        out.append(f"specified schema has additional field(s): {', '.join(n for n in new if n not in old)}")
    defaults: dict[str, Any] = {"type": None, "nullable": True, "metadata": {}}
    for name in (n for n in new if n in old):
        for key, default in defaults.items():
            if old[name].get(key, default) != new[name].get(key, default):
                out.append(f"specified {key} for {name} is different from existing schema")
    return out
