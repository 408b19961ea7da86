"""Whether an overwrite replaces whole partitions: Delta's ``DeltaOptions.isDynamicPartitionOverwriteMode``.

A write is in dynamic partition overwrite mode when its ``partitionOverwriteMode`` option, or
else Spark's session conf ``spark.sql.sources.partitionOverwriteMode``, says ``dynamic``
(case-insensitive). As in Delta:

- the mode is read only where it matters, for a partitioned table (``WriteIntoDelta``): there
  a value other than ``static`` / ``dynamic`` is ``DELTA_ILLEGAL_OPTION``, on an unpartitioned
  table it is not read at all;
- Delta's session conf ``spark.databricks.delta.dynamicPartitionOverwrite.enabled=false``
  refuses ``dynamic`` (``DELTA_DYNAMIC_PARTITION_OVERWRITE_DISABLED``) and lets any other value
  through as a static overwrite;
- ``useNullIntolerantEqualityWithDPO=true`` leaves partitions with a null value out of those
  the write replaces (null-intolerant ``=``); given outside a dynamic partition overwrite it is
  ``DELTA_ILLEGAL_OPTION``.

``write_table`` hands the session's confs on under their own names; ``format("deltalog")``
cannot see the session (see docs/spark.md) and takes them as options of those names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from deltalog.contrib.spark.errors import InvalidWriteOptionError
from deltalog.contrib.spark.option_values import delta_boolean, get_option, illegal_option

__all__ = [
    "DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF",
    "NULL_INTOLERANT_EQUALITY_OPTION",
    "PARTITION_OVERWRITE_MODE_CONF",
    "PARTITION_OVERWRITE_MODE_OPTION",
    "PartitionOverwriteMode",
]

PARTITION_OVERWRITE_MODE_OPTION = "partitionOverwriteMode"
#: Spark's session conf, read where the write option is not given
PARTITION_OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"
#: Delta's session conf (default true); false refuses a dynamic partition overwrite
DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF = "spark.databricks.delta.dynamicPartitionOverwrite.enabled"
#: Delta's write option: a dynamic partition overwrite leaves the null partitions alone
NULL_INTOLERANT_EQUALITY_OPTION = "useNullIntolerantEqualityWithDPO"


@dataclass(frozen=True)
class PartitionOverwriteMode:
    """What a write says about dynamic partition overwrite (see the module docstring)."""

    #: the ``partitionOverwriteMode`` write option as given (None: not given)
    option: str | None = None
    #: the session's ``spark.sql.sources.partitionOverwriteMode`` (None: unset or unseen)
    session: str | None = None
    #: Delta's ``spark.databricks.delta.dynamicPartitionOverwrite.enabled``
    enabled: bool = True
    #: ``useNullIntolerantEqualityWithDPO`` (None: not given)
    null_intolerant: bool | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> PartitionOverwriteMode:
        enabled = get_option(options, DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF)
        return cls(
            option=get_option(options, PARTITION_OVERWRITE_MODE_OPTION),
            session=get_option(options, PARTITION_OVERWRITE_MODE_CONF),
            enabled=enabled is None or enabled.strip().lower() != "false",
            null_intolerant=delta_boolean(options, NULL_INTOLERANT_EQUALITY_OPTION),
        )

    @property
    def in_options(self) -> bool:
        """Delta's ``partitionOverwriteModeInOptions``: the write option was given."""
        return self.option is not None

    def is_dynamic(self) -> bool:
        """Delta's ``isDynamicPartitionOverwriteMode``: raises for a value that is neither
        ``static`` nor ``dynamic``, and for ``dynamic`` when the feature is disabled."""
        mode = self.option if self.option is not None else (self.session or "static")
        dynamic = mode.strip().lower() == "dynamic"
        if not self.enabled:
            if dynamic:
                raise InvalidWriteOptionError(
                    "DELTA_DYNAMIC_PARTITION_OVERWRITE_DISABLED: Dynamic partition overwrite mode is specified by "
                    "session config or write options, but it is disabled by "
                    f"`{DYNAMIC_PARTITION_OVERWRITE_ENABLED_CONF}=false`."
                )
            return False
        if mode.strip().lower() not in ("static", "dynamic"):
            raise illegal_option(PARTITION_OVERWRITE_MODE_OPTION, mode, "must be 'STATIC' or 'DYNAMIC'")
        return dynamic

    def recorded(self) -> bool:
        """``isDynamicPartitionOverwrite`` of the commit's parameters: Delta's
        ``Try(options.isDynamicPartitionOverwriteMode).getOrElse(false)``."""
        try:
            return self.is_dynamic()
        except InvalidWriteOptionError:
            return False
