"""Auto compaction's switches, as Delta's ``AutoCompactConfigurationSuite``: the table
property (with the deprecated ``delta.autoOptimize``), the session's conf over it, and the
values either accepts."""

from __future__ import annotations

import pytest

from deltalog.errors import InvalidAutoCompactTypeError
from deltalog.txn.commit.settings import EngineSettings
from deltalog.txn.protocol.properties import TableProperties


@pytest.mark.parametrize(
    ("configuration", "expected"),
    [
        ({}, None),
        ({"delta.autoOptimize.autoCompact": "true"}, True),
        ({"delta.autoOptimize.autoCompact": "tRue"}, True),
        ({"delta.autoOptimize.autoCompact": "fALse"}, False),
        ({"delta.autoOptimize": "true", "delta.autoOptimize.autoCompact": "false"}, True),
        ({"delta.autoOptimize": "false", "delta.autoOptimize.autoCompact": "true"}, True),
        ({"delta.autoOptimize": "false"}, None),
    ],
)
def test_the_table_property(configuration, expected):
    assert TableProperties(configuration).auto_compact is expected


def test_a_value_neither_true_nor_false_is_refused():
    with pytest.raises(InvalidAutoCompactTypeError, match=r"DELTA_INVALID_AUTO_COMPACT_TYPE.*legacy.*\(true,false\)"):
        _ = TableProperties({"delta.autoOptimize.autoCompact": "legacy"}).auto_compact
    with pytest.raises(InvalidAutoCompactTypeError):
        TableProperties({"delta.autoOptimize.autoCompact": "auto"}).validate()
    with pytest.raises(InvalidAutoCompactTypeError):
        EngineSettings.from_options({"spark.databricks.delta.autoCompact.enabled": "sometimes"})


def test_the_session_confs():
    assert EngineSettings.from_options({}).auto_compact is None
    settings = EngineSettings.from_options(
        {
            "spark.databricks.delta.autoCompact.enabled": "TrUE",
            "spark.databricks.delta.autoCompact.maxFileSize": "1000",
            "spark.databricks.delta.autoCompact.minNumFiles": "0",
            "deltalog.autoCompact.modifiedPartitionsOnly.enabled": "false",
            "spark.databricks.delta.autoCompact.maxNumModifiedPartitions": "7",
        }
    )
    assert settings.auto_compact is True and settings.auto_compact_max_file_size == 1000
    assert settings.auto_compact_min_file_size is None and settings.auto_compact_min_num_files == 0
    assert not settings.auto_compact_modified_partitions_only
    assert settings.auto_compact_max_num_modified_partitions == 7
    assert EngineSettings.from_options({"deltalog.autoCompact.enabled": "false"}).auto_compact is False
    with pytest.raises(ValueError, match="auto_compact_min_num_files must be >= 0"):
        EngineSettings.from_options({"spark.databricks.delta.autoCompact.minNumFiles": "-1"})
    with pytest.raises(ValueError, match="auto_compact_max_num_modified_partitions must be >= 1"):
        EngineSettings(auto_compact_max_num_modified_partitions=0)
