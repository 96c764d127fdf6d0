"""`mpijob history` over 100,000 job records, against a bare `sqlite3` query of the same rows.

    .venv/bin/python bench/history.py              # 100,000 records, 5 runs of each side
    .venv/bin/python bench/history.py --records 200000 --runs 10

A temporary home's history (`$MPIJOB_HOME/history.db`, `mpijob/store/history.py`) is filled with
`--records` records (50 namespaces, 200 users, submitted over the last 300 days, 3% still waiting or
running, the rest Complete, Failed with a class, or Deleted) and a server without controllers serves it.
Each measure runs one `mpijob history` command (wall time of the whole process, stdout read in full)
against the Debian `sqlite3` command asked for the same rows of the same file, alternating run by run.
Prints one JSON object; exits 0 whenever every measure ran (it never judges the figures), 1 with a
message on stderr when something failed to run. The server and the temporary home are gone before it
exits. See bench/README.md.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import sqlite3
import ssl
import statistics
import subprocess
import sys
import time
from dataclasses import astuple, fields
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import serving, temp_home

from mpijob.api import names
from mpijob.store import server_process
from mpijob.store.history import DAY, History, JobRecord

ROOT = Path(__file__).resolve().parents[1]
MPIJOB = str(ROOT / ".venv" / "bin" / "mpijob")
PYTHON = str(ROOT / ".venv" / "bin" / "python")
SQLITE = "/usr/bin/sqlite3"
NAMESPACES, USERS, SPAN_DAYS = 50, 200, 300
FAILURES = [names.FAILURE_PROGRAM, names.REASON_OOM_KILLED, names.FAILURE_NCCL, names.FAILURE_SIGNALED]
COLUMNS = ", ".join(f.name for f in fields(JobRecord))
LIMIT = 100  # mpijob history's default


def populate(path: Path, count: int, now: float) -> float:
    """`count` records, written as the server writes them (the schema from `History`), in one transaction."""
    started = time.perf_counter()
    History(path).close()
    rng = random.Random(13)
    rows = []
    for i in range(count):
        submitted = now - SPAN_DAYS * DAY * (count - i) / count
        wait, run = rng.uniform(0, 600), rng.uniform(10, 7200)
        state, reason, failure = names.COMPLETE, names.REASON_COMPLETED, ""
        if i >= count * 0.97:  # the newest 3% have not ended
            state, reason = rng.choice([names.RECORD_PENDING, names.RECORD_RUNNING]), ""
        elif rng.random() < 0.2:
            state, reason, failure = names.FAILED, names.REASON_FAILED_JOBS, rng.choice(FAILURES)
        elif rng.random() < 0.05:
            state, reason = names.RECORD_DELETED, names.REASON_DELETED
        ended = state not in (names.RECORD_PENDING, names.RECORD_RUNNING)
        gpus = rng.choice([0, 0, 2, 4, 8])
        rows.append(astuple(JobRecord(
            f"{i:08d}-0000-4000-8000-000000000000", f"team-{i % NAMESPACES}", f"job-{i}", f"user-{i % USERS}",
            "ClusterTrainingRuntime/mpi-distributed", rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4]), gpus, submitted,
            submitted + wait, submitted + wait, submitted + wait + run if ended else None, state, reason, failure,
            f"{failure}: rank 1 on node pod job-{i}-node-0-0 ... See docs/troubleshooting.md" if failure else "",
            run if ended else 0.0, None if ended else submitted + wait, run * rng.uniform(0.5, 16),
            1 << rng.randint(24, 34))))
    db = sqlite3.connect(path)
    with db:
        db.executemany(f"INSERT INTO jobs ({COLUMNS}) VALUES ({', '.join('?' * len(rows[0]))})", rows)
    db.close()
    return time.perf_counter() - started


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall time of a process until it exits with its stdout read in full; its stdout's line count."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    return elapsed, len(proc.stdout.splitlines())


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4), "max": round(max(values), 4)}


def measures(now: float) -> dict[str, tuple[list[str], str, list[str]]]:
    """name → (mpijob history's arguments, the bare query of the same rows, sqlite3's output options)."""
    newest = f"SELECT {COLUMNS} FROM jobs {{}} ORDER BY submitted DESC, rowid DESC"
    since = now - 7 * DAY
    return {
        "namespace": (["-n", "team-3"], newest.format("WHERE namespace = 'team-3'") + f" LIMIT {LIMIT}", []),
        "all_namespaces": (["-A"], newest.format("") + f" LIMIT {LIMIT}", []),
        "user": (["-A", "--user", "user-7"], newest.format("WHERE requester = 'user-7'") + f" LIMIT {LIMIT}", []),
        "since_7d": (["-A", "--since", "7d"],
                     newest.format(f"WHERE finished >= {since} OR finished IS NULL") + f" LIMIT {LIMIT}", []),
        "json": (["-A", "-o", "json"], newest.format("") + f" LIMIT {LIMIT}", ["-json"]),
        "whole_namespace": (["-n", "team-3", "--limit", "0"], newest.format("WHERE namespace = 'team-3'"), []),
    }


def server_side(info: server_process.ServerInfo, db: Path, runs: int) -> dict[str, object]:
    """In process, without start-up: one API request for the newest 100 of every namespace (the server's
    query and JSON) against the same rows from SQLite directly, 10 samples a run per side."""
    config = json.loads(info.kubeconfig.read_text())
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    path = f"/apis/{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}/{names.JOB_RECORDS}"
    samples: dict[str, list[float]] = {"ours": [], "baseline": []}
    query = f"SELECT {COLUMNS} FROM jobs ORDER BY submitted DESC, rowid DESC LIMIT {LIMIT}"
    with httpx.Client(base_url=info.url, verify=ssl.create_default_context(cadata=ca), timeout=60,
                      headers={"Authorization": f"Bearer {config['users'][0]['user']['token']}"}) as api, \
            sqlite3.connect(db) as bare:
        api.get(path, params={"limit": LIMIT}).raise_for_status()  # the connection and TLS, not timed
        for _ in range(runs * 10):
            start = time.perf_counter()
            items = api.get(path, params={"limit": LIMIT}).json()["items"]
            samples["ours"].append(time.perf_counter() - start)
            start = time.perf_counter()
            rows = bare.execute(query).fetchall()
            samples["baseline"].append(time.perf_counter() - start)
            if len(items) != len(rows):
                raise RuntimeError(f"the API gave {len(items)} records, SQLite {len(rows)} rows")
    return {"ours": _stats(samples["ours"]), "baseline": _stats(samples["baseline"]), "rows": len(rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    now = time.time()
    out: dict[str, object] = {"records": args.records, "runs": args.runs}
    try:
        with temp_home("mpijob-bench-history-") as home:
            out["populate_s"] = round(populate(home.history, args.records, now), 2)  # before the server opens it
            with serving(home, controllers=False) as info:
                out["db_bytes"] = sum(p.stat().st_size for p in home.root.glob("history.db*"))
                env = {**os.environ, "MPIJOB_HOME": str(home.root)}
                env.pop("KUBECONFIG", None)
                for argv in ([MPIJOB, "history", "-A"], [SQLITE, str(home.history), "SELECT 1"]):
                    _timed(argv, env)  # page both binaries and the server's first request in
                floor = {"python_bare": [_timed([PYTHON, "-c", "pass"], env)[0] for _ in range(args.runs)],
                         "mpijob_help": [_timed([MPIJOB, "--help"], env)[0] for _ in range(args.runs)]}
                out["startup_s"] = {k: _stats(v) for k, v in floor.items()}
                for name, (cli_args, query, sqlite_opts) in measures(now).items():
                    samples: dict[str, list[float]] = {"ours": [], "baseline": []}
                    rows: dict[str, int] = {}
                    for run in range(args.runs):
                        sides = ("ours", "baseline") if run % 2 == 0 else ("baseline", "ours")
                        for side in sides:
                            argv = [MPIJOB, "history", *cli_args] if side == "ours" else \
                                [SQLITE, *sqlite_opts, str(home.history), query]
                            elapsed, lines = _timed(argv, env)
                            samples[side].append(elapsed)
                            rows[side] = lines
                    ours, base = statistics.median(samples["ours"]), statistics.median(samples["baseline"])
                    out[name] = {"args": cli_args, "ours": _stats(samples["ours"]),
                                 "baseline": _stats(samples["baseline"]),
                                 "overhead_s": round(ours - base, 4), "output_lines": rows}
                out["server_side"] = server_side(info, home.history, args.runs)
    except Exception as exc:  # noqa: BLE001 — the bench reports and fails, never hides it
        print(f"bench/history.py: {exc}", file=sys.stderr)
        return 1
    out["cpus"] = os.cpu_count()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
