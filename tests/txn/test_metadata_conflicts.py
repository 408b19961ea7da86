"""Which winning metadata changes a transaction absorbs (Delta's
``attemptToResolveMetadataConflicts``), as pure rules."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from deltalog.txn.commit.metadata_conflicts import dropped_features, resolve_metadata_conflict
from deltalog.txn.protocol.actions import CommitInfo, Metadata, Protocol

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True, "metadata": {}}]})
BASE = Metadata(id="t", schema_string=SCHEMA, configuration={"delta.appendOnly": "false"}, created_time=1)
ALL = Protocol(
    3,
    7,
    ("deletionVectors", "columnMapping", "v2Checkpoint"),
    (
        "deletionVectors",
        "columnMapping",
        "v2Checkpoint",
        "inCommitTimestamp",
        "rowTracking",
        "domainMetadata",
        "appendOnly",
    ),
)


def with_conf(**conf: str) -> Metadata:
    return replace(BASE, configuration={**BASE.configuration, **{k.replace("_", "."): v for k, v in conf.items()}})


@pytest.mark.parametrize(
    "change",
    [
        {"delta.enableDeletionVectors": "true"},
        {"delta.checkpointPolicy": "v2"},
        {
            "delta.enableInCommitTimestamps": "true",
            "delta.inCommitTimestampEnablementVersion": "3",
            "delta.inCommitTimestampEnablementTimestamp": "99",
        },
        {
            "delta.enableRowTracking": "true",
            "delta.rowTracking.materializedRowIdColumnName": "_row-id-col-1",
            "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col-1",
        },
    ],
)
def test_feature_enablement_is_absorbed(change: dict[str, str]) -> None:
    winning = replace(BASE, configuration={**BASE.configuration, **change})
    resolution = resolve_metadata_conflict(BASE, winning, ALL, None)
    assert resolution is not None and resolution.metadata == winning
    assert resolution.row_tracking_enabled == ("delta.enableRowTracking" in change)


@pytest.mark.parametrize(
    ("winning", "protocol"),
    [
        # disabling, or a feature the protocol lacks
        (replace(BASE, configuration={**BASE.configuration, "delta.enableDeletionVectors": "false"}), ALL),
        (replace(BASE, configuration={**BASE.configuration, "delta.enableDeletionVectors": "true"}), Protocol(1, 2)),
        (replace(BASE, configuration={**BASE.configuration, "delta.checkpointPolicy": "classic"}), ALL),
        # a property outside the allow-list, or a removed one
        (replace(BASE, configuration={**BASE.configuration, "delta.logRetentionDuration": "interval 1 day"}), ALL),
        (replace(BASE, configuration={}), ALL),
        # schema, partitioning, description
        (replace(BASE, schema_string=SCHEMA.replace('"x"', '"y"')), ALL),
        (replace(BASE, description="new"), ALL),
    ],
)
def test_other_changes_are_not_absorbed(winning: Metadata, protocol: Protocol) -> None:
    assert resolve_metadata_conflict(BASE, winning, protocol, None) is None


def test_name_column_mapping_enablement_with_field_metadata_is_absorbed() -> None:
    fields = json.loads(SCHEMA)
    fields["fields"][0]["metadata"] = {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "x"}
    winning = replace(
        BASE,
        schema_string=json.dumps(fields),
        configuration={
            **BASE.configuration,
            "delta.columnMapping.mode": "name",
            "delta.columnMapping.maxColumnId": "1",
        },
    )
    assert resolve_metadata_conflict(BASE, winning, ALL, None) is not None
    assert resolve_metadata_conflict(BASE, replace(winning, configuration=BASE.configuration), ALL, None) is None


def test_identity_only_update_is_absorbed() -> None:
    winning = replace(
        BASE, schema_string=SCHEMA.replace('"metadata": {}', '"metadata": {"delta.identity.highWaterMark": 5}')
    )
    info = CommitInfo(operation="WRITE", extra={"tags": {"delta.identity.schemaUpdate": "true"}})
    assert resolve_metadata_conflict(BASE, winning, ALL, info) is not None
    assert resolve_metadata_conflict(BASE, winning, ALL, CommitInfo(operation="WRITE")) is None


def test_dropped_features() -> None:
    assert dropped_features(Protocol(3, 7, (), ("appendOnly",)), ALL) >= {"deletionVectors", "rowTracking"}
    assert not dropped_features(
        replace(ALL, writer_features=(*(ALL.writer_features or ()), "invariants")), Protocol(1, 2)
    )
    # a table-features protocol that does not list what writer version 2 implied drops it
    assert dropped_features(ALL, Protocol(1, 2)) == {"invariants"}
    # a legacy protocol's implied features count
    assert "changeDataFeed" in dropped_features(Protocol(1, 7, None, ("appendOnly",)), Protocol(1, 4))
