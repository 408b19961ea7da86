"""One model per concept (issue #12): table properties are read only through
``TableProperties`` and ``_delta_log`` file names are built only by ``file_names``.

Each guard scans the package's source, so a second parser of ``delta.*`` keys or a second
``%020d`` formatter fails the suite the day it is written.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from deltalog.txn.commit.operations import Write
from deltalog.txn.protocol import file_names
from deltalog.txn.protocol.properties import TableProperties
from tests.txn.test_transaction import add, commit_lines, create, new_log

PACKAGE = Path(__file__).resolve().parent.parent.parent / "deltalog"
PROPERTIES = PACKAGE / "txn" / "protocol" / "properties.py"
FILE_NAMES = PACKAGE / "txn" / "protocol" / "file_names.py"


def _sources(skip: Path) -> Iterator[tuple[str, ast.AST]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != skip:
            yield str(path.relative_to(PACKAGE.parent)), ast.parse(path.read_text(), str(path))


def _property_keys() -> set[str]:
    """Every ``delta.*`` key the properties module knows (its string constants; ``delta.``
    alone is the namespace, which names no property)."""
    tree = ast.parse(PROPERTIES.read_text())
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("delta.")
        and node.value != "delta."
    }


def _allowed_constants(tree: ast.AST) -> set[int]:
    """Constants that only *name* a property: a write (``conf[KEY] = v``), a key of a dict
    display (building a configuration) or an entry of a list/tuple/set display."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            allowed.add(id(node.slice))
        elif isinstance(node, ast.Dict):
            allowed.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            allowed.update(id(e) for e in node.elts)
    return allowed


def property_reads(tree: ast.AST, keys: set[str]) -> list[int]:
    """Lines where code uses a known property key (or the ``delta.constraints.`` prefix) as a
    value: a ``.get(KEY)``, ``conf[KEY]``, ``KEY in conf``, ``startswith(KEY)``, ``key = KEY``."""
    allowed = _allowed_constants(tree)
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.value in keys or node.value == "delta.constraints.")
            and id(node) not in allowed
        ):
            lines.append(node.lineno)
    return sorted(lines)


def _spec_text(node: ast.expr | None) -> str:
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    return ""


def padded_versions(tree: ast.AST) -> list[int]:
    """Lines that zero-pad a version the way log file names do: ``f"{v:020d}"``,
    ``"%020d" % v``, ``format(v, "020d")`` or ``str(v).zfill(20)``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and "020d" in _spec_text(node.format_spec):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and "%020d" in str(node.left.value)
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            consts = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if (name == "format" and any("020d" in str(c) for c in consts)) or (name == "zfill" and 20 in consts):
                lines.append(node.lineno)
    return sorted(lines)


def test_only_the_properties_module_reads_delta_properties() -> None:
    keys = _property_keys()
    assert {"delta.appendOnly", "delta.enableInCommitTimestamps", "delta.logRetentionDuration"} <= keys
    found = [f"{name}:{line}" for name, tree in _sources(PROPERTIES) for line in property_reads(tree, keys)]
    assert found == [], "read table properties through snapshot.properties / TableProperties"


def test_only_file_names_formats_log_file_names() -> None:
    found = [f"{name}:{line}" for name, tree in _sources(FILE_NAMES) for line in padded_versions(tree)]
    assert found == [], "build _delta_log file names with deltalog.txn.protocol.file_names"


def test_the_guards_catch_what_they_are_for() -> None:
    keys = {"delta.appendOnly"}
    read = ast.parse(
        'a = conf.get("delta.appendOnly", "")\n'
        'b = conf["delta.appendOnly"]\n'
        'c = "delta.appendOnly" in conf\n'
        'k = "delta.appendOnly"\n'
        'd = any(x.startswith("delta.constraints.") for x in conf)\n'
    )
    assert property_reads(read, keys) == [1, 2, 3, 4, 5]
    named = ast.parse(
        'conf["delta.appendOnly"] = "true"\nnew = {"delta.appendOnly": "true"}\nKNOWN = ("delta.appendOnly",)\n'
    )
    assert property_reads(named, keys) == []
    padded = ast.parse(
        'a = f"{v:020d}.json"\nb = "%020d.crc" % v\nc = format(v, "020d")\nd = str(v).zfill(20)\ne = f"{v:010d}"\n'
    )
    assert padded_versions(padded) == [1, 2, 3, 4]


def test_the_preview_in_commit_timestamp_key_is_honoured_by_every_reader() -> None:
    """Delta 3.2 wrote ``delta.enableInCommitTimestamps-preview``. History already read it as
    "in-commit timestamps on" while the commit ignored it: commits then carried no
    ``inCommitTimestamp`` and the snapshot's timestamp was the file's modification time."""
    props = TableProperties(
        {
            "delta.enableInCommitTimestamps-preview": "true",
            "delta.inCommitTimestampEnablementVersion-preview": "3",
            "delta.inCommitTimestampEnablementTimestamp-preview": "1700000000000",
        }
    )
    assert props.enable_in_commit_timestamps
    assert (props.in_commit_timestamp_enablement_version, props.in_commit_timestamp_enablement_timestamp) == (
        3,
        1700000000000,
    )
    # the current name wins over the old one, as in Delta's DeltaConfig.fromMapOption
    both = {"delta.enableChangeDataFeed": "false", "delta.enableChangeDataCapture": "true"}
    assert not TableProperties(both).enable_change_data_feed

    log = new_log()
    create(log, **{"delta.enableInCommitTimestamps-preview": "true"})
    version = log.start_transaction().commit([add("f")], Write())
    stamp = commit_lines(log, version)[0]["commitInfo"].get("inCommitTimestamp")
    assert isinstance(stamp, int)
    assert log.update().timestamp == stamp


def test_file_names_are_deltas() -> None:
    """The names of Delta's FileNames, and each is recognised as its version's."""
    names = [
        file_names.delta_file(42),
        file_names.checksum_file(42),
        file_names.checkpoint_file_singular(42),
        *file_names.checkpoint_file_with_parts(42, 2),
        file_names.v2_checkpoint_file(42, "json", "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"),
    ]
    assert names == [
        "00000000000000000042.json",
        "00000000000000000042.crc",
        "00000000000000000042.checkpoint.parquet",
        "00000000000000000042.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000042.checkpoint.0000000002.0000000002.parquet",
        "00000000000000000042.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json",
    ]
    assert {file_names.file_version(n) for n in names} == {42}
    assert file_names.file_version("_last_checkpoint") is None
    assert file_names.log_path("s3://b/t/_delta_log/", names[0]) == "s3://b/t/_delta_log/00000000000000000042.json"
