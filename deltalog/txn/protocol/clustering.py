"""Clustered tables (PROTOCOL "Clustered Table", Delta's liquid clustering): the clustering
columns live in the ``delta.clustering`` domain metadata as physical name paths,
``{"clusteringColumns": [["col-5abe..."], ["a", "b"]]}`` (Delta's ``ClusteringMetadataDomain``).

A clustered table lists the ``clustering`` and ``domainMetadata`` writer features, is never
partitioned, and OPTIMIZE tags the files it clusters with ``clusteringProvider: "liquid"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.txn.protocol.actions import DomainMetadata, Protocol
from deltalog.txn.protocol.column_identifiers import column_sql
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.schema import split_column_name
from deltalog.txn.protocol.stats_columns import SKIPPING_ELIGIBLE_TYPES

__all__ = [
    "CLUSTERING_DOMAIN",
    "CLUSTERING_FEATURES",
    "CLUSTERING_PROVIDER",
    "MAX_CLUSTERING_COLUMNS",
    "ClusteringColumnsError",
    "cleared_clustering_domain",
    "clustering_domain",
    "clustering_domain_without_column_mapping",
    "clustering_protocol",
    "logical_clustering_columns",
    "physical_clustering_columns",
    "refuse_partitioning_a_clustered_table",
]

CLUSTERING_DOMAIN = "delta.clustering"
#: Delta's ``ClusteredTableUtils.clusteringProvider``.
CLUSTERING_PROVIDER = "liquid"
CLUSTERING_FEATURES = ("clustering", "domainMetadata")
#: Delta's ``spark.databricks.delta.clusteredTable.maxClusteringColumns`` default.
MAX_CLUSTERING_COLUMNS = 4
_PHYSICAL = "delta.columnMapping.physicalName"
#: types data skipping keeps min/max for (Delta's ``SkippingEligibleDataType``); deltalog's
#: files carry no variant bounds
_SKIPPING_TYPES = SKIPPING_ELIGIBLE_TYPES - {"variant"}


class ClusteringColumnsError(DeltaLogError):
    """Clustering columns that Delta refuses: unknown, of a type without min/max statistics,
    too many, or on a partitioned table. The table is left untouched."""


def clustering_protocol() -> Protocol:
    """The protocol a clustered table needs at least (writer 7 with both features)."""
    return Protocol(1, 7, None, CLUSTERING_FEATURES)


def _physical(field: Mapping[str, Any]) -> str:
    return str((field.get("metadata") or {}).get(_PHYSICAL, field["name"]))


def _split(column: str | Sequence[str]) -> list[str]:
    return split_column_name(column) if isinstance(column, str) else list(column)


def physical_clustering_columns(
    schema: Mapping[str, Any], columns: Sequence[str | Sequence[str]], partition_columns: Sequence[str] = ()
) -> list[list[str]]:
    """The physical name path of each clustering column (Delta's ``ClusteringColumn``):
    top-level columns, resolved case-insensitively (backquotes quote a name with a dot), must
    be of a type with min/max statistics, at most :data:`MAX_CLUSTERING_COLUMNS`, distinct,
    and the table must not be partitioned."""
    if partition_columns and columns:
        raise ClusteringColumnsError(
            f"a table cannot be both partitioned (by {list(partition_columns)}) and clustered: "
            "clustering replaces partitioning (Delta's DELTA_CLUSTER_BY_WITH_PARTITIONED_BY)"
        )
    if len(columns) > MAX_CLUSTERING_COLUMNS:
        raise ClusteringColumnsError(
            f"[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] CLUSTER BY supports up to {MAX_CLUSTERING_COLUMNS} clustering "
            f"columns, but the table has {len(columns)} clustering columns: remove the extra clustering columns"
        )
    out: list[list[str]] = []
    for column in columns:
        parts = _split(column)
        shown = ".".join(parts)
        if len(parts) > 1:
            raise ClusteringColumnsError(
                f"clustering column {shown} is a nested field: deltalog clusters by top-level columns only "
                "(quote a name holding a dot with backquotes)"
            )
        t: Any = schema
        path: list[str] = []
        for part in parts:
            fields = t.get("fields") if isinstance(t, dict) and t.get("type") == "struct" else None
            field = next((f for f in fields or [] if f["name"].lower() == part.lower()), None)
            if field is None:
                names = [f["name"] for f in schema.get("fields") or []]
                raise ClusteringColumnsError(
                    f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column {shown} in the schema {names}: "
                    "cluster by columns of the table"
                )
            path.append(_physical(field))
            t = field["type"]
        kind = t if isinstance(t, str) else t.get("type")
        if not (kind in _SKIPPING_TYPES or str(kind).startswith("decimal(")):
            raise ClusteringColumnsError(
                f"clustering column {shown} is of type {kind}, which has no min/max statistics: cluster by "
                "numbers, strings, dates or timestamps (Delta's DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED)"
            )
        if path in out:
            quoted = "`" + shown.replace("`", "``") + "`"
            raise ClusteringColumnsError(
                f"[DELTA_DUPLICATE_COLUMNS_FOUND.CLUSTER_BY] Found duplicate column(s): {quoted}: "
                "each clustering column may be given once"
            )
        out.append(path)
    return out


def clustering_domain(physical_columns: Sequence[Sequence[str]]) -> DomainMetadata:
    """The ``delta.clustering`` domain metadata naming ``physical_columns`` (empty: the table
    stays clustered with no clustering column, Delta's ``CLUSTER BY NONE``)."""
    config = json.dumps({"clusteringColumns": [list(p) for p in physical_columns]}, separators=(",", ":"))
    return DomainMetadata(CLUSTERING_DOMAIN, config, False)


def cleared_clustering_domain(domains: Mapping[str, DomainMetadata]) -> tuple[DomainMetadata, ...]:
    """The ``delta.clustering`` domain of a table replaced without ``CLUSTER BY``: no column
    when the table has one (Delta's ``getMatchingMetadataDomain`` with no clustering column
    and ``handleDomainMetadataForReplaceTable``), nothing otherwise."""
    domain = domains.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return ()
    return (clustering_domain([]),)


def logical_clustering_columns(
    domains: Mapping[str, DomainMetadata], schema: Mapping[str, Any], protocol: Protocol | None = None
) -> list[str] | None:
    """The clustering columns by logical (dotted) name, or None when the table is not
    clustered (no ``clustering`` writer feature, or no ``delta.clustering`` domain)."""
    if protocol is not None and "clustering" not in (protocol.writer_features or ()):
        return None
    paths = _logical_clustering_paths(domains, schema)
    if paths is None:
        return None
    return [column_sql(p) for p in paths]  # Delta's FieldReference: quoted where not a plain word


def _logical_clustering_paths(
    domains: Mapping[str, DomainMetadata], schema: Mapping[str, Any]
) -> list[list[str]] | None:
    """The logical name path of each column the ``delta.clustering`` domain names by
    physical name, or None without the domain."""
    domain = domains.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return None
    try:
        paths = json.loads(domain.configuration or "{}").get("clusteringColumns") or []
    except ValueError:
        return None
    out: list[list[str]] = []
    for path in paths:
        t: Any = schema
        logical: list[str] = []
        for part in [path] if isinstance(path, str) else path:
            fields = t.get("fields") if isinstance(t, dict) and t.get("type") == "struct" else []
            field = next((f for f in fields or [] if _physical(f).lower() == str(part).lower()), None)
            if field is None:
                raise ClusteringColumnsError(
                    f"the {CLUSTERING_DOMAIN} domain names column {path}, which is not in the table schema"
                )
            logical.append(field["name"])
            t = field["type"]
        out.append(logical)
    return out


def clustering_domain_without_column_mapping(
    domains: Mapping[str, DomainMetadata], schema: Mapping[str, Any]
) -> DomainMetadata | None:
    """The ``delta.clustering`` domain naming the clustering columns of a table whose column
    mapping is being removed (``schema``: the mapped schema) by their logical names, the
    names the rewritten files hold; None when the table is not clustered or the domain names
    a column the schema does not have (left as it is: the removal does not mend it)."""
    try:
        paths = _logical_clustering_paths(domains, schema)
    except ClusteringColumnsError:
        return None
    return None if paths is None else clustering_domain(paths)


def refuse_partitioning_a_clustered_table(protocol: Protocol | None, partition_columns: Sequence[str]) -> None:
    """Delta's ``DELTA_CLUSTERING_REPLACE_TABLE_WITH_PARTITIONED_TABLE``: a table with the
    clustering feature (clustered, or once clustered: the feature stays) is never replaced
    or overwritten by a partitioned one (Delta's ``validatePrerequisitesForClusteredTable``)."""
    if not partition_columns or protocol is None or "clustering" not in (protocol.writer_features or ()):
        return
    raise ClusteringColumnsError(
        f"replacing a clustered Delta table with a table partitioned by {list(partition_columns)} is not "
        "allowed (Delta's DELTA_CLUSTERING_REPLACE_TABLE_WITH_PARTITIONED_TABLE); drop partitionBy"
    )
