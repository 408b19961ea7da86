"""No function longer than a screen in the engine and the Spark layer (issue #12): a
function over ``MAX_LINES`` lines, its signature and docstring included, is split into
named steps instead."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("deltalog/txn", "deltalog/contrib/spark")
MAX_LINES = 60


def _long_functions(directory: Path, root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted(directory.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_longer_than_a_screen() -> None:
    assert [f for d in CHECKED for f in _long_functions(ROOT / d)] == []


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\ndef short():\n    return 1\n")
    assert _long_functions(tmp_path, tmp_path) == [f"m.py:1 long ({MAX_LINES + 1} lines)"]
