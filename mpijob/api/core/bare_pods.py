"""A bare pod: a Pod no job of a kind the local cluster runs owns (`kubectl run`, a Pod manifest), which the local
kubelet runs as one process tree, as it runs a job's node pod (docs/bare-pods.md). Pure: no I/O.

What a bare pod is refused at creation (`refusals`: 422, naming the field, the value and the fix) is what could
not run here, so that nothing accepted waits for ever: the support tables' verdicts on a Pod's fields
(`api/trainer/support_rules.py`: a second container, init containers, host namespaces, ...), a container with
neither command nor args (there is no image to take an entrypoint from: the machine is the image), GPUs (handed
out by Kueue's admission of jobs only), volumes in the process sandbox, and Kueue's queue-name label: Kueue's pod
integration is not served, so such a pod would wait for ever to be admitted.

`plan` is the pod as the sandbox and SCC admission take a pod: a run plan of one pod, with no ssh and no hostfile.
"""

from __future__ import annotations

import copy
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core import volumes
from mpijob.api.core.errors import Cause
from mpijob.api.kueue import owners
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import support
from mpijob.api.trainer.plan import PodPlan, RunPlan, gpu_count

DEFAULT_GRACE = 30  # seconds: a pod's terminationGracePeriodSeconds when it sets none, as kube defaults it
FINISHED = ("Succeeded", "Failed")  # a pod's terminal phases
MAX_HOSTNAME = 63  # a host name is a DNS label: kube's pod host name is the name cut to this


def is_bare(pod: Obj) -> bool:
    """Whether no job of a kind the local cluster runs owns the pod (a pod of another owner runs as bare)."""
    return owners.owner(pod) is None


def container(pod: Obj) -> Obj:
    """The container that runs: the only one a bare pod may have."""
    return ((pod.get("spec") or {}).get("containers") or [{}])[0]


def restart_policy(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("restartPolicy") or names.RESTART_ALWAYS


def finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED


def default(pod: Obj) -> None:
    """What kube-apiserver fills in on a pod and the local kubelet reads: its restart policy, its grace period
    and its ServiceAccount (the ServiceAccount admission's)."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", names.RESTART_ALWAYS)
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE)
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or names.DEFAULT_SERVICE_ACCOUNT
    spec["serviceAccountName"] = spec["serviceAccount"] = account


def refusals(pod: Obj, mode: SandboxMode) -> list[Cause]:
    """What of the pod cannot run on the local cluster, in the sandbox `mode` (see the module's docstring)."""
    out = list(support.check("Pod", pod).causes)
    spec, c = pod.get("spec") or {}, container(pod)
    if not c.get("command") and not c.get("args"):
        out.append(Cause("spec.containers[0].command", "Required value: the local cluster runs this machine's "
                         f"programs and has no image {c.get('image', '')!r} to take an entrypoint from: give the "
                         "command to run (kubectl run NAME --image=IMAGE -- sh -c '...')", "FieldValueRequired"))
    if gpus := gpu_count(c.get("resources")):
        out.append(Cause("spec.containers[0].resources", f"Forbidden: {gpus} GPU(s): the local cluster gives GPUs "
                         "out to the jobs Kueue admits only, so that a bare pod never takes one a queued job was "
                         "promised; run the program as a TrainJob", "FieldValueForbidden"))
    if mode == SandboxMode.PROCESS and volumes.has_volumes(spec):
        out.append(Cause("spec.volumes", f"Forbidden: {volumes.PROCESS_SANDBOX}", "FieldValueForbidden"))
    queue = ((pod.get("metadata") or {}).get("labels") or {}).get(names.LABEL_QUEUE_NAME)
    if queue is not None:
        out.append(Cause(f"metadata.labels[{names.LABEL_QUEUE_NAME}]", f'Forbidden: "{queue}": Kueue\'s pod '
                         "integration is not served by the local cluster, so this pod would wait for ever to be "
                         "admitted: remove the label to run it now, outside any queue, or run the program as a "
                         "TrainJob, which Kueue queues", "FieldValueForbidden"))
    return out


def deletion_grace(pod: Obj, options: Obj) -> int:
    """The seconds a DELETE gives the pod to stop before it goes (kube-apiserver's graceful deletion of a pod):
    0, it goes at once, unless it is a bare pod bound to the Node and not finished; else the request's
    `gracePeriodSeconds` (0: forced), or the pod's terminationGracePeriodSeconds."""
    spec = pod.get("spec") or {}
    if not is_bare(pod) or not spec.get("nodeName") or finished(pod):
        return 0
    asked = options.get("gracePeriodSeconds")
    grace = asked if isinstance(asked, int) and not isinstance(asked, bool) else \
        spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE)
    return max(int(grace or 0), 0)


def plan(pod: Obj) -> RunPlan:
    """The pod as a run plan of one pod (see the module's docstring); its ids are what its SCC admission wrote."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    c = container(pod)
    csc, psc = c.get("securityContext") or {}, spec.get("securityContext") or {}
    host = (spec.get("hostname") or meta["name"])[:MAX_HOSTNAME]
    one = PodPlan(
        rjob="", job_index=0, pod_index=0, name=meta["name"], hostname=host, host=host, is_launcher=False,
        in_hostfile=False, runs_sshd=False, image=c.get("image") or "", command=list(c.get("command") or []),
        args=list(c.get("args") or []), env=[dict(e) for e in c.get("env") or []], working_dir=c.get("workingDir"),
        resources=copy.deepcopy(c.get("resources") or {}), run_as_user=csc.get("runAsUser", psc.get("runAsUser")),
        run_as_group=csc.get("runAsGroup", psc.get("runAsGroup")), fs_group=psc.get("fsGroup"),
        labels=dict(meta.get("labels") or {}), annotations=dict(meta.get("annotations") or {}),
        depends_on_nodes_ready=False, pod_spec=copy.deepcopy(spec),
        scc=(meta.get("annotations") or {}).get(names.ANNOTATION_SCC, ""))
    return RunPlan(job=meta["name"], namespace=meta.get("namespace") or "default", uid=meta.get("uid") or "new",
                   num_nodes=1, node_replicas=0, slots=1, launcher_as_node=False, mpi_implementation=names.OPEN_MPI,
                   ssh_auth_mount_path="", hostfile="", pods=[one], user_env=[])


def admitted(pod: Obj, admitted_plan: RunPlan) -> None:
    """Write what SCC admission decided into the pod, as OpenShift does: the ids its container runs as (where the
    pod set none), its fsGroup and the SCC's name."""
    one = admitted_plan.pods[0]
    spec = pod["spec"]
    c = container(pod)
    csc: dict[str, Any] = c.setdefault("securityContext", {})
    csc.setdefault("runAsUser", one.run_as_user)
    if one.run_as_group is not None and one.run_as_group != one.run_as_user:
        csc.setdefault("runAsGroup", one.run_as_group)
    if one.fs_group is not None:
        spec.setdefault("securityContext", {}).setdefault("fsGroup", one.fs_group)
    if one.scc:
        pod["metadata"].setdefault("annotations", {})[names.ANNOTATION_SCC] = one.scc
