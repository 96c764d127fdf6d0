"""A job's own network (namespace and rootless sandboxes): one Linux network namespace per TrainJob.

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

Two ways to hold it, one per sandbox, behind one interface (`JobNetwork`: a socket in it for the server's
probes and relay, the argv that runs a pod in it, close):

* root (`BoundNetwork`): the namespace is bound at `/run/netns/<name>`, as `ip netns add` does, so
  `ip netns exec <name> ss -tlnp` shows a job's sockets; a thread of its own enters it, so no other thread
  of the server ever leaves the host's network;
* rootless (`HeldNetwork`): an unprivileged user may make a network namespace only inside a user
  namespace of its own, and may neither bind it under /run nor enter it from a thread of a server that is
  not root there. A holder process (`network_holder.py`) makes both, configures the network, and stays:
  pods join its namespaces through `nsenter`, and the server gets sockets in the job's network from it,
  passed over a Unix socket (SCM_RIGHTS), as rootless Podman's pause process holds a pod's.

pyroute2 speaks netlink to configure either.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TypeVar

from pyroute2 import IPRoute, netns

from mpijob.api.sandbox_mode import SandboxMode
from mpijob.controllers.kubelet import network_holder
from mpijob.controllers.kubelet.network_holder import PID, QUIT, SOCKET
from mpijob.controllers.kubelet.network_holder import PREFIX as HOLDER_PREFIX

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
HOLDER_READY = 20.0  # seconds for a holder to make and configure its namespaces, or to answer


def namespace_name(cluster_id: str, job_uid: str) -> str:
    return f"mpijob-{cluster_id[:8]}-{job_uid}"


def configure(ip: IPRoute) -> None:
    """A job network's links, as every pod sees them: lo and eth0 up, the pod CIDR and the Service address local."""
    (lo,) = ip.link_lookup(ifname="lo")
    ip.link("set", index=lo, state="up")
    ip.link("add", ifname=INTERFACE, kind="tuntap", mode="tun")
    (eth,) = ip.link_lookup(ifname=INTERFACE)
    ip.link("set", index=eth, state="up")
    ip.addr("add", index=eth, address=JOB_ADDRESS, prefixlen=32)
    for dst, length in ((f"{POD_NETWORK}.0.0", 16), (SERVICE_IP, 32)):
        ip.route("add", dst=dst, dst_len=length, type="local", table=_RT_TABLE_LOCAL, scope="host", oif=lo)


class JobNetwork:
    """One job's network namespace, and the relay to the API server inside it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._relay: asyncio.Server | None = None

    def socket(self) -> socket.socket:
        """A TCP socket that lives in the job's network (for the server's probes and relay)."""
        raise NotImplementedError

    def enter(self, argv: list[str]) -> list[str]:
        """`argv`, run in the job's network (nsenter execs it: the process stays the caller's child)."""
        raise NotImplementedError

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
        self._remove()  # at once, no await: a next run of the job (requeued, resumed) makes one of this name

    def _remove(self) -> None:
        raise NotImplementedError


class BoundNetwork(JobNetwork):
    """Root's: the namespace bound at /run/netns/<name>, entered by threads of its own."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.path = NETNS_DIR / name

    @classmethod
    async def create(cls, name: str) -> BoundNetwork:
        network = cls(name)
        await asyncio.to_thread(_in_own_thread, None, lambda: _configure(network.path))
        return network

    def socket(self) -> socket.socket:
        return _in_own_thread(self.path, socket.socket)

    def enter(self, argv: list[str]) -> list[str]:
        return ["nsenter", f"--net={self.path}", "--", *argv]

    def _remove(self) -> None:
        remove(self.path)


