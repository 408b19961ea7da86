"""Row id assignment rules (PROTOCOL "Row Tracking", Delta's ``RowId.assignFreshRowIds``)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from deltalog.txn.protocol.actions import AddFile, DomainMetadata, Metadata, Protocol
from deltalog.txn.protocol.errors import RowTrackingError
from deltalog.txn.protocol.row_tracking import (
    MATERIALIZED_ROW_COMMIT_VERSION_KEY,
    MATERIALIZED_ROW_ID_KEY,
    assign_row_tracking,
    high_water_mark,
    row_commit_versions,
    row_ids,
    with_materialized_column_names,
)

SUPPORTED = Protocol(1, 7, None, ("domainMetadata", "rowTracking"))
ENABLED = Metadata(id="t", configuration={"delta.enableRowTracking": "true"})


def add(path: str, rows: int | None, **kw: object) -> AddFile:
    stats = None if rows is None else json.dumps({"numRecords": rows})
    return AddFile(path, {}, 10, 1, stats=stats, **kw)  # type: ignore[arg-type]


def test_fresh_ids_start_above_the_mark_and_the_mark_grows() -> None:
    out = assign_row_tracking(
        [add("a", 3), add("b", 2)], SUPPORTED, ENABLED, read_high_water_mark=9, high_water_mark=9, version=4
    )
    adds = [a for a in out if isinstance(a, AddFile)]
    assert [(a.base_row_id, a.default_row_commit_version) for a in adds] == [(10, 4), (13, 4)]
    (domain,) = [a for a in out if isinstance(a, DomainMetadata)]
    assert high_water_mark({domain.domain: domain}) == 14


def test_copied_ids_are_kept_and_new_ones_follow_the_winners_mark() -> None:
    kept = add("old", 5, base_row_id=2, default_row_commit_version=1)
    mine = add("new", 1, base_row_id=20)  # assigned by an earlier attempt above the read mark
    out = assign_row_tracking([kept, mine], SUPPORTED, ENABLED, read_high_water_mark=9, high_water_mark=30, version=7)
    adds = [a for a in out if isinstance(a, AddFile)]
    assert (adds[0].base_row_id, adds[0].default_row_commit_version) == (2, 1)
    assert (adds[1].base_row_id, adds[1].default_row_commit_version) == (31, 7)


def test_no_assignment_without_the_feature_and_none_while_suspended() -> None:
    """While ``delta.rowTrackingSuspended`` is on, adds lose both ids, as Delta's
    ``assignFreshRowIds`` and ``DefaultRowCommitVersion.assignIfMissing`` strip them
    (RowTrackingRemovalSuite "Property `delta.rowTrackingSuspended` is respected": a file
    re-added with a deletion vector keeps no ``defaultRowCommitVersion``, or a later
    backfill would give its rows new ids under their old commit version)."""
    plain = [add("a", 1)]
    assert (
        assign_row_tracking(plain, Protocol(1, 2), None, read_high_water_mark=-1, high_water_mark=-1, version=0)
        == plain
    )
    suspended = Metadata(id="t", configuration={"delta.rowTrackingSuspended": "true"})
    out = assign_row_tracking(
        [add("a", 1, base_row_id=3, default_row_commit_version=2)],
        SUPPORTED,
        suspended,
        read_high_water_mark=-1,
        high_water_mark=-1,
        version=4,
    )
    assert out == [add("a", 1)]


def test_refusals() -> None:
    with pytest.raises(RowTrackingError, match="numRecords"):
        assign_row_tracking(
            [add("a", None)], SUPPORTED, ENABLED, read_high_water_mark=-1, high_water_mark=-1, version=0
        )
    with pytest.raises(RowTrackingError, match="by hand"):
        assign_row_tracking(
            [DomainMetadata("delta.rowTracking", '{"rowIdHighWaterMark":1}')],
            SUPPORTED,
            ENABLED,
            read_high_water_mark=-1,
            high_water_mark=-1,
            version=0,
        )


def test_materialized_column_names_are_chosen_once() -> None:
    first = with_materialized_column_names(SUPPORTED, None, ENABLED)
    row_id_col = first.configuration[MATERIALIZED_ROW_ID_KEY]
    assert row_id_col.startswith("_row-id-col-")
    assert first.configuration[MATERIALIZED_ROW_COMMIT_VERSION_KEY].startswith("_row-commit-version-col-")
    again = with_materialized_column_names(SUPPORTED, first, Metadata(id="t", configuration={"x": "1"}))
    assert again.configuration[MATERIALIZED_ROW_ID_KEY] == row_id_col
    assert MATERIALIZED_ROW_ID_KEY not in with_materialized_column_names(Protocol(1, 2), first, first).configuration


def test_row_ids_from_base_and_position_or_materialized() -> None:
    positions = pa.array([0, 1, 5], pa.uint64())
    assert row_ids(10, positions).to_pylist() == [10, 11, 15]
    assert row_ids(10, positions, pa.array([None, 3, None], pa.int64())).to_pylist() == [10, 3, 15]
    assert row_ids(None, positions).to_pylist() == [None, None, None]
    assert row_commit_versions(4, 2, pa.array([1, None], pa.int64())).to_pylist() == [1, 4]
