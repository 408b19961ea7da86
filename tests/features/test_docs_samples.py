"""The samples of docs/features.md "Type widening", "Liquid clustering" and "UniForm" run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "features.md"


def _section(title: str) -> list[str]:
    text = PAGE.read_text()
    body = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```", body, re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize(
    "title", ["Type widening", "Liquid clustering", "UniForm (IcebergCompat) and materialized partition columns"]
)
def test_section_samples_run(title: str) -> None:
    blocks = _section(title)
    assert blocks
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, f"features.md ({title})", "exec"), namespace)
