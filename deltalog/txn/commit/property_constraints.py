"""Table properties that must not be on together: Delta's
``Protocol.assertTablePropertyConstraintsSatisfied``, checked on every metadata change.

Incremental symlink manifests (``delta.compatibility.symlinkFormatManifest.enabled``) list
whole files, so they cannot describe a table with deletion vectors: they refuse persistent
deletion vectors (``delta.enableDeletionVectors``) in the same metadata, and a table that
still has files with deletion vectors (until ``REORG ... APPLY (PURGE)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.properties import TablePropertyValidationError

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot

__all__ = ["check_table_property_constraints"]


def check_table_property_constraints(metadata: Metadata, snapshot: Snapshot | None) -> None:
    """Raise :class:`TablePropertyValidationError` when ``metadata`` (replacing ``snapshot``'s,
    None for a new table) breaks one of Delta's rules."""
    properties = metadata.properties
    if not properties.symlink_format_manifest_enabled:
        return
    table = metadata.name or metadata.id
    if properties.enable_deletion_vectors:
        raise TablePropertyValidationError(
            table,
            "PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION",
            "Persistent deletion vectors and incremental symlink manifest generation are mutually exclusive.",
        )
    if snapshot is not None and any(f.deletion_vector is not None for f in snapshot.files):
        raise TablePropertyValidationError(
            table,
            "EXISTING_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION",
            "Symlink manifest generation is unsupported while deletion vectors are present in the table. "
            f"In order to produce a version of the table without deletion vectors, run 'REORG TABLE {table} "
            "APPLY (PURGE)' (deltalog: DeltaTable.optimize().executePurge(), or optimize(log, purge=True)).",
        )
