"""A job's own network, both ways of holding it (`network.py`): root's bound namespace and the rootless
holder's. Each gives the server sockets inside the job's network and runs a pod's argv there; nothing of
it is reachable from the machine's network, the API relay answers at the Service address, and closing
it (or a restarted server's sweep) leaves nothing behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.controllers.kubelet import network, rootless
from mpijob.controllers.kubelet.network import HOLDER_PREFIX, SERVICE_IP, SERVICE_PORT, HeldNetwork

from support.unprivileged import UID, USERNS_REFUSED, ensure_user

ROOTLESS = pytest.param(SandboxMode.ROOTLESS, marks=pytest.mark.skipif(bool(USERNS_REFUSED), reason=USERNS_REFUSED))
MODES = [SandboxMode.NAMESPACE, ROOTLESS]
CONNECT = ("import socket, sys; s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); "
           "print(s.recv(100).decode())")


def _exists(mode: SandboxMode, net: network.JobNetwork) -> bool:
    if mode == SandboxMode.ROOTLESS:
        return f"@{HOLDER_PREFIX}{net.name}" in Path("/proc/net/unix").read_text()
    return (network.NETNS_DIR / net.name).exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_pod_reaches_a_socket_of_the_server_in_its_network_and_the_machine_does_not(mode: SandboxMode) -> None:
    async def scenario() -> None:
        name = network.namespace_name("0" * 16, f"test-{mode}-{os.getpid()}")
        net = await network.create(mode, name)
        assert net is not None and _exists(mode, net)
        try:
            listener = net.socket()
            listener.bind(("10.244.7.7", 8080))  # a pod address: no interface of the machine's has it
            listener.listen(1)
            argv = net.enter([sys.executable, "-c", CONNECT, "10.244.7.7", "8080"])
            pod = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
            conn, _ = await asyncio.to_thread(listener.accept)
            conn.sendall(b"inside")
            conn.close()
            assert pod.communicate(timeout=10)[0].strip() == "inside"
            # from the machine's network the address is not the pod's (here a proxy may answer any address)
            with contextlib.suppress(OSError):
                socket.create_connection(("10.244.7.7", 8080), timeout=1).close()
            listener.settimeout(0.5)
            with pytest.raises(TimeoutError):
                listener.accept()
            listener.close()

            async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                writer.write(b"api")
                await writer.drain()
                writer.close()

            api = await asyncio.start_server(upstream, "127.0.0.1", 0)
            await net.serve_api(api.sockets[0].getsockname()[:2])
            relayed = net.enter([sys.executable, "-c", CONNECT, SERVICE_IP, str(SERVICE_PORT)])
            out = await asyncio.to_thread(subprocess.run, relayed, capture_output=True, text=True, timeout=10)
            assert out.stdout.strip() == "api", out.stderr
            api.close()
        finally:
            await net.close()
        assert not _exists(mode, net)

    asyncio.run(scenario())


@pytest.mark.parametrize("mode", MODES)
def test_a_restarted_server_removes_the_networks_its_predecessor_left(mode: SandboxMode) -> None:
    cluster = f"{os.getpid():016d}"
    kept, left = (network.namespace_name(cluster, f"{w}-{mode}") for w in ("kept", "left"))
    nets = [asyncio.run(network.create(mode, n)) for n in (kept, left)]
    try:
        assert network.remove_leftovers(mode, cluster, keep={kept}) == 1
        assert _exists(mode, nets[0]) and not _exists(mode, nets[1])
    finally:
        for net in nets:
            assert net is not None
            asyncio.run(net.close())


@pytest.mark.skipif(bool(USERNS_REFUSED), reason=USERNS_REFUSED)
def test_a_holder_gives_nothing_to_another_user() -> None:
    """Its abstract socket is any local user's to connect to: only the server's user gets an answer."""
    ensure_user()
    net = asyncio.run(HeldNetwork.create(network.namespace_name("1" * 16, f"other-{os.getpid()}")))
    try:
        ask = ("import socket, sys\nc = socket.socket(socket.AF_UNIX)\nc.connect(chr(0) + sys.argv[1])\n"
               "try:\n    c.sendall(b's')\n    print(len(socket.recv_fds(c, 1, 1)[1]))\nexcept OSError:\n    print(0)")
        other = subprocess.run(["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups", sys.executable,
                                "-c", ask, net.address[1:]], capture_output=True, text=True, timeout=10)
        assert other.stdout.strip() == "0", other.stderr
        assert net.socket().family == socket.AF_INET  # the server's user still gets its socket
    finally:
        asyncio.run(net.close())


def test_missing_mount_points_get_an_overlay_of_their_nearest_ancestor_once(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    """Where the server's user may not write (root's directories), a missing mount point's nearest existing
    ancestor becomes an overlay in the pod, the outermost one only; `/` is the pod's own tmpfs, and /run
    its own /run, so neither needs one."""
    closed = tmp_path / "closed"
    (closed / "a").mkdir(parents=True)
    (closed / "exists").touch()
    monkeypatch.setattr(os, "access", lambda path, mode: not Path(path).is_relative_to(closed))
    lines = rootless.overlays([str(closed / "a" / "x" / "y"), str(closed / "b"), str(closed / "exists"),
                               str(tmp_path / "open" / "z"), "/run/mpijob-x", "/no-such-top-level-dir"])
    assert len(lines) == 1 and f"lowerdir={closed}," in lines[0] and lines[0].endswith(f" {closed}"), lines
    assert rootless.overlays([str(closed / "exists"), str(tmp_path / "open" / "z")]) == []
