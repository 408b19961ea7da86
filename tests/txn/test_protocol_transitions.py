"""The protocol a table gets when it is created and when its properties or schema change,
as Delta Spark gives it: the cases of Delta's ``DeltaProtocolTransitionsSuite`` and
``DeltaTimestampNTZSuite`` that use no test-only feature (``delta.feature.*`` properties,
versions set at creation or by ALTER, features the metadata turns on, DROP FEATURE).
Delta keeps a protocol in its weakest form: the legacy versions only when they imply
exactly the supported features."""

from __future__ import annotations

import json
import uuid

import pytest

from deltalog.errors import FeatureRequiresManualEnablementError
from deltalog.txn.commands.alter import add_columns, set_table_properties
from deltalog.txn.commands.drop_feature import drop_feature
from deltalog.txn.commit.operations import CreateTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata, Protocol, action_to_dict
from deltalog.txn.protocol.protocol_versions import merge, normalized, same_protocol
from deltalog.txn.protocol.schema import PrimitiveType, StructField

AO, INV, CC, CDF, GEN = "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"
CM, DV, IDENT, NTZ = "columnMapping", "deletionVectors", "identityColumns", "timestampNtz"


def features(reader: int, *names: str) -> Protocol:
    """Writer 7 listing ``names`` (the reader-writer ones also as reader features at reader 3)."""
    rw = {CM, DV, NTZ}
    listed = tuple(sorted(names))
    return Protocol(reader, 7, tuple(n for n in listed if n in rw) if reader >= 3 else None, listed)


def _schema(generated: bool, ntz: bool) -> str:
    fields = [{"name": "id", "type": "integer", "nullable": True, "metadata": {}}]
    if generated:
        fields.append(
            {"name": "id2", "type": "integer", "nullable": True, "metadata": {"delta.generationExpression": "id + 1"}}
        )
    if ntz:
        fields.append({"name": "ts", "type": "timestamp_ntz", "nullable": True, "metadata": {}})
    return json.dumps({"type": "struct", "fields": fields})


def transition(
    create: dict[str, str] | None = None,
    alter: dict[str, str] | None = None,
    *,
    generated: bool = False,
    drop: str | None = None,
) -> Protocol:
    """The protocol after Delta's ``testProtocolTransition`` steps: create a table with
    ``create`` properties (and a generated column), set ``alter`` properties, drop ``drop``."""
    log = DeltaLog.for_table(f"memory://transitions-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    config = dict(create or {})
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=_schema(generated, False), configuration=config))
    txn.commit([], CreateTable())
    if alter:
        set_table_properties(log, alter)
    if drop:
        drop_feature(log, drop)
    return log.update().protocol


def versions(reader: int, writer: int) -> dict[str, str]:
    return {"delta.minReaderVersion": str(reader), "delta.minWriterVersion": str(writer)}


