"""The verdict a platform team acts on: each fault-injecting store fails the check about
its fault, and the report ends with the matching verdict (text and JSON alike)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest

from deltalog.conformance import Outcome, run_conformance
from deltalog.conformance.report import Report
from deltalog.conformance.verdict import VerdictLevel
from deltalog.logstores import logstore_for
from deltalog.logstores.base import MutualExclusion, StoreSemantics
from deltalog.logstores.memory import MemoryLogStore
from tests.conformance.fault_stores import (
    NO_MOVE_MESSAGE,
    DroppingPagesStore,
    NoRenameObjectStore,
    NoRenameVisibleStore,
    PartialWritesDeclaredStore,
    RepeatingPagesStore,
)
from tests.conformance.test_kit_catches_faults import CheckThenPutStore, OverwritingStore, StreamingLocalStore


class LyingS3Store(OverwritingStore):
    """Named like the S3 store: declares CONDITIONAL_WRITE, ignores If-None-Match."""

    name = "s3"
    schemes = ("s3", "s3a")

    def resolve_path(self, path: str) -> str:  # memory:// underneath
        return super().resolve_path(path)


class PlainPutStore(CheckThenPutStore):
    """As S3 without conditional writes: a HEAD, then a PUT; declares NONE."""

    default_semantics = StoreSemantics(MutualExclusion.NONE, partial_write_visible=False)


def _run(store: MemoryLogStore, checks: Iterable[str], base: str | None = None) -> Report:
    return run_conformance(store, base or f"memory://verdict-{uuid.uuid4().hex[:12]}", checks=list(checks))


def _failed(report: Report) -> dict[str, str]:
    return {r.check: r.detail for r in report.results if r.outcome is Outcome.FAILED}


def _agree(report: Report) -> None:
    """The text ends with the verdict and --json carries the same."""
    verdict = report.verdict
    text = report.to_text()
    assert text.endswith(verdict.text()), text[-600:]
    data = json.loads(report.to_json())
    assert data["verdict"] == verdict.to_dict()
    assert data["verdict"]["verdict"] == verdict.level.value


ENGINE = ["checkpoints", "checkpoint_v2_sidecars", "log_cleanup", "engine_commit"]


def test_a_store_without_rename_whose_files_appear_whole_is_safe() -> None:
    """Azure Blob without hierarchical namespace: the engine needs no rename there."""
    report = _run(NoRenameObjectStore(), ENGINE)
    assert report.ok, report.to_text()
    assert report.verdict.level is VerdictLevel.SAFE
    _agree(report)


def test_a_store_that_lacks_rename_where_the_engine_needs_one_is_unsafe() -> None:
    report = _run(NoRenameVisibleStore(), [*ENGINE, "roundtrip_empty"])
    failed = _failed(report)
    assert set(failed) == {"checkpoints", "checkpoint_v2_sidecars", "log_cleanup"}, report.to_text()
    # the operation, and what the store answered
    assert failed["checkpoints"].startswith("writing the classic checkpoint (from the JSON log) of version 3: ")
    assert NO_MOVE_MESSAGE in failed["checkpoints"]
    verdict = report.verdict
    assert verdict.level is VerdictLevel.UNSAFE
    assert any("never get a checkpoint" in reason and "checkpoints failed" in reason for reason in verdict.reasons)
    _agree(report)


@pytest.mark.parametrize(
    ("store", "advice"),
    [
        (OverwritingStore(), "use a store that declares MutualExclusion.NONE for it"),
        (LyingS3Store(), "use `deltalog.logstore.s3.impl=s3-no-conditional-put`"),
    ],
    ids=["generic", "s3"],
)
def test_a_store_that_lies_about_conditional_writes_needs_a_lock(store: MemoryLogStore, advice: str) -> None:
    report = _run(store, ["declared_semantics", "put_if_absent_threads", "engine_commit", "checkpoints"])
    assert set(_failed(report)) == {"declared_semantics", "put_if_absent_threads", "engine_commit"}, report.to_text()
    assert "versions" in _failed(report)["engine_commit"]  # two writers published the same version
    verdict = report.verdict
    assert verdict.level is VerdictLevel.SAFE_WITH_CONFIGURATION
    assert verdict.configuration is not None
    assert verdict.configuration.startswith(advice)
    assert "deltalog.commitLock=redis://" in verdict.configuration
    assert "declares CONDITIONAL_WRITE but ignores put-if-absent (If-None-Match)" in verdict.reasons[0]
    _agree(report)


def test_an_honest_plain_put_store_is_safe_with_a_lock() -> None:
    report = _run(PlainPutStore(), ["declared_semantics", "engine_commit", "checkpoints"])
    assert report.ok, report.to_text()
    results = {r.check: r for r in report.results}
    assert results["engine_commit"].outcome is Outcome.NOT_APPLICABLE
    verdict = report.verdict
    assert verdict.level is VerdictLevel.SAFE_WITH_CONFIGURATION
    assert verdict.configuration is not None and "deltalog.commitLock=redis://" in verdict.configuration
    assert "declares NONE" in verdict.reasons[0]
    _agree(report)


def test_a_plain_put_store_with_a_configured_lock_is_safe() -> None:
    store = PlainPutStore({"deltalog.commitLock": "in-process", "deltalog.singleWriter": "true"})
    report = _run(store, ["engine_commit"])
    assert report.ok and report.results[0].outcome is Outcome.PASSED, report.to_text()
    assert "in-process commit lock" in report.results[0].detail
    assert report.verdict.level is VerdictLevel.SAFE


def test_a_store_that_shows_partial_writes_while_declaring_atomic_is_unsafe(tmp_path: Path) -> None:
    report = run_conformance(
        StreamingLocalStore(), str(tmp_path / "t"), checks=["atomic_visibility", "aborted_write_invisible"]
    )
    assert set(_failed(report)) == {"atomic_visibility", "aborted_write_invisible"}, report.to_text()
    verdict = report.verdict
    assert verdict.level is VerdictLevel.UNSAFE
    assert "declares atomic visibility but shows partial writes" in verdict.reasons[0]
    _agree(report)


def test_a_store_that_declares_partial_writes_gets_the_in_process_lock() -> None:
    report = _run(PartialWritesDeclaredStore(), ["atomic_visibility", "engine_commit", "checkpoints"])
    assert report.ok, report.to_text()
    assert "in-process commit lock" in {r.check: r for r in report.results}["engine_commit"].detail
    verdict = report.verdict
    assert verdict.level is VerdictLevel.SAFE_WITH_CONFIGURATION
    assert "shows partial writes (declared): the in-process commit lock is chosen" in verdict.reasons[0]
    _agree(report)


@pytest.mark.parametrize(
    ("store_class", "phrase"),
    [(DroppingPagesStore, "missing (first '00000000000000001000.json')"), (RepeatingPagesStore, "repeated")],
    ids=["drops-keys-past-1000", "repeats-keys-at-page-boundary"],
)
def test_a_store_that_paginates_wrongly_is_unsafe(store_class: type[MemoryLogStore], phrase: str) -> None:
    report = _run(store_class(), ["list_past_one_page", "list_from_start"])
    failed = _failed(report)
    assert set(failed) == {"list_past_one_page"}, report.to_text()
    assert phrase in failed["list_past_one_page"] and "one page (1,000 keys)" in failed["list_past_one_page"]
    verdict = report.verdict
    assert verdict.level is VerdictLevel.UNSAFE
    assert "miss, repeat or misorder commits" in verdict.reasons[0]
    _agree(report)


def test_the_local_store_is_safe_and_a_full_run_is_not_partial(tmp_path: Path) -> None:
    base = tmp_path / "scratch"
    report = run_conformance(logstore_for(base.as_uri()), base.as_uri())
    assert report.ok, report.to_text()
    verdict = report.verdict
    assert verdict.level is VerdictLevel.SAFE and not verdict.partial
    assert "no commit lock needed" in verdict.reasons[0]
    _agree(report)
