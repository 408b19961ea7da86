"""Committing to the log: the optimistic transaction, conflict checking, isolation levels,
operations, commit locks and post-commit hooks."""
