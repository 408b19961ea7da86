"""Removing column mapping from a table (Delta's ``RemoveColumnMappingCommand``): the
pre-downgrade work of ``DROP FEATURE columnMapping``, and what ``ALTER TABLE SET TBLPROPERTIES
('delta.columnMapping.mode' = 'none')`` / ``UNSET TBLPROPERTIES ('delta.columnMapping.mode')``
do (:func:`deltalog.txn.commands.alter.set_table_properties`; the ``columnMapping`` feature
stays in the protocol then).

One transaction reads every live file, writes it again with the logical column names
(``dataChange=false``; the rows a deletion vector deletes are left out, the stable row ids
and commit versions of a row-tracking table kept in its materialized columns, as OPTIMIZE
does), and commits, with the removes of the old files, the metadata without column mapping:
the schema without ``delta.columnMapping.*`` field metadata and the configuration without
``delta.columnMapping.maxColumnId`` and without ``delta.columnMapping.mode`` (or with it set
to ``none``: ``unset_mode_property=False``, the SET TBLPROPERTIES spelling). A column whose name a
table without column mapping cannot have (one of `` ,;{}()\\n\\t=``) refuses the removal
(:class:`InvalidColumnNamesError`); rename it first.

The files are rewritten by :data:`~deltalog.txn.commands.optimize.BinRewriter` (default:
here, one file after the other; the Spark layer passes Spark tasks), one output per file.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from typing import TYPE_CHECKING

from deltalog.txn.commands.optimize import BinRewriter, CompactionSpec, delete_data_file, rewrite_bin
from deltalog.txn.commit.operations import RemoveColumnMapping
from deltalog.txn.protocol.actions import Action, AddFile, Metadata
from deltalog.txn.protocol.clustering import clustering_domain_without_column_mapping
from deltalog.txn.protocol.column_mapping import has_column_mapping, invalid_column_names, without_column_mapping
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.properties import COLUMN_MAPPING_MAX_ID, COLUMN_MAPPING_MODE
from deltalog.txn.protocol.schema import parse_schema
from deltalog.txn.protocol.stats_columns import STRING_PREFIX_LENGTH

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = ["InvalidColumnNamesError", "remove_column_mapping", "without_column_mapping_metadata"]

log = logging.getLogger(__name__)

#: the properties the removal drops (Delta's ``getConfigurationWithoutColumnMapping``)
_PROPERTIES = (COLUMN_MAPPING_MODE, COLUMN_MAPPING_MAX_ID)


class InvalidColumnNamesError(DeltaLogError):
    """A column's name needs column mapping; nothing was changed."""

    error_class = "DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING"

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            f"[{self.error_class}] Found invalid character(s) among ' ,;{{}}()\\n\\t=' in the column names: "
            f"{', '.join(names)}. A table without column mapping cannot have them: rename these columns "
            "(ALTER TABLE ... RENAME COLUMN), then drop column mapping again."
        )
        self.names = names


def without_column_mapping_metadata(metadata: Metadata, unset_mode_property: bool = True) -> Metadata:
    """``metadata`` without column mapping: the schema's field metadata and the two
    properties removed, or the mode set to ``none`` when not ``unset_mode_property`` (Delta's
    ``getConfigurationWithoutColumnMapping``); :class:`InvalidColumnNamesError` when a name
    needs column mapping."""
    schema = without_column_mapping(parse_schema(metadata.schema_string))
    if invalid := invalid_column_names(schema):
        raise InvalidColumnNamesError(invalid)
    config = {k: v for k, v in metadata.configuration.items() if k not in _PROPERTIES}
    if not unset_mode_property:
        config[_PROPERTIES[0]] = "none"
    return dataclasses.replace(metadata, schema_string=schema.to_json(), configuration=config)


