"""Pod addresses, GPUs and CPU cores for pods.

Addresses: in the namespace sandbox each job has a network of its own (`network.py`) and its pods draw
from the pod CIDR, 10.244.1.1 onwards, unique across the cluster as `kubectl get pods -o wide` shows them.
In the process sandbox pods share the host's network: each gets its own 127.x.y.z, so every node's sshd
listens on port 2222 as in Trainer's pods, and two servers (two homes) draw from different /16s."""

from __future__ import annotations

import hashlib
import os
import socket

from mpijob.controllers.kubelet.network import POD_NETWORK


class AddressPool:
    def __init__(self, cluster_id: str, own_networks: bool) -> None:
        second = 1 + int(hashlib.sha256(cluster_id.encode()).hexdigest(), 16) % 254
        self._prefix = POD_NETWORK if own_networks else f"127.{second}"
        self._shared = not own_networks  # on the host's loopback an address may be taken by someone else
        self._next = 0
        self._used: set[str] = set()

    def take(self, port: int) -> str:
        """A free address (on the host's loopback: one whose `port` nobody listens on)."""
        for _ in range(254 * 254):
            n, self._next = self._next, (self._next + 1) % (254 * 254)
            ip = f"{self._prefix}.{1 + n // 254}.{1 + n % 254}"
            if ip not in self._used and (not self._shared or _free(ip, port)):
                self._used.add(ip)
                return ip
        raise RuntimeError("no free address left for a pod")

    def release(self, ips: list[str]) -> None:
        self._used.difference_update(ips)

    def claim(self, ips: list[str]) -> None:
        """Mark addresses a re-adopted run holds as taken."""
        self._used.update(ips)


def _free(ip: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((ip, port))
        except OSError:
            return False
    return True


class DevicePool:
    """GPU indices 0..n-1, handed out as disjoint sets: a pod's CUDA_VISIBLE_DEVICES is its own.
    Admission already guaranteed the quota, so a shortfall here is a bug, not a wait."""

    def __init__(self, count: int) -> None:
        self._free = list(range(count))

    def take(self, n: int) -> list[int]:
        if n > len(self._free):
            raise RuntimeError(f"{n} GPU(s) requested but only {len(self._free)} free: quota exceeds the devices")
        taken, self._free = self._free[:n], self._free[n:]
        return taken

    def release(self, devices: list[int]) -> None:
        self._free = sorted(set(self._free) | set(devices))

    def claim(self, devices: list[int]) -> None:
        """Mark GPUs a re-adopted run holds as taken."""
        self._free = [d for d in self._free if d not in devices]


class CorePool:
    """Whole CPU cores for pods that ask for whole CPUs, as disjoint affinity sets where they fit.

    Quota may exceed the cores this process can use (a declared `--capacity cpu=16` on 2 cores):
    then a pod that does not fit runs unpinned, sharing the machine, rather than waiting."""

    def __init__(self) -> None:
        self._free = sorted(os.sched_getaffinity(0))

    def take(self, cpus: int) -> list[int]:
        if cpus < 1 or cpus > len(self._free):
            return []
        taken, self._free = self._free[:cpus], self._free[cpus:]
        return taken

    def release(self, cores: list[int]) -> None:
        self._free = sorted(set(self._free) | set(cores))

    def claim(self, cores: list[int]) -> None:
        """Mark cores a re-adopted run holds as taken."""
        self._free = [c for c in self._free if c not in cores]


def crowding(slots: int, hosts: list[list[int]]) -> tuple[int, int] | None:
    """`(ranks, cores)` where a job's ranks outnumber the cores they can run on, else None.

    `hosts` holds each MPI host's pinned cores ([] for a host that runs unpinned, sharing every core
    of the machine with the other unpinned hosts); each host runs `slots` ranks."""
    machine = len(os.sched_getaffinity(0))
    unpinned = slots * sum(1 for cores in hosts if not cores)
    worst = [(slots, len(cores)) for cores in hosts if cores and slots > len(cores)]
    if unpinned > machine:
        worst.append((unpinned, machine))
    return max(worst, key=lambda rc: rc[0] / rc[1], default=None)
