"""delta-rs (``deltalake``) on one side of an interop test, in its own process.

docs/backends.md: delta-rs hangs when moto runs inside the same Python process, and keeping
delta-rs out of the test process also keeps its Tokio runtime away from pytest's forks.
Usage: ``python -m tests.backends.interop_worker write|read URI OPTIONS_JSON``.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    action, uri, options_json = sys.argv[1:4]
    options = json.loads(options_json)
    if action == "write":
        write_deltalake(
            uri,
            pa.table({"x": pa.array([1, 2, 3], pa.int64()), "p": ["a", "a", "b"]}),
            partition_by=["p"],
            storage_options=options,
        )
        write_deltalake(
            uri, pa.table({"x": pa.array([4], pa.int64()), "p": ["b"]}), mode="append", storage_options=options
        )
        print(json.dumps({"version": DeltaTable(uri, storage_options=options).version()}))
    else:
        table = DeltaTable(uri, storage_options=options)
        data = table.to_pyarrow_table()
        rows = sorted(zip(data.column("x").to_pylist(), data.column("p").to_pylist()))
        print(json.dumps({"version": table.version(), "rows": rows}))


if __name__ == "__main__":
    main()
    # Skip interpreter teardown: the AWS SDK inside pyarrow can abort ("terminate called
    # without an active exception") while its threads are torn down at exit.
    sys.stdout.flush()
    os._exit(0)