@pytest.mark.parametrize(
    ("create", "alter", "expected"),
    [
        # CREATE TABLE default protocol versions / normalization
        ({}, {}, Protocol(1, 2)),
        (versions(1, 1), {}, Protocol(1, 1)),
        (versions(3, 7), {}, Protocol(1, 1)),
        # setting partial versions
        ({"delta.minWriterVersion": "3"}, {}, Protocol(1, 3)),
        ({}, {"delta.minWriterVersion": "3"}, Protocol(1, 3)),
        ({"delta.minWriterVersion": "3", f"delta.feature.{DV}": "supported"}, {}, features(3, AO, INV, CC, DV)),
        ({}, {"delta.minWriterVersion": "3", f"delta.feature.{DV}": "supported"}, features(3, AO, INV, CC, DV)),
        # invalid legacy versions are normalized
        *[(versions(r, w), {}, Protocol(1, min(w, 4))) for r, w in ((2, 1), (2, 2), (2, 3), (2, 4), (1, 5))],
        *[
            (versions(1, 1), versions(r, w), Protocol(1, min(w, 4)))
            for r, w in ((2, 1), (2, 2), (2, 3), (2, 4), (1, 5))
        ],
        # ADD FEATURE normalization
        (versions(1, 1), versions(1, 4), Protocol(1, 4)),
        (versions(1, 2), versions(1, 4), Protocol(1, 4)),
        (versions(1, 4), versions(1, 2), Protocol(1, 4)),
        (versions(1, 4), versions(1, 4), Protocol(1, 4)),
        (versions(1, 6), versions(2, 5), Protocol(2, 6)),
        (versions(2, 5), versions(1, 6), Protocol(2, 6)),
        ({f"delta.feature.{IDENT}": "supported"}, versions(1, 3), features(1, AO, CC, INV, IDENT)),
        (versions(1, 3), {**versions(1, 7), "delta.enableChangeDataFeed": "true"}, features(1, AO, INV, CC, CDF)),
        ({f"delta.feature.{INV}": "supported"}, versions(1, 2), Protocol(1, 2)),
        ({f"delta.feature.{CC}": "supported"}, versions(1, 2), Protocol(1, 3)),
        (versions(1, 2), {f"delta.feature.{CC}": "supported"}, Protocol(1, 3)),
        (versions(1, 4), {f"delta.feature.{CM}": "supported"}, Protocol(2, 5)),
        (versions(1, 4), {**versions(1, 7), "delta.columnMapping.mode": "name"}, Protocol(2, 5)),
        # default-enabled native and legacy features
        ({**versions(1, 4), "delta.enableDeletionVectors": "true"}, {}, features(3, DV, INV, AO, CC, CDF, GEN)),
        ({"delta.enableDeletionVectors": "true"}, {}, features(3, DV, INV, AO)),
        ({"delta.enableChangeDataFeed": "true"}, {}, features(1, AO, INV, CDF)),
        ({**versions(1, 3), "delta.enableChangeDataFeed": "true"}, {}, features(1, AO, INV, CC, CDF)),
        ({**versions(1, 4), "delta.enableChangeDataFeed": "true"}, {}, Protocol(1, 4)),
        ({}, {**versions(1, 4), "delta.enableChangeDataFeed": "true"}, Protocol(1, 4)),
        ({**versions(1, 7), "delta.enableChangeDataFeed": "true"}, {}, features(1, CDF)),
        ({}, {**versions(1, 7), "delta.enableChangeDataFeed": "true"}, features(1, INV, AO, CDF)),
        ({}, {"delta.enableChangeDataFeed": "true"}, features(1, INV, AO, CDF)),
        (versions(1, 1), {"delta.appendOnly": "true"}, features(1, AO)),
        # column mapping needs no manual upgrade
        ({"delta.columnMapping.mode": "name"}, {}, features(2, AO, INV, CM)),
        ({**versions(1, 4), "delta.columnMapping.mode": "name"}, {}, Protocol(2, 5)),
        (versions(1, 4), {"delta.columnMapping.mode": "name"}, Protocol(2, 5)),
        ({**versions(1, 7), "delta.columnMapping.mode": "name"}, {}, features(2, CM)),
        ({}, {"delta.columnMapping.mode": "name"}, features(2, AO, INV, CM)),
        ({}, {**versions(1, 7), "delta.columnMapping.mode": "name"}, features(2, INV, AO, CM)),
    ],
)
def test_protocol_transitions_are_delta_s(create: dict[str, str], alter: dict[str, str], expected: Protocol) -> None:
    got = transition(create, alter)
    assert same_protocol(got, expected), f"{got} != {expected}"


def test_generated_columns_and_drop_feature_transitions_are_delta_s() -> None:
    """``Enabling legacy features on a table`` and ``DROP FEATURE normalization``."""
    assert same_protocol(transition(generated=True), features(1, AO, INV, GEN))
    assert same_protocol(transition(versions(1, 7), generated=True), features(1, GEN))
    assert same_protocol(transition(versions(1, 3), drop=CC), Protocol(1, 2))
    assert same_protocol(transition(versions(1, 4), drop=CC), features(1, AO, INV, GEN, CDF))
    # the fast drop of a feature that needs history protection adds checkpointProtection
    assert same_protocol(
        transition(versions(2, 5), drop=CM), features(1, AO, INV, CC, CDF, GEN, "checkpointProtection")
    )


