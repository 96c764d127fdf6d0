"""`mpijob debug stacks` on a 16-rank job: the server's collect + merge, against reading the same 16 ranks by hand
with the same tools, in the same run.

    .venv/bin/python bench/stacks.py [--runs N] [--nodes 4] [--procs 4]

One TrainJob of NODES pods × PROCS ranks (mpi4py: the last rank sleeps in a Python function, the others wait in
`comm.Barrier()`), on a temporary local cluster. Sides alternate run by run:

* **ours** — `POST .../stacks` (what `mpijob debug stacks` sends): the server finds the ranks, reads each with
  py-spy and eu-stack, all at once, merges them and answers; `request_s` is the client's clock, `server_s`
  what the answer says the collection took.
* **py_spy_sequential** — `py-spy dump --pid P` for the same ranks, one after another: what a person does by hand
  (Python frames only).
* **py_spy_parallel** — the same 16 `py-spy dump`s at once.
* **same_tools_parallel** — per rank `py-spy dump --json` then `eu-stack -1 -m` (the native calls below its
  Python frames), all ranks at once: the tools' own work in our collection, without finding the ranks, merging
  or HTTP.

Prints one JSON object (bench/README.md). Never judges the figures: exit 0 whenever every side ran, 1 with a
message on stderr when something failed to run. The job, its pods and the server are gone before it exits.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster
from startup import TRAINJOBS, BenchError, parse_runs
from surfaces import NAMESPACE, ROOT, alternate, create, delete_all, ready_client, recorded, stats

from mpijob.client.debug import stacks_path

JOB = "stacks"
PY_SPY = str(ROOT / ".venv" / "bin" / "py-spy")
SETTLE_S = 240.0  # for 16 ranks on a small machine to start and reach the barrier
PROGRAM = '''
import time
from mpi4py import MPI


def read_batch():
    time.sleep(3600)


comm = MPI.COMM_WORLD
if comm.Get_rank() == comm.Get_size() - 1:
    read_batch()
comm.Barrier()
'''


def settled(http: Any, ranks: int) -> dict[str, Any]:
    """The first answer that holds every rank, in two groups (the sleeper alone, the others together)."""
    deadline, last = time.perf_counter() + SETTLE_S, ""
    while time.perf_counter() < deadline:
        r = http.post(stacks_path(NAMESPACE, JOB))
        last = r.text[:2000]
        if r.status_code == 409 and "it has ended" in r.text:
            raise BenchError(f"the job ended: {http.get(f'{TRAINJOBS}/{JOB}').text[-2000:]}")
        if r.status_code == 200 and r.json()["ranks"] == ranks and len(r.json()["groups"]) == 2:
            return dict(r.json())
        time.sleep(1.0)
    raise BenchError(f"the job's {ranks} ranks were not all in place within {SETTLE_S:.0f}s; last answer: {last}")


def rank_pids(program: Path) -> list[int]:
    """The ranks' own processes (not the rank agents above them), found through /proc by their program."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if comm.startswith("python") and str(program).encode() in argv:
            pids.append(int(entry.name))
    return sorted(pids)


def timed(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def run_all(commands: list[list[list[str]]]) -> None:
    """Each inner list in order (one rank's tools), all the lists at once; every tool must succeed."""
    procs: list[tuple[subprocess.Popen[bytes], list[list[str]]]] = []
    for chain in commands:
        procs.append((subprocess.Popen(chain[0], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), chain[1:]))
    while procs:
        proc, rest = procs.pop(0)
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise BenchError(f"{proc.args!r} exited {proc.returncode}: {err.decode(errors='replace')[-500:]}")
        if rest:
            procs.append((subprocess.Popen(rest[0], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), rest[1:]))


def sequential(commands: list[list[str]]) -> None:
    for command in commands:
        run_all([[command]])


def bench(runs: int, nodes: int, procs: int) -> dict[str, Any]:
    eu_stack = shutil.which("eu-stack")
    if eu_stack is None:
        raise BenchError("eu-stack is not installed: Debian's elfutils (make setup installs it)")
    ranks = nodes * procs
    with (tempfile.TemporaryDirectory(prefix="bench-stacks-") as tmp, temp_cluster("bench-stacks-") as (_, info),
          ready_client(info.kubeconfig) as http):
        where = Path(tmp)
        where.chmod(0o755)  # the pods run as their namespace's user
        program = where / "prog.py"
        program.write_text(PROGRAM)
        program.chmod(0o644)
        create(http, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                      "metadata": {"name": JOB, "namespace": NAMESPACE},
                      "spec": {"runtimeRef": {"name": "mpi-distributed"},
                               "trainer": {"numNodes": nodes, "numProcPerNode": procs,
                                           "command": ["mpirun", "python", str(program)]}}})
        try:
            first = settled(http, ranks)
            pids = rank_pids(program)
            if len(pids) != ranks:
                raise BenchError(f"found {len(pids)} rank processes of {program}, not {ranks}: {pids}")
            ours: list[dict[str, Any]] = []

            def ask() -> dict[str, Any]:
                start = time.perf_counter()
                r = http.post(stacks_path(NAMESPACE, JOB))
                if r.status_code != 200:
                    raise BenchError(f"POST stacks answered {r.status_code}: {r.text[:1000]}")
                return {"request_s": time.perf_counter() - start, "server_s": r.json()["seconds"],
                        "groups": len(r.json()["groups"]), "errors": len(r.json()["errors"])}

            spy = [[PY_SPY, "dump", "--pid", str(p)] for p in pids]
            both = [[[PY_SPY, "dump", "--json", "--pid", str(p)], [eu_stack, "-1", "-m", "-p", str(p)]]
                    for p in pids]
            samples = alternate(runs, {
                "ours": recorded(ask, ours, lambda o: float(o["request_s"])),
                "py_spy_sequential": lambda: timed(lambda: sequential(spy)),
                "py_spy_parallel": lambda: timed(lambda: run_all([[c] for c in spy])),
                "same_tools_parallel": lambda: timed(lambda: run_all(both)),
            })
        finally:
            delete_all(http, [JOB])
    median = {side: statistics.median(values) for side, values in samples.items()}
    return {
        "ranks": ranks, "nodes": nodes, "procs_per_node": procs, "runs": runs,
        "first_answer": {"groups": [g["title"] for g in first["groups"]], "errors": first["errors"]},
        "ours": {"request_s": stats(samples["ours"]), "server_s": stats([o["server_s"] for o in ours]),
                 "groups": [o["groups"] for o in ours], "errors": [o["errors"] for o in ours]},
        **{side: {"wall_s": stats(values)} for side, values in samples.items() if side != "ours"},
        "ratios": {f"ours_to_{side}": round(median["ours"] / median[side], 2) for side in median if side != "ours"},
        "samples_s": {side: [round(v, 3) for v in values] for side, values in samples.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--procs", type=int, default=4, help="ranks per node pod")
    runs = parse_runs(argv, __doc__, parser)
    if runs is None:
        return 1
    args = parser.parse_args(argv)
    try:
        result = bench(runs, args.nodes, args.procs)
    except (BenchError, subprocess.SubprocessError, OSError) as e:
        print(f"bench/stacks.py: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
