"""What the runner's watchdog (mpijob/controllers/trainer/watchdog.py) costs: one look at a job's process
tree — an "mpirun" with `--ranks` ranks below it, each with a child — against the bare baseline of listing
the same processes' stat files, and the process sandbox's scan of /proc for orphans against a bare
`ps -e`. A job is looked at once a second (`POLL`), orphans every `ORPHAN_SCAN` seconds, so the share of
one core is the look's time per second.

    .venv/bin/python bench/watchdog.py [--ranks N] [--runs N]

Prints one JSON object (see bench/README.md). Never asserts on the figures: exit 0 whenever every measure
ran, exit 1 with a message on stderr when something failed to run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mpijob.api.trainer.bounds import Bounds
from mpijob.controllers.trainer.procfs import marked, tree
from mpijob.controllers.trainer.watchdog import ORPHAN_SCAN, POLL, Pod, Tracker, Watchdog

RANKS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")


def _timed(what: Callable[[], object], runs: int) -> float:
    """Median seconds of `runs` calls."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        what()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _stat_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "mpirun"
        lines = ["#!/bin/sh"] + [f"OMPI_COMM_WORLD_RANK={r} OMPI_COMM_WORLD_SIZE={args.ranks} sh -c 'sleep 60 & wait' &"
                                 for r in range(args.ranks)] + ["wait"]
        script.write_text("\n".join(lines) + "\n")
        script.chmod(0o755)
        proc = subprocess.Popen([str(script)], start_new_session=True)
        try:
            dog = Watchdog([Pod("p", (proc.pid,), None, launcher=True)], RANKS, Path(tmp) / "log", Tracker(Bounds(), 0))
            deadline = time.monotonic() + 30
            while len(dog.look(0).ranks) < args.ranks:
                if time.monotonic() > deadline:
                    print(f"the {args.ranks} ranks did not start within 30 s", file=sys.stderr)
                    return 1
                time.sleep(0.05)
            pids = tree([proc.pid])
            look = _timed(lambda: dog.look(0), args.runs)
            bare = _timed(lambda: _stat_all(pids), args.runs)
            scan = _timed(lambda: marked({(("MPIJOB_POD", "none/none"),): "none"}, orphans=True),
                          max(args.runs // 4, 3))
            ps = _timed(lambda: subprocess.run(["ps", "-e"], capture_output=True, check=True), max(args.runs // 4, 3))
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    machine = sum(1 for e in os.listdir("/proc") if e.isdigit())
    print(json.dumps({
        "processes_in_job": len(pids), "processes_on_machine": machine, "runs": args.runs,
        "look_ms": round(look * 1000, 2), "bare_stat_ms": round(bare * 1000, 2), "look_vs_bare": round(look / bare, 1),
        "look_share_of_a_core": round(look / POLL, 4),
        "orphan_scan_ms": round(scan * 1000, 2), "bare_ps_ms": round(ps * 1000, 2),
        "orphan_scan_share_of_a_core": round(scan / ORPHAN_SCAN, 4),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
