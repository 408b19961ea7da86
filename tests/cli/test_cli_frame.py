"""The ``deltalog`` command-line frame: subcommands, global options, errors, secrets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from deltalog import cli
from deltalog.cli_commands.stores import default_commit_lock
from deltalog.logstores import FileStatus, MutualExclusion, StoreSemantics
from deltalog.logstores.local import LocalLogStore
from tests.conformance.helpers import deltalog

SECRET = "sup3r-s3cret-value"


class ExplodingStore(LocalLogStore):
    """Fault injection: an unexpected (non-deltalog) exception inside a command."""

    def list_from(self, path: str) -> Iterator[FileStatus]:
        raise RuntimeError("boom")


def test_default_commit_lock_rule() -> None:
    atomic = StoreSemantics(MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=False)
    rename_partial = StoreSemantics(MutualExclusion.ATOMIC_RENAME, partial_write_visible=True)
    plain_put = StoreSemantics(MutualExclusion.NONE, partial_write_visible=False)
    assert default_commit_lock(atomic).startswith("none")
    assert default_commit_lock(rename_partial).startswith("in-process")
    assert default_commit_lock(plain_put).startswith("required: redis://")


def test_stores_json_lists_builtins_with_semantics(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["stores", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    for name, scheme in (("local", "file"), ("memory", "memory")):
        row = rows[name]
        assert row["schemes"] == [scheme]
        assert row["builtin"] is True
        assert row["mutual_exclusion"] == "CONDITIONAL_WRITE"
        assert row["partial_write_visible"] is False
        assert row["commit_lock"].startswith("none")
        assert row["status"] == "ok"


def test_stores_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["stores"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["name", "schemes", "semantics"]
    local = next(line for line in lines if line.startswith("local "))
    assert "file://" in local and "CONDITIONAL_WRITE" in local and "built-in" in local


def test_conformance_subset_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["conformance", str(tmp_path / "t"), "--check", "roundtrip_empty", "--check", "list_from_start"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "roundtrip_empty" in out and "list_from_start" in out and "put_if_absent_threads" not in out
    lines = out.strip().splitlines()
    assert "All checks passed: 2 passed, 0 failed, 0 not applicable" in lines
    # the report ends in its verdict, which says it covers only the checks that ran
    assert "Verdict: SAFE" in lines and lines[-1].strip() == "(only some checks ran: the verdict covers those)"


def test_conformance_on_local_via_console_script(tmp_path: Path) -> None:
    base = tmp_path / "x"
    result = deltalog("conformance", base.as_uri())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert any(line.startswith("All checks passed") for line in lines)
    assert "Verdict: SAFE" in lines
    assert "FAILED" not in result.stdout
    assert not base.exists()


def test_conformance_on_memory_via_console_script() -> None:
    result = deltalog("conformance", "memory://t", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["summary"].startswith("All checks passed")
    assert data["counts"]["FAILED"] == 0


def test_error_is_one_redacted_line_without_traceback() -> None:
    result = deltalog("conformance", f"nosuch://bucket/{SECRET}", "--storage-option", f"AWS_SECRET_ACCESS_KEY={SECRET}")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("deltalog conformance: error: no installed LogStore serves the scheme 'nosuch://'")
    assert "nosuch://bucket/***" in lines[0]
    assert SECRET not in result.stderr
    assert "Traceback" not in result.stderr


def test_debug_adds_a_redacted_traceback() -> None:
    result = deltalog(
        "conformance", f"nosuch://bucket/{SECRET}", "--debug", "--storage-option", f"AWS_SECRET_ACCESS_KEY={SECRET}"
    )
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "UnknownLogStoreError" in result.stderr
    assert SECRET not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("deltalog conformance: error: ")


def test_check_errors_go_to_the_report_and_command_errors_to_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A failing check is reported in the report; an error outside the checks is a one-liner.
    code = cli.main(
        [
            "conformance",
            str(tmp_path),
            "--logstore",
            "tests.cli.test_cli_frame:ExplodingStore",
            "--check",
            "list_from_start",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert "unexpected RuntimeError: boom" in captured.out
    code = cli.main(["conformance", str(tmp_path), "--check", "no_such_check"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("deltalog conformance: error: no conformance check is named 'no_such_check'")
    assert "--debug" not in captured.err


def test_non_deltalog_exception_gets_a_debug_hint(capsys: pytest.CaptureFixture[str]) -> None:
    @cli.command("explode-for-test", "raise an unexpected error")
    def explode(ctx: cli.CommandContext) -> int:
        raise RuntimeError(f"broken with {ctx.storage_options['TOKEN']}")

    try:
        code = cli.main(["explode-for-test", "--storage-option", f"TOKEN={SECRET}"])
    finally:
        cli._COMMANDS.pop("explode-for-test")
    err = capsys.readouterr().err
    assert code == 1
    assert (
        err == "deltalog explode-for-test: error: RuntimeError: broken with *** (run with --debug for the traceback)\n"
    )


def test_global_options_reach_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict[str, object] = {}

    def arguments(parser: object) -> None:
        parser.add_argument("uri")  # type: ignore[attr-defined]

    @cli.command("probe-for-test", "record the context", arguments=arguments)
    def probe(ctx: cli.CommandContext) -> int:
        seen.update(
            uri=ctx.args.uri,
            options=ctx.storage_options.to_dict(),
            logstore=ctx.logstore,
            json=ctx.json,
            debug=ctx.debug,
        )
        ctx.print_table(["a", "b"], [[1, None]])
        return 3

    try:
        code = cli.main(
            [
                "probe-for-test",
                "memory://x",
                "--storage-option",
                "A=1",
                "--storage-option",
                "B=x=y",
                "--logstore",
                "memory",
                "--json",
                "--debug",
            ]
        )
    finally:
        cli._COMMANDS.pop("probe-for-test")
    assert code == 3
    assert seen == {
        "uri": "memory://x",
        "options": {"A": "1", "B": "x=y"},
        "logstore": "memory",
        "json": True,
        "debug": True,
    }
    assert capsys.readouterr().out == "a  b\n-  -\n1\n"
    assert "probe-for-test" not in cli.build_parser().format_help()


def test_bad_storage_option_is_a_usage_error_that_does_not_echo_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["stores", "--storage-option", SECRET])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "expected KEY=VALUE" in err
    assert SECRET not in err


def test_no_subcommand_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert "stores" in err and "conformance" in err


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """``deltalog files ... | head``: the reader goes away mid-output (the listing is far
    larger than a pipe's buffer); no error line, exit status 0."""
    import json as _json
    import subprocess
    import sys

    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import AddFile, Metadata

    schema = _json.dumps(
        {"type": "struct", "fields": [{"name": "v", "type": "long", "nullable": True, "metadata": {}}]}
    )
    txn = DeltaLog.for_table(str(tmp_path)).start_transaction()
    txn.update_metadata(Metadata(id="pipe", schema_string=schema))
    txn.commit(
        [AddFile(f"part-{i:05d}-of-a-rather-long-file-name.parquet", {}, 1, 1) for i in range(5000)], CreateTable()
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "deltalog.cli", "files", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "BrokenPipe" not in err and "error" not in err


def test_reading_parquet_through_a_python_filesystem_does_not_abort_the_process_at_exit() -> None:
    """pyarrow 26 can abort at interpreter exit after a threaded read through a PyFileSystem
    (the memory and fsspec stores); deltalog reads through those without pyarrow's threads.
    Before that, this check's process aborted (SIGABRT) nearly every time."""
    for _ in range(4):
        result = deltalog("conformance", "memory://t", "--check", "data_filesystem")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "terminate called" not in result.stderr
