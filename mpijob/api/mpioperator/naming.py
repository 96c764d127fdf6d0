"""MPI Operator's names for an MPIJob's run: the run plan of its TrainJob form, renamed as MPI Operator
names its pods, hosts, labels, Secret and ConfigMap (`pkg/controller/mpi_job_controller.go`).

A program and `kubectl` then see what they see under MPI Operator: worker pods `<job>-worker-<i>` (their
hostname too), the launcher the pod of Job `<job>-launcher` (`<job>-launcher-<5 chars>`, hostname
`<job>-launcher`), every host known as `<hostname>.<job>.<namespace>.svc` in the hostfile (launcher first
when it is a worker), `K_MPI_JOB_ROLE` in each container, the `training.kubeflow.org/*` labels, Secret
`<job>-ssh` and ConfigMap `<job>-config`. Pure: the plan is frozen, so a new one is returned.
"""

from __future__ import annotations

import copy
import dataclasses

from mpijob.api import names
from mpijob.api.trainer.plan import PodPlan, RunPlan

# The Trainer/JobSet labels MPI Operator's pods do not carry (the Job controller's job-name stays on the launcher)
_TRAINER_LABELS = (names.LABEL_JOBSET_NAME, names.LABEL_RJOB_NAME, names.LABEL_RJOB_REPLICAS, names.LABEL_JOB_INDEX,
                   names.LABEL_JOB_GLOBAL_INDEX, names.LABEL_COMPLETION_INDEX, names.LABEL_JOB_NAME,
                   names.LABEL_ANCESTOR)


def launcher_pod_name(job: str, uid: str) -> str:
    """`<job>-launcher-<5 chars>`: the launcher Job's pod, its suffix derived from the MPIJob's uid so a
    restarted controller finds the same pod."""
    return f"{names.mpijob_launcher_hostname(job)}-{names.pod_suffix(uid, names.LAUNCHER)}"


def _labels(plan: RunPlan, pod: PodPlan) -> dict[str, str]:
    labels = {k: v for k, v in pod.labels.items() if k not in _TRAINER_LABELS}
    labels |= {names.LABEL_MPI_OPERATOR_NAME: names.MPI_OPERATOR_NAME, names.LABEL_MPI_JOB_NAME: plan.job,
               names.LABEL_MPI_JOB_ROLE: names.LAUNCHER if pod.is_launcher else names.MPI_ROLE_WORKER}
    if pod.is_launcher:
        labels[names.LABEL_JOB_NAME] = names.mpijob_launcher_hostname(plan.job)
        if plan.launcher_as_node:
            labels[names.LABEL_MPI_REPLICA_INDEX] = "0"
    else:  # with the launcher as a worker, the workers' indexes start at 1 (MPI Operator's padding)
        labels[names.LABEL_MPI_REPLICA_INDEX] = str(pod.pod_index + (1 if plan.launcher_as_node else 0))
    return labels


def _env(pod: PodPlan) -> list[dict]:
    """The pod's env without the Job controller's completion index, with MPI Operator's role variable."""
    role = names.LAUNCHER if pod.is_launcher else names.MPI_ROLE_WORKER
    kept = [e for e in pod.env if e.get("name") not in (names.ENV_COMPLETION_INDEX, names.ENV_MPI_JOB_ROLE)]
    return [*kept, {"name": names.ENV_MPI_JOB_ROLE, "value": role}]


def rename(plan: RunPlan) -> RunPlan:
    """`plan` (of the MPIJob's TrainJob form, with the MPIJob's name, namespace and uid) with MPI Operator's
    pod names, hostnames, hosts, labels and env, and its hostfile rewritten for those hosts."""
    pods, hosts = [], {}
    for pod in plan.pods:
        hostname = (names.mpijob_launcher_hostname(plan.job) if pod.is_launcher
                    else names.mpijob_worker_name(plan.job, pod.pod_index))
        name = launcher_pod_name(plan.job, plan.uid) if pod.is_launcher else hostname
        host = names.mpijob_host(hostname, plan.job, plan.namespace)
        hosts[pod.host] = (host, pod.is_launcher)
        pods.append(dataclasses.replace(pod, name=name, hostname=hostname, host=host, labels=_labels(plan, pod),
                                        env=_env(pod)))
    return dataclasses.replace(plan, pods=pods, hostfile=_hostfile(plan.hostfile, hosts), subdomain=plan.job)


def _hostfile(hostfile: str, hosts: dict[str, tuple[str, bool]]) -> str:
    """Each line's host renamed, whatever the MPI's line format (`h slots=N`, `h:N`); the launcher's line
    first, as MPI Operator writes it."""
    lines = []
    for line in hostfile.splitlines(keepends=True):
        old = next((h for h in hosts if line == h or line.startswith((f"{h} ", f"{h}:", f"{h}\n"))), None)
        new, launcher = hosts[old] if old else (None, False)
        lines.append((not launcher, new + line[len(old):] if old and new else line))
    return "".join(text for _, text in sorted(lines, key=lambda entry: entry[0]))


# -- the objects rendered for the plan (`api/trainer/render.py`), renamed -------------------------------------------

_VOLUMES = {names.SSH_VOLUME: names.MPIJOB_SSH_VOLUME, names.HOSTFILE_VOLUME: names.MPIJOB_CONFIG_VOLUME}


def secret(obj: dict, job: str) -> dict:
    """The job's SSH Secret, named `<job>-ssh`."""
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = names.mpijob_ssh_secret_name(job)
    return out


def config_map(obj: dict, job: str) -> dict:
    """The hostfile ConfigMap, named `<job>-config` (key `hostfile`)."""
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = names.mpijob_config_name(job)
    return out


def pod(obj: dict, job: str, namespace: str) -> dict:
    """A rendered pod with MPI Operator's volume names and sources, no Job completion index, and the DNS
    search path MPI Operator gives its pods (`<job>.<namespace>.svc.cluster.local`)."""
    out = copy.deepcopy(obj)
    sources = {names.ssh_secret_name(job): names.mpijob_ssh_secret_name(job),
               names.hostfile_configmap_name(job): names.mpijob_config_name(job)}
    spec = out["spec"]
    for volume in spec.get("volumes") or []:
        volume["name"] = _VOLUMES.get(volume["name"], volume["name"])
        if "secret" in volume:
            volume["secret"]["secretName"] = sources.get(volume["secret"]["secretName"], volume["secret"]["secretName"])
        if "configMap" in volume:
            volume["configMap"]["name"] = sources.get(volume["configMap"]["name"], volume["configMap"]["name"])
    for container in spec.get("containers") or []:
        for mount in container.get("volumeMounts") or []:
            mount["name"] = _VOLUMES.get(mount["name"], mount["name"])
    search = f"{job}.{namespace}.svc.cluster.local"
    dns = spec.setdefault("dnsConfig", {})
    dns["searches"] = [*(dns.get("searches") or []), search]
    (out["metadata"].get("annotations") or {}).pop(names.LABEL_COMPLETION_INDEX, None)
    return out
