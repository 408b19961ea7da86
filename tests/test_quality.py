"""The code-quality gates run as part of the suite, so CI enforces them: ruff on
everything we ship and test, and mypy --strict on the package (configured in
pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean() -> None:
    result = _run("ruff", "check", "deltalog", "tests", "examples", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
