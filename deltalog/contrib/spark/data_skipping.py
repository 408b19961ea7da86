"""Delta's data skipping for the files a transaction reads (``filterFiles``): the terms of a
condition that can skip files, and the files whose statistics do not rule it out."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from deltalog.contrib.spark import schemas
from deltalog.contrib.spark.predicates import at_session_time_zone
from deltalog.contrib.spark.scan import Term, map_term_columns, plan_files
from deltalog.contrib.spark.skipping_terms import skipping_terms
from deltalog.txn.protocol.type_widening import fields_widened_from_float

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["data_skipped_files", "where_terms"]


def where_terms(where: str | None, qualifier: str | None = None) -> list[Term]:
    """The file-skipping terms of a ``where`` predicate (``qualifier``: the alias columns may
    be qualified with; :func:`~deltalog.contrib.spark.skipping_terms.skipping_terms`)."""
    return skipping_terms(where, qualifier) if where else []


def data_skipped_files(
    snapshot: Snapshot,
    files: list[AddFile],
    condition: str,
    qualifier: str | None = None,
    time_zone: str | None = None,
) -> list[AddFile]:
    """``files`` less those whose partition values or statistics prove that no row matches
    the skipping terms of ``condition`` (:func:`where_terms`; columns may be qualified with
    ``qualifier``; literals compared with ``timestamp`` columns read in the session
    ``time_zone``): Delta's data skipping in ``filterFiles``, for DML and ``replaceWhere`` on
    data columns. Terms on nested fields skip nothing, and without a ``time_zone`` neither
    do terms on a ``timestamp`` partition column (Spark reads their literals in it)."""
    metadata = snapshot.metadata
    schema = json.loads(metadata.schema_string)
    types = schemas.top_level_types(schema)
    unzoned = {c.lower() for c in metadata.partition_columns if time_zone is None and types.get(c) == "timestamp"}
    # a term's column is a path: ``s.a`` never names a top-level column named with a dot
    names = {n.lower(): n for n in types if n.lower() not in unzoned and "." not in n}

    def top_level_column(column: str) -> str | None:
        return names.get(column.lower())

    mapped = (map_term_columns(t, top_level_column) for t in where_terms(condition, qualifier))
    terms: list[Term] = at_session_time_zone([t for t in mapped if t is not None], types, time_zone)
    if not terms or not files:
        return files
    physical = schemas.physical_names(schema, snapshot.properties.column_mapping_mode)
    float_widened = fields_widened_from_float(schema)
    return plan_files(
        files, snapshot.version, terms, metadata.partition_columns, types, physical, float_widened=float_widened
    ).files
