"""The kit passes on the built-in local and memory stores, and cleans up after itself."""

from __future__ import annotations

import os
from pathlib import Path

from deltalog.conformance import Outcome, check_names, run_conformance
from deltalog.conformance.result import CheckResult
from deltalog.logstores import logstore_for


def by_check(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.check: result for result in results}


def test_local_store_passes_every_check_and_leaves_nothing(tmp_path: Path) -> None:
    base = tmp_path / "scratch"
    report = run_conformance(logstore_for(base.as_uri()), base.as_uri())
    results = by_check(report.results)
    assert list(results) == check_names()
    assert report.ok, report.to_text()
    # local disk shows a file while it is written: checkpoints go through a temp name
    not_applicable = {"secrets_redacted", "checkpoint_stream_invisible"}
    assert {name for name, r in results.items() if r.outcome is Outcome.NOT_APPLICABLE} == not_applicable
    assert results["put_if_absent_processes"].outcome is Outcome.PASSED
    passed = len(check_names()) - 2
    assert report.summary().startswith(f"All checks passed: {passed} passed, 0 failed, 2 not applicable")
    assert not base.exists(), f"the kit left {list(base.rglob('*'))}"


def test_existing_base_directory_is_kept_and_left_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    report = run_conformance(logstore_for(str(tmp_path)), str(tmp_path), checks=["roundtrip_16mib", "special_names"])
    assert report.ok, report.to_text()
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]


def test_memory_store_passes_and_process_check_explains_per_process_state() -> None:
    store = logstore_for("memory://conformance-test")
    report = run_conformance(store, "memory://conformance-test")
    results = by_check(report.results)
    assert report.ok, report.to_text()
    processes = results["put_if_absent_processes"]
    assert processes.outcome is Outcome.NOT_APPLICABLE
    assert "per process" in processes.detail
    passed = {name for name, r in results.items() if r.outcome is Outcome.PASSED}
    assert passed == set(check_names()) - {"put_if_absent_processes", "secrets_redacted", "checkpoint_stream_invisible"}
    assert list(store.list_from("memory://conformance-test/!")) == []


def test_secret_options_are_checked_when_given(tmp_path: Path) -> None:
    store = logstore_for(str(tmp_path), {"AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "AWS_REGION": "eu-west-1"})
    report = run_conformance(store, str(tmp_path), checks=["secrets_redacted", "spec_rebuild"])
    results = by_check(report.results)
    assert results["secrets_redacted"].outcome is Outcome.PASSED, results["secrets_redacted"].detail
    assert results["spec_rebuild"].outcome is Outcome.PASSED
    assert "s3cr3t-value" not in report.to_text() + report.to_json()


def test_report_json_and_text_agree(tmp_path: Path) -> None:
    report = run_conformance(logstore_for(str(tmp_path)), str(tmp_path), checks=["roundtrip_empty", "list_from_start"])
    data = report.to_dict()
    assert data["ok"] is True
    assert data["counts"] == {"PASSED": 2, "FAILED": 0, "NOT_APPLICABLE": 0}
    assert [row["check"] for row in data["results"]] == ["roundtrip_empty", "list_from_start"]
    text = report.to_text()
    assert "LogStore local (CONDITIONAL_WRITE, atomic visibility, consistent listing)" in text
    assert data["summary"] in text.splitlines()
    assert text.endswith(report.verdict.text())  # the report ends in its verdict
    assert data["verdict"]["verdict"] == "safe" and data["verdict"]["partial"] is True
