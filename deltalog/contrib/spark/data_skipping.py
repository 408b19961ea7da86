"""Delta's data skipping for the files a transaction reads (``filterFiles``): the terms of a
condition that can skip files, and the files whose statistics do not rule it out."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from deltalog.contrib.spark import schemas
from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.predicates import parse_partition_predicate
from deltalog.contrib.spark.scan import Term, plan_files

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["data_skipped_files", "where_terms"]


def where_terms(where: str | None, qualifier: str | None = None) -> list[Term]:
    """The file-skipping terms of a ``where`` predicate (terms that cannot skip are dropped;
    ``qualifier``: the alias columns may be qualified with)."""
    if not where:
        return []
    try:
        filters = parse_partition_predicate(where, qualifier)
    except DeltaAnalysisError:
        return []  # not a simple conjunction: Spark still filters the rows, nothing is skipped
    terms: list[Term] = []
    for column, op, value in filters:
        if op == "=" and value is None:
            terms.append((column, "isnull", None))
        elif op == "!=" and value is None:
            terms.append((column, "notnull", None))
        elif op == "in":
            terms.append((column, "in", tuple(value)))
        elif op in ("=", "<", "<=", ">", ">="):
            terms.append((column, op, value))
    return terms


def data_skipped_files(
    snapshot: Snapshot, files: list[AddFile], condition: str, qualifier: str | None = None
) -> list[AddFile]:
    """``files`` less those whose statistics prove that no row matches the terms of
    ``condition`` on top-level data columns (terms that cannot skip are ignored; columns may
    be qualified with ``qualifier``): Delta's data skipping in ``filterFiles``, for DML and
    ``replaceWhere`` on data columns."""
    metadata = snapshot.metadata
    parts = {c.lower() for c in metadata.partition_columns}
    schema = json.loads(metadata.schema_string)
    types = schemas.top_level_types(schema)
    names = {n.lower(): n for n in types}
    terms: list[Term] = [
        (names[column.lower()], op, value)
        for column, op, value in where_terms(condition, qualifier)
        if column.lower() in names and column.lower() not in parts
    ]
    if not terms or not files:
        return files
    physical = schemas.physical_names(schema, snapshot.properties.column_mapping_mode)
    return plan_files(files, snapshot.version, terms, (), types, physical).files
