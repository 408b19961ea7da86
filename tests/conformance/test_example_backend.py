"""A third-party backend is picked up after ``pip install``, with no change in deltalog.

The example package (examples/example_backend) is installed into a temporary
``--target`` directory, never into the shared environment, and used through
``PYTHONPATH`` in subprocesses.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from deltalog.conformance import check_names
from tests.conformance.helpers import deltalog, pytest_kit, results_by_check, run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "example_backend"
BROKEN_FAILURES = {
    "declared_semantics",
    "overwrite_false_raises",
    "put_if_absent_threads",
    "put_if_absent_processes",
    "list_from_ordering",
    "list_past_one_page",
    "checksum_files",  # its checksum files overwrite too
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment variables under which the example backend is installed."""
    target = tmp_path_factory.mktemp("example-backend-site")
    result = run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(EXAMPLE)])
    assert result.returncode == 0, f"pip install of the example backend failed:\n{result.stdout}{result.stderr}"
    assert (target / "deltalog_example_backend" / "store.py").exists()
    # this checkout's deltalog, not whichever one the environment has installed
    return {"PYTHONPATH": os.pathsep.join([str(target), str(EXAMPLE.parents[1])])}


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    return tmp_path / "example-root"


def test_example_scheme_is_unknown_without_the_package(root: Path) -> None:
    result = deltalog("conformance", "example://t", "--storage-option", f"EXAMPLE_ROOT={root}")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "no installed LogStore serves the scheme 'example://'" in lines[0]
    assert "Installed LogStores: " in lines[0] and "local" in lines[0] and "memory" in lines[0]
    assert "example-broken" not in lines[0]
    assert "Traceback" not in result.stderr


def test_installed_backend_is_listed(installed: dict[str, str]) -> None:
    result = deltalog("stores", "--json", env=installed)
    assert result.returncode == 0, result.stderr
    stores = {row["name"]: row for row in json.loads(result.stdout)}
    example = stores["example"]
    assert example["schemes"] == ["example"]
    assert example["distribution"] == "deltalog-example-backend"
    assert example["builtin"] is False
    assert example["mutual_exclusion"] == "CONDITIONAL_WRITE"
    assert example["commit_lock"].startswith("none")
    assert example["status"] == "ok"
    assert stores["example-broken"]["schemes"] == ["broken"]
    text = deltalog("stores", env=installed).stdout
    assert any(line.startswith("example ") and "deltalog-example-backend" in line for line in text.splitlines())


def test_example_backend_passes_the_whole_kit_and_cleans_up(installed: dict[str, str], root: Path) -> None:
    result = deltalog("conformance", "example://t", "--storage-option", f"EXAMPLE_ROOT={root}", "--json", env=installed)
    assert result.returncode == 0, result.stdout + result.stderr
    results = results_by_check(result.stdout)
    assert list(results) == check_names()
    assert {c for c, r in results.items() if r != "PASSED"} == {"secrets_redacted", "checkpoint_stream_invisible"}
    with sqlite3.connect(root / "t.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM log_files").fetchone() == (0,)
    assert not (root / "t").exists() or not any((root / "t").iterdir())


@pytest.mark.slow
def test_broken_store_fails_exactly_the_right_checks(installed: dict[str, str], root: Path) -> None:
    result = deltalog("conformance", "broken://t", "--storage-option", f"EXAMPLE_ROOT={root}", "--json", env=installed)
    assert result.returncode == 1, result.stdout + result.stderr
    results = results_by_check(result.stdout)
    # engine_commit fails too when the two writers happen to race on one version
    assert {c for c, r in results.items() if r == "FAILED"} - {"engine_commit"} == BROKEN_FAILURES
    assert json.loads(result.stdout)["verdict"]["verdict"] == "unsafe"  # its listing is unsorted
    not_applicable = {c for c, r in results.items() if r == "NOT_APPLICABLE"}
    assert not_applicable == {"secrets_redacted", "checkpoint_stream_invisible"}
    assert json.loads(result.stdout)["ok"] is False


@pytest.mark.slow
def test_broken_store_through_the_pytest_plugin(installed: dict[str, str], root: Path, tmp_path: Path) -> None:
    bad = pytest_kit(
        "--logstore-uri", "broken://t", "--logstore-option", f"EXAMPLE_ROOT={root}", env=installed, cwd=tmp_path
    )
    assert bad.returncode == 1
    raced = "test_logstore_conformance[engine_commit]" in bad.stdout  # when its writers raced
    failures = len(BROKEN_FAILURES) + raced
    assert f"{failures} failed, {len(check_names()) - failures} passed" in bad.stdout
    for check in BROKEN_FAILURES:
        assert f"test_logstore_conformance[{check}]" in bad.stdout
    assert "declares CONDITIONAL_WRITE but a second writer overwrote an existing file" in bad.stdout
    summary = [line for line in bad.stdout.splitlines() if line.startswith(f"FAILED: {failures} of")]
    assert summary, bad.stdout
    assert "Verdict: UNSAFE" in bad.stdout
