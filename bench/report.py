"""Benchmark results and the report: ``REPORT.md`` (one table) and PNG charts.

The protocol between the runner (``python -m bench``) and the benchmark modules:

- a module in ``bench/`` that defines ``run(size: str) -> list[Result]`` is a benchmark;
  ``size`` is ``"small"`` (seconds, for CI) or ``"full"`` (the sizes of TARGETS.md);
- it also defines ``WORKLOADS``: the workload names its results use, so the runner can
  show a failed module's rows and the smoke test can check every row is there;
- each :class:`Result` is one workload measured for deltalog and delta-rs (and plain
  Parquet where that means something) **in the same run**; the report computes
  ``deltalog / delta-rs`` and checks it against the target.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Result", "write_report"]


@dataclass
class Result:
    """One workload, both engines.

    ``target_ratio`` is the deltalog/delta-rs ratio to reach (``<=`` when lower is better,
    ``>=`` when ``higher_is_better``); ``conditions`` are extra pass/fail checks of the
    target ("none failed": True/False).
    """

    workload: str
    unit: str
    deltalog: float | None
    delta_rs: float | None
    parquet: float | None = None
    target_ratio: float | None = None
    higher_is_better: bool = False
    target_text: str = ""
    conditions: dict[str, bool] = field(default_factory=dict)
    notes: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: What the ratio compares with: ``"delta-rs"`` (default) or ``"parquet"`` (workloads
    #: delta-rs cannot run, such as the Spark data source against ``df.write.parquet``).
    baseline: str = "delta-rs"

    @property
    def ratio(self) -> float | None:
        base = self.parquet if self.baseline == "parquet" else self.delta_rs
        if self.deltalog is None or not base:
            return None
        return self.deltalog / base

    @property
    def target(self) -> str:
        if self.target_text:
            return self.target_text
        if self.target_ratio is None:
            return ""
        return f"{'>=' if self.higher_is_better else '<='} {self.target_ratio:g}x"

    @property
    def meets_target(self) -> bool | None:
        if self.error is not None:
            return False
        checks: list[bool] = list(self.conditions.values())
        ratio = self.ratio
        if self.target_ratio is not None:
            if ratio is None:
                return False
            checks.append(ratio >= self.target_ratio if self.higher_is_better else ratio <= self.target_ratio)
        return all(checks) if checks else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ratio"] = self.ratio
        d["meets_target"] = self.meets_target
        return d


def _num(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}"


def _verdict(r: Result) -> str:
    met = r.meets_target
    if r.error is not None:
        return "error"
    if met is None:
        return ""
    return "yes" if met else "**no**"


def render_markdown(results: Sequence[Result], size: str, elapsed_s: float, charts: Sequence[str]) -> str:
    lines = [
        "# deltalog benchmark report",
        "",
        f"Size `{size}`, generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} on "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        f"{_versions()}; the whole run took {elapsed_s:.0f} s.",
        "",
        "Every row was measured for deltalog and delta-rs (and plain Parquet where it applies) in this "
        "same run, on this machine. Ratio = deltalog / delta-rs (or / plain Parquet where marked). "
        "Targets are those of TARGETS.md.",
        "",
        "| workload | deltalog | delta-rs | plain Parquet | ratio | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        if r.ratio is not None and r.baseline == "parquet":
            ratio += " (vs Parquet)"
        extra = "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in r.conditions.items())
        target = r.target + (f" ({extra})" if extra else "")
        lines.append(
            f"| {r.workload} | {_num(r.deltalog, r.unit)} | {_num(r.delta_rs, r.unit)} | "
            f"{_num(r.parquet, r.unit)} | {ratio} | {target} | {_verdict(r)} |"
        )
    notes = [(r.workload, r.notes) for r in results if r.notes]
    errors = [(r.workload, r.error) for r in results if r.error]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"- **{w}**: {n}" for w, n in notes]
    if errors:
        lines += ["", "## Errors", ""]
        lines += [f"- **{w}**: `{e}`" for w, e in errors]
    if charts:
        lines += ["", "## Charts", ""]
        lines += [f"![{os.path.splitext(c)[0]}]({c})" for c in charts]
    lines += ["", "Raw numbers: `results.json` next to this file.", ""]
    return "\n".join(lines)


def _versions() -> str:
    parts = []
    for name in ("deltalake", "pyarrow"):
        try:
            from importlib.metadata import version

            parts.append(f"{name} {version(name)}")
        except Exception:
            continue
    return (", " + ", ".join(parts)) if parts else ""


def write_charts(results: Sequence[Result], out_dir: str) -> list[str]:
    """One grouped bar chart per unit; returns the file names written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    by_unit: dict[str, list[Result]] = {}
    for r in results:
        if r.error is None and (r.deltalog is not None or r.delta_rs is not None):
            by_unit.setdefault(r.unit, []).append(r)
    written = []
    for unit, rows in by_unit.items():
        fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(rows) + 2), 4.0))
        width = 0.27
        xs = list(range(len(rows)))
        series = [("deltalog", "deltalog"), ("delta-rs", "delta_rs"), ("plain Parquet", "parquet")]
        for i, (label, attr) in enumerate(series):
            values = [getattr(r, attr) or 0.0 for r in rows]
            if not any(values):
                continue
            ax.bar([x + (i - 1) * width for x in xs], values, width, label=label)
        ax.set_xticks(xs)
        ax.set_xticklabels([r.workload for r in rows], rotation=15, ha="right", fontsize=8)
        ax.set_ylabel(unit)
        ax.set_title(f"deltalog vs delta-rs ({unit})")
        ax.legend()
        fig.tight_layout()
        safe = "".join(ch if ch.isalnum() else "_" for ch in unit).strip("_") or "values"
        name = f"chart_{safe}.png"
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)
        written.append(name)
    return written


def write_report(results: Sequence[Result], out_dir: str, size: str, elapsed_s: float) -> str:
    """Write ``REPORT.md``, ``results.json`` and the charts into ``out_dir``; the report path."""
    os.makedirs(out_dir, exist_ok=True)
    charts = write_charts(results, out_dir)
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump({"size": size, "elapsed_s": elapsed_s, "results": [r.to_dict() for r in results]}, fh, indent=2)
    path = os.path.join(out_dir, "REPORT.md")
    with open(path, "w") as fh:
        fh.write(render_markdown(results, size, elapsed_s, charts))
    return path