def _spec(delta_log: DeltaLog, snapshot: Snapshot, metadata: Metadata, prefix_length: int) -> CompactionSpec:
    """What the rewrite writes: the table as it is after the commit, read from files that
    hold the physical names of ``snapshot``'s data columns."""
    after = snapshot.apply(snapshot.version + 1, [metadata], int(time.time() * 1000))
    spec = CompactionSpec.for_snapshot(delta_log, after, session_prefix_length=prefix_length)
    partition = {c.lower() for c in snapshot.partition_columns}
    data = dataclasses.replace(
        snapshot.schema, fields=tuple(f for f in snapshot.schema.fields if f.name.lower() not in partition)
    )
    return dataclasses.replace(spec, rename_from=data)


def _logical_partition_values(snapshot: Snapshot, f: AddFile) -> AddFile:
    """``f`` with its partition values keyed by the logical column names."""
    logical = {field.physical_name: field.name for field in snapshot.schema.fields}
    return dataclasses.replace(f, partition_values={logical.get(k, k): v for k, v in f.partition_values.items()})


def remove_column_mapping(
    delta_log: DeltaLog,
    *,
    rewrite_bins: BinRewriter | None = None,
    session_prefix_length: int = STRING_PREFIX_LENGTH,
    lock: str | CommitLock | None = None,
    unset_mode_property: bool = True,
) -> int | None:
    """Rewrite the table without column mapping (the module docstring); the version
    committed, or None when the table has no column mapping to remove. ``lock``: the
    commit lock (``docs/locks.md``); ``unset_mode_property``: remove
    ``delta.columnMapping.mode`` (else set it to ``none``)."""
    txn = delta_log.start_transaction(lock=lock)
    snapshot = txn.snapshot
    if not txn.table_exists or not has_column_mapping(snapshot.metadata):
        return None
    metadata = without_column_mapping_metadata(snapshot.metadata, unset_mode_property)
    txn.read_whole_table()
    txn.update_metadata(metadata, removing_column_mapping=True)
    spec = _spec(delta_log, snapshot, metadata, session_prefix_length)
    files = list(snapshot.files)
    bins = [[_logical_partition_values(snapshot, f)] for f in files]
    written: list[list[AddFile]] = []
    committed = False
    try:
        if rewrite_bins is not None:
            written = list(rewrite_bins(spec, bins)) if bins else []
        else:
            written = [rewrite_bin(spec, b) for b in bins]
        adds = [a for added in written for a in added]
        now = int(time.time() * 1000)
        actions: list[Action] = [*(f.remove(now, data_change=False) for f in files), *adds]
        actions.extend(_clustering_domain(snapshot))
        version: int = txn.commit(actions, RemoveColumnMapping(user_metrics=_metrics(files, adds)))
        committed = True
    finally:
        if not committed:
            for added in written:
                for a in added:
                    delete_data_file(delta_log.store, delta_log.table_uri, a.path)
    log.info(
        "removed column mapping of %s at version %d (%d files rewritten)", delta_log.table_uri, version, len(files)
    )
    return version


def _clustering_domain(snapshot: Snapshot) -> list[Action]:
    """The ``delta.clustering`` domain naming the clustering columns by the names the
    rewritten files hold (it named them by their mapped physical names)."""
    schema = json.loads(snapshot.metadata.schema_string)
    domain = clustering_domain_without_column_mapping(snapshot.domain_metadata, schema)
    return [] if domain is None else [domain]


def _metrics(files: list[AddFile], adds: list[AddFile]) -> dict[str, str]:
    """Delta's ``REMOVE_COLUMN_MAPPING`` metrics."""
    return {
        "numRewrittenFiles": str(len(files)),
        "numOutputBytes": str(sum(a.size for a in adds)),
        "numRemovedBytes": str(sum(f.size for f in files)),
        "numCopiedRows": str(sum(a.num_records() or 0 for a in adds)),
        "numDeletionVectorsRemoved": str(sum(1 for f in files if f.deletion_vector is not None)),
    }
