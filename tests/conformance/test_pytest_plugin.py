"""The kit through its pytest plugin, in a subprocess as a third party would run it."""

from __future__ import annotations

import sys
from pathlib import Path

from deltalog.conformance import check_names
from tests.conformance.helpers import pytest_kit, run

ALL = len(check_names())


def test_plugin_passes_on_local(tmp_path: Path) -> None:
    base = tmp_path / "scratch"
    result = pytest_kit("--logstore-uri", base.as_uri(), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{ALL} passed" in result.stdout
    assert "deltalog conformance report" in result.stdout
    assert f"All checks passed: {ALL - 2} passed, 0 failed, 2 not applicable" in result.stdout
    assert "Verdict: SAFE" in result.stdout
    assert not base.exists()


def test_plugin_passes_on_memory_and_reports_not_applicable(tmp_path: Path) -> None:
    result = pytest_kit("--logstore-uri", "memory://kit", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{ALL} passed" in result.stdout
    rows = [line for line in result.stdout.splitlines() if line.startswith("put_if_absent_processes")]
    assert rows and "NOT_APPLICABLE" in rows[0] and "per process" in rows[0]


def test_plugin_options_select_store_and_pass_storage_options(tmp_path: Path) -> None:
    result = pytest_kit(
        "--logstore-uri",
        str(tmp_path / "t"),
        "--logstore",
        "local",
        "--logstore-option",
        "AWS_SECRET_ACCESS_KEY=never-shown-9876",
        "-k",
        "secrets_redacted or spec_rebuild",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("secrets_redacted"))
    assert "PASSED" in row
    assert "never-shown-9876" not in result.stdout + result.stderr


def test_kit_without_a_uri_fails_with_a_clear_message(tmp_path: Path) -> None:
    result = pytest_kit("-k", "roundtrip_empty", cwd=tmp_path)
    assert result.returncode == 1
    assert "needs a store to test: pass --logstore-uri URI" in result.stdout


def test_bad_logstore_option_is_a_usage_error_that_does_not_echo_it(tmp_path: Path) -> None:
    result = pytest_kit("--logstore-uri", "memory://kit", "--logstore-option", "just-a-secret-value", cwd=tmp_path)
    assert result.returncode != 0
    assert "--logstore-option expects KEY=VALUE" in result.stdout + result.stderr


def test_plugin_is_inert_in_other_projects(tmp_path: Path) -> None:
    (tmp_path / "test_other.py").write_text("def test_other():\n    assert 1 + 1 == 2\n")
    result = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_other.py"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert "deltalog conformance report" not in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["test_other.py"]
    help_text = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"], cwd=tmp_path).stdout
    assert "--logstore-uri=URI" in help_text
