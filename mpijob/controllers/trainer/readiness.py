"""When a node pod is ready, as a kubelet's readiness probe on port 2222 would say: its sshd accepts the job's
SSH key (a real login), within the run's bound, with the kubelet's Unhealthy Event while it is not, and what
/proc tells of a node that never answered. A part of `JobRunner` (runner.py)."""

from __future__ import annotations

import asyncio
import socket

from mpijob.api import names
from mpijob.api.core.resources import PODS
from mpijob.api.trainer.plan import PodPlan, RunPlan
from mpijob.controllers import events
from mpijob.controllers.kubelet import pods
from mpijob.controllers.kubelet.network import JobNetwork
from mpijob.controllers.kubelet.sandbox import ACCEPTED, SSH_PORT, JobFiles, User
from mpijob.controllers.trainer import children, procfs
from mpijob.controllers.trainer.procs import Proc, Role
from mpijob.store.objects import Store

READY_TIMEOUT = 60.0  # seconds one key probe may take (the whole wait is the run's `Bounds.ready`)
CONNECT_TIMEOUT = 2.0  # seconds a probe's TCP connect may take (a dropped SYN would take minutes)
UNHEALTHY_AFTER = 10.0  # seconds a node may be not ready before its pod gets the kubelet's Unhealthy Event
KUBELET = "kubelet"  # the component of a pod's Events, as kube's
PROBE_INTERVAL = 0.01


class Readiness:
    """`JobRunner`'s wait for its nodes."""

    store: Store
    plan: RunPlan
    files: JobFiles
    ips: dict[str, str]
    network: JobNetwork | None
    procs: dict[Proc, pods.PodProcess]
    exits: dict[Proc, pods.Exit]
    ready_timeout: float

    def _check_stop(self) -> None:
        raise NotImplementedError

    async def _ready(self, pod: PodPlan, user: User, key: Proc) -> None:
        """Wait until the pod's sshd (`key`: its container, or the sshd beside a launcher's) accepts the job
        key (a real ssh authentication)."""
        ip = self.ips[pod.hostname]
        proc = self.procs[key]
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.ready_timeout
        answered = False  # whether its sshd ever spoke SSH: if so, the key is what it refused
        warned = False
        while True:
            self._check_stop()
            if not proc.running:
                self.exits[key] = await proc.wait()
                raise NodeFailed(pod, answered)
            if loop.time() > deadline:
                raise NodeFailed(pod, answered,
                                 await asyncio.to_thread(self._why_not_ready, proc) if not answered else "")
            if not warned and loop.time() - started > min(UNHEALTHY_AFTER, self.ready_timeout / 2):
                warned = True
                self._unhealthy(pod, ip, answered, deadline - loop.time())
            if await self._sshd_answers(ip):
                answered = True
                if await self._key_accepted(ip, user, max(deadline - loop.time(), CONNECT_TIMEOUT)):
                    if key.role is Role.CONTAINER:
                        pods.set_running(self.store, self.plan.namespace, pod.name, ip, ready=True)
                    return
            await asyncio.sleep(PROBE_INTERVAL)

    def _why_not_ready(self, proc: pods.PodProcess) -> str:
        """What /proc tells of a pod whose sshd never answered on SSH_PORT (listening elsewhere, not at all)."""
        return procfs.not_listening([proc.pid], SSH_PORT)

    def _unhealthy(self, pod: PodPlan, ip: str, answered: bool, left: float) -> None:
        """The kubelet's Warning on a pod whose readiness probe keeps failing, so a wait is never silent."""
        stored = self.store.try_get(PODS, self.plan.namespace, pod.name)
        if stored is None:
            return
        said = "sshd answers but does not accept the job's SSH key" if answered else "nothing answers SSH"
        events.record(self.store, stored, names.REASON_UNHEALTHY,
                      f"Readiness probe failed: {said} at {ip}:{SSH_PORT}; the job fails if it is not ready "
                      f"within {left:.0f}s more ({names.ANNOTATION_READY_TIMEOUT}: {self.ready_timeout:g}s)",
                      warning=True, component=KUBELET)

    async def _sshd_answers(self, ip: str) -> bool:
        """Cheap pre-check before a real login: the sshd is up and speaks SSH. We send our own
        identification before closing so sshd has nothing to complain about in the pod's log."""
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

    async def _key_accepted(self, ip: str, user: User, within: float = READY_TIMEOUT) -> bool:
        argv = self.files.ssh_probe(ip, user)
        probe = await asyncio.create_subprocess_exec(
            *(self.network.enter(argv) if self.network else argv),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert probe.stdout
        try:
            line = await asyncio.wait_for(probe.stdout.readline(), min(within, READY_TIMEOUT))
        except TimeoutError:
            line = b""
        finally:  # cancelled too (another node failed first): the probe does not outlive the wait
            children.kill(probe)
        await probe.wait()
        return line.strip() == ACCEPTED.encode()


class NodeFailed(Exception):
    """A node's sshd exited (its exit is in `JobRunner.exits`), or did not accept the job key in time,
    before the launcher started; `answered`: whether it ever spoke SSH."""

    def __init__(self, pod: PodPlan, answered: bool, why: str = "") -> None:
        super().__init__(pod.name)
        self.pod, self.answered, self.why = pod, answered, why  # why: what /proc told of it (`_why_not_ready`)
