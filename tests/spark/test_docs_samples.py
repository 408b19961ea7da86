"""The ``python`` samples of docs/spark.md run, in order, in one namespace (local[2])."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

PAGE = Path(__file__).resolve().parents[2] / "docs" / "spark.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_spark_page_samples_run(spark, capsys):
    blocks = _BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 6 and PAGE.read_text(encoding="utf-8").count("```python") == len(blocks)
    namespace: dict[str, object] = {"__name__": "docs_spark"}
    for i, block in enumerate(blocks, 1):
        exec(compile(block, f"docs/spark.md block {i}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "CHECK constraint amount_positive (amount > 0) violated by row with values:\n - amount : -1.0\n" in out
    assert "NOT NULL constraint violated for column: id." in out
    uri = str(namespace["uri"])
    from deltalog.txn.delta_log import DeltaLog

    ops = [r.operation for r in DeltaLog.for_table(uri).history()]
    assert {"WRITE", "STREAMING UPDATE", "UPDATE", "DELETE", "MERGE", "OPTIMIZE", "RESTORE"} <= set(ops)
