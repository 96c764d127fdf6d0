"""Trainer's TrainJobStatus plugin, as the local kubelet carries it out: where a job's pods report their
progress and the files the upstream SDK's `update_trainjob_status()` reads to do so.

Upstream the plugin gives the trainer containers `KUBEFLOW_TRAINER_SERVER_URL` (the controller's status
server), `KUBEFLOW_TRAINER_SERVER_CA_CERT` and `KUBEFLOW_TRAINER_SERVER_TOKEN` (paths in a projected
volume at `/var/run/secrets/kubeflow/trainer`: the server's CA, and a ServiceAccount token for the job's
own audience that the kubelet rotates). Here the status server is the API server itself
(`mpijob.server.routes.progress`), reached as a pod reaches it for anything else: the `kubernetes`
Service's address in the job's own network (`network.py`), the server's own address in the process
sandbox, whose files stay in the pod's directory (the variables name them there). The token is bound to
its pod and lasts as long, as a rotated one would. Every pod of the job gets all three, so a rank on any
node can report (upstream: only the trainer step's, MPI's launcher; docs/parity.md).
"""

from __future__ import annotations

from pathlib import Path

from mpijob.api import names
from mpijob.api.core import tokens
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer.plan import PodPlan, RunPlan
from mpijob.controllers.kubelet.network import SERVICE_IP, SERVICE_PORT
from mpijob.controllers.kubelet.sandbox import JobFiles


def api_address(mode: SandboxMode, api_server: tuple[str, int] | None) -> tuple[str, int] | None:
    """Where a pod reaches the API server: the `kubernetes` Service in its own network, or (process
    sandbox) the server's own address; None without a server."""
    if api_server is None:
        return None
    return api_server if mode == SandboxMode.PROCESS else (SERVICE_IP, SERVICE_PORT)


def status_url(address: tuple[str, int] | None, plan: RunPlan) -> str:
    """The job's status endpoint at `address`; "" when pods cannot reach a server."""
    if address is None:
        return ""
    host, port = address
    return f"https://{host}:{port}{names.trainjob_status_path(plan.namespace, plan.job)}"


def env(url: str, files: JobFiles, pod: PodPlan) -> dict[str, str]:
    """The plugin's three variables for `pod` (none without a `url`): the files at Trainer's mount path,
    or where they are in the process sandbox."""
    if not url:
        return {}
    process = files.mode == SandboxMode.PROCESS
    where = files.trainer_status_dir(pod) if process else Path(names.TRAINER_STATUS_MOUNT_PATH)
    return {names.ENV_TRAINER_SERVER_URL: url,
            names.ENV_TRAINER_SERVER_CA_CERT: str(where / tokens.CA_FILE),
            names.ENV_TRAINER_SERVER_TOKEN: str(where / names.TRAINER_STATUS_TOKEN_FILE)}
