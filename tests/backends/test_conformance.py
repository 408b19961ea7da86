"""The conformance kit passes on every cloud store against its server, and the CLI prints
the capability report."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from deltalog.conformance import run_conformance
from deltalog.conformance.result import Outcome
from deltalog.conformance.verdict import VerdictLevel
from deltalog.logstores.fsspec_store import FsspecLogStore
from deltalog.logstores.s3 import S3PlainPutLogStore
from tests.backends.conftest import Backend, subprocess_env
from tests.servers.redis import RedisServer


@pytest.mark.slow
def test_conformance_kit_passes(backend: Backend) -> None:
    report = run_conformance(backend.store(), f"{backend.root}/conformance")
    assert report.ok, report.to_text()
    if backend.secret:  # what `deltalog conformance` prints, as text or --json, never shows it
        assert backend.secret not in report.to_text() + report.to_json()
    not_applicable = [r.check for r in report.results if r.outcome is Outcome.NOT_APPLICABLE]
    # GCS against the emulator has no secret option to check; everything else runs.
    assert not_applicable == ([] if backend.secret else ["secrets_redacted"]), report.to_text()
    assert len(report.results) >= 28
    assert report.verdict.level is VerdictLevel.SAFE, report.to_text()
    assert report.to_dict()["verdict"]["reasons"] == [
        "declares CONDITIONAL_WRITE with atomic visibility, and every operation deltalog performs on it passed; "
        "no commit lock needed"
    ]


def test_conformance_kit_on_the_plain_put_store_reports_none(s3: Backend) -> None:
    report = run_conformance(S3PlainPutLogStore(s3.options()), f"{s3.root}/conformance")
    assert report.ok, report.to_text()
    assert report.needs_commit_lock
    assert "needs a commit lock" in report.summary()
    verdict = report.verdict
    assert verdict.level is VerdictLevel.SAFE_WITH_CONFIGURATION
    assert verdict.configuration is not None and "deltalog.commitLock=redis://" in verdict.configuration


def test_the_plain_put_store_with_a_redis_lock_is_safe(s3: Backend, redis_server: RedisServer) -> None:
    store = S3PlainPutLogStore(s3.options(**{"deltalog.commitLock": redis_server.short_lease_url}))
    report = run_conformance(store, f"{s3.root}/conformance", checks=["declared_semantics", "engine_commit"])
    assert report.ok, report.to_text()
    assert "with the redis commit lock" in report.results[1].detail
    assert report.verdict.level is VerdictLevel.SAFE


def test_conformance_kit_on_fsspec(tmp_path) -> None:
    for root in (f"fsspec+file://{tmp_path}/kit", f"fsspec+memory://kit-{uuid.uuid4().hex}"):
        store = FsspecLogStore()
        store.resolve_path(root)
        report = run_conformance(store, root)
        assert report.ok, report.to_text()


def test_cli_prints_the_capability_report(backend: Backend) -> None:
    options = [arg for key, value in backend.options().items() for arg in ("--storage-option", f"{key}={value}")]
    command = [
        sys.executable,
        "-m",
        "deltalog.cli",
        "conformance",
        f"{backend.root}/cli",
        "--check",
        "declared_semantics",
        "--check",
        "list_from_start",
        "--check",
        "secrets_redacted",
        *options,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=subprocess_env())
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"LogStore {backend.name} (CONDITIONAL_WRITE, atomic visibility, consistent listing)" in out
    assert "declared_semantics" in out and "list_from_start" in out and "All checks passed" in out
    assert out.rstrip().endswith("(only some checks ran: the verdict covers those)")
    assert "Verdict: SAFE" in out
    if backend.secret:
        assert backend.secret not in out + result.stderr
