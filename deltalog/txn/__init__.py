"""The Delta log and the transaction engine: actions, log replay, snapshots, checkpoints,
the optimistic transaction, conflict checking and commit-lock strategies."""
