"""Kubernetes objects for a run plan: the SSH Secret, the hostfile ConfigMap and the pods (docs/parity.md).

Kept apart from `plan` so "what the job is" and "how it is written down" change independently.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from mpijob.api import names
from mpijob.api.plan import PodPlan, RunPlan


def owner_reference(trainjob: dict) -> dict:
    """The controller ownerReference every object of a TrainJob carries, so deletion cascades."""
    meta = trainjob.get("metadata") or {}
    return {
        "apiVersion": trainjob.get("apiVersion") or names.TRAINER_API_VERSION,
        "kind": trainjob.get("kind") or "TrainJob",
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _metadata(name: str, plan: RunPlan, owner: dict, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": plan.namespace, "ownerReferences": [dict(owner)]}
    if labels:
        meta["labels"] = dict(labels)
    return meta


def render_secret(plan: RunPlan, private_pem: str, public_line: str, owner: dict) -> dict:
    """Secret `<job>-mpi-ssh-auth`: immutable `kubernetes.io/ssh-auth`, as Trainer's MPI plugin builds it."""
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(names.ssh_secret_name(plan.job), plan, owner),
        "type": names.SSH_SECRET_TYPE,
        "immutable": True,
        "data": {names.SSH_PRIVATE_KEY: b64(private_pem), names.SSH_PUBLIC_KEY: b64(public_line)},
    }


def render_hostfile_configmap(plan: RunPlan, owner: dict) -> dict:
    """ConfigMap `<job>-mpi-hostfile` with key `hostfile`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(names.hostfile_configmap_name(plan.job), plan, owner),
        "data": {names.HOSTFILE_KEY: plan.hostfile},
    }


def _upsert_named(items: list[dict], extra: list[dict], key: str = "name") -> list[dict]:
    out = [i for i in items if i.get(key) not in {e[key] for e in extra}]
    return out + extra


def _volumes(plan: RunPlan, pod: PodPlan) -> tuple[list[dict], list[dict]]:
    volumes = [{
        "name": names.SSH_VOLUME,
        "secret": {
            "secretName": names.ssh_secret_name(plan.job),
            "defaultMode": names.SSH_DEFAULT_MODE,
            "items": [
                {"key": names.SSH_PRIVATE_KEY, "path": names.SSH_PRIVATE_FILE, "mode": names.SSH_PRIVATE_FILE_MODE},
                {"key": names.SSH_PUBLIC_KEY, "path": names.SSH_PUBLIC_FILE, "mode": names.SSH_PUBLIC_FILE_MODE},
                {"key": names.SSH_PUBLIC_KEY, "path": names.SSH_AUTHORIZED_KEYS, "mode": names.SSH_PUBLIC_FILE_MODE},
            ],
        },
    }]
    mounts = [{"name": names.SSH_VOLUME, "mountPath": plan.ssh_auth_mount_path}]
    if pod.is_launcher:
        volumes.append({
            "name": names.HOSTFILE_VOLUME,
            "configMap": {
                "name": names.hostfile_configmap_name(plan.job),
                "items": [{"key": names.HOSTFILE_KEY, "path": names.HOSTFILE_KEY, "mode": names.HOSTFILE_MODE}],
            },
        })
        mounts.append({"name": names.HOSTFILE_VOLUME, "mountPath": names.HOSTFILE_DIR})
    return volumes, mounts


def render_pod(plan: RunPlan, pod: PodPlan, owner: dict) -> dict:
    """The Pod object for one planned pod: the runtime's pod spec with the plan's container, volumes and
    names applied; `status.phase: Pending` until the runtime controller starts it."""
    spec = copy.deepcopy(pod.pod_spec) if pod.pod_spec else {}
    containers = spec.get("containers") or [{"name": names.CONTAINER}]
    idx = next((i for i, c in enumerate(containers) if c.get("name") == names.CONTAINER), 0)
    container = dict(containers[idx])
    volumes, mounts = _volumes(plan, pod)
    container.update({"name": container.get("name") or names.CONTAINER, "image": pod.image, "env": copy.deepcopy(pod.env)})
    for key, value in (("command", pod.command), ("args", pod.args)):
        if value:
            container[key] = list(value)
        else:
            container.pop(key, None)
    if pod.resources:
        container["resources"] = copy.deepcopy(pod.resources)
    if pod.working_dir:
        container["workingDir"] = pod.working_dir
    container["volumeMounts"] = _upsert_named(list(container.get("volumeMounts") or []), mounts)
    containers = list(containers)
    containers[idx] = container
    spec.update({
        "hostname": pod.hostname,
        "subdomain": plan.subdomain or plan.job,
        "restartPolicy": "Never",
        "containers": containers,
        "volumes": _upsert_named(list(spec.get("volumes") or []), volumes),
    })
    annotations = {**pod.annotations, names.LABEL_COMPLETION_INDEX: str(pod.pod_index)}
    meta = _metadata(pod.name, plan, owner, pod.labels)
    meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
