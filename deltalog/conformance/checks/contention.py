"""Put-if-absent under contention: many writers create the same file, one wins.

The thread check races 8 threads on one store object; the process check races 4
processes that each rebuild the store from ``store.spec()`` (multiprocessing "spawn",
so nothing is inherited but the spec). 20 rounds each, a fresh file per round.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.conformance.check import Check
from deltalog.conformance.checks._workers import contention_worker, marker_lines, writer_lines
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable
from deltalog.logstores.base import LogStore, MutualExclusion
from deltalog.logstores.errors import FileAlreadyExistsError
from deltalog.txn.protocol.file_names import delta_file

__all__ = ["CHECKS", "RaceTally", "race_threads"]

ROUNDS = 20
THREADS = 8
PROCESSES = 4
WAIT_SECONDS = 120.0


@dataclass
class RaceTally:
    """What the rounds of a race showed."""

    rounds: int = 0
    problems: list[str] = field(default_factory=list)
    several_winners: int = 0

    def judge(self, round_no: int, outcomes: Sequence[str], content: list[str] | None) -> None:
        """Record one round: ``outcomes[i]`` is ``won``, ``lost`` or ``error: ...``."""
        self.rounds += 1
        winners = [i for i, outcome in enumerate(outcomes) if outcome == "won"]
        errors = [f"writer {i}: {o[len('error: ') :]}" for i, o in enumerate(outcomes) if o.startswith("error")]
        if errors:
            self.problems.append(f"round {round_no}: unexpected errors ({'; '.join(errors[:2])})")
        if len(winners) > 1:
            self.several_winners += 1
            self.problems.append(f"round {round_no}: {len(winners)} writers all succeeded")
        elif not winners and not errors:
            self.problems.append(f"round {round_no}: every writer was refused, none created the file")
        if len(winners) == 1 and content is not None:
            expected = writer_lines(winners[0], round_no)
            if content != expected:
                owner = content[0] if content else "nothing"
                self.problems.append(
                    f"round {round_no}: writer {winners[0]} won but the file holds {owner!r}"
                    + ("" if len(content) == len(expected) else f" ({len(content)} lines)")
                )

    def summary(self, writers: int, kind: str) -> str:
        if not self.problems:
            return f"{self.rounds} rounds x {writers} {kind}: exactly one winner per round, winner's content intact"
        shown = "; ".join(self.problems[:3])
        more = f" (+{len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        return f"{len(self.problems)} problems in {self.rounds} rounds x {writers} {kind}: {shown}{more}"


def race_threads(store: LogStore, uri: str, round_no: int, writers: int, tally: RaceTally) -> None:
    """``writers`` threads write ``uri`` with ``overwrite=False`` at the same moment."""
    barrier = threading.Barrier(writers)
    outcomes = ["error: did not run"] * writers

    def attempt(index: int) -> None:
        try:
            barrier.wait(timeout=WAIT_SECONDS)
            store.write(uri, writer_lines(index, round_no), overwrite=False)
            outcomes[index] = "won"
        except FileAlreadyExistsError:
            outcomes[index] = "lost"
        except Exception as exc:
            outcomes[index] = f"error: {type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=attempt, args=(i,), daemon=True) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS)
    tally.judge(round_no, outcomes, _read_or_none(store, uri))


def _read_or_none(store: LogStore, uri: str) -> list[str] | None:
    try:
        return list(store.read(uri))
    except FileNotFoundError:
        return None


def _needs_lock(store: LogStore, tally: RaceTally, writers: int, kind: str) -> NotApplicable:
    observed = tally.summary(writers, kind)
    return NotApplicable(
        "the store declares MutualExclusion.NONE: it needs a commit lock (redis://... for many "
        f"writers, or an explicit single-writer opt-in); observed: {observed}"
    )


def put_if_absent_threads(ctx: CheckContext) -> str:
    tally = RaceTally()
    for round_no in range(ROUNDS):
        race_threads(ctx.store, ctx.uri(delta_file(round_no)), round_no, THREADS, tally)
    if ctx.store.semantics.mutual_exclusion is MutualExclusion.NONE:
        raise _needs_lock(ctx.store, tally, THREADS, "threads")
    if tally.problems:
        raise CheckFailed(tally.summary(THREADS, "threads"))
    return tally.summary(THREADS, "threads")


def put_if_absent_processes(ctx: CheckContext) -> str:
    store = ctx.store
    spec = store.spec()
    marker = ctx.uri("marker.json")
    store.write(marker, marker_lines())
    uris = [ctx.uri(delta_file(round_no)) for round_no in range(ROUNDS)]

    mp = multiprocessing.get_context("spawn")
    barrier = mp.Barrier(PROCESSES)
    go = mp.Event()
    proceed = mp.Value("b", 0)
    results = mp.Queue()
    workers = [
        mp.Process(
            target=contention_worker,
            args=(spec, marker, uris, index, barrier, go, proceed, results, WAIT_SECONDS),
            daemon=True,
        )
        for index in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    try:
        probes: dict[int, str] = {}
        outcomes: dict[int, list[str]] = {r: ["error: no report"] * PROCESSES for r in range(ROUNDS)}
        while len(probes) < PROCESSES:
            index, round_no, outcome = _next(results, workers)
            if round_no < 0:
                probes[index] = outcome
        failed_probes = [f"process {i}: {o}" for i, o in sorted(probes.items()) if o not in ("visible", "isolated")]
        if failed_probes:
            go.set()
            raise CheckFailed("a process could not use a store rebuilt from spec(): " + "; ".join(failed_probes))
        isolated = [i for i, o in probes.items() if o == "isolated"]
        if isolated:
            go.set()
            if len(isolated) == PROCESSES:
                raise NotApplicable(
                    "the store's state is per process: a file written here is not visible to a "
                    "process that rebuilt the store from spec() (as memory:// is by design); "
                    "put_if_absent_threads covers mutual exclusion within one process. If this "
                    "store is meant to be shared, its spec() loses configuration."
                )
            raise CheckFailed(f"processes {isolated} did not see a file the others saw")
        with proceed.get_lock():
            proceed.value = 1
        go.set()
        expected = ROUNDS * PROCESSES
        for _ in range(expected):
            index, round_no, outcome = _next(results, workers)
            if round_no >= 0:
                outcomes[round_no][index] = outcome
        tally = RaceTally()
        for round_no, uri in enumerate(uris):
            tally.judge(round_no, outcomes[round_no], _read_or_none(store, uri))
    finally:
        for worker in workers:
            worker.join(10)
            if worker.is_alive():
                worker.terminate()
                worker.join(5)
        results.close()
    if store.semantics.mutual_exclusion is MutualExclusion.NONE:
        raise _needs_lock(store, tally, PROCESSES, "processes")
    if tally.problems:
        raise CheckFailed(tally.summary(PROCESSES, "processes"))
    return tally.summary(PROCESSES, "processes") + " (stores rebuilt from spec())"


def _next(results: Any, workers: Sequence[Any]) -> tuple[int, int, str]:
    """The next report of a writer process; fails fast when they all died."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            index, round_no, outcome = results.get(timeout=0.5)
            return int(index), int(round_no), str(outcome)
        except queue.Empty:
            if not any(worker.is_alive() for worker in workers):
                try:
                    index, round_no, outcome = results.get(timeout=1.0)
                    return int(index), int(round_no), str(outcome)
                except queue.Empty:
                    codes = [worker.exitcode for worker in workers]
                    raise CheckFailed(
                        f"the writer processes exited (codes {codes}) without reporting; under the "
                        "'spawn' start method the main module must be importable and guarded by "
                        "if __name__ == '__main__'"
                    ) from None
    raise CheckFailed(f"the writer processes stopped reporting for {WAIT_SECONDS:.0f}s")


CHECKS = (
    Check(
        "put_if_absent_threads",
        "8 threads create the same file 20 times: exactly one wins each time, its content intact",
        put_if_absent_threads,
    ),
    Check(
        "put_if_absent_processes",
        "4 processes (stores rebuilt from spec()) create the same file 20 times: exactly one wins",
        put_if_absent_processes,
    ),
)
