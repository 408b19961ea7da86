"""Reading and maintaining a table's log through a LogStore: log segments, replay,
snapshots, checkpoints (read and write), history, deletion vectors and log cleanup."""
