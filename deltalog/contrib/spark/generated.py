"""Generated, identity and default columns on the Spark write paths.

The write tasks fill and check these columns (:class:`~deltalog.txn.protocol.column_defaults.DefaultExpressions`
in the :class:`~deltalog.contrib.spark.files.WriteSpec`); this module holds the driver's
part: refusing data that gives a ``GENERATED ALWAYS AS IDENTITY`` column before any task
runs, and moving the identity high-water marks in the metadata the write commits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.identity import (
    IdentityColumnError,
    check_explicit_insert,
    identity_columns,
    update_high_water_marks,
)

__all__ = ["check_data_for_default_columns", "with_high_water_marks"]


def check_data_for_default_columns(metadata: Metadata, data_schema: Mapping[str, Any], streaming: bool) -> None:
    """Refuse, before any task runs, data that gives a ``GENERATED ALWAYS AS IDENTITY``
    column, and a streaming write that would generate identity values (each micro-batch
    would move the high-water mark the query planned against: not supported yet)."""
    names = [str(f["name"]) for f in data_schema.get("fields") or []]
    check_explicit_insert(metadata, names)
    if streaming:
        given = {n.lower() for n in names}
        missing = [c.name for c in identity_columns(metadata) if c.name.lower() not in given]
        if missing:
            raise IdentityColumnError(
                f"a streaming write cannot generate values for the identity column(s) {', '.join(missing)} yet; "
                "write each micro-batch with foreachBatch and a batch write"
            )


def with_high_water_marks(
    new_metadata: Metadata | None, current: Metadata | None, marks: Mapping[str, Sequence[int]]
) -> Metadata | None:
    """The metadata a write commits: its planned change (``new_metadata``; None: keep
    ``current``) with the identity high-water marks its tasks generated. None when the
    write changes nothing."""
    base = new_metadata if new_metadata is not None else current
    if base is None or not marks:
        return new_metadata
    updated = update_high_water_marks(base, marks)
    if updated is base:
        return new_metadata
    return updated
