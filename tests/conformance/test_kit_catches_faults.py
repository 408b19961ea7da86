"""Fault injection: stores that each break one promise, and the check that must catch it.

Each fake changes one behaviour of a working store; the kit must fail exactly the
checks about that behaviour and pass the others it runs.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from deltalog.conformance import Outcome, run_conformance
from deltalog.logstores import FileAlreadyExistsError, FileStatus, MutualExclusion, StoreSemantics
from deltalog.logstores.local import LocalLogStore, local_path
from deltalog.logstores.memory import MemoryLogStore, whole_file_memory_fs
from tests.conformance.fault_stores import FilesystemShowsPartialFilesStore, SharedReadPositionStore


class OverwritingStore(MemoryLogStore):
    """Declares CONDITIONAL_WRITE but overwrites."""

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        super().write(path, lines, overwrite=True)


class HonestPlainPutStore(OverwritingStore):
    """Overwrites too, but says so: MutualExclusion.NONE."""

    default_semantics = StoreSemantics(MutualExclusion.NONE, partial_write_visible=False)


class CheckThenPutStore(MemoryLogStore):
    """Refuses a second writer when it comes later, but races: check, pause, put."""

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        content = list(lines)
        if not overwrite and self.fs_path(path) in whole_file_memory_fs().store:
            raise FileAlreadyExistsError(path)
        time.sleep(0.005)
        super().write(path, content, overwrite=True)


class OverwritingChecksumStore(LocalLogStore):
    """Commits safely, but writes checksum files with a plain overwrite."""

    def write_auxiliary(self, path: str, lines: Iterable[str]) -> None:
        self.write(path, lines, overwrite=True)


class UnsortedStore(MemoryLogStore):
    def list_from(self, path: str) -> Iterator[FileStatus]:
        return iter(sorted(super().list_from(path), key=lambda s: s.name.lower(), reverse=True))


class ExclusiveStartStore(MemoryLogStore):
    def list_from(self, path: str) -> Iterator[FileStatus]:
        start = path.rsplit("/", 1)[-1]
        return (status for status in super().list_from(path) if status.name != start)


class SecondsMtimeStore(MemoryLogStore):
    def list_from(self, path: str) -> Iterator[FileStatus]:
        for status in super().list_from(path):
            yield dataclasses.replace(status, modification_time=status.modification_time // 1000)


class MissingDirRaisesStore(LocalLogStore):
    def list_from(self, path: str) -> Iterator[FileStatus]:
        directory = os.path.dirname(local_path(path))
        if not os.path.isdir(directory):
            raise FileNotFoundError(directory)
        return super().list_from(path)


class SplitlinesStore(MemoryLogStore):
    """Reads lines with str.splitlines(), which also splits on U+2028 and U+0085."""

    def read(self, path: str) -> Iterator[str]:
        return iter(self.read_bytes(path).decode("utf-8").splitlines())


class StreamingLocalStore(LocalLogStore):
    """Writes straight into the target (O_EXCL), so readers see partial files."""

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        target = local_path(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            handle = open(target, "w" if overwrite else "x", encoding="utf-8", newline="")
        except FileExistsError:
            raise FileAlreadyExistsError(path) from None
        with handle:
            for line in lines:
                handle.write(line + "\n")
                handle.flush()


class LeakyReprStore(MemoryLogStore):
    def __repr__(self) -> str:
        return f"LeakyReprStore({self.options.to_dict()!r})"


CASES = [
    pytest.param(
        OverwritingStore,
        ["declared_semantics", "overwrite_false_raises", "put_if_absent_threads", "overwrite_replaces"],
        {
            "declared_semantics": "declares CONDITIONAL_WRITE but a second writer overwrote",
            "overwrite_false_raises": "must raise FileAlreadyExistsError",
            "put_if_absent_threads": "8 writers all succeeded",
        },
        id="overwrites-while-declaring-conditional-write",
    ),
    pytest.param(
        CheckThenPutStore,
        ["declared_semantics", "put_if_absent_threads", "overwrite_false_raises"],
        {
            "declared_semantics": "races of 8 threads had several winners",
            "put_if_absent_threads": "writers all succeeded",
        },
        id="check-then-put-races",
    ),
    pytest.param(
        OverwritingChecksumStore,
        ["checksum_files", "overwrite_false_raises"],
        {"checksum_files": "write_auxiliary overwrote an existing checksum file"},
        id="overwriting-checksums",
    ),
    pytest.param(
        UnsortedStore,
        ["list_from_ordering", "list_from_start", "special_names"],
        {"list_from_ordering": "not sorted by UTF-8 bytes", "list_from_start": "list_from('0') returned"},
        id="unsorted-listing",
    ),
    pytest.param(
        ExclusiveStartStore,
        ["list_from_start", "list_missing_directory"],
        {"list_from_start": "list_from('1') returned ['2', '3']"},
        id="start-exclusive",
    ),
    pytest.param(
        SecondsMtimeStore,
        ["read_after_write_listing", "list_from_start"],
        {"read_after_write_listing": "not milliseconds since the epoch"},
        id="mtime-in-seconds",
    ),
    pytest.param(
        MissingDirRaisesStore,
        ["list_missing_directory", "list_from_start"],
        {"list_missing_directory": "unexpected FileNotFoundError"},
        id="missing-dir-raises",
    ),
    pytest.param(
        SplitlinesStore,
        ["roundtrip_unicode", "roundtrip_16mib", "roundtrip_empty"],
        {"roundtrip_unicode": "non-ASCII lines do not round-trip: line 6 differs"},
        id="splitlines",
    ),
    pytest.param(
        StreamingLocalStore,
        ["atomic_visibility", "aborted_write_invisible", "overwrite_false_raises"],
        {"atomic_visibility": "while it was being written", "aborted_write_invisible": "left a visible file"},
        id="partial-writes-visible",
    ),
    pytest.param(
        FilesystemShowsPartialFilesStore,
        ["atomic_visibility", "checkpoint_stream_invisible", "data_filesystem"],
        {"checkpoint_stream_invisible": "a listing showed 00000000000000000020.checkpoint.parquet while it was"},
        id="data-filesystem-shows-partial-files",
    ),
    pytest.param(
        SharedReadPositionStore,
        ["data_file_ranged_reads", "data_file_concurrent_readers"],
        {"data_file_concurrent_readers": "readers of one file share it"},
        id="shared-read-position",
    ),
    pytest.param(
        LeakyReprStore,
        ["secrets_redacted", "spec_rebuild"],
        {"secrets_redacted": "repr(store) shows the value of AWS_SECRET_ACCESS_KEY"},
        id="leaky-repr",
    ),
]


@pytest.mark.parametrize(("store_class", "checks", "expected_failures"), CASES)
def test_the_right_checks_fail(
    tmp_path: Path, store_class: type, checks: list[str], expected_failures: dict[str, str]
) -> None:
    base = str(tmp_path / "t") if issubclass(store_class, LocalLogStore) else f"memory://{tmp_path.name}"
    store = store_class({"AWS_SECRET_ACCESS_KEY": "leak-me-not-1234"})
    report = run_conformance(store, base, checks=checks)
    failed = {r.check: r.detail for r in report.results if r.outcome is Outcome.FAILED}
    assert set(failed) == set(expected_failures), report.to_text()
    for check, phrase in expected_failures.items():
        assert phrase in failed[check], failed[check]
    assert not report.ok
    assert report.summary().startswith(f"FAILED: {len(expected_failures)} of {len(checks)} checks failed")


def test_a_store_declaring_none_needs_a_lock_instead_of_failing() -> None:
    store = HonestPlainPutStore()
    report = run_conformance(
        store, "memory://declares-none", checks=["declared_semantics", "put_if_absent_threads", "roundtrip_empty"]
    )
    results = {r.check: r for r in report.results}
    assert report.ok, report.to_text()
    for check in ("declared_semantics", "put_if_absent_threads"):
        assert results[check].outcome is Outcome.NOT_APPLICABLE
        assert "needs a commit lock" in results[check].detail
    assert "overwrote" in results["declared_semantics"].detail
    assert results["roundtrip_empty"].outcome is Outcome.PASSED
    assert report.needs_commit_lock
    assert "needs a commit lock" in report.summary()


def test_an_exception_inside_a_check_is_a_failure_and_cleanup_still_runs(tmp_path: Path) -> None:
    class ExplodingStore(LocalLogStore):
        def list_from(self, path: str) -> Iterator[FileStatus]:
            raise RuntimeError("listing service unavailable")

    base = tmp_path / "t"
    report = run_conformance(ExplodingStore(), str(base), checks=["list_from_start"])
    (result,) = report.results
    assert result.outcome is Outcome.FAILED
    assert result.detail == "unexpected RuntimeError: listing service unavailable"
    assert not base.exists()
