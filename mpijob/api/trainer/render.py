"""Kubernetes objects for a run plan: the SSH Secret, the hostfile ConfigMap and the pods (docs/parity.md).

Kept apart from `plan` so "what the job is" and "how it is written down" change independently.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from typing import Any

from mpijob.api import names
from mpijob.api.core import tokens
from mpijob.api.trainer.plan import PodPlan, RunPlan


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
    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

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


def service_account_name(pod_spec: dict) -> str:
    """The pod's ServiceAccount: `serviceAccountName` (or the deprecated `serviceAccount`), else `default`."""
    return pod_spec.get("serviceAccountName") or pod_spec.get("serviceAccount") or names.DEFAULT_SERVICE_ACCOUNT


def automounts(pod_spec: dict, account: dict | None) -> bool:
    """Whether the pod gets its ServiceAccount's token, by kube's rule: the pod's
    `automountServiceAccountToken` when set, else its ServiceAccount's, else yes."""
    for says in (pod_spec.get("automountServiceAccountToken"), (account or {}).get("automountServiceAccountToken")):
        if says is not None:
            return bool(says)
    return True


def service_account_volume(name: str) -> dict:
    """The projected volume kube's ServiceAccount admission adds (`kube-api-access-<5>`): the bound token,
    the cluster CA from `kube-root-ca.crt` and the namespace, mode 0644."""
    return {"name": name, "projected": {
        "defaultMode": names.PROJECTED_DEFAULT_MODE,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": names.SERVICE_ACCOUNT_TOKEN_EXPIRATION,
                                     "path": names.SERVICE_ACCOUNT_TOKEN_PATH}},
            {"configMap": {"name": names.ROOT_CA_CONFIGMAP,
                           "items": [{"key": tokens.CA_FILE, "path": tokens.CA_FILE}]}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": names.SERVICE_ACCOUNT_NAMESPACE_PATH}]}},
        ],
    }}


def _suffix(seed: str) -> str:
    """Five of Kubernetes' suffix characters, derived from `seed` so a re-rendered pod is the same pod."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(names.SUFFIX_ALPHABET[b % len(names.SUFFIX_ALPHABET)] for b in digest[:5])


def _mount_service_account(spec: dict, seed: str) -> None:
    """What kube's ServiceAccount admission does to a pod that automounts: every container (init
    containers too) without a mount of its own at the token path gets the volume, read-only."""
    volumes = list(spec.get("volumes") or [])
    name = next((v["name"] for v in volumes if str(v.get("name", "")).startswith(names.SERVICE_ACCOUNT_VOLUME_PREFIX)),
                None)
    have = name is not None
    name = name or names.SERVICE_ACCOUNT_VOLUME_PREFIX + _suffix(seed)
    needed = False
    for key in ("initContainers", "containers"):
        if not spec.get(key):
            continue
        containers = []
        for c in spec[key]:
            c = dict(c)
            mounts = list(c.get("volumeMounts") or [])
            if not any(m.get("mountPath") == names.SERVICE_ACCOUNT_MOUNT_PATH for m in mounts):
                c["volumeMounts"] = [*mounts, {"mountPath": names.SERVICE_ACCOUNT_MOUNT_PATH, "name": name,
                                               "readOnly": True}]
                needed = True
            containers.append(c)
        spec[key] = containers
    if needed and not have:
        spec["volumes"] = [*volumes, service_account_volume(name)]


def render_tls_configmap(plan: RunPlan, owner: dict, ca_pem: str) -> dict:
    """ConfigMap `<job>-tls-config` with the status server's `ca.crt`, which Trainer's TrainJobStatus
    plugin copies from its webhook certificate for the job's projected volume (here: the cluster CA)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(names.trainer_tls_configmap_name(plan.job), plan, owner),
        "data": {tokens.CA_FILE: ca_pem},
    }


