"""The bad-input corpus: each case builds a small, damaged or unusual log and checks the
documented behaviour -- a typed error that names the file and the problem, or a correct
read. Never a wrong answer, never an untyped crash, and never a write: the directory is
byte-identical before and after (the reader repairs nothing behind the user's back).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.errors import DeltaError
from deltalog.txn.commit.operations import Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile
from deltalog.txn.protocol.errors import (
    CorruptLogError,
    DeltaLogError,
    InvalidSchemaError,
    InvalidTableStateError,
    NonContiguousVersionsError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        {"name": "n", "type": "long", "nullable": True, "metadata": {}},
        {"name": "v", "type": "long", "nullable": True, "metadata": {}},
    ],
}


def protocol(reader: int = 1, writer: int = 2, **extra: Any) -> dict[str, Any]:
    return {"protocol": {"minReaderVersion": reader, "minWriterVersion": writer, **extra}}


def metadata(schema: Any = None, partition: tuple[str, ...] = ("p",), **extra: Any) -> dict[str, Any]:
    schema_string = schema if isinstance(schema, str) else json.dumps(schema or SCHEMA)
    return {
        "metaData": {
            "id": "a1b2",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": list(partition),
            "configuration": {},
            "createdTime": 1,
            **extra,
        }
    }


def info(version: int) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE", "txnId": f"txn-{version}"}}


def add(name: str, p: str = "a", **extra: Any) -> dict[str, Any]:
    return {
        "add": {
            "path": f"p={p}/{name}.parquet",
            "partitionValues": {"p": p},
            "size": 10,
            "modificationTime": 1,
            "dataChange": True,
            **extra,
        }
    }


def remove(name: str, p: str = "a") -> dict[str, Any]:
    return {"remove": {"path": f"p={p}/{name}.parquet", "deletionTimestamp": 4_000_000_000_000, "dataChange": True}}


def lines(*objects: Any) -> bytes:
    return b"".join((o if isinstance(o, bytes) else json.dumps(o).encode()) + b"\n" for o in objects)


def write(log_dir: Path, name: str, data: bytes) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / name).write_bytes(data)


def commit(log_dir: Path, version: int, *objects: Any) -> None:
    write(log_dir, f"{version:020d}.json", lines(info(version), *objects))


def base(log_dir: Path) -> None:
    """Versions 0..2: two files added, one of them removed again -> live: f1, f2."""
    commit(log_dir, 0, protocol(), metadata())
    commit(log_dir, 1, add("f0"), add("f1"))
    commit(log_dir, 2, remove("f0"), add("f2"))


def checkpoint(log_dir: Path, version: int, uri: str) -> bytes:
    """Write a real checkpoint of ``version`` with deltalog, return its bytes."""
    log = DeltaLog.for_table(uri)
    log.checkpoint(log.snapshot(version))
    return (log_dir / f"{version:020d}.checkpoint.parquet").read_bytes()


def rewrite_checkpoint(log_dir: Path, version: int, drop: str) -> None:
    """Rewrite a checkpoint without the rows of one action type."""
    path = log_dir / f"{version:020d}.checkpoint.parquet"
    table = pq.read_table(path)
    keep = pa.array([row is None for row in table.column(drop).to_pylist()])
    buffer = io.BytesIO()
    pq.write_table(table.filter(keep), buffer)
    path.write_bytes(buffer.getvalue())


# -- expectations ------------------------------------------------------------------------

Check = Callable[[DeltaLog], None]


def live(*names: str, version: int = 2) -> Check:
    def check(log: DeltaLog) -> None:
        snapshot = log.update()
        assert snapshot.version == version
        assert sorted(f.path for f in snapshot.files) == sorted(f"p=a/{n}.parquet" for n in names)
        assert snapshot.metadata.partition_columns == ("p",) or list(snapshot.metadata.partition_columns) == ["p"]

    return check


def fails(error: type[BaseException], *needles: str, action: Callable[[DeltaLog], object] | None = None) -> Check:
    def check(log: DeltaLog) -> None:
        with pytest.raises(error) as caught:
            (action or (lambda lg: lg.update().files))(log)
        assert isinstance(caught.value, DeltaError), f"untyped error {caught.value!r}"
        message = str(caught.value)
        for needle in needles:
            assert needle in message, f"{needle!r} not in {message!r}"

    return check


def error_or(check_ok: Check, *needles: str) -> Check:
    """A typed log error naming the file, or else a correct read -- never a wrong answer."""

    def check(log: DeltaLog) -> None:
        try:
            log.update().files  # noqa: B018
        except DeltaLogError as exc:
            for needle in needles:
                assert needle in str(exc)
            return
        check_ok(DeltaLog.for_table(log.table_uri))

    return check


@dataclass
class Case:
    name: str
    build: Callable[[Path, str], None]
    expect: Check
    known_bug: str = ""


CASES: list[Case] = []


def case(
    name: str, expect: Check, known_bug: str = ""
) -> Callable[[Callable[[Path, str], None]], Callable[[Path, str], None]]:
    def register(build: Callable[[Path, str], None]) -> Callable[[Path, str], None]:
        CASES.append(Case(name, build, expect, known_bug))
        return build

    return register


V1 = f"{1:020d}.json"
V2 = f"{2:020d}.json"
CP2 = f"{2:020d}.checkpoint.parquet"


@case("control: a healthy log", live("f1", "f2"))
def _healthy(d: Path, uri: str) -> None:
    base(d)


@case("malformed JSON line", fails(CorruptLogError, V1, "line 2"))
def _malformed(d: Path, uri: str) -> None:
    base(d)
    write(d, V1, lines(info(1), b'{"add": {"path": "p=a/f0.parquet", "partitionValues": '))


@case("truncated commit (cut inside the last line)", fails(CorruptLogError, V2))
def _truncated(d: Path, uri: str) -> None:
    base(d)
    data = (d / V2).read_bytes()
    (d / V2).write_bytes(data[: len(data) - 25])


@case("a line that is JSON but not an object", fails(CorruptLogError, V1, "not a JSON object"))
def _array_line(d: Path, uri: str) -> None:
    base(d)
    write(d, V1, lines(info(1), [1, 2, 3], add("f0"), add("f1")))


@case("a null line", fails(CorruptLogError, V1))
def _null_line(d: Path, uri: str) -> None:
    base(d)
    write(d, V1, lines(info(1), b"null", add("f0"), add("f1")))


@case("blank lines and CRLF line ends are fine", live("f1", "f2"))
def _blank(d: Path, uri: str) -> None:
    base(d)
    write(d, V1, lines(info(1)).replace(b"\n", b"\r\n") + b"\n\n" + lines(add("f0"), add("f1")))


@case("missing version in the middle", fails(NonContiguousVersionsError, "version 2"))
def _gap(d: Path, uri: str) -> None:
    base(d)
    (d / V2).rename(d / f"{3:020d}.json")


@case("missing first version without a checkpoint", fails(DeltaLogError, "0"))
def _no_zero(d: Path, uri: str) -> None:
    base(d)
    (d / f"{0:020d}.json").unlink()


@case("non-Delta names in _delta_log are ignored", live("f1", "f2"))
def _stray_names(d: Path, uri: str) -> None:
    base(d)
    write(d, "1.json", lines(add("bogus")))
    write(d, V2 + ".bak", lines(add("bogus")))
    write(d, f"{3:019d}.json", lines(add("bogus")))
    write(d, "notes.txt", b"hello")


@case("the same file added twice in one version (one live file)", live("f1", "f2"))
def _dup_add(d: Path, uri: str) -> None:
    base(d)
    commit(d, 1, add("f0"), add("f1"), add("f1"))


@case("remove of a file that was never added", live("f1", "f2"))
def _remove_unknown(d: Path, uri: str) -> None:
    base(d)
    commit(d, 2, remove("f0"), remove("ghost"), add("f2"))


@case("an empty commit file is a commit without actions", live("f0", "f1"))
def _empty_commit(d: Path, uri: str) -> None:
    base(d)
    (d / V2).write_bytes(b"")


@case("_delta_log with no commit at all", lambda log: _assert_no_table(log))
def _no_commits(d: Path, uri: str) -> None:
    write(d, "notes.txt", b"x")


def _assert_no_table(log: DeltaLog) -> None:
    assert log.update().version == -1
    assert not log.table_exists()


@case("empty _last_checkpoint", live("f1", "f2"))
def _empty_last(d: Path, uri: str) -> None:
    base(d)
    checkpoint(d, 2, uri)
    write(d, "_last_checkpoint", b"")


@case("corrupt _last_checkpoint", live("f1", "f2"))
def _corrupt_last(d: Path, uri: str) -> None:
    base(d)
    checkpoint(d, 2, uri)
    write(d, "_last_checkpoint", b'{"version": tw')


@case("_last_checkpoint pointing at a missing checkpoint", live("f1", "f2"))
def _dangling_last(d: Path, uri: str) -> None:
    base(d)
    write(d, "_last_checkpoint", json.dumps({"version": 7, "size": 3}).encode())


@case("_last_checkpoint with a wrong checksum", live("f1", "f2"))
def _bad_checksum(d: Path, uri: str) -> None:
    base(d)
    checkpoint(d, 1, uri)
    write(d, "_last_checkpoint", json.dumps({"version": 1, "size": 4, "checksum": "0" * 32}).encode())


@case("corrupt checkpoint Parquet", error_or(live("f1", "f2"), CP2))
def _corrupt_cp(d: Path, uri: str) -> None:
    base(d)
    checkpoint(d, 2, uri)
    (d / CP2).write_bytes(b"PAR1 this is not parquet at all PAR1")


@case("truncated checkpoint Parquet", error_or(live("f1", "f2"), CP2))
def _truncated_cp(d: Path, uri: str) -> None:
    base(d)
    data = checkpoint(d, 2, uri)
    (d / CP2).write_bytes(data[: len(data) // 2])


@case("checkpoint without metadata", fails(InvalidTableStateError, CP2, "metaData"))
def _cp_no_md(d: Path, uri: str) -> None:
    base(d)
    checkpoint(d, 2, uri)
    rewrite_checkpoint(d, 2, "metaData")
    for v in (0, 1):  # the commit of the checkpoint's version stays, as cleanup keeps it
        (d / f"{v:020d}.json").unlink()


@case("checkpoint without protocol", fails(InvalidTableStateError, CP2, "protocol"))
def _cp_no_protocol(d: Path, uri: str) -> None:
    base(d)
    checkpoint(d, 2, uri)
    rewrite_checkpoint(d, 2, "protocol")
    for v in (0, 1):  # the commit of the checkpoint's version stays, as cleanup keeps it
        (d / f"{v:020d}.json").unlink()


@case("incomplete multi-part checkpoint is ignored", live("f1", "f2"))
def _partial_multipart(d: Path, uri: str) -> None:
    base(d)
    data = checkpoint(d, 2, uri)
    (d / CP2).unlink()
    write(d, f"{2:020d}.checkpoint.0000000001.0000000002.parquet", data)


@case("commits without protocol", fails(InvalidTableStateError))
def _no_protocol(d: Path, uri: str) -> None:
    commit(d, 0, metadata())
    commit(d, 1, add("f0"))


@case("commits without metadata", fails(InvalidTableStateError))
def _no_metadata(d: Path, uri: str) -> None:
    commit(d, 0, protocol())
    commit(d, 1, add("f0"))


@case("protocol from the future (reader version 9)", fails(UnsupportedFeatureError, "9"))
def _future_reader(d: Path, uri: str) -> None:
    base(d)
    commit(d, 3, protocol(9, 9))


@case("unknown reader feature", fails(UnsupportedFeatureError, "timeTravelToTheFuture"))
def _unknown_reader_feature(d: Path, uri: str) -> None:
    base(d)
    commit(d, 3, protocol(3, 7, readerFeatures=["timeTravelToTheFuture"], writerFeatures=["timeTravelToTheFuture"]))


def _commit_something(log: DeltaLog) -> object:
    return log.start_transaction().commit([AddFile("p=a/new.parquet", {"p": "a"}, 1, 1)], Write())


def _reads_but_refuses_writes(log: DeltaLog) -> None:
    live("f1", "f2", version=3)(log)
    fails(UnsupportedFeatureError, "quantumWrites", action=_commit_something)(log)


@case("unknown writer feature: reads work, writes are refused", _reads_but_refuses_writes)
def _unknown_writer_feature(d: Path, uri: str) -> None:
    base(d)
    commit(d, 3, protocol(1, 7, writerFeatures=["quantumWrites"]))


@case("unknown action types are ignored", live("f1", "f2"))
def _unknown_action(d: Path, uri: str) -> None:
    base(d)
    commit(d, 1, {"hologram": {"path": "p=a/zzz.parquet"}}, add("f0"), add("f1"))


@case("unknown fields in known actions are ignored", live("f1", "f2"))
def _unknown_fields(d: Path, uri: str) -> None:
    commit(
        d,
        0,
        {"protocol": {**protocol()["protocol"], "futureField": [1]}},
        {"metaData": {**metadata()["metaData"], "futureField": {"x": 1}}},
    )
    commit(d, 1, add("f0", futureField=True), add("f1", anotherOne={"deep": [1, 2]}))
    commit(d, 2, {"remove": {**remove("f0")["remove"], "whatever": 1}}, add("f2"))


@case("schemaString that is not JSON", fails(InvalidSchemaError, action=lambda log: log.update().schema))
def _schema_not_json(d: Path, uri: str) -> None:
    commit(d, 0, protocol(), metadata(schema="{not json"))


@case("schemaString that is not a struct", fails(InvalidSchemaError, action=lambda log: log.update().schema))
def _schema_not_struct(d: Path, uri: str) -> None:
    commit(d, 0, protocol(), metadata(schema=json.dumps({"type": "string"})))


@case("metaData whose partitionColumns is not a list", fails(CorruptLogError, f"{0:020d}.json"))
def _partition_columns_not_list(d: Path, uri: str) -> None:
    commit(d, 0, protocol(), metadata(partitionColumns=7))


@case("partition values that do not parse as the column type", lambda log: _unparsable_partition_check(log))
def _bad_partition_value(d: Path, uri: str) -> None:
    commit(d, 0, protocol(), metadata(partition=("n",)))
    commit(
        d,
        1,
        {
            "add": {
                "path": "n=abc/f.parquet",
                "partitionValues": {"n": "abc"},
                "size": 1,
                "modificationTime": 1,
                "dataChange": True,
            }
        },
        {
            "add": {
                "path": "n=1/g.parquet",
                "partitionValues": {"n": "1"},
                "size": 1,
                "modificationTime": 1,
                "dataChange": True,
            }
        },
    )


def _unparsable_partition_check(log: DeltaLog) -> None:
    assert log.update().num_files == 2  # the log itself reads
    try:
        files = log.start_transaction().filter_files([("n", "=", 1)])
    except DeltaError:
        return  # a typed error is fine
    assert [f.path for f in files] == ["n=1/g.parquet"]  # never the unparsable one


@case("add without a path", fails(CorruptLogError, V1))
def _add_no_path(d: Path, uri: str) -> None:
    base(d)
    commit(d, 1, {"add": {"partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}})


@case("add with a size that is not a number", fails(CorruptLogError, V1))
def _add_bad_size(d: Path, uri: str) -> None:
    base(d)
    commit(d, 1, add("f0", size="ten"), add("f1"))


@case("a huge line (a 16 MiB commitInfo field)", live("f1", "f2"))
def _huge(d: Path, uri: str) -> None:
    base(d)
    big = {"commitInfo": {"timestamp": 1, "operation": "WRITE", "userMetadata": "x" * (16 << 20)}}
    write(d, V1, lines(big, add("f0"), add("f1")))


@case("invalid UTF-8", fails(CorruptLogError, V1))
def _bad_utf8(d: Path, uri: str) -> None:
    base(d)
    write(
        d,
        V1,
        lines(info(1)) + b'{"add": {"path": "p=a/\xff\xfe.parquet", "partitionValues": {"p": "a"}, '
        b'"size": 1, "modificationTime": 1, "dataChange": true}}\n' + lines(add("f0"), add("f1")),
    )


@case(
    "time travel to a version that does not exist", fails(VersionNotFoundError, "7", action=lambda log: log.snapshot(7))
)
def _time_travel(d: Path, uri: str) -> None:
    base(d)


@case("a directory named like a commit is not a commit", live("f0", "f1", version=1))
def _dir_commit(d: Path, uri: str) -> None:
    base(d)
    (d / V2).unlink()
    (d / V2).mkdir()


# -- the runner ------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(directory, name), root) + "/"] = None
        for name in files:
            path = os.path.join(directory, name)
            out[os.path.relpath(path, root)] = Path(path).read_bytes()
    return out


def test_the_corpus_is_big_enough() -> None:
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


def _params() -> list[Any]:
    # A known bug is a strict xfail: it still runs, and fails the suite once fixed, so the
    # marker must go with the fix.
    return [
        pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.known_bug)] if c.known_bug else [])
        for c in CASES
    ]


@pytest.mark.parametrize("bad", _params())
def test_bad_input(bad: Case, tmp_path: Path) -> None:
    root = tmp_path / "table"
    uri = str(root)
    bad.build(root / "_delta_log", uri)
    before = _tree(root)
    bad.expect(DeltaLog.for_table(uri))
    assert _tree(root) == before, "reading the table changed its files"
