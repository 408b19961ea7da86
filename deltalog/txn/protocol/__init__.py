"""What the Delta protocol says, with no I/O: actions, table features, table properties,
the schema and column mapping, constraints, partition values and file statistics."""
