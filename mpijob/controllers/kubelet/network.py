"""A job's own network (namespace sandbox): one Linux network namespace per TrainJob.

On a cluster every pod has an address on a flat pod network and NetworkPolicies decide who may reach it.
The local cluster gives every job a network of its own instead, which is what the platform's policies ask
for (deny between namespaces, allow inside a job) and holds whatever policies exist:

* the job's pods share one network namespace; each has its own address from the pod CIDR
  (`status.podIP`) and they reach each other on any port;
* nothing outside reaches in, and nothing inside reaches out but the API server, which a relay of the
  server's answers at the `kubernetes` Service's address (`SERVICE_IP:SERVICE_PORT`), as a ClusterIP does;
* every pod sees a non-loopback interface, `eth0` (Open MPI 5's daemons need one), holding `JOB_ADDRESS`.

The pod addresses are not interface addresses but one `local` route over the pod CIDR (Linux's AnyIP): a
process may bind any of them, yet Open MPI, which takes a host whose address is one of its interfaces' for
itself, still sees every other pod as a remote host and starts its ranks there through its sshd. `eth0` is a
tun device, the one link kind every kernel offers (some, such as microVMs', build no dummy or veth driver).

The namespace is bound at `/run/netns/<name>`, as `ip netns add` does, so `ip netns exec <name> ss -tlnp`
shows a job's sockets. pyroute2 speaks netlink to configure it; a thread of its own enters it, so no other
thread of the server ever leaves the host's network.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TypeVar

from pyroute2 import IPRoute, netns

T = TypeVar("T")

NETNS_DIR = Path("/run/netns")
POD_NETWORK = "10.244"  # the first two octets of the pod CIDR, 10.244.0.0/16 (kubeadm's and kind's default)
JOB_ADDRESS = f"{POD_NETWORK}.0.1"  # eth0's address in every job network; pods draw from 10.244.1.0 onwards
SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service's ClusterIP: the first address of kube's default service CIDR
SERVICE_PORT = 443
INTERFACE = "eth0"
_CLONE_NEWNET = 0x40000000
_RT_TABLE_LOCAL = 255
_libc = ctypes.CDLL(None, use_errno=True)


def namespace_name(cluster_id: str, job_uid: str) -> str:
    return f"mpijob-{cluster_id[:8]}-{job_uid}"


class JobNetwork:
    """One job's network namespace, and the relay to the API server inside it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.path = NETNS_DIR / name
        self._relay: asyncio.Server | None = None

    @classmethod
    async def create(cls, name: str) -> JobNetwork:
        network = cls(name)
        await asyncio.to_thread(_in_own_thread, None, lambda: _configure(network.path))
        return network

    def socket(self) -> socket.socket:
        """A TCP socket that lives in the job's network (for the server's probes and relay)."""
        return _in_own_thread(self.path, socket.socket)

    def enter(self, argv: list[str]) -> list[str]:
        """`argv`, run in the job's network (nsenter execs it: the process stays the caller's child)."""
        return ["nsenter", f"--net={self.path}", "--", *argv]

    async def serve_api(self, upstream: tuple[str, int]) -> None:
        """Relay connections to `SERVICE_IP:SERVICE_PORT` in the job's network to the API server at
        `upstream`, byte for byte: TLS ends at the server, whose certificate names the Service address."""
        listener = self.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((SERVICE_IP, SERVICE_PORT))
        listener.listen(128)
        listener.setblocking(False)

        async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection(*upstream)
            except OSError:
                writer.close()
                return
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))

        self._relay = await asyncio.start_server(relay, sock=listener)

    async def close(self) -> None:
        """Stop the relay and remove the namespace (its processes have ended: pods are torn down first)."""
        if self._relay is not None:
            self._relay.close()
            self._relay = None
        remove(self.path)


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()


def _configure(path: Path) -> None:
    """In a thread that has just entered a new network namespace: lo and eth0 up, the local routes, then
    bind the namespace at `path`."""
    with IPRoute() as ip:
        (lo,) = ip.link_lookup(ifname="lo")
        ip.link("set", index=lo, state="up")
        ip.link("add", ifname=INTERFACE, kind="tuntap", mode="tun")
        (eth,) = ip.link_lookup(ifname=INTERFACE)
        ip.link("set", index=eth, state="up")
        ip.addr("add", index=eth, address=JOB_ADDRESS, prefixlen=32)
        for dst, length in ((f"{POD_NETWORK}.0.0", 16), (SERVICE_IP, 32)):
            ip.route("add", dst=dst, dst_len=length, type="local", table=_RT_TABLE_LOCAL, scope="host", oif=lo)
    path.parent.mkdir(parents=True, exist_ok=True)
    netns.attach(str(path), "thread-self")


def _in_own_thread(path: Path | None, fn: Callable[[], T]) -> T:
    """`fn()` run by a new thread in the network namespace at `path` (a new namespace when None). The
    thread ends afterwards, so no thread of the server is ever left in a job's network."""
    result: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            if path is None:
                if _libc.unshare(_CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET) failed")
            else:
                fd = os.open(path, os.O_RDONLY)
                try:
                    netns.setns(fd)
                finally:
                    os.close(fd)
            result.append(fn())
        except BaseException as e:  # noqa: BLE001 — handed to the caller's thread, which raises it
            error.append(e)

    thread = threading.Thread(target=run, name="mpijob-netns")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        netns.remove(str(path))


def remove_leftovers(cluster_id: str, keep: Collection[str] = ()) -> int:
    """Remove the job networks a previous server of this cluster left, but those named in `keep` (of
    re-adopted runs)."""
    prefix = namespace_name(cluster_id, "")
    found = [p for p in NETNS_DIR.glob(prefix + "*") if p.name not in keep] if NETNS_DIR.is_dir() else []
    for path in found:
        remove(path)
    return len(found)
