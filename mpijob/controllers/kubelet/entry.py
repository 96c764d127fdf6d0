"""Getting inside a running pod: what `kubectl exec`, `attach`, `cp` and `port-forward` reach.

A command run in a pod runs as the pod's container runs: in its mount, PID, UTS and network namespaces
(namespace and rootless sandboxes), as its user, with its groups and no capabilities, in its cgroup (so it
counts against the pod's limits), with the container's environment, in its working directory. It enters
through the pod's first process, the sandbox's PID 1, so it ends when the pod ends, as an exec'd process
ends with its container. A rootless pod is entered as the job's user namespace's root, then dropped into
a user namespace of its own that maps the pod's uid, as the pod's own command was (`sandbox.JobFiles.drop`).
In the process sandbox there is nothing to enter: the command runs as the server's user, in the pod's
directory, with its environment.

A port is reached as the kubelet reaches it, at `localhost` in the pod's network; a job's pods share one
network, so a port a rank binds on its pod address only is tried there next.
"""

from __future__ import annotations

import asyncio
import errno
import shlex
import shutil
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.sandbox_mode import SandboxMode
from mpijob.controllers.kubelet.network import JobNetwork
from mpijob.controllers.kubelet.sandbox import JobFiles, User

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
CONNECT_TIMEOUT = 5.0  # seconds to reach a port in the pod's network (kube's port-forward has no shorter bound)
# The command's shell: into the working directory (as its container starts there), or `/` where it is
# gone, then the command itself, which replaces the shell
_IN_DIR = 'cd "$0" 2>/dev/null || cd /; exec "$@"'
SETSID = shutil.which("setsid") or "/usr/bin/setsid"  # util-linux's: named by path, the pod's PATH may lack it


@dataclass(frozen=True)
class PodEntry:
    """How to run a command in one running pod, and reach its ports."""

    pod: str
    mode: SandboxMode
    prefix: tuple[str, ...]  # what enters the pod and becomes its user, with its environment
    work_dir: str  # where the command starts: the container's workingDir, or its home
    connect: Callable[[int], Awaitable[Streams]]  # a connection to a port in the pod's network
    stdin: Path | None = None  # the pipe its container reads, when it asked for a stdin (`shim.STDIN`)

    def argv(self, command: Sequence[str], tty: bool = False) -> list[str]:
        """`command` in the pod, leading a session of its own there (with the terminal on its stdin when
        `tty`): a shell's job control then works as in a container, and the session is what ends with it."""
        return [*self.prefix, SETSID, *(["--ctty"] if tty else []), "/bin/sh", "-c", _IN_DIR, self.work_dir,
                *command]


def first_process(pid: int) -> int:
    """The sandbox's PID 1: the child `unshare --fork` (the pod's process, `pid`) started."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    if not children:
        raise ProcessLookupError(f"the pod's process {pid} has no sandbox (it is ending)")
    return int(children[0])


def exec_prefix(files: JobFiles, user: User, env: dict[str, str], pid: int, cgroup_procs: Sequence[Path] = ()
                ) -> tuple[str, ...]:
    """The argv prefix that enters the pod whose first process is `pid` (see the module doc)."""
    values = [f"{k}={v}" for k, v in env.items()]
    if files.mode == SandboxMode.PROCESS:
        return ("env", "-i", *values)
    init = first_process(pid)
    join = "; ".join(f"echo $$ > {shlex.quote(str(p))}" for p in cgroup_procs)  # before it enters: its children too
    # rootless: as the user namespace's root, which the server's uid is there (setgroups is denied in it)
    owner = ["--user", "--preserve-credentials"] if files.mode == SandboxMode.ROOTLESS else []
    enter = ["nsenter", f"--target={init}", *owner,
             "--mount", "--pid", "--uts", "--net", "--root", "--"]
    drop = shlex.split(files.drop(user))
    inner = [*enter, *drop, "env", "-i", *values]
    if not join:
        return tuple(inner)
    return ("/bin/sh", "-c", f'{join}; exec "$@"', "enter", *inner)


def connector(network: JobNetwork | None, address: str) -> Callable[[int], Awaitable[Streams]]:
    """Connections to a pod's port: in its job's network at localhost, then at the pod's `address`; on this
    machine's localhost in the process sandbox (which has no network of its own)."""

    async def connect(port: int) -> Streams:
        last: OSError | None = None
        for host in ("127.0.0.1", address) if network else ("127.0.0.1",):
            sock = network.socket() if network else socket.socket()
            sock.setblocking(False)
            try:
                await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, port)), CONNECT_TIMEOUT)
                return await asyncio.open_connection(sock=sock)
            except TimeoutError:
                sock.close()
                raise OSError(errno.ETIMEDOUT, f"no answer within {CONNECT_TIMEOUT:g} s") from None
            except OSError as e:
                sock.close()
                last = e
        assert last is not None
        raise last

    return connect
