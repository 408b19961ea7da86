"""The package's layers (docs/architecture.md) checked on every import in ``deltalog/``:

    durations → logstores → txn/protocol → txn/log → txn/commit → txn (DeltaLog) → txn/commands
    → contrib, conformance, cli

An import may go down or stay in its layer, never up, whether it runs at module level,
inside a function or only for type checking. And no import cycle between modules: an import
inside a function counts (it is only a cycle hidden until run time); one made only for type
checking does not. ``deltalog`` and ``deltalog.errors`` are the public façades, importable
from anywhere: they import the layers lazily, by name. A name with a leading underscore is
its module's own: no other module imports it (make it public in its home module instead).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "deltalog"

#: (module prefix, layer); the longest matching prefix decides.
LAYERS = [
    ("deltalog.durations", 0),  # the one duration parser, used by stores and engine alike
    ("deltalog.logstores", 1),
    ("deltalog.txn.protocol", 2),
    ("deltalog.txn.log", 3),
    ("deltalog.txn.commit", 4),
    ("deltalog.txn", 5),  # the package itself and deltalog.txn.delta_log, the entry point
    ("deltalog.txn.commands", 6),
    ("deltalog.contrib", 7),
    ("deltalog.conformance", 7),
    ("deltalog.cli", 7),
    ("deltalog.cli_commands", 7),
]
FACADES = {"deltalog", "deltalog.errors"}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    type_checking_only: bool
    #: the name imported from ``target`` (``from target import name``); "" for the module itself
    name: str = ""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The deltalog module an imported name lives in (``a.b.c`` may be module ``a.b``'s ``c``)."""
    while name.startswith("deltalog"):
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST, type_checking: bool) -> Iterator[Import]:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, True)
            for child in node.orelse:
                yield from visit(child, type_checking)
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            names = [f"{base}.{alias.name}" for alias in node.names] or [base]
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                attribute = name[len(target) + 1 :]
                yield Import(module, target, getattr(node, "lineno", 0), type_checking, attribute)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, type_checking)

    yield from visit(tree, False)


def _all_imports() -> list[Import]:
    modules = _modules()
    return [imp for module, path in modules.items() for imp in _imports(module, path, modules)]


def _layer(module: str) -> int:
    matches = [(len(prefix), layer) for prefix, layer in LAYERS if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} is in no layer: add it to LAYERS and to docs/architecture.md"
    return max(matches)[1]


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        if module not in FACADES:
            _layer(module)


def test_no_import_goes_up_a_layer() -> None:
    upward = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in _all_imports()
        if imp.source not in FACADES and imp.target not in FACADES and _layer(imp.target) > _layer(imp.source)
    ]
    assert upward == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges.get(node, ())):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycles() -> None:
    edges: dict[str, set[str]] = {}
    for imp in _all_imports():
        if not imp.type_checking_only and imp.source not in FACADES and imp.target not in FACADES:
            edges.setdefault(imp.source, set()).add(imp.target)
    assert _cycles(edges) == []


def _private_imports(imports: list[Import]) -> list[str]:
    """Imports of another module's private name (``from deltalog.x import _name``)."""
    return [
        f"{imp.source}:{imp.line} imports {imp.name} from {imp.target}"
        for imp in imports
        if imp.name.startswith("_") and not imp.name.startswith("__")
    ]


def test_no_module_imports_another_modules_private_names() -> None:
    assert _private_imports(_all_imports()) == []


#: parameter names that hold the engine's objects in the layers above ``txn``
ENGINE_OBJECTS = {"txn", "delta_log", "snapshot", "operation", "metadata"}


def _untyped_engine_objects(path: Path) -> list[str]:
    """Parameters named for an engine object (``txn``, ``snapshot``...) annotated ``Any``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if arg.arg in ENGINE_OBJECTS and annotation in ("Any", "Any | None"):
                    found.append(f"{path.name}:{node.lineno} {node.name}({arg.arg}: {annotation})")
    return found


def test_the_spark_layer_names_the_engines_types() -> None:
    """The boundary between contrib/spark and txn is typed (issue #12): a transaction is an
    ``OptimisticTransaction``, a snapshot a ``Snapshot``, never ``Any``."""
    spark = PACKAGE / "contrib" / "spark"
    assert [f for path in sorted(spark.glob("*.py")) for f in _untyped_engine_objects(path)] == []


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """The checker itself: an upward import, a cycle and a private import are found."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    found = _private_imports([Import("a", "b", 3, False, "_hidden"), Import("a", "b", 4, False, "shown")])
    assert found == ["a:3 imports _hidden from b"]
    module = tmp_path / "m.py"
    module.write_text("def f(txn: Any, snapshot: Snapshot, other: Any) -> None: ...\n")
    assert _untyped_engine_objects(module) == ["m.py:1 f(txn: Any)"]

    assert _layer("deltalog.txn.log.snapshot") < _layer("deltalog.txn.commit.transaction")
    assert _layer("deltalog.txn.delta_log") < _layer("deltalog.txn.commands.vacuum")