def test_a_timestamp_ntz_column_needs_the_feature_enabled_by_name_on_an_existing_table() -> None:
    """Delta's ``DeltaTimestampNTZSuite``: a new table with a ``timestamp_ntz`` column gets
    the feature; adding one to an existing table is refused until ``delta.feature.timestampNtz``
    is set (``DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT``), and nothing is committed."""
    log = DeltaLog.for_table(f"memory://ntz-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=_schema(False, True)))
    txn.commit([], CreateTable())
    assert same_protocol(log.update().protocol, features(3, NTZ, AO, INV))

    log = DeltaLog.for_table(f"memory://ntz-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=_schema(False, False)))
    txn.commit([], CreateTable())
    column = StructField("ts", PrimitiveType("timestamp_ntz"), True)
    with pytest.raises(FeatureRequiresManualEnablementError, match=r"delta\.feature\.timestampNtz"):
        add_columns(log, [column])
    assert log.update().version == 0
    set_table_properties(log, {"delta.feature.timestampNtz": "supported"})
    add_columns(log, [column])
    assert same_protocol(log.update().protocol, features(3, NTZ, INV, AO))


def test_the_protocol_algebra_matches_delta_s_examples() -> None:
    """``normalized`` and ``merge`` on the examples of Delta's ``TableFeatureSupport``."""
    assert same_protocol(normalized(features(1, AO, INV, CC)), Protocol(1, 3))
    assert same_protocol(normalized(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))), features(3, DV))
    assert same_protocol(
        normalized(Protocol(3, 7, (), ("rowTracking", "domainMetadata"))), features(1, "rowTracking", "domainMetadata")
    )
    assert same_protocol(normalized(Protocol(2, 3)), Protocol(1, 3))
    assert same_protocol(merge(Protocol(1, 2), features(1, CDF)), features(1, AO, INV, CDF))
    assert same_protocol(merge(Protocol(1, 4), features(1, CM)), Protocol(2, 5))


def test_a_table_with_preview_collations_does_not_get_the_stable_feature() -> None:
    """As Delta Kernel: a collated column added to a table with ``collations-preview`` keeps
    the preview feature alone (the stable one would lock out clients knowing only the preview)."""
    log = DeltaLog.for_table(f"memory://collations-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    config = {"delta.feature.collations-preview": "supported"}
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=_schema(False, False), configuration=config))
    txn.commit([], CreateTable())
    collated = {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}
    add_columns(log, [StructField("name", PrimitiveType("string"), True, collated)])
    writer = log.update().protocol.writer_features or ()
    assert "collations-preview" in writer and "collations" not in writer


@pytest.mark.parametrize("at_creation", [True, False])
def test_a_table_with_preview_type_widening_does_not_get_the_stable_feature(at_creation: bool) -> None:
    """Delta's ``TypeWideningTableFeature.metadataRequiresFeatureToBeEnabled``: with
    ``typeWidening-preview`` supported, ``delta.enableTypeWidening=true`` (at creation or
    later) adds no ``typeWidening``, which Delta 3.x readers do not know
    (TypeWideningTableFeatureSuite "tables created with the preview feature aren't
    automatically enabling the stable feature")."""
    log = DeltaLog.for_table(f"memory://widening-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    config = {"delta.feature.typeWidening-preview": "supported"}
    if at_creation:
        config["delta.enableTypeWidening"] = "true"
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=_schema(False, False), configuration=config))
    txn.commit([], CreateTable())
    if not at_creation:
        set_table_properties(log, {"delta.enableTypeWidening": "true"})
    protocol = log.update().protocol
    assert "typeWidening-preview" in (protocol.reader_features or ())
    assert "typeWidening" not in (protocol.reader_features or ()) + (protocol.writer_features or ())


@pytest.mark.parametrize(
    ("protocol", "names"),
    [
        (Protocol(1, 1), []),
        (Protocol(1, 2), ["appendOnly", "invariants"]),
        # columnMapping needs reader 2 as well: Delta's (1, 5) does not support it
        (Protocol(1, 5), ["appendOnly", "changeDataFeed", "checkConstraints", "generatedColumns", "invariants"]),
        (
            Protocol(2, 6),
            [
                "appendOnly",
                "changeDataFeed",
                "checkConstraints",
                "columnMapping",
                "generatedColumns",
                "identityColumns",
                "invariants",
            ],
        ),
        (Protocol(1, 7, None, ("appendOnly",)), ["appendOnly"]),
        (Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "invariants")), ["deletionVectors", "invariants"]),
    ],
)
def test_supported_feature_names_are_deltas(protocol: Protocol, names: list[str]) -> None:
    """DESCRIBE DETAIL's ``tableFeatures``: Delta's ``implicitlySupportedFeatures`` (each
    legacy feature both legacy versions reach) ++ ``readerAndWriterFeatureNames``, sorted."""
    from deltalog.txn.protocol.features import supported_feature_names

    assert supported_feature_names(protocol) == names