def _report_progress(spec: dict, plan: RunPlan, status_url: str) -> None:
    """Trainer's TrainJobStatus plugin (EnforcePodSpec): every container gets the status endpoint and
    the paths of its CA and token, upserted over its own env, and the projected volume holding them."""
    path = names.TRAINER_STATUS_MOUNT_PATH
    env = [{"name": names.ENV_TRAINER_SERVER_URL, "value": status_url},
           {"name": names.ENV_TRAINER_SERVER_CA_CERT, "value": f"{path}/{tokens.CA_FILE}"},
           {"name": names.ENV_TRAINER_SERVER_TOKEN, "value": f"{path}/{names.TRAINER_STATUS_TOKEN_FILE}"}]
    mount = {"name": names.TRAINER_STATUS_VOLUME, "mountPath": path, "readOnly": True}
    spec["containers"] = [{**c, "env": _upsert_named(list(c.get("env") or []), env),
                           "volumeMounts": _upsert_named(list(c.get("volumeMounts") or []), [mount])}
                          for c in spec.get("containers") or []]
    audience = names.trainjob_status_audience(plan.namespace, plan.job)
    volume = {"name": names.TRAINER_STATUS_VOLUME, "projected": {
        "defaultMode": names.PROJECTED_DEFAULT_MODE,
        "sources": [
            {"serviceAccountToken": {"audience": audience, "expirationSeconds": names.TRAINER_STATUS_TOKEN_EXPIRATION,
                                     "path": names.TRAINER_STATUS_TOKEN_FILE}},
            {"configMap": {"name": names.trainer_tls_configmap_name(plan.job),
                           "items": [{"key": tokens.CA_FILE, "path": tokens.CA_FILE}]}},
        ],
    }}
    spec["volumes"] = _upsert_named(list(spec.get("volumes") or []), [volume])


def render_pod(plan: RunPlan, pod: PodPlan, owner: dict, account: dict | None = None, status_url: str = "") -> dict:
    """The Pod object for one planned pod: the runtime's pod spec with the plan's container, volumes and
    names applied, its ServiceAccount (`account`, the stored object) as kube's admission sets it, and,
    given the job's `status_url`, what it needs to report progress; `status.phase: Pending` until the
    runtime controller starts it."""
    spec = copy.deepcopy(pod.pod_spec) if pod.pod_spec else {}
    containers = spec.get("containers") or [{"name": names.CONTAINER}]
    idx = next((i for i, c in enumerate(containers) if c.get("name") == names.CONTAINER), 0)
    container = dict(containers[idx])
    volumes, mounts = _volumes(plan, pod)
    container.update({"name": container.get("name") or names.CONTAINER, "image": pod.image,
                      "env": copy.deepcopy(pod.env)})
    for key, value in (("command", pod.command), ("args", pod.args)):
        if value:
            container[key] = list(value)
        else:
            container.pop(key, None)
    if pod.resources:
        container["resources"] = copy.deepcopy(pod.resources)
    if pod.working_dir:
        container["workingDir"] = pod.working_dir
    if pod.scc:  # what the SCC admission that admitted it wrote: the ids it runs as (api/openshift/scc.py)
        container["securityContext"] = {**(container.get("securityContext") or {}), "runAsUser": pod.run_as_user,
                                        "runAsGroup": pod.run_as_group}
        if pod.fs_group is not None:
            spec["securityContext"] = {**(spec.get("securityContext") or {}), "fsGroup": pod.fs_group}
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
    spec["serviceAccountName"] = spec["serviceAccount"] = service_account_name(spec)
    if status_url:
        _report_progress(spec, plan, status_url)
    if automounts(spec, account):
        _mount_service_account(spec, f"{plan.uid}/{pod.name}")
    annotations = {**pod.annotations, names.LABEL_COMPLETION_INDEX: str(pod.pod_index)}
    if pod.scc:
        annotations[names.ANNOTATION_SCC] = pod.scc
    meta = _metadata(pod.name, plan, owner, pod.labels)
    meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
