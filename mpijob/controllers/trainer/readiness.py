"""When a node pod is ready, as a kubelet's readiness probe on port 2222 would say: its sshd answers SSH (the
runtimes' `tcpSocket` probe, and sshd's banner), within the run's bound, with the kubelet's Unhealthy Event
while it is not, and what /proc tells of a node that never answered. A part of `JobRunner` (runner.py).

It does not log in with the job key: mpirun's own login is that test, and a key refused then is told from
ssh's words (`failures._ssh_refused`). A login per node (an ssh client and an sshd session, ~0.15 s of CPU
here) made a 4-node job start 0.1 s later and a 64-node one seconds later on 2 cores, for nothing more."""

from __future__ import annotations

import asyncio
import socket

from mpijob.api import names
from mpijob.api.core.resources import PODS
from mpijob.api.trainer.plan import PodPlan, RunPlan
from mpijob.controllers import events
from mpijob.controllers.kubelet import pods
from mpijob.controllers.kubelet.network import JobNetwork
from mpijob.controllers.kubelet.sandbox import SSH_PORT
from mpijob.controllers.trainer import procfs
from mpijob.controllers.trainer.procs import Proc, Role
from mpijob.store.objects import Store

CONNECT_TIMEOUT = 2.0  # seconds a probe's TCP connect may take (a dropped SYN would take minutes)
UNHEALTHY_AFTER = 10.0  # seconds a node may be not ready before its pod gets the kubelet's Unhealthy Event
KUBELET = "kubelet"  # the component of a pod's Events, as kube's
PROBE_INTERVAL = 0.01


class Readiness:
    """`JobRunner`'s wait for its nodes."""

    store: Store
    plan: RunPlan
    ips: dict[str, str]
    network: JobNetwork | None
    procs: dict[Proc, pods.PodProcess]
    exits: dict[Proc, pods.Exit]
    ready_timeout: float

    def _check_stop(self) -> None:
        raise NotImplementedError

    async def _ready(self, pod: PodPlan, key: Proc) -> None:
        """Wait until the pod's sshd (`key`: its container, or the sshd beside a launcher's) answers SSH."""
        ip = self.ips[pod.hostname]
        proc = self.procs[key]
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.ready_timeout
        warned = False
        while True:
            self._check_stop()
            if not proc.running:
                self.exits[key] = await proc.wait()
                raise NodeFailed(pod)
            if loop.time() > deadline:
                raise NodeFailed(pod, await asyncio.to_thread(self._why_not_ready, proc))
            if not warned and loop.time() - started > min(UNHEALTHY_AFTER, self.ready_timeout / 2):
                warned = True
                self._unhealthy(pod, ip, deadline - loop.time())
            if await self._sshd_answers(ip):
                if key.role is Role.CONTAINER:
                    pods.set_running(self.store, self.plan.namespace, pod.name, ip, ready=True)
                return
            await asyncio.sleep(PROBE_INTERVAL)

    def _why_not_ready(self, proc: pods.PodProcess) -> str:
        """What /proc tells of a pod whose sshd never answered on SSH_PORT (listening elsewhere, not at all)."""
        return procfs.not_listening([proc.pid], SSH_PORT)

    def _unhealthy(self, pod: PodPlan, ip: str, left: float) -> None:
        """The kubelet's Warning on a pod whose readiness probe keeps failing, so a wait is never silent."""
        stored = self.store.try_get(PODS, self.plan.namespace, pod.name)
        if stored is None:
            return
        events.record(self.store, stored, names.REASON_UNHEALTHY,
                      f"Readiness probe failed: nothing answers SSH at {ip}:{SSH_PORT}; the job fails if it is not "
                      f"ready within {left:.0f}s more ({names.ANNOTATION_READY_TIMEOUT}: {self.ready_timeout:g}s)",
                      warning=True, component=KUBELET)

    async def _sshd_answers(self, ip: str) -> bool:
        """The sshd is up and speaks SSH. We send our own identification before closing so sshd has nothing
        to complain about in the pod's log."""
        sock = self.network.socket() if self.network else socket.socket()
        sock.setblocking(False)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (ip, SSH_PORT)), CONNECT_TIMEOUT)
            reader, writer = await asyncio.open_connection(sock=sock)
        except (TimeoutError, OSError):
            sock.close()
            return False
        try:
            banner = await asyncio.wait_for(reader.readline(), 2)
            writer.write(b"SSH-2.0-mpijob-probe\r\n")
            await writer.drain()
        except (TimeoutError, OSError):
            banner = b""
        writer.close()
        return banner.startswith(b"SSH-")


class NodeFailed(Exception):
    """A node's sshd exited (its exit is in `JobRunner.exits`), or did not answer SSH in time, before the
    launcher started."""

    def __init__(self, pod: PodPlan, why: str = "") -> None:
        super().__init__(pod.name)
        self.pod, self.why = pod, why  # why: what /proc told of it (`_why_not_ready`)
