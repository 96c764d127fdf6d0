"""A rank reports its job's progress with the upstream Kubeflow SDK's own `update_trainjob_status()`,
and a plain `curl` does the same, exactly as on a cluster with Trainer's TrainJobStatus feature: the pods
get `KUBEFLOW_TRAINER_SERVER_URL`, `_CA_CERT` and `_TOKEN` (a token for the job's own audience, which
opens nothing else), and what they send is the TrainJob's `status.trainerStatus`, shown by `mpijob get`
(PROGRESS, ETA), `mpijob describe` and the SDK.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import httpx
from mpijob import AsyncClient, Client, Progress
from mpijob.cli.main import app
from typer.testing import CliRunner

from support import condition, create, get_trainjob, job_pods, launcher_of, pod_log, trainjob, wait_finished, wait_for

JOB = "progress"
PATH = "/var/run/secrets/kubeflow/trainer"
# rank 0 (on node-0-0, not the launcher) reports 40 % with 10 minutes left, then 100 % once the test saw it
RANKS = '''
import os, time
from kubeflow.trainer import update_trainjob_status
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
print("rank", rank, os.environ["KUBEFLOW_TRAINER_SERVER_URL"], os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"], flush=True)
if rank == 0:
    print("reported", update_trainjob_status(progress_percent=40, estimated_remaining_seconds=600,
                                             metrics={"loss": 0.25, "step": 40}), flush=True)
    for _ in range(1200):  # until the test has seen it (at most 2 minutes)
        if os.path.exists(os.environ["SEEN"]):
            break
        time.sleep(0.1)
    time.sleep(5)  # the SDK sends at most one report per 5 s
    print("reported", update_trainjob_status(progress_percent=100, estimated_remaining_seconds=0), flush=True)
'''
CURL = ('curl -sS -o /dev/null -w "curl %{http_code}\\n" --cacert "$KUBEFLOW_TRAINER_SERVER_CA_CERT" '
        '-H "Authorization: Bearer $(cat "$KUBEFLOW_TRAINER_SERVER_TOKEN")" -H "Content-Type: application/json" ')
REPORT = ('{"trainerStatus": {"progressPercentage": 100, "metrics": [{"name": "loss", "value": "0.1"}], '
          '"lastUpdatedTime": "2026-11-20T12:00:00Z"}}')
SCRIPT = "\n".join([
    f"mpirun python -c {shlex.quote(RANKS)}",
    CURL + f"-d {shlex.quote(REPORT)} \"$KUBEFLOW_TRAINER_SERVER_URL\"",
    CURL + '"https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/version"',  # the token is not the API's
])


def _cli(server: Any, *args: str) -> str:
    r = CliRunner().invoke(app, list(args), env={"MPIJOB_HOME": str(server.home), "KUBECONFIG": None})
    assert r.exit_code == 0, r.output
    return r.stdout


def test_a_rank_reports_progress_with_the_upstream_sdk_and_curl(api: httpx.Client, server: Any) -> None:
    where = Path(tempfile.mkdtemp(dir="/tmp"))  # the pods run as their namespace's user: they can look in here
    where.chmod(0o755)
    seen = where / "seen"
    create(api, trainjob(JOB, ["bash", "-c", SCRIPT], num_nodes=2, env={"SEEN": str(seen)}))

    def reported() -> dict[str, Any] | None:
        status = (get_trainjob(api, JOB).get("status") or {}).get("trainerStatus")
        return status if status and status.get("progressPercentage") == 40 else None

    status = wait_for(reported, "rank 0's first report", timeout=120)
    assert status["estimatedRemainingSeconds"] == 600
    assert status["metrics"] == [{"name": "loss", "value": "0.25"}, {"name": "step", "value": "40"}]
    row = next(line.split() for line in _cli(server, "get", "trainjobs").splitlines() if line.startswith(f"{JOB} "))
    assert row[3] == "40%" and (row[4] == "10m" or row[4].startswith("9m")), row  # counted down since the report
    described = _cli(server, "describe", "trainjob", JOB)
    assert "Progress:         40%, ETA " in described and "  Metrics:        loss=0.25, step=40" in described
    with Client(kubeconfig=str(server.kubeconfig)) as sdk:
        progress = sdk.progress(JOB)
    assert isinstance(progress, Progress) and (progress.percentage, progress.remaining_seconds) == (40, 600)
    assert progress.metrics == {"loss": "0.25", "step": "40"}

    async def from_async() -> Progress | None:
        async with AsyncClient(kubeconfig=str(server.kubeconfig)) as sdk:
            return await sdk.progress(JOB)

    assert asyncio.run(from_async()) == progress
    seen.touch()
    seen.chmod(0o644)

    done = wait_finished(api, JOB)
    log = pod_log(api, launcher_of(job_pods(api, JOB))["metadata"]["name"])
    assert condition(done, "Complete") is not None, (done["status"], log)
    url = f"https://10.96.0.1:443/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{JOB}/status"
    assert f"rank 0 {url} {PATH}/token" in log and f"rank 1 {url} {PATH}/token" in log, log  # both pods
    assert log.count("reported True") == 2, log
    assert "curl 200" in log and "curl 401" in log, log  # the report, then the API refusing the token
    # the last report wins, whole: curl's
    assert done["status"]["trainerStatus"] == {"progressPercentage": 100, "metrics": [{"name": "loss", "value": "0.1"}],
                                               "lastUpdatedTime": "2026-11-20T12:00:00Z"}
    row = next(line.split() for line in _cli(server, "get", "trainjobs").splitlines() if line.startswith(f"{JOB} "))
    assert row[1:5] == ["Succeeded", "2", "100%", "-"], row
    shutil.rmtree(where)


def test_the_pods_carry_trainers_injection(api: httpx.Client) -> None:
    """What Trainer's TrainJobStatus plugin adds to a pod spec, and the ConfigMap it makes."""
    pods = job_pods(api, JOB)
    assert len(pods) == 2
    audience = f"trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{JOB}/status"
    for pod in pods:
        spec = pod["spec"]
        (container,) = spec["containers"]
        env = {e["name"]: e["value"] for e in container["env"] if e["name"].startswith("KUBEFLOW_TRAINER_")}
        assert env == {"KUBEFLOW_TRAINER_SERVER_URL": f"https://10.96.0.1:443/apis/{audience}",
                       "KUBEFLOW_TRAINER_SERVER_CA_CERT": f"{PATH}/ca.crt",
                       "KUBEFLOW_TRAINER_SERVER_TOKEN": f"{PATH}/token"}
        assert {"name": "kubeflow-trainer-token", "mountPath": PATH, "readOnly": True} in container["volumeMounts"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == "kubeflow-trainer-token"]
        assert volume["projected"]["sources"] == [
            {"serviceAccountToken": {"audience": audience, "expirationSeconds": 3600, "path": "token"}},
            {"configMap": {"name": f"{JOB}-tls-config", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]
    cm = api.get(f"/api/v1/namespaces/default/configmaps/{JOB}-tls-config").json()
    assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    assert cm["metadata"]["ownerReferences"][0]["name"] == JOB
