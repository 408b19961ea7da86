"""The documentation site builds with ``mkdocs build --strict`` and its Python samples run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: Pages whose ```python blocks are executed, in order, one namespace per page.
EXECUTED_PAGES = ("index.md", "concepts.md", "operations.md", "transactions.md", "features.md")
#: Pages that must be in the site's navigation.
REQUIRED_PAGES = (
    "index.md",
    "concepts.md",
    "configuration.md",
    "operations.md",
    "benchmarks.md",
    "writing-a-backend.md",
    "locks.md",
    "spark.md",
    "features.md",
    "reliability.md",
    "backends.md",
    "transactions.md",
    "log.md",
    "conformance.md",
)

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(page: str) -> list[str]:
    return _BLOCK.findall((DOCS / page).read_text())


def test_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    command = [str(mkdocs)] if mkdocs.exists() else [sys.executable, "-m", "mkdocs"]
    proc = subprocess.run(
        [*command, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in REQUIRED_PAGES:
        name = page.removesuffix(".md")
        built = tmp_path / "site" / ("index.html" if name == "index" else f"{name}/index.html")
        assert built.exists(), f"{page} is not in the built site"
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in REQUIRED_PAGES:
        assert page in nav, f"{page} is missing from the nav of mkdocs.yml"


@pytest.mark.parametrize("page", EXECUTED_PAGES)
def test_python_samples_run(page: str, tmp_path: Path) -> None:
    blocks = python_blocks(page)
    assert blocks, f"{page} has no python samples"
    script = "\n\n".join(f"# --- block {i} of {page}\n{b}" for i, b in enumerate(blocks, 1))
    path = tmp_path / "sample.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, f"a sample of {page} failed:\n{proc.stderr[-4000:]}"


def test_every_sample_block_is_closed() -> None:
    for page in EXECUTED_PAGES:
        text = (DOCS / page).read_text()
        assert text.count("```python") == len(python_blocks(page)), page
