"""The Delta log and the transaction engine, in four layers that import only downward:

- ``protocol``: what the Delta protocol says (actions, features, properties, schema), no I/O;
- ``log``: reading and maintaining the log through a LogStore (snapshots, checkpoints);
- ``commit``: the optimistic transaction, conflicts, isolation, commit locks, hooks;
- ``commands``: OPTIMIZE, VACUUM, RESTORE, built on the commit and the log.

:class:`~deltalog.txn.delta_log.DeltaLog` is the entry point, between ``commit`` and
``commands``. See ``docs/architecture.md``.
"""
