"""DeepSpeed over MPI on upstream's `deepspeed-distributed` runtime, applied unchanged (examples/deepspeed):
a real ZeRO-3 training of a small transformer on 2 nodes (CPU ranks, gloo) writes its checkpoint to a
claim, every rank its own partition, and a second job loads it and goes on from the same weights."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from support import (
    UPSTREAM_TRAINER,
    condition,
    create,
    job_pods,
    launcher_of,
    pod_log,
    wait_finished,
    wait_for,
)

NS = "deepspeed-e2e"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deepspeed"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
LOSS = r"(\d+\.\d{6})"


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((EXAMPLE / name).read_text()) if d]


@pytest.fixture(scope="module")
def claim_dir(api: httpx.Client, kubectl: Kubectl, home: Path) -> Iterator[Path]:
    """The namespace, upstream's runtime (kubectl apply, as shipped), the program's ConfigMap and the
    example's claim, Bound: the claim's directory on this machine."""
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).status_code in (201, 409)
    kubectl("apply", "-f", str(UPSTREAM_TRAINER / "runtime_deepspeed_distributed.yaml"))
    code = {"metadata": {"name": "deepspeed-code"}, "data": {"train.py": (EXAMPLE / "train.py").read_text()}}
    r = api.post(f"/api/v1/namespaces/{NS}/configmaps", json=code)
    assert r.status_code == 201, r.text
    claim = documents("deepspeed.yaml")[0]
    pvcs = f"/api/v1/namespaces/{NS}/persistentvolumeclaims"
    r = api.post(pvcs, json=claim)
    assert r.status_code == 201, r.text
    name = claim["metadata"]["name"]

    def bound() -> dict | None:
        got = api.get(f"{pvcs}/{name}").json()
        return got if got.get("status", {}).get("phase") == "Bound" else None

    yield home / "volumes" / wait_for(bound, f"claim {name} to be Bound")["spec"]["volumeName"]
    api.delete(f"/api/v1/namespaces/{NS}")


def run(api: httpx.Client, job: dict) -> str:
    """Run the example's TrainJob to its end; its launcher's log (rank 0 prints there)."""
    name = job["metadata"]["name"]
    assert job["spec"]["runtimeRef"]["name"] == "deepspeed-distributed" and job["spec"]["trainer"]["numNodes"] == 2
    create(api, job, NS)
    done = wait_finished(api, name, NS, timeout=140)  # 20-40 s here; two of them within pytest-timeout's 300 s
    pods = job_pods(api, name, NS)
    log = pod_log(api, launcher_of(pods)["metadata"]["name"], NS)
    assert condition(done, "Complete"), (done.get("status"), log)
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]  # the launcher is one of the 2 nodes
    return log


def found(pattern: str, log: str) -> tuple[str, ...]:
    match = re.search(pattern, log, re.MULTILINE)
    assert match, f"no line matching {pattern!r} in:\n{log}"
    return match.groups()


def test_zero3_trains_checkpoints_to_a_claim_and_a_second_job_loads_it(api: httpx.Client, claim_dir: Path) -> None:
    first = run(api, documents("deepspeed.yaml")[1])
    # rank 0 on the launcher, rank 1 on the node: 2 nodes, as runLauncherAsNode makes them
    (start,) = found(r"^deepspeed: ZeRO stage 3, 2 ranks on deepspeed-launcher-0-0, deepspeed-node-0-0, accelerator cpu, "
                     rf"backend gloo, \d+ parameters, master \S+, step 0, eval loss {LOSS}$", first)
    before, after = found(rf"^deepspeed: trained steps 1-20, eval loss {LOSS} -> {LOSS} ", first)
    assert before == start and float(after) < float(before) - 1, first  # it learned: ~3.0 -> well under 2
    (saved,) = found(rf"^deepspeed: saved /checkpoints/step20 at step 20, eval loss {LOSS}$", first)
    assert saved == after

    # ZeRO-3: each rank, one per pod, wrote its own partition of the weights and optimizer state to the claim.
    assert (claim_dir / "latest").read_text().strip() == "step20"
    written = sorted(p.name for p in (claim_dir / "step20").iterdir())
    assert written == [f"zero_pp_rank_{r}_mp_rank_00_{kind}_states.pt" for r in (0, 1) for kind in ("model", "optim")]

    # The second job loads it: the same weights give the same held-out loss, and training goes on from step 20.
    second = run(api, documents("deepspeed-resume.yaml")[0])
    found(r"^deepspeed: loaded /checkpoints/step20/\S+ at step 20$", second)
    (loaded,) = found(rf"^deepspeed: ZeRO stage 3, 2 ranks on deepspeed-resume-launcher-0-0, deepspeed-resume-node-0-0, "
                      rf".* step 20, eval loss {LOSS}$", second)
    assert loaded == saved, (first, second)
    resumed, last = found(rf"^deepspeed: trained steps 21-40, eval loss {LOSS} -> {LOSS} ", second)
    assert resumed == saved and float(last) < float(saved), second
    assert (claim_dir / "latest").read_text().strip() == "step40"
