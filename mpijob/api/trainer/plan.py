"""Resolution of a TrainJob against its MPI runtime into a run plan: the pods, hosts, env and slots.

This is the local twin of Trainer's runtime framework (jobset builder + MPI plugin): it decides
everything a controller needs to start the launcher and nodes, so the controllers hold no Trainer
semantics themselves. Pure: no I/O (the key generator is random but touches no files).
"""

from __future__ import annotations

import copy
import posixpath
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mpijob.api import names
from mpijob.api.core.errors import Cause, invalid
from mpijob.api.core.quantity import quantity_value
from mpijob.api.trainer import mpi_impl, patches
from mpijob.api.trainer.patches import dig


@dataclass(frozen=True)
class PodPlan:
    rjob: str  # "node" | "launcher"
    job_index: int  # always 0: Trainer supports one Job per replicatedJob
    pod_index: int
    name: str  # f"{job}-{rjob}-{job_index}-{pod_index}-{suffix5}", suffix from uid (idempotent)
    hostname: str  # f"{job}-{rjob}-{job_index}-{pod_index}"
    host: str  # hostfile/DNS name f"{hostname}.{subdomain}"
    is_launcher: bool
    in_hostfile: bool  # node pods always; the launcher when runLauncherAsNode
    runs_sshd: bool  # the container command is sshd (node pods of MPI runtimes)
    image: str
    command: list[str]  # launcher: trainer.command overrides the runtime's; [] = image default
    args: list[str]
    env: list[dict]  # runtime env, trainer.env (upserted), launcher MPI env, JOB_COMPLETION_INDEX
    working_dir: str | None
    resources: dict  # container resources after trainer.resourcesPerNode
    run_as_user: int | None
    run_as_group: int | None
    fs_group: int | None  # the pod's securityContext.fsGroup: a supplementary group of its processes
    labels: dict[str, str]
    annotations: dict[str, str]  # the pod template's own, as the Job controller copies them to its pods
    depends_on_nodes_ready: bool  # launcher `dependsOn: node Ready`
    # The runtime's pod spec (deep copy) so render_pod keeps what the plan does not model
    # (ports, probes, volumes, nodeSelector, ...). Not part of equality.
    pod_spec: dict = field(default_factory=dict, compare=False, repr=False)
    # The SCC that admitted the pod (`api/openshift/scc.py`), which then wrote the ids above as it runs with them;
    # "" for a plan not yet admitted, whose ids are the runtime's as given.
    scc: str = ""


@dataclass(frozen=True)
class RunPlan:
    job: str
    namespace: str
    uid: str
    num_nodes: int  # TrainJob-level numNodes (trainer.numNodes, else mlPolicy.numNodes, else 1)
    node_replicas: int  # runLauncherAsNode → max(numNodes-1, 1), else numNodes
    slots: int  # the slots rule of docs/parity.md ("What an MPI program sees")
    launcher_as_node: bool
    mpi_implementation: str  # the annotation's (api/trainer/mpi_impl.py), default OpenMPI
    ssh_auth_mount_path: str
    hostfile: str  # one line per host in the runtime's replicatedJob order, in the implementation's format
    pods: list[PodPlan]  # node pods first (index order), then the launcher
    user_env: list[dict]  # trainer.env as given
    subdomain: str = ""  # JobSet network.subdomain, default the job name


def plan_from_dict(d: dict) -> RunPlan:
    """A plan from `dataclasses.asdict` of one (a run's record, read back by a restarted server);
    TypeError when the record is of another version's fields."""
    return RunPlan(**{**d, "pods": [PodPlan(**p) for p in d["pods"]]})


def _upsert_env(env: list[dict], extra: list[dict]) -> list[dict]:
    """Trainer's UpsertEnvVars: a name already present is replaced in place, new names are appended."""
    out = [dict(e) for e in env]
    index = {e.get("name"): i for i, e in enumerate(out)}
    for e in extra:
        if e.get("name") in index:
            out[index[e["name"]]] = dict(e)
        else:
            index[e.get("name")] = len(out)
            out.append(dict(e))
    return out


def merge_resources(base: dict, override: dict) -> dict:
    """Strategic merge of ResourceRequirements: limits/requests per key, claims by name."""
    out = copy.deepcopy(base or {})
    for key in ("limits", "requests"):
        if override.get(key):
            out[key] = {**(out.get(key) or {}), **override[key]}
    if override.get("claims"):
        claims = {c.get("name"): c for c in out.get("claims") or []}
        for c in override["claims"]:
            claims[c.get("name")] = c
        out["claims"] = list(claims.values())
    return out


def gpu_count(resources: dict | None) -> int:
    """GPUs per node: requests first, else limits; any resource whose name contains "gpu" (Trainer's rule)."""

    def count(rl: dict | None) -> int:
        for name, q in (rl or {}).items():
            if "gpu" in name.lower():
                return quantity_value(q)
        return 0

    if not resources:
        return 0
    return count(resources.get("requests")) or count(resources.get("limits"))