class HeldNetwork(JobNetwork):
    """Rootless: the namespace and the user namespace that owns it, held by a holder process
    (`network_holder.py`), which outlives the server as a bound namespace does."""

    @property
    def address(self) -> str:
        return "\0" + HOLDER_PREFIX + self.name

    @classmethod
    async def create(cls, name: str) -> HeldNetwork:
        await asyncio.to_thread(_start_holder, name)
        return cls(name)

    def _ask(self, request: bytes) -> tuple[int, list[int]]:
        """Send the holder a request: its pid, and the descriptors it answers with."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(HOLDER_READY)
            try:
                conn.connect(self.address)
            except OSError as e:
                raise OSError(f"the network holder of job network {self.name} is gone ({e.strerror})") from None
            pid, _, _ = _peer(conn)
            conn.sendall(request)
            _, fds, _, _ = socket.recv_fds(conn, 1, 1)
            return pid, fds

    def socket(self) -> socket.socket:
        _, fds = self._ask(SOCKET)
        if not fds:
            raise OSError(f"the network holder of job network {self.name} gave no socket")
        return socket.socket(fileno=fds[0])

    @functools.cached_property
    def pid(self) -> int:
        """The holder's, whose namespaces a pod joins: it lives as long as the network."""
        pid, fds = self._ask(PID)
        for fd in fds:
            os.close(fd)
        return pid

    def enter(self, argv: list[str]) -> list[str]:
        """As the user namespace's root (our own uid, mapped to 0 there), with all its capabilities."""
        return ["nsenter", f"--target={self.pid}", "--user", "--net", "--preserve-credentials", "--", *argv]

    def _remove(self) -> None:
        with contextlib.suppress(OSError):
            self._ask(QUIT)


def _peer(conn: socket.socket) -> tuple[int, int, int]:
    """The pid, uid and gid of the process at the other end of a Unix socket."""
    return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))


def _start_holder(name: str) -> None:
    """Start a holder for job network `name` and wait until it holds a configured network; it detaches
    (its first process exits once the holder runs, so nothing is left to reap)."""
    try:
        done = subprocess.run([sys.executable, "-I", "-m", network_holder.__name__, HOLDER_PREFIX + name],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=HOLDER_READY,
                              check=False, start_new_session=True, env={"PATH": os.environ.get("PATH", "")})
    except subprocess.TimeoutExpired:
        raise OSError(f"job network {name}: its holder did not set up a user and a network namespace within "
                      f"{HOLDER_READY:.0f} s") from None
    if done.returncode != 0 or done.stdout.strip() != network_holder.READY:
        said = (done.stderr.strip().splitlines() or ["(nothing)"])[-1]
        raise OSError(f"job network {name}: could not make a user and a network namespace: {said}")


async def create(mode: SandboxMode, name: str) -> JobNetwork | None:
    """A new job network for `mode`'s pods; None for the process sandbox, which shares the host's."""
    kind = _KINDS.get(mode)
    return await kind.create(name) if kind else None


def existing(mode: SandboxMode, name: str) -> JobNetwork | None:
    """The job network an earlier server made (a re-adopted run's)."""
    kind = _KINDS.get(mode)
    return kind(name) if kind else None


_KINDS: dict[SandboxMode, type[BoundNetwork] | type[HeldNetwork]] = {
    SandboxMode.NAMESPACE: BoundNetwork, SandboxMode.ROOTLESS: HeldNetwork}


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
    """In a thread that has just entered a new network namespace: configure it, then bind it at `path`."""
    with IPRoute() as ip:
        configure(ip)
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


def _held() -> list[str]:
    """The names of the job networks whose holders listen (rootless), from the kernel's Unix socket table."""
    try:
        table = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return []
    marker = "@" + HOLDER_PREFIX
    return sorted({f.removeprefix(marker) for line in table if (f := line.split()[-1]).startswith(marker)})


def remove_leftovers(mode: SandboxMode, cluster_id: str, keep: Collection[str] = ()) -> int:
    """Remove the job networks a previous server of this cluster left, but those named in `keep` (of
    re-adopted runs)."""
    prefix = namespace_name(cluster_id, "")
    if mode == SandboxMode.ROOTLESS:
        found = [n for n in _held() if n.startswith(prefix) and n not in keep]
        for name in found:
            HeldNetwork(name)._remove()
        return len(found)
    paths = [p for p in NETNS_DIR.glob(prefix + "*") if p.name not in keep] if NETNS_DIR.is_dir() else []
    for path in paths:
        remove(path)
    return len(paths)
