"""The kubelet's admission of a run's pods on this machine: each pod's address, GPUs and whole CPU cores drawn
from the machine's pools (`addresses.py`), its volumes set up (`volumes.py`) and its ServiceAccount's projected
files written (`sandbox.py`), as the kubelet does once a pod is bound to its Node. One instance serves every kind
of job, so TrainJobs and MPIJobs share the machine."""

from __future__ import annotations

import dataclasses

from mpijob.api import Obj, names
from mpijob.api.core import tokens, volumes
from mpijob.api.core.quantity import parse_quantity
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import render
from mpijob.api.trainer.plan import RunPlan, gpu_count
from mpijob.controllers import events
from mpijob.controllers.kubelet import volumes as kubelet_volumes
from mpijob.controllers.kubelet.addresses import AddressPool, CorePool, DevicePool, crowding
from mpijob.controllers.kubelet.mpi_env import YIELD_WHEN_IDLE
from mpijob.controllers.kubelet.sandbox import SSH_PORT, JobFiles, ServiceAccountFiles, job_user, on_machine
from mpijob.store.home import Home
from mpijob.store.objects import Store

Held = dict[str, list[int]]  # pod name → the GPUs (or cores) it holds


def whole_cpus(resources: dict) -> int:
    """CPUs a pod asks for, when a whole number (requests, else limits); 0 otherwise."""
    value = (resources.get("requests") or {}).get("cpu") or (resources.get("limits") or {}).get("cpu")
    if value is None:
        return 0
    amount = parse_quantity(value)
    return int(amount) if amount == int(amount) else 0


class PodAdmission:
    def __init__(self, store: Store, home: Home, mode: SandboxMode, cluster_id: str, gpus: int = 0) -> None:
        self.store, self.home, self.mode = store, home, mode
        self.addresses = AddressPool(cluster_id, own_networks=mode.private)
        self.devices = DevicePool(gpus)
        self.cores = CorePool()

    def mount_volumes(self, plan: RunPlan, files: JobFiles, stored: dict[str, Obj]) -> str | None:
        """Set up each pod's volumes as the kubelet would and give the sandbox their mounts; the message the
        job fails with when one cannot be (a FailedMount Event on the pod says it in the kubelet's words)."""
        asking = [p for p in plan.pods if volumes.has_volumes(p.pod_spec)]
        if asking and not self.mode.private:
            return volumes.PROCESS_SANDBOX
        for pod in asking:
            user = on_machine(job_user(plan, pod, self.mode), self.mode)
            if self.mode == SandboxMode.ROOTLESS:  # the volumes are the server's user's: no group to give
                pod = dataclasses.replace(pod, fs_group=None)
            try:
                files.volume_mounts[pod.name] = kubelet_volumes.setup(
                    self.store, self.home, files, pod, stored[pod.name], user)
            except kubelet_volumes.MountFailed as e:
                events.record(self.store, stored[pod.name], names.REASON_FAILED_MOUNT, str(e), warning=True,
                              component=kubelet_volumes.COMPONENT)
                return f"pod {pod.name} cannot start: {e}"
        return None

    def take(self, plan: RunPlan) -> tuple[dict[str, str], Held, Held]:
        """Each pod's address (by hostname), GPUs and cores (by pod name)."""
        ips = {p.hostname: self.addresses.take(SSH_PORT) for p in plan.pods}
        gpus = {p.name: self.devices.take(gpu_count(p.resources)) for p in plan.pods}
        cores = {p.name: self.cores.take(whole_cpus(p.resources)) for p in plan.pods}
        return ips, gpus, cores

    def claim(self, ips: dict[str, str], gpus: Held, cores: Held) -> None:
        """Mark what a re-adopted run holds as taken."""
        self.addresses.claim(list(ips.values()))
        self.devices.claim([d for ds in gpus.values() for d in ds])
        self.cores.claim([c for cs in cores.values() for c in cs])

    def release(self, ips: dict[str, str], gpus: Held, cores: Held) -> None:
        self.addresses.release(list(ips.values()))
        self.devices.release([d for ds in gpus.values() for d in ds])
        self.cores.release([c for cs in cores.values() for c in cs])

    def crowded(self, job: Obj, plan: RunPlan, cores: Held) -> bool:
        """Whether the job's ranks outnumber their cores, so they must yield when idle (said in an Event;
        the user's own setting in trainer.env wins)."""
        found = crowding(plan.slots, [cores[p.name] for p in plan.pods if p.in_hostfile])
        if found is None:
            return False
        ranks, count = found
        own = next((e.get("value") for e in plan.user_env if e.get("name") == YIELD_WHEN_IDLE), None)
        choice = (f"trainer.env sets {YIELD_WHEN_IDLE}={own}, which wins" if own is not None else
                  f"ranks yield the CPU while they wait ({YIELD_WHEN_IDLE}=1; set it in trainer.env to choose)")
        events.record(self.store, job, "Oversubscribed", f"{ranks} MPI ranks share {count} CPU core(s): {choice}")
        return own is None

    def write_service_accounts(self, files: JobFiles, plan: RunPlan, accounts: dict[str, Obj],
                               stored: dict[str, Obj]) -> None:
        """Fill each pod's projected volumes: its ServiceAccount's (a token bound to the stored pod, its
        namespace and the cluster CA; nothing for a pod that does not automount its token), and Trainer's
        status volume (the same account's token for the job's audience, and the CA)."""
        key, ca = self.home.service_account_key(), self.home.ca_pem().encode()
        audience = names.trainjob_status_audience(plan.namespace, plan.job)
        for pod in plan.pods:
            account, obj = accounts[pod.name], stored[pod.name]
            mounted = render.automounts(obj.get("spec") or {}, account)
            wanted = ServiceAccountFiles(tokens.for_pod(key, account, obj), plan.namespace, ca) if mounted else None
            user = job_user(plan, pod, self.mode)
            files.write_service_account(pod, user, wanted)
            status_token = tokens.for_pod(key, account, obj, audience=audience)  # Trainer's projected token
            files.write_trainer_status(pod, user, status_token, ca)
