"""Helpers for the Spark tests."""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd


def rows(df: Any, order: list[str]) -> pd.DataFrame:
    """A DataFrame's rows as pandas, sorted, index reset (for equality checks)."""
    pdf = pd.DataFrame([r.asDict() for r in df.collect()], columns=df.columns)
    return pdf.sort_values(order).reset_index(drop=True)


def delta_rs_rows(path: str, order: list[str]) -> pd.DataFrame:
    """The table as delta-rs reads it."""
    import deltalake

    pdf = deltalake.DeltaTable(path).to_pyarrow_table().to_pandas()
    return pdf.sort_values(order).reset_index(drop=True)


def commits(path: str) -> list[list[dict[str, Any]]]:
    log_dir = os.path.join(path, "_delta_log")
    out = []
    for name in sorted(n for n in os.listdir(log_dir) if n.endswith(".json") and not n.startswith("_")):
        with open(os.path.join(log_dir, name), encoding="utf-8") as f:
            out.append([json.loads(line) for line in f if line.strip()])
    return out


def operations(path: str) -> list[str]:
    return [next(a["commitInfo"]["operation"] for a in c if "commitInfo" in a) for c in commits(path)]
