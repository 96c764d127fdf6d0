"""What every process of a job's pods starts with: its container and each of its sshd sessions (ranks,
orted), which see the same variables a Trainer cluster's pod would, plus the local cluster's additions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mpijob.api import Obj
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer.mpi_impl import Implementation
from mpijob.api.trainer.plan import PodPlan, RunPlan
from mpijob.controllers.kubelet import mpi_installs, trainer_status
from mpijob.controllers.kubelet.mpi_env import (
    LOCAL_MCA,
    LOOPBACK_MCA,
    PRIVATE_SESSION_MCA,
    YIELD_WHEN_IDLE,
    process_shm,
    process_tmpdir,
)
from mpijob.controllers.kubelet.sandbox import (
    JobFiles,
    User,
    pod_path,
)

ROOT_ALLOWANCE = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@dataclass
class PodEnv:
    """One run's environments. `status_url` is Trainer's status endpoint for the job, set once it is known."""

    plan: RunPlan
    files: JobFiles
    cluster_id: str
    impl: Implementation
    local_mca: dict[str, str]  # the local cluster's MCA additions (mpi_env.LOCAL_MCA and the sandbox's own)
    service_env: dict[str, str]  # the API server's Service variables, as pods reach it
    gpus: dict[str, list[int]] = field(default_factory=dict)  # pod name → its GPU indices
    status_url: str = ""
    rank_agent: dict[str, str] = field(default_factory=dict)  # what starts each rank through the agent (mpi_env)

    def marker(self, pod: PodPlan) -> dict[str, str]:
        """Tags every process of the pod so a restarted server can find leftovers."""
        return marker(self.cluster_id, self.plan.namespace, pod.name)

    def devices(self, pod: PodPlan) -> dict[str, str]:
        """The pod's own GPUs: like the NVIDIA device plugin, a pod without GPUs sees none. Numbered in
        PCI bus order, as NVML and nvidia-smi number them, so its usage is read from the right GPUs."""
        return {"CUDA_VISIBLE_DEVICES": ",".join(str(d) for d in self.gpus.get(pod.name, [])),
                "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

    def session(self, pod: PodPlan, user: User) -> dict[str, str]:
        """What sshd gives every remote session (ranks, orted): trainer.env reaches every rank."""
        if self.files.mode != SandboxMode.PROCESS:
            return self._common(pod, user, self.plan.user_env, self.marker(pod))
        identity = {**self.marker(pod), "HOME": user.home, **process_shm(self.files.pod_dir(pod))}
        return self._common(pod, user, self.plan.user_env, identity)

    def container(self, pod: PodPlan, user: User, home: str) -> dict[str, str]:
        """What the pod's container starts with: who and where it is, and its own env."""
        identity = {"HOME": home, "USER": user.name, "LOGNAME": user.name, "HOSTNAME": pod.hostname,
                    **self.marker(pod), **(self.impl.launcher_config(home)[1] if pod.is_launcher else {})}
        env = self._common(pod, user, pod.env, identity)
        if self.files.mode == SandboxMode.PROCESS and pod.is_launcher:
            env |= self.impl.elsewhere_env(str(self.files.hostfile), str(self.files.ssh_config))
        return env

    def _common(self, pod: PodPlan, user: User, own: Iterable[Obj], identity: dict[str, str]) -> dict[str, str]:
        """PATH, who and where it is (`identity`), the API server's Service variables, the local MCA settings,
        the cluster marker, the pod's GPUs, root's allowance to run Open MPI, then the job's own
        variables (`own`), which win (as a container's env wins over the kubelet's Service variables), and
        Trainer's status variables, which Trainer's plugin upserts over them."""
        env = {"PATH": pod_path(mpi_installs.prefix(self.impl)), **identity, **self.service_env, **self.local_mca,
               **self.rank_agent,
               **mpi_installs.env(self.impl), "MPIJOB_CLUSTER": self.cluster_id, **self.devices(pod)}
        if self.files.mode == SandboxMode.PROCESS:
            env |= process_tmpdir(self.files.pod_dir(pod))
        if user.uid == 0:
            env |= ROOT_ALLOWANCE
        return env | values(own) | trainer_status.env(self.status_url, self.files, pod)


def marker(cluster_id: str, namespace: str, pod: str) -> dict[str, str]:
    """The variables every process of a pod carries, by which a restarted server finds what a previous one left
    (`kubelet/gc.kill_leftovers`), a job's pod or a bare one."""
    return {"MPIJOB_CLUSTER": cluster_id, "MPIJOB_POD": f"{namespace}/{pod}"}


def local_mca(mode: SandboxMode, yield_when_idle: bool) -> dict[str, str]:
    """The local cluster's MCA additions for a sandbox `mode` (sandbox.py says why each)."""
    return {**LOCAL_MCA, **(LOOPBACK_MCA if mode == SandboxMode.PROCESS else PRIVATE_SESSION_MCA),
            **({YIELD_WHEN_IDLE: "1"} if yield_when_idle else {})}


def values(env: Iterable[Obj]) -> dict[str, str]:
    """`name → value` of env entries with a value (trainer.env, a pod's env), not those from a source."""
    return {e["name"]: str(e["value"]) for e in env if "value" in e}
