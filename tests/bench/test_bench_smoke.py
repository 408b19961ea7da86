"""``python -m bench --size small --shared-jvm`` runs every benchmark and reports every workload
(the Spark scripts in one JVM: this checks they run, it measures nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.jvm import TEST_JVM_OPTIONS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_small_benchmark_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--size", "small", "--shared-jvm", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "JDK_JAVA_OPTIONS": TEST_JVM_OPTIONS},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (out / "REPORT.md").read_text()
    from bench.__main__ import discover, workload_names

    modules = discover()
    assert {m.__name__ for m in modules} >= {
        "bench.commit_latency",
        "bench.append_1row",
        "bench.append_throughput",
        "bench.snapshot_load",
        "bench.checkpoint_write",
        "bench.spark_write",
        "bench.s3_requests",
    }
    rows = [line for line in report.splitlines() if line.startswith("| ") and not line.startswith("| workload")]
    workloads = {line.split("|")[1].strip() for line in rows}
    for module in modules:
        for name in workload_names(module, "small"):
            assert name in workloads, f"{module.__name__}: no row for {name!r}"
    data = json.loads((out / "results.json").read_text())
    for result in data["results"]:
        assert result["error"] is None, result
        baseline = result["parquet"] if result["baseline"] == "parquet" else result["delta_rs"]
        assert result["deltalog"] is not None and baseline is not None, result
    throughput = next(r for r in data["results"] if r["workload"].startswith("concurrent appends"))
    assert throughput["details"]["deltalog"]["lost"] == 0
    assert throughput["details"]["deltalog"]["failed"] == 0
    assert list(out.glob("*.png")), "no chart written"
