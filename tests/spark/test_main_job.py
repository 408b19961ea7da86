"""The main job (``make main``) runs end to end on a small dataset, in its own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.jvm import TEST_JVM_OPTIONS

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_main_job_small(tmp_path):
    table = tmp_path / "events"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "JDK_JAVA_OPTIONS": TEST_JVM_OPTIONS,
    }
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "main_job.py"), "--rows", "5000", "--path", str(table)],
        capture_output=True,
        text=True,
        timeout=540,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for n in range(7):
        assert f"step {n}: done" in proc.stderr
    assert "so it was skipped" in proc.stderr and "all steps passed" in proc.stderr
    import deltalake

    dt = deltalake.DeltaTable(str(table))
    ops = [h["operation"] for h in dt.history()]
    assert sorted(set(ops)) == ["MERGE", "OPTIMIZE", "STREAMING UPDATE", "WRITE"]
    assert dt.to_pyarrow_table().num_rows == 5000 + 3 * 1000 + 1000 + 1


def test_main_job_refuses_an_existing_table(tmp_path):
    from deltalog.txn.delta_log import DeltaLog

    table = tmp_path / "events"
    (table / "_delta_log").mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "main_job.py"), "--path", str(table)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2 and "already holds a Delta table" in proc.stderr
    assert not DeltaLog.for_table(str(table)).table_exists()
