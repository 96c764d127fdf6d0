"""How the controllers sandbox a pod, chosen once per server (`controllers/kubelet/sandbox.py` says what
each mode gives a pod and how it is detected).

The values are what `$MPIJOB_SANDBOX` takes and what the server's state file records (`mpijob server
status`). A StrEnum member equals its string, so a mode read back from either compares as the member.
"""

from __future__ import annotations

from enum import StrEnum

ENV = "MPIJOB_SANDBOX"  # forces the mode; unset, the controllers detect it
NONE = "none"  # what the state file says of a server that runs no controllers, so no sandbox


class SandboxMode(StrEnum):
    NAMESPACE = "namespace"  # root and `unshare` works: each pod in its own namespaces, each job its own network
    ROOTLESS = "rootless"  # not root, user namespaces allowed: the same, in a user namespace of the job's own
    PROCESS = "process"  # the fallback where neither works: plain process groups on the host's network

    @property
    def private(self) -> bool:
        """Whether pods have namespaces of their own (files, host name, PIDs) and each job a network."""
        return self is not SandboxMode.PROCESS

    @classmethod
    def parse(cls, value: str | None) -> SandboxMode | None:
        """The mode `value` names, or None for anything else (unset, empty, a typo)."""
        try:
            return cls(value) if value else None
        except ValueError:
            return None


NS, RL = SandboxMode.NAMESPACE, SandboxMode.ROOTLESS
# What a pod may rely on, and in which modes it holds (docs/sandbox.md's table is this list). `limits` also
# needs cgroups this server may write: the controllers say whether it holds on this machine.
GUARANTEES: dict[str, tuple[str, frozenset[SandboxMode]]] = {
    "own_mounts": ("each pod its own /run, /dev/shm and /proc", frozenset({NS, RL})),
    "host_names": ("each pod its own host name; Trainer's host names in its /etc/hosts", frozenset({NS, RL})),
    "trainer_paths": ("/etc/mpi/hostfile, the job key, the ServiceAccount token at Trainer's and kube's paths",
                      frozenset({NS, RL})),
    "job_network": ("each job its own network: pod addresses, the API server as the kubernetes Service",
                    frozenset({NS, RL})),
    "pod_lifetime": ("a pod's processes, its ranks included, end with it (a PID namespace of its own)",
                     frozenset({NS, RL})),
    "run_as_user": ("a pod runs as its runAsUser (rootless: as it sees itself; the server's user on the machine)",
                    frozenset({NS, RL})),
    "tenant_uids": ("each namespace's pods a UID block of their own on the machine (tenants' files apart)",
                    frozenset({NS})),
    "volumes": ("volumes: emptyDir, PVC, hostPath, configMap, secret, downwardAPI, projected", frozenset({NS, RL})),
    "open_mpi_5": ("Open MPI 5 (its daemons need a non-loopback interface)", frozenset({NS, RL})),
    "limits": ("memory limits enforced (OOMKilled), each pod's CPU and memory accounted", frozenset({NS, RL})),
}
