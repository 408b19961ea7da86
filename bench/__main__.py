"""Run every benchmark in ``bench/`` and write the report.

    python -m bench [--size small|full] [--out DIR] [--only NAME ...] [--shared-jvm]

Discovers the modules of this package that define ``run(size) -> list[Result]`` (see
``bench/report.py`` for the protocol), runs them one after another (each measures deltalog,
delta-rs and, where it applies, plain Parquet in the same run) and writes
``REPORT.md``, ``results.json`` and PNG charts to ``DIR`` (``bench/results`` by default).
A module that fails shows as an error row for each of its workloads, and the command then
exits with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
import time
import traceback
from types import ModuleType

from bench.report import Result, write_report

HERE = os.path.dirname(os.path.abspath(__file__))
NOT_BENCHMARKS = {"__main__", "report", "common"}


def discover(only: list[str] | None = None) -> list[ModuleType]:
    """The benchmark modules, in name order (``only`` limits them by module name)."""
    modules = []
    for info in sorted(pkgutil.iter_modules([HERE]), key=lambda i: i.name):
        if info.name in NOT_BENCHMARKS or info.name.startswith("_"):
            continue
        if only and info.name not in only:
            continue
        module = importlib.import_module(f"bench.{info.name}")
        if callable(getattr(module, "run", None)):
            modules.append(module)
    return modules


def workload_names(module: ModuleType, size: str) -> list[str]:
    """The rows a module reports: ``workloads(size)`` if it has one, else ``WORKLOADS``."""
    if callable(getattr(module, "workloads", None)):
        return list(module.workloads(size))
    return list(getattr(module, "WORKLOADS", (module.__name__.rsplit(".", 1)[-1],)))


def run_all(size: str, modules: list[ModuleType]) -> tuple[list[Result], bool]:
    results: list[Result] = []
    ok = True
    for module in modules:
        name = module.__name__.rsplit(".", 1)[-1]
        print(f"[bench] {name} ({size}) ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            produced = list(module.run(size))
        except Exception as exc:
            ok = False
            traceback.print_exc()
            message = f"{type(exc).__name__}: {exc}"
            workloads = workload_names(module, size)
            produced = [Result(w, "", None, None, error=message) for w in workloads]
        print(f"[bench] {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
        results.extend(produced)
    return results, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", choices=("small", "full"), default="small")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="output directory")
    parser.add_argument("--only", nargs="+", metavar="MODULE", help="run only these bench modules")
    parser.add_argument(
        "--shared-jvm",
        action="store_true",
        help="run the Spark scripts in this process, sharing one JVM (faster; for smoke runs, not measurements)",
    )
    args = parser.parse_args(argv)
    if args.shared_jvm:
        from bench.common import SHARED_JVM_ENV

        os.environ[SHARED_JVM_ENV] = "1"
        # the JVM (started by the first script) gives its Python workers this environment
        root = os.path.dirname(HERE)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    logging.basicConfig(level=logging.WARNING)
    modules = discover(args.only)
    if not modules:
        print("no benchmark modules found", file=sys.stderr)
        return 1
    start = time.perf_counter()
    results, ok = run_all(args.size, modules)
    path = write_report(results, args.out, args.size, time.perf_counter() - start)
    print(f"[bench] report: {path}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