def _table_at(*protocol: int) -> DeltaLog:
    """A table whose first commit holds exactly ``Protocol(*protocol)`` (Delta's ``createTableWithProtocol``)."""
    log = DeltaLog.for_table(f"memory://at-{uuid.uuid4().hex}")
    p = Protocol(*protocol)
    meta = Metadata(id=str(uuid.uuid4()), schema_string=_schema(False, False))
    log.store.write(log.commit_uri(0), [json.dumps(action_to_dict(p)), json.dumps(action_to_dict(meta))])
    return log


@pytest.mark.parametrize(
    ("protocol", "alter", "expected"),
    [
        # DeltaProtocolVersionSuite "alter table - downgrade ... is a no-op" and its merges
        ((2, 5), {"delta.minReaderVersion": "1"}, Protocol(2, 5)),
        ((1, 3), {"delta.minWriterVersion": "1"}, Protocol(1, 3)),
        ((2, 5), versions(1, 1), Protocol(2, 5)),
        ((2, 2), versions(1, 5), Protocol(2, 5)),
        ((2, 2), versions(1, 7), Protocol(1, 2)),
        ((1, 2), {**versions(1, 1), "delta.enableChangeDataFeed": "true"}, features(1, AO, INV, CDF)),
        ((1, 1), {"delta.appendOnly": "true"}, features(1, AO)),
        ((1, 1), {f"delta.feature.{CM}": "enabled"}, features(2, CM)),
        ((1, 1), {"delta.enableDeletionVectors": "true"}, features(3, DV)),
        ((1, 1), {**versions(2, 5), f"delta.feature.{CM}": "enabled"}, Protocol(2, 5)),
        ((3, 7, (), ()), {"delta.appendOnly": "true"}, features(1, AO)),
        ((1, 2), {f"delta.feature.{DV}": "supported"}, features(3, AO, INV, DV)),
    ],
)
def test_alter_table_protocol_cases_are_delta_s(
    protocol: tuple[int, ...], alter: dict[str, str], expected: Protocol
) -> None:
    log = _table_at(*protocol)
    set_table_properties(log, alter)
    got = log.update().protocol
    assert same_protocol(got, expected), f"{got} != {expected}"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        # DeltaConfigs.MIN_READER_VERSION / MIN_WRITER_VERSION: "needs to be one of ..."
        ({"delta.minWriterVersion": "8"}, "one of 1, 2, 3, 4, 5, 6, 7"),
        ({"delta.minWriterVersion": "-1"}, "one of 1, 2, 3, 4, 5, 6, 7"),
        ({"delta.minReaderVersion": "4"}, "one of 1, 2, 3"),
        ({"delta.minReaderVersion": "0"}, "one of 1, 2, 3"),
        # Protocol(3, w < 7) refused (upgradeTableProtocol(3, 1) in "upgrade to a version with DeltaTable API")
        ({"delta.minReaderVersion": "3"}, "DELTA_READ_FEATURE_PROTOCOL_REQUIRES_WRITE"),
        (versions(3, 1), "DELTA_READ_FEATURE_PROTOCOL_REQUIRES_WRITE"),
    ],
)
def test_protocol_versions_delta_refuses_are_refused(props: dict[str, str], message: str) -> None:
    """An unsupported version is refused on CREATE and ALTER (``... - bad input``), never
    turned into some protocol; nothing is committed."""
    from deltalog.txn.protocol.properties import InvalidPropertyError

    log = _table_at(1, 2)
    with pytest.raises(InvalidPropertyError, match=message):
        set_table_properties(log, props)
    assert log.update().version == 0
    if "one of" in message:
        with pytest.raises(InvalidPropertyError, match=message):
            transition(props)
