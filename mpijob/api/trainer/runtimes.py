"""MPI training runtimes: the one the local cluster installs (`mpi-distributed`) and the admission rules
and CRD defaults for (Cluster)TrainingRuntimes.

`mpi-distributed` has the shape of upstream's `deepspeed-distributed`, so the Kubeflow SDK and programs
written for Trainer see the same names, paths and labels; the image is recorded, not pulled. Unlike
upstream's it names no `runAsUser` or `fsGroup` (upstream's 1000): as a runtime must on OpenShift, it lets
its pods run as their namespace's UIDs (`api/openshift/scc.py`).
"""

from __future__ import annotations

from typing import Any

from mpijob.api import names
from mpijob.api.core.errors import Cause
from mpijob.api.core.structural import show
from mpijob.api.trainer import mpi_impl
from mpijob.api.trainer.trainjob import quantity_causes

BUNDLED_NAME = "mpi-distributed"
BUNDLED_IMAGE = "ghcr.io/kubeflow/trainer/mpi-runtime"
SSH_PORT = 2222
POLICIES = ("torch", "mpi", "jax", "xgboost", "flux")


def _container(command: list[str] | None = None, args: list[str] | None = None, sshd: bool = False) -> dict:
    c: dict[str, Any] = {"name": names.CONTAINER, "image": BUNDLED_IMAGE}
    if command:
        c["command"] = command
    if args:
        c["args"] = args
    if sshd:
        c["ports"] = [{"containerPort": SSH_PORT, "name": "ssh", "protocol": "TCP"}]
        c["readinessProbe"] = {"tcpSocket": {"port": SSH_PORT}, "initialDelaySeconds": 1, "periodSeconds": 1}
    return c


def _rjob(name: str, container: dict, labels: dict[str, str] | None = None, depends: bool = False) -> dict:
    rj: dict[str, Any] = {"name": name, "template": {"spec": {"template": {"spec": {"containers": [container]}}}}}
    if labels:
        rj["template"]["metadata"] = {"labels": labels}
    if depends:
        rj["dependsOn"] = [{"name": names.NODE, "status": "Ready"}]
    return rj


def bundled() -> list[dict]:
    """The ClusterTrainingRuntimes the server installs on first start (fresh copies each call)."""
    return [{
        "apiVersion": names.TRAINER_API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": BUNDLED_NAME, "labels": {names.LABEL_FRAMEWORK: "mpi"}},
        "spec": {
            "mlPolicy": {
                "numNodes": 1,
                "mpi": {
                    "mpiImplementation": names.OPEN_MPI,
                    "numProcPerNode": 1,
                    "runLauncherAsNode": True,
                    "sshAuthMountPath": "/home/mpiuser/.ssh",
                },
            },
            "template": {"spec": {
                "network": {"publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": [names.LAUNCHER]},
                "replicatedJobs": [
                    # node first: hostfile order puts rank 0 on node-0-0, as upstream
                    _rjob(names.NODE, _container(["/usr/sbin/sshd"], ["-De", "-p", str(SSH_PORT)], sshd=True)),
                    _rjob(names.LAUNCHER, _container(), {names.LABEL_ANCESTOR: names.ANCESTOR_TRAINER}, depends=True),
                ],
            }},
        },
    }]


def default(obj: dict) -> dict:
    """The CRD defaults of `mlPolicy.mpi` (in place; returns obj)."""
    mpi = ((obj.get("spec") or {}).get("mlPolicy") or {}).get("mpi")
    if isinstance(mpi, dict):
        if not mpi.get("mpiImplementation"):
            mpi["mpiImplementation"] = names.OPEN_MPI
        mpi.setdefault("numProcPerNode", 1)
        mpi.setdefault("runLauncherAsNode", False)
        mpi.setdefault("sshAuthMountPath", names.DEFAULT_SSH_AUTH_MOUNT_PATH)
    return obj


def causes(obj: dict) -> list[Cause]:
    """Semantic problems of a structurally valid, defaulted (Cluster)TrainingRuntime."""
    out: list[Cause] = []
    spec = obj.get("spec") or {}
    ml = spec.get("mlPolicy") or {}
    chosen = [p for p in POLICIES if p in ml]
    if len(chosen) > 1:
        out.append(Cause("spec.mlPolicy", f"Invalid value: {', '.join(chosen)}: only one of the policies can be "
                                          "configured; keep one"))
    if ml.get("numNodes") is not None and ml["numNodes"] < 1:
        out.append(Cause("spec.mlPolicy.numNodes", f"Invalid value: {ml['numNodes']}: must be at least 1"))
    rjobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    rjob_names = [rj.get("name") for rj in rjobs]
    for i, name in enumerate(rjob_names):
        if name in rjob_names[:i]:
            out.append(Cause(f"spec.template.spec.replicatedJobs[{i}].name",
                             f'Duplicate value: "{name}": replicatedJob names must be unique', "FieldValueDuplicate"))
        for j, dep in enumerate(rjobs[i].get("dependsOn") or []):
            if dep.get("name") not in rjob_names[:i]:
                out.append(Cause(f"spec.template.spec.replicatedJobs[{i}].dependsOn[{j}].name",
                                 f"Invalid value: {show(dep.get('name'))}: must name a replicatedJob listed "
                                 f"before {name!r}"))
        pod_spec = ((rjobs[i].get("template") or {}).get("spec") or {}).get("template", {}).get("spec") or {}
        for k, c in enumerate(pod_spec.get("containers") or []):
            out += quantity_causes(c.get("resources"),
                                   f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec"
                                   f".containers[{k}].resources")
    mpi = ml.get("mpi")
    if isinstance(mpi, dict):
        out += mpi_impl.causes(obj)  # OpenMPI in the spec, the annotation naming one we run
        if mpi.get("numProcPerNode", 1) < 1:
            out.append(Cause("spec.mlPolicy.mpi.numProcPerNode",
                             f"Invalid value: {mpi['numProcPerNode']}: NumProcPerNode in mpiPolicy must be >= 1"))
        if names.LAUNCHER not in rjob_names:
            out.append(Cause("spec.template.spec.replicatedJobs",
                             'Required value: an MPI runtime needs a replicatedJob named "launcher" (it runs '
                             "mpirun); add one", "FieldValueRequired"))
        if names.NODE not in rjob_names and not mpi.get("runLauncherAsNode"):
            out.append(Cause("spec.template.spec.replicatedJobs",
                             'Required value: an MPI runtime needs a replicatedJob named "node" (its pods are the '
                             "MPI hosts) unless runLauncherAsNode is true; add one", "FieldValueRequired"))
    return out
