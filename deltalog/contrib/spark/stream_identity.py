"""Identity values in a streaming write.

Delta's ``DeltaSink`` runs each micro-batch in a new transaction, so each batch generates
identity values past the high-water mark the batches before it moved. A Python data
source's streaming writer is planned once, when the query starts, and its tasks get that
plan at every batch. So the tasks of a stream that generates identity values read the
table's current high-water marks themselves when they run (:func:`with_current_high_water_marks`),
and report the version they read. The batch's commit opens its transaction on the oldest
version its tasks read: a writer that moved a mark since (and may have generated the same
values) is then a concurrent metadata change, which the conflict checker refuses
(``MetadataChangedError``), as Delta's does for two writers that generate identity values.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from deltalog.txn.protocol.identity import identity_columns

if TYPE_CHECKING:
    from deltalog.contrib.spark.files import WriteSpec

__all__ = ["generates_identity_values", "with_current_high_water_marks"]


def generates_identity_values(spec: WriteSpec, data_schema: str) -> bool:
    """Whether the tasks generate identity values: the table has an identity column the
    written data (``data_schema``, Spark's JSON) lacks."""
    if spec.default_expressions is None or not spec.default_expressions.identity:
        return False
    given = {str(f["name"]).lower() for f in json.loads(data_schema).get("fields") or []}
    return any(c.name.lower() not in given for c in spec.default_expressions.identity)


def with_current_high_water_marks(spec: WriteSpec) -> tuple[WriteSpec, int]:
    """``spec`` with its identity columns' high-water marks as the table's latest version
    has them, and that version (read in the write task)."""
    from deltalog.txn.delta_log import DeltaLog

    defaults = spec.default_expressions
    assert defaults is not None  # generates_identity_values(spec, ...) was true
    snapshot = DeltaLog(spec.table_uri, spec.store.build()).update()
    current = {c.name.lower(): c.high_water_mark for c in identity_columns(snapshot.metadata)}
    identity = tuple(
        replace(c, high_water_mark=current.get(c.name.lower(), c.high_water_mark)) for c in defaults.identity
    )
    return replace(spec, default_expressions=replace(defaults, identity=identity)), snapshot.version