def _container(pod_spec: dict) -> dict:
    containers = pod_spec.get("containers") or []
    for c in containers:
        if c.get("name") == names.CONTAINER:
            return c
    return containers[0] if containers else {}


def _refuse(job: str, fld: str, message: str) -> Exception:
    return invalid("TrainJob", job, [Cause(fld, message)], names.TRAINER_GROUP)


def _runtime_resources_per_node(rjobs: list[dict]) -> dict | None:
    """Trainer's ExtractResourcePerNodeFromRuntime: the first node/trainer-step `node` container with resources."""
    for rj in rjobs:
        ancestor = dig(rj, "template", "metadata", "labels", names.LABEL_ANCESTOR)
        if rj.get("name") == names.NODE or ancestor == names.ANCESTOR_TRAINER:
            for c in dig(rj, "template", "spec", "template", "spec", "containers") or []:
                if c.get("name") == names.CONTAINER and c.get("resources") is not None:
                    return c["resources"]
    return None


def size(trainjob: dict, runtime: dict) -> tuple[int, int]:
    """How many pods the job's plan would have, and how many ranks each: `resolve`'s counts, without making
    the pods (a job too big for the machine is refused before any is made)."""
    runtime = patches.apply(trainjob, runtime)
    ml = dig(runtime, "spec", "mlPolicy") or {}
    rjobs = dig(runtime, "spec", "template", "spec", "replicatedJobs") or []
    _, node_replicas, slots = _size(dig(trainjob, "spec", "trainer") or {}, ml, ml.get("mpi") or {}, rjobs)
    return node_replicas + 1, slots


def _size(trainer: dict, ml: dict, mpi: dict, rjobs: list[dict]) -> tuple[int, int, int]:
    """numNodes, the node pods (besides the launcher) and the slots of each."""
    num_nodes = int(trainer.get("numNodes") or ml.get("numNodes") or 1)
    node_replicas = 0  # a launcher-only runtime: the launcher is the single host (Trainer allows it for numNodes 1)
    if any(rj.get("name") == names.NODE for rj in rjobs):
        node_replicas = max(num_nodes - 1, 1) if mpi.get("runLauncherAsNode", False) else num_nodes
    # slots: trainer.numProcPerNode, else the runtime's, widened to the GPU count when that is 1
    runtime_procs = int(mpi.get("numProcPerNode") or 1)
    if trainer.get("numProcPerNode") is not None:
        return num_nodes, node_replicas, int(trainer["numProcPerNode"])
    gpus = gpu_count(trainer.get("resourcesPerNode") or _runtime_resources_per_node(rjobs)) if runtime_procs == 1 else 0
    if gpus > 1:
        return num_nodes, node_replicas, gpus
    return num_nodes, node_replicas, runtime_procs


