"""The MPI ClusterTrainingRuntimes of the bundle: one shape, several MPIs, CPU and GPU, RDMA and NCCL-safe.

Every runtime has the shape of upstream's MPI runtimes (`deepspeed-distributed`) and of the local
cluster's `mpi-distributed`: the `node` replicatedJob first (rank 0 lands on `node-0-0`), running sshd
on a non-privileged port with a TCP readiness probe; the `launcher` after it, waiting until the nodes
are Ready and carrying Trainer's ancestor label (so the TrainJob's image, command and args reach it);
JobSet publishing not-ready addresses (sshd must resolve before it is Ready); the job succeeding when
the launcher does. Pods opt out of Istio's sidecar (its proxy intercepts ssh and MPI's ports), run as
non-root without naming a UID (OpenShift gives each namespace its own range), drop every capability
and may not escalate. Trainer's CRD admits only `mpiImplementation: OpenMPI`, so a runtime for another
MPI names it in `names.ANNOTATION_MPI_IMPLEMENTATION` and sets that MPI's launcher variables itself,
as MPI Operator does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.resources import CLUSTER_TRAINING_RUNTIMES
from mpijob.api.platform.options import GPU, OPEN_MPI_4, OPEN_MPI_5, Options
from mpijob.api.trainer.mpi_impl import IMPLEMENTATIONS

SSH_AUTH_MOUNT_PATH = "/home/mpiuser/.ssh"
SSHD_CONFIG = "/home/mpiuser/.sshd_config"  # written by MPI Operator's and Trainer's images for mpiuser
UPSTREAM_SSH_PORT = 2222  # what those images' sshd config and ssh client config say
PART_OF = "mpijob"

# Runtime names, by (implementation, GPU) — `mpi-distributed` is the local cluster's, so a TrainJob naming
# it runs unchanged on both.
NAMES: Mapping[tuple[str, bool], str] = {
    (OPEN_MPI_4, False): "mpi-distributed",
    (OPEN_MPI_4, True): "mpi-distributed-gpu",
    (OPEN_MPI_5, False): "openmpi5-distributed",
    (OPEN_MPI_5, True): "openmpi5-distributed-gpu",
    (names.MPI_MPICH, False): "mpich-distributed",
    (names.MPI_MPICH, True): "mpich-distributed-gpu",
    (names.MPI_INTEL, False): "intel-mpi-distributed",
    (names.MPI_INTEL, True): "intel-mpi-distributed-gpu",
}
RDMA = "mpi-distributed-rdma"
NCCL_SAFE = "mpi-distributed-nccl-safe"

# Open MPI forwards OMPI_MCA_* to every rank by itself; other variables reach remote ranks only when
# listed here (mpirun's `-x`; over ssh a rank does not inherit its pod's environment).
FORWARD_ENV = "OMPI_MCA_mca_base_env_list"

# NCCL's switches for algorithms that break with InfiniBand or peer-to-peer transports (PPO/GRPO-style RL
# fine-tuning): NCCL then goes through sockets and shared memory.
NCCL_SAFE_ENV: Mapping[str, str] = {"NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1"}


def rdma_env(opts: Options) -> dict[str, str]:
    """UCX for MPI over the RDMA device, NCCL over InfiniBand with GPUDirect RDMA at any distance."""
    device = opts.rdma_device
    return {
        "OMPI_MCA_pml": "ucx",  # Open MPI's point-to-point over UCX (InfiniBand/RoCE)
        "OMPI_MCA_osc": "ucx",  # one-sided too
        "OMPI_MCA_btl": "^openib",  # never the legacy verbs transport
        "UCX_NET_DEVICES": device,
        "UCX_IB_GPU_DIRECT_RDMA": "yes",
        "NCCL_IB_DISABLE": "0",
        "NCCL_IB_HCA": device.split(":")[0],
        "NCCL_NET_GDR_LEVEL": "SYS",  # GPUDirect RDMA whatever the GPU-NIC distance
    }


def render(opts: Options) -> list[Obj]:
    """Every runtime of the bundle: each MPI for CPU, each for GPU, then RDMA and NCCL-safe."""
    out = [_runtime(NAMES[(impl, False)], impl, opts, opts.images[impl]) for impl in NAMES_ORDER]
    gpus = opts.gpus_per_node
    for impl in NAMES_ORDER:
        image = opts.gpu_image if impl == OPEN_MPI_4 else opts.images[impl]
        out.append(_runtime(NAMES[(impl, True)], impl, opts, image, gpus=gpus))
    rdma = rdma_env(opts)
    out.append(_runtime(RDMA, OPEN_MPI_4, opts, opts.gpu_image, gpus=gpus, env=rdma,
                        extra_resources={opts.rdma_resource: "1"},
                        annotations={names.ANNOTATION_MULTUS_NETWORKS: opts.rdma_network}))
    out.append(_runtime(NCCL_SAFE, OPEN_MPI_4, opts, opts.gpu_image, env=dict(NCCL_SAFE_ENV)))
    return out


NAMES_ORDER = (OPEN_MPI_4, OPEN_MPI_5, names.MPI_MPICH, names.MPI_INTEL)


def _runtime(name: str, impl: str, opts: Options, image: str, *, gpus: int = 0, env: dict[str, str] | None = None,
             extra_resources: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Obj:
    env = dict(env or {})
    forwarded = [k for k in env if not k.startswith("OMPI_MCA_")]
    if forwarded and impl in (OPEN_MPI_4, OPEN_MPI_5):
        env[FORWARD_ENV] = ";".join(forwarded)
    limits = {**({GPU: str(gpus)} if gpus else {}), **(extra_resources or {})}
    pod_annotations = {names.ANNOTATION_ISTIO_INJECT: "false", **(annotations or {})}
    node = _container(image, opts, env, limits, sshd=True)
    launcher = _container(image, opts, {**env, **IMPLEMENTATIONS[impl].runtime_env()}, limits)
    meta: dict[str, Any] = {"name": name, "labels": {names.LABEL_FRAMEWORK: "mpi", names.LABEL_PART_OF: PART_OF}}
    if impl != OPEN_MPI_4:
        meta["annotations"] = {names.ANNOTATION_MPI_IMPLEMENTATION: impl}
    return {
        "apiVersion": CLUSTER_TRAINING_RUNTIMES.api_version,
        "kind": CLUSTER_TRAINING_RUNTIMES.kind,
        "metadata": meta,
        "spec": {
            "mlPolicy": {"numNodes": 1, "mpi": {
                "mpiImplementation": names.OPEN_MPI,  # the CRD's only value; the annotation names the real one
                "numProcPerNode": max(gpus, 1),
                "runLauncherAsNode": True,
                "sshAuthMountPath": SSH_AUTH_MOUNT_PATH,
            }},
            "template": {"spec": {
                "network": {"publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": [names.LAUNCHER]},
                "replicatedJobs": [
                    _rjob(names.NODE, node, pod_annotations, opts),
                    _rjob(names.LAUNCHER, launcher, pod_annotations, opts,
                          {names.LABEL_ANCESTOR: names.ANCESTOR_TRAINER}, depends=True),
                ],
            }},
        },
    }


def _rjob(name: str, container: Obj, annotations: dict[str, str], opts: Options,
          labels: dict[str, str] | None = None, depends: bool = False) -> Obj:
    pod_security: Obj = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    if opts.run_as_user is not None:  # a cluster without OpenShift's SCCs: the image user's UID
        pod_security["runAsUser"] = opts.run_as_user
    rj: Obj = {"name": name}
    if depends:  # JobSet starts it once every node is Ready (their sshd answers)
        rj["dependsOn"] = [{"name": names.NODE, "status": "Ready"}]
    rj["template"] = {**({"metadata": {"labels": labels}} if labels else {}), "spec": {"template": {
        "metadata": {"annotations": dict(annotations)},
        "spec": {"securityContext": pod_security, "containers": [container]},
    }}}
    return rj


def _container(image: str, opts: Options, env: dict[str, str], limits: dict[str, str], sshd: bool = False) -> Obj:
    c: Obj = {"name": names.CONTAINER, "image": image}
    if sshd:
        args = ["-De", "-f", SSHD_CONFIG]
        if opts.ssh_port != UPSTREAM_SSH_PORT:
            args += ["-p", str(opts.ssh_port)]  # overrides the config file's Port
        c["command"] = ["/usr/sbin/sshd"]
        c["args"] = args
        c["ports"] = [{"containerPort": opts.ssh_port, "name": "ssh", "protocol": "TCP"}]
        c["readinessProbe"] = {"tcpSocket": {"port": opts.ssh_port}, "initialDelaySeconds": 2, "periodSeconds": 2}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if limits:
        c["resources"] = {"limits": dict(limits)}
    c["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "runAsNonRoot": True}
    return c
