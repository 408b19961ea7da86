"""Row tracking (PROTOCOL "Row Tracking"): fresh row ids and row commit versions.

Follows Delta Spark's ``RowId``, ``DefaultRowCommitVersion``, ``MaterializedRowTrackingColumn``
and the row-id reassignment of ``ConflictChecker``:

- row tracking is *supported* when the protocol lists the ``rowTracking`` writer feature,
  *enabled* when ``delta.enableRowTracking`` is also ``true``, and *suspended* by
  ``delta.rowTrackingSuspended=true`` (then no ids are assigned, and the adds a commit
  carries lose their ``baseRowId`` and ``defaultRowCommitVersion``);
- while supported (and not suspended) every committed ``add`` gets a ``baseRowId`` above the
  row-id high-water mark (domain ``delta.rowTracking``, ``{"rowIdHighWaterMark": n}``), the
  mark grows by the file's physical record count (``numRecords``), and every ``add`` gets
  ``defaultRowCommitVersion`` = the version it is committed at;
- an ``add`` that carries a ``baseRowId`` at or below the mark the transaction read keeps it
  (a file re-added with a new deletion vector keeps its rows' ids); any other is assigned
  afresh, so a retry after a winning commit reassigns above the winner's mark;
- the metadata of a table that supports row tracking names the hidden columns that hold
  materialized row ids and row commit versions (``_row-id-col-<uuid>``,
  ``_row-commit-version-col-<uuid>``), chosen once and kept.

The default generated row id of a row is ``baseRowId`` + its position in the file; the
stable row id is the materialized column's value where not null (:func:`row_ids`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.protocol.actions import Action, AddFile, DomainMetadata, Metadata, Protocol
from deltalog.txn.protocol.errors import RowTrackingError

__all__ = [
    "MATERIALIZED_ROW_COMMIT_VERSION_KEY",
    "MATERIALIZED_ROW_ID_KEY",
    "MISSING_HIGH_WATER_MARK",
    "PRESERVED_TAG",
    "ROW_TRACKING_DOMAIN",
    "SUSPENDED_KEY",
    "assign_row_tracking",
    "enabled_property",
    "high_water_mark",
    "high_water_mark_domain",
    "is_enabled",
    "is_supported",
    "is_suspended",
    "iter_row_tracking",
    "materialized_columns",
    "named_materialized_columns",
    "row_commit_versions",
    "row_ids",
    "with_materialized_column_names",
]

ROW_TRACKING_DOMAIN = "delta.rowTracking"
SUSPENDED_KEY = "delta.rowTrackingSuspended"
MATERIALIZED_ROW_ID_KEY = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_ROW_COMMIT_VERSION_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"
#: ``commitInfo.tags`` key: whether the commit preserved stable row ids and commit versions
PRESERVED_TAG = "delta.rowTracking.preserved"
#: the mark of a table that never assigned a row id (the first id is 0)
MISSING_HIGH_WATER_MARK = -1

_HAND_MADE_MARK = "setting the row ID high water mark (domain delta.rowTracking) by hand is not allowed"
_PREFIXES = {MATERIALIZED_ROW_ID_KEY: "_row-id-col-", MATERIALIZED_ROW_COMMIT_VERSION_KEY: "_row-commit-version-col-"}


def _true(configuration: Mapping[str, str], key: str) -> bool:
    return configuration.get(key, "").strip().lower() == "true"


def enabled_property(metadata: Metadata | None) -> bool:
    """Whether ``delta.enableRowTracking`` is ``true`` in ``metadata``."""
    return metadata is not None and metadata.properties.enable_row_tracking


def is_supported(protocol: Protocol | None) -> bool:
    """Whether the protocol lists the ``rowTracking`` writer feature."""
    return protocol is not None and "rowTracking" in (protocol.writer_features or ())


def is_enabled(protocol: Protocol | None, metadata: Metadata | None) -> bool:
    """Whether ``delta.enableRowTracking`` is on (which needs the feature in the protocol)."""
    if metadata is None or not metadata.properties.enable_row_tracking:
        return False
    if not is_supported(protocol):
        raise RowTrackingError(
            "the table property delta.enableRowTracking is set but the protocol does not support the table "
            "feature rowTracking; the log is inconsistent (upgrade the protocol with the feature)"
        )
    return True


def is_suspended(metadata: Metadata | None) -> bool:
    """Whether ``delta.rowTrackingSuspended`` is on (no ids are assigned then)."""
    if metadata is None or not _true(metadata.configuration, SUSPENDED_KEY):
        return False
    if metadata.properties.enable_row_tracking:
        raise RowTrackingError(
            f"the table properties delta.enableRowTracking and {SUSPENDED_KEY} cannot both be true; unset one of them"
        )
    return True


def high_water_mark(domains: Mapping[str, DomainMetadata]) -> int:
    """The highest row id assigned so far (:data:`MISSING_HIGH_WATER_MARK` when none)."""
    domain = domains.get(ROW_TRACKING_DOMAIN)
    if domain is None or domain.removed:
        return MISSING_HIGH_WATER_MARK
    return high_water_mark_of(domain)


def high_water_mark_of(domain: DomainMetadata) -> int:
    try:
        return int(json.loads(domain.configuration)["rowIdHighWaterMark"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RowTrackingError(
            f"the {ROW_TRACKING_DOMAIN} domain metadata is not valid ({domain.configuration!r}): {exc}"
        ) from None


def high_water_mark_domain(mark: int) -> DomainMetadata:
    """The ``domainMetadata`` action recording ``mark``."""
    return DomainMetadata(ROW_TRACKING_DOMAIN, json.dumps({"rowIdHighWaterMark": mark}, separators=(",", ":")))


def winner_high_water_mark(actions: Iterable[Action]) -> int | None:
    """The mark a commit set, if it set one."""
    for action in actions:
        if isinstance(action, DomainMetadata) and action.domain == ROW_TRACKING_DOMAIN and not action.removed:
            return high_water_mark_of(action)
    return None


def assign_row_tracking(
    actions: Sequence[Action],
    protocol: Protocol | None,
    metadata: Metadata | None,
    *,
    read_high_water_mark: int,
    high_water_mark: int,
    version: int,
) -> list[Action]:
    """``actions`` with row ids and row commit versions assigned for a commit at ``version``.

    ``read_high_water_mark`` is the mark of the snapshot the transaction read (ids at or
    below it were copied from existing files and are kept); ``high_water_mark`` the mark of
    the snapshot the commit goes on top of (fresh ids start above it). Call it on the
    caller's actions for every attempt: a retry gets ids above the winners' mark. Adds a
    ``delta.rowTracking`` domain action when the mark grows.
    """
    return list(
        iter_row_tracking(
            actions,
            protocol,
            metadata,
            read_high_water_mark=read_high_water_mark,
            high_water_mark=high_water_mark,
            version=version,
        )
    )


def iter_row_tracking(
    actions: Iterable[Action],
    protocol: Protocol | None,
    metadata: Metadata | None,
    *,
    read_high_water_mark: int,
    high_water_mark: int,
    version: int,
) -> Iterator[Action]:
    """:func:`assign_row_tracking` as a stream (the mark's domain action comes last)."""
    supported = is_supported(protocol)
    suspended = supported and is_suspended(metadata)
    mark = high_water_mark
    for action in actions:
        if supported and isinstance(action, DomainMetadata) and action.domain == ROW_TRACKING_DOMAIN:
            raise RowTrackingError(_HAND_MADE_MARK)
        if isinstance(action, AddFile) and supported:
            if suspended:  # Delta's assignFreshRowIds and DefaultRowCommitVersion.assignIfMissing
                if action.base_row_id is not None or action.default_row_commit_version is not None:
                    action = replace(action, base_row_id=None, default_row_commit_version=None)
            else:
                action, mark = _assign(action, read_high_water_mark, mark, version)
        yield action
    if mark != high_water_mark:
        yield high_water_mark_domain(mark)


def _assign(action: AddFile, read_high_water_mark: int, mark: int, version: int) -> tuple[AddFile, int]:
    base = action.base_row_id
    if base is None or base > read_high_water_mark:
        records = action.num_records()
        if records is None:
            raise RowTrackingError(
                f"[DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS] cannot assign row ids to {action.path}: its add has no "
                "numRecords statistic. Row tracking needs the record count of every new file (collect statistics: "
                "spark.databricks.delta.stats.collect=true)."
            )
        base = mark + 1
        mark += records
    commit_version = action.default_row_commit_version
    if commit_version is None:
        commit_version = version
    if base != action.base_row_id or commit_version != action.default_row_commit_version:
        action = replace(action, base_row_id=base, default_row_commit_version=commit_version)
    return action, mark


def with_materialized_column_names(protocol: Protocol | None, old: Metadata | None, new: Metadata) -> Metadata:
    """``new`` with the materialized row-tracking column names: kept from ``old`` (the
    table's), else fresh ones, when the protocol supports row tracking; removed otherwise
    (Delta's ``updateMaterializedColumnName``)."""
    config = dict(new.configuration)
    for key, prefix in _PREFIXES.items():
        if not is_supported(protocol):
            config.pop(key, None)
            continue
        kept = None if old is None else old.configuration.get(key)
        config[key] = kept or f"{prefix}{uuid.uuid4()}"
    _check_names_unique(new, config)
    if config == dict(new.configuration):
        return new
    return replace(new, configuration=config)


def materialized_columns(protocol: Protocol | None, metadata: Metadata | None) -> tuple[str, str] | None:
    """The materialized (row id, row commit version) column names of a table with row
    tracking enabled, else None; :class:`RowTrackingError` when an enabled table's metadata
    names none (every writer that enables row tracking names them)."""
    if metadata is None or not is_enabled(protocol, metadata):
        return None
    names = named_materialized_columns(metadata)
    if len(names) != 2:
        raise RowTrackingError(
            "row tracking is enabled but the table's metadata names no materialized row id / row "
            f"commit version column ({MATERIALIZED_ROW_ID_KEY}, {MATERIALIZED_ROW_COMMIT_VERSION_KEY}); "
            "the metadata is damaged"
        )
    return names[0], names[1]


def named_materialized_columns(metadata: Metadata) -> tuple[str, ...]:
    """The materialized columns ``metadata`` names (row id first), whether or not row
    tracking is enabled now: files may hold them either way."""
    config = metadata.configuration
    keys = (MATERIALIZED_ROW_ID_KEY, MATERIALIZED_ROW_COMMIT_VERSION_KEY)
    return tuple(name for key in keys if (name := config.get(key)))


def _check_names_unique(metadata: Metadata, config: Mapping[str, str]) -> None:
    try:
        fields = json.loads(metadata.schema_string).get("fields") or []
    except (ValueError, AttributeError):
        return
    taken = set()
    for f in fields:
        taken.add(str(f.get("name")))
        physical = (f.get("metadata") or {}).get("delta.columnMapping.physicalName")
        if physical:
            taken.add(str(physical))
    for key in _PREFIXES:
        name = config.get(key)
        if name and name in taken:
            raise RowTrackingError(f"the column name {name!r} is reserved for row tracking ({key}); rename the column")


def row_ids(base_row_id: int | None, positions: pa.Array, materialized: pa.Array | None = None) -> pa.Array:
    """Stable row ids of the rows at ``positions`` (their indexes in the file): the
    materialized value where present, else ``baseRowId + position`` (null without a
    ``baseRowId``)."""
    if base_row_id is None:
        default = pa.nulls(len(positions), pa.int64())
    else:
        default = pc.add(pc.cast(positions, pa.int64()), pa.scalar(base_row_id, pa.int64()))
    if materialized is None:
        return default
    return pc.coalesce(pc.cast(materialized, pa.int64()), default)


def row_commit_versions(
    default_row_commit_version: int | None, num_rows: int, materialized: pa.Array | None = None
) -> pa.Array:
    """Stable row commit versions: the materialized value where present, else the file's
    ``defaultRowCommitVersion``."""
    if default_row_commit_version is None:
        default = pa.nulls(num_rows, pa.int64())
    else:
        default = pa.repeat(pa.scalar(default_row_commit_version, pa.int64()), num_rows)
    if materialized is None:
        return default
    return pc.coalesce(pc.cast(materialized, pa.int64()), default)
