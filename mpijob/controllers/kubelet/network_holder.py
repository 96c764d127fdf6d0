"""The holder of a rootless job network (`network.HeldNetwork`): `python -m ... <abstract socket name>`.

It listens on its Unix socket first, in the host's network, then moves itself into a new user namespace
(the server's user mapped to root, the only mapping an unprivileged user may write) and a new network
namespace that user namespace owns, configures the network as root's job networks are (`network.configure`),
detaches and says READY. From then on it answers the server, and only the server's user: `s` with a TCP
socket in the job's network (its descriptor passed back), `p` with nothing (the caller reads the holder's
pid from the connection, to `nsenter` it), `q` by exiting, which frees the namespaces once the job's pods
are gone. Single-threaded until the namespaces are made: the kernel refuses a new user namespace to a
process with threads, so nothing that may start one is imported before.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import sys

READY = "ready"  # what it prints once it holds a configured network
PREFIX = "mpijob-net:"  # of its abstract socket's name: the job network's name follows
SOCKET, PID, QUIT = b"s", b"p", b"q"  # the requests, one byte each
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000


def _own_namespaces() -> None:
    uid, gid = os.geteuid(), os.getegid()
    if ctypes.CDLL(None, use_errno=True).unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWUSER|CLONE_NEWNET): {os.strerror(errno)}")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _serve(listener: socket.socket) -> None:
    while True:
        conn, _ = listener.accept()
        with conn:
            _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                            struct.calcsize("3i")))
            if uid != os.geteuid():  # another user of the machine (seen as the overflow uid here)
                continue
            request = conn.recv(1)
            if request == QUIT:  # the name is free once the caller hears back: a next run may take it
                listener.close()
                return
            if request == SOCKET:
                with socket.socket() as sock:
                    socket.send_fds(conn, [SOCKET], [sock.fileno()])
            else:
                conn.sendall(PID)


def main(address: str) -> int:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + address)  # in the host's network: an abstract name belongs to its network namespace
    _own_namespaces()
    from pyroute2 import IPRoute

    from mpijob.controllers.kubelet.network import configure

    with IPRoute() as ip:
        configure(ip)
    if os.fork():  # detach: the caller reaps this process, and the holder is nobody's child
        return 0
    listener.listen(64)  # by the holder itself, whose pid its peers then read (SO_PEERCRED is the listener's)
    print(READY, flush=True)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _serve(listener)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