def resolve(trainjob: dict, runtime: dict) -> RunPlan:
    """The run plan for `trainjob` on MPI `runtime`, following Trainer's MPI plugin (docs/parity.md).

    Raises a 422 ApiError if the runtime cannot run here (no `mlPolicy.mpi`, no launcher).
    """
    runtime = patches.apply(trainjob, runtime)  # the TrainJob's spec.runtimePatches, as Trainer merges them
    meta = trainjob.get("metadata") or {}
    job = meta.get("name", "")
    namespace = meta.get("namespace") or "default"
    uid = meta.get("uid") or ""
    trainer = dig(trainjob, "spec", "trainer") or {}
    ml = dig(runtime, "spec", "mlPolicy") or {}
    mpi = ml.get("mpi")
    runtime_name = dig(runtime, "metadata", "name") or ""
    if mpi is None:
        raise _refuse(job, "spec.runtimeRef.name",
                      f'Invalid value: "{runtime_name}": mpijob local cluster runs MPI runtimes only '
                      "(the runtime has no spec.mlPolicy.mpi); pick an MPI runtime such as mpi-distributed")
    rjobs: list[dict] = dig(runtime, "spec", "template", "spec", "replicatedJobs") or []
    by_name = {rj.get("name"): rj for rj in rjobs}
    if names.LAUNCHER not in by_name:
        raise _refuse(job, "spec.runtimeRef.name",
                      f'Invalid value: "{runtime_name}": the runtime has no "launcher" replicatedJob to run mpirun')

    launcher_as_node = bool(mpi.get("runLauncherAsNode", False))
    impl = mpi_impl.of_runtime(runtime)  # the annotation's MPI: hostfile format, launcher variables
    mount = mpi.get("sshAuthMountPath") or names.DEFAULT_SSH_AUTH_MOUNT_PATH
    num_nodes, node_replicas, slots = _size(trainer, ml, mpi, rjobs)

    subdomain = dig(runtime, "spec", "template", "spec", "network", "subdomain") or job
    user_env = [dict(e) for e in trainer.get("env") or []]
    counts = {names.NODE: node_replicas, names.LAUNCHER: 1}

    launcher_env = impl.launcher_env(slots)

    pods_by_rjob: dict[str, list[PodPlan]] = {}
    hostfile_lines: list[str] = []
    for rj in rjobs:
        name = rj.get("name")
        if name not in counts:
            continue  # initializers and other steps are not run by the local cluster
        is_launcher = name == names.LAUNCHER
        job_labels = dig(rj, "template", "metadata", "labels") or {}
        is_trainer_step = job_labels.get(names.LABEL_ANCESTOR) == names.ANCESTOR_TRAINER
        pod_template = dig(rj, "template", "spec", "template") or {}
        pod_spec = copy.deepcopy(pod_template.get("spec") or {})
        c = _container(pod_spec)
        receives_trainer = is_trainer_step or (launcher_as_node and name == names.NODE)

        image = c.get("image") or ""
        command = list(c.get("command") or [])
        args = list(c.get("args") or [])
        if is_trainer_step:
            image = trainer.get("image") or image
            if trainer.get("command") is not None:
                command = list(trainer["command"])
            if trainer.get("args") is not None:
                args = list(trainer["args"])
        env = [dict(e) for e in c.get("env") or []]
        resources = copy.deepcopy(c.get("resources") or {})
        if receives_trainer:
            env = _upsert_env(env, user_env)
            if trainer.get("resourcesPerNode"):
                resources = merge_resources(resources, trainer["resourcesPerNode"])
        if is_launcher:
            env = _upsert_env(env, launcher_env)

        csc = c.get("securityContext") or {}
        psc = pod_spec.get("securityContext") or {}
        run_as_user = csc.get("runAsUser", psc.get("runAsUser"))
        run_as_group = csc.get("runAsGroup", psc.get("runAsGroup"))
        depends = any(d.get("name") == names.NODE and d.get("status") == "Ready" for d in rj.get("dependsOn") or [])
        argv = command or args  # with no command, an image's entrypoint runs the args (MPI Operator's Intel images)
        runs_sshd = bool(argv) and posixpath.basename(argv[0]) == "sshd"
        in_hostfile = (not is_launcher) or launcher_as_node
        replicas = rj.get("replicas", 1)

        plans = []
        for idx in range(counts[name]):
            labels = dict((pod_template.get("metadata") or {}).get("labels") or {})
            if names.LABEL_ANCESTOR in job_labels:
                labels[names.LABEL_ANCESTOR] = job_labels[names.LABEL_ANCESTOR]
            labels.update({
                names.LABEL_JOBSET_NAME: job,
                names.LABEL_RJOB_NAME: name,
                names.LABEL_RJOB_REPLICAS: str(replicas),
                names.LABEL_JOB_INDEX: "0",
                names.LABEL_JOB_GLOBAL_INDEX: "0",
                names.LABEL_COMPLETION_INDEX: str(idx),
                names.LABEL_JOB_NAME: f"{job}-{name}-0",
            })
            plans.append(PodPlan(
                rjob=name, job_index=0, pod_index=idx,
                name=names.pod_name(job, name, 0, idx, uid),
                hostname=names.hostname(job, name, 0, idx),
                host=names.host(job, name, 0, idx, subdomain),
                is_launcher=is_launcher, in_hostfile=in_hostfile, runs_sshd=runs_sshd,
                image=image, command=command, args=args,
                env=_upsert_env(env, [{"name": names.ENV_COMPLETION_INDEX, "value": str(idx)}]),
                working_dir=c.get("workingDir"), resources=resources,
                run_as_user=run_as_user, run_as_group=run_as_group, fs_group=psc.get("fsGroup"), labels=labels,
                annotations=dict((pod_template.get("metadata") or {}).get("annotations") or {}),
                depends_on_nodes_ready=is_launcher and depends, pod_spec=pod_spec,
            ))
            if in_hostfile:
                hostfile_lines.append(impl.hostfile_line(plans[-1].host, slots))
        pods_by_rjob[name] = plans

    return RunPlan(
        job=job, namespace=namespace, uid=uid, num_nodes=num_nodes, node_replicas=node_replicas, slots=slots,
        launcher_as_node=launcher_as_node, mpi_implementation=impl.name, ssh_auth_mount_path=mount,
        hostfile="".join(hostfile_lines),
        pods=pods_by_rjob.get(names.NODE, []) + pods_by_rjob.get(names.LAUNCHER, []),
        user_env=user_env, subdomain=subdomain,
    )


def generate_ssh_keypair() -> tuple[str, str]:
    """A fresh ECDSA P-521 key as Trainer makes it: SEC1 PEM ("EC PRIVATE KEY", readable by `ssh -i`)
    and its authorized_keys line (with trailing newline, like ssh.MarshalAuthorizedKey)."""
    key = ec.generate_private_key(ec.SECP521R1())
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public_line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode() + "\n"
    return private_pem, public_line
