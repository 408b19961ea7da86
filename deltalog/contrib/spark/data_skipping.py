"""Delta's data skipping for the files a transaction reads (``filterFiles``): the terms of a
condition that can skip files, and the files whose statistics do not rule it out."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from deltalog.contrib.spark import schemas
from deltalog.contrib.spark.scan import Term, map_term_columns, plan_files
from deltalog.contrib.spark.skipping_terms import skipping_terms

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["data_skipped_files", "where_terms"]


def where_terms(where: str | None, qualifier: str | None = None) -> list[Term]:
    """The file-skipping terms of a ``where`` predicate (``qualifier``: the alias columns may
    be qualified with; :func:`~deltalog.contrib.spark.skipping_terms.skipping_terms`)."""
    return skipping_terms(where, qualifier) if where else []


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
    names = {n.lower(): n for n in types if n.lower() not in parts}

    def data_column(column: str) -> str | None:
        return names.get(column.lower())

    mapped = (map_term_columns(t, data_column) for t in where_terms(condition, qualifier))
    terms: list[Term] = [t for t in mapped if t is not None]
    if not terms or not files:
        return files
    physical = schemas.physical_names(schema, snapshot.properties.column_mapping_mode)
    return plan_files(files, snapshot.version, terms, (), types, physical).files
