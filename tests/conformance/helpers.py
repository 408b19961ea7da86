"""Running the ``deltalog`` console script and pytest in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

DELTALOG = Path(sys.executable).parent / "deltalog"


def run(
    args: list[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(args, capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout)


def deltalog(
    *args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    assert DELTALOG.exists(), f"the deltalog console script is missing: {DELTALOG}"
    return run([str(DELTALOG), *args], env=env, cwd=cwd)


def pytest_kit(
    *args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    return run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "deltalog.conformance", *args],
        env=env,
        cwd=cwd,
    )


def results_by_check(report_json: str) -> dict[str, str]:
    data: dict[str, Any] = json.loads(report_json)
    return {row["check"]: row["result"] for row in data["results"]}
