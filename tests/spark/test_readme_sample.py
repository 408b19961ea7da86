"""The README's PySpark sample runs as written with the project's interpreter, although
``PYSPARK_PYTHON`` is not set and the ``python3`` on ``PATH`` is another one (PySpark's
default worker interpreter): ``register(spark)`` makes local workers use the driver's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.jvm import TEST_JVM_OPTIONS

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
README_URI = 'uri = "/tmp/deltalog-events"'


def _readme_spark_sample() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## PySpark", 1)[1]
    match = re.search(r"^```python\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert match is not None
    return match.group(1)


def test_readme_pyspark_sample_runs_without_pyspark_python(tmp_path):
    sample = _readme_spark_sample()
    assert README_URI in sample
    # the same sample, on a private table instead of the shared /tmp path
    script = tmp_path / "sample.py"
    script.write_text(sample.replace(README_URI, f"uri = {str(tmp_path / 'events')!r}"))
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for name in ("python3", "python"):
        fake = fake_bin / name
        fake.write_text("#!/bin/sh\necho 'the python3 on PATH was started' >&2\nexit 3\n")
        fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["JDK_JAVA_OPTIONS"] = TEST_JVM_OPTIONS
    env["PATH"] = f"{fake_bin}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "2026-11-02" in proc.stdout  # the filtered read printed its row
    assert "WRITE" in proc.stdout  # and the history its commit
