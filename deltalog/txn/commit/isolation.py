"""Isolation levels, strongest first, as in Delta's ``isolationLevels.scala``.

- ``Serializable``: reads and writes are serializable; a concurrent append into data
  this transaction read is a conflict, whatever the appender did.
- ``WriteSerializable``: only writes are serializable; concurrent *blind* appends are
  allowed to slip in "before" this transaction.
- ``SnapshotIsolation``: not a table level; a commit of only ``dataChange=false`` file
  actions (a compaction) is downgraded to it and so never conflicts with appends.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from deltalog.txn.protocol.actions import Action, AddCDCFile, AddFile, RemoveFile

__all__ = ["IsolationLevel", "choose_isolation_level"]


class IsolationLevel(enum.Enum):
    SERIALIZABLE = "Serializable"
    WRITE_SERIALIZABLE = "WriteSerializable"
    SNAPSHOT_ISOLATION = "SnapshotIsolation"

    @classmethod
    def parse(cls, value: str) -> IsolationLevel:
        for level in cls:
            if level.value.lower() == value.strip().lower():
                return level
        valid = ", ".join(level.value for level in cls)
        raise ValueError(f"unknown isolation level {value!r}; valid levels: {valid}")


def choose_isolation_level(
    table_level: IsolationLevel, actions: Sequence[Action], operation_changes_data: bool
) -> IsolationLevel:
    """The level a commit runs under (Delta's ``getIsolationLevelToUse``).

    A commit whose every action is a file action may downgrade to snapshot isolation
    when no file action changes data (and, under ``WriteSerializable``, the operation
    itself does not change data either). Any other action (metadata, protocol, txn,
    domain metadata) keeps the table's level.
    """
    file_actions = []
    for action in actions:
        if isinstance(action, (AddFile, RemoveFile, AddCDCFile)):
            file_actions.append(action)
        else:
            return table_level
    no_data_change = all(not a.data_change for a in file_actions)
    if table_level is IsolationLevel.SERIALIZABLE and no_data_change:
        return IsolationLevel.SNAPSHOT_ISOLATION
    if table_level is IsolationLevel.WRITE_SERIALIZABLE and no_data_change and not operation_changes_data:
        return IsolationLevel.SNAPSHOT_ISOLATION
    return table_level
