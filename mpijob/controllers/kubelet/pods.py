"""The kubelet's part: one pod = one process tree, its output in the log store, its status in the store."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.mpi_output import LauncherOutput
from mpijob.api.names import CONTAINER
from mpijob.api.resources import PODS
from mpijob.store.logs import LogStore, LogWriter
from mpijob.store.objects import Store, now

PIPE_SIZE = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size


@dataclass
class Exit:
    code: int  # exit code, or 128 + signal like a container runtime reports it
    signal: int | None = None

    @property
    def ok(self) -> bool:
        return self.code == 0


@dataclass
class PodProcess:
    """A running pod. `wait()` returns its `Exit`; `kill()` ends its whole process tree."""

    namespace: str
    name: str
    proc: asyncio.subprocess.Process
    drained: list[asyncio.Future[None]] = field(default_factory=list)  # one per output stream
    killed_by_us: bool = False

    async def wait(self) -> Exit:
        rc = await self.proc.wait()
        await asyncio.gather(*self.drained, return_exceptions=True)
        if rc < 0:
            return Exit(128 - rc, -rc)
        if 128 < rc < 128 + signal.NSIG:  # the sandbox's shell reports a killed command as 128 + signal
            return Exit(rc, rc - 128)
        return Exit(rc)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the pod's process group; in namespace mode its init takes the namespace with it."""
        self.killed_by_us = True
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


def _pipe() -> tuple[int, int]:
    """A pipe as large as the system allows: a burst of output waits in the kernel, not in mpirun."""
    r, w = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    return r, w


def _pump(fd: int, writer: LogWriter, done: Callable[[], None]) -> None:
    """Copy one output stream into the container log until every writer of the pipe has closed it."""
    try:
        while chunk := os.read(fd, 65536):
            writer.write(chunk)
    finally:
        os.close(fd)
        writer.close()
        done()


async def spawn(
    logs: LogStore, namespace: str, name: str, argv: list[str], env: dict[str, str], cwd: str | None = None,
    mpi_output: Callable[[], LauncherOutput] | None = None,
) -> PodProcess:
    """Start a pod in its own session; stdout and stderr go, stamped, to its container log (through a
    `mpi_output()` of their own for a launcher, so each line's rank is kept beside it).

    Each stream is read by a thread of its own, never by the event loop: Open MPI 4.1's mpirun drops
    the ranks' output (and still exits 0) when its stdout is read too slowly, and the loop may be busy."""
    loop = asyncio.get_running_loop()
    pipes = [_pipe(), _pipe()]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=pipes[0][1],
            stderr=pipes[1][1],
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except BaseException:
        for r, _ in pipes:
            os.close(r)
        raise
    finally:
        for _, w in pipes:
            os.close(w)
    pod = PodProcess(namespace, name, proc)
    for stream, (r, _) in zip(("stdout", "stderr"), pipes):
        drained: asyncio.Future[None] = loop.create_future()

        def done(f: asyncio.Future[None] = drained) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                loop.call_soon_threadsafe(lambda: f.done() or f.set_result(None))

        pod.drained.append(drained)
        # one per stream: each keeps its own partial line (and each rank's)
        writer = logs.writer(namespace, name, CONTAINER, mpi_output() if mpi_output else None)
        threading.Thread(target=_pump, args=(r, writer, done), name=f"log-{name}-{stream}", daemon=True).start()
    return pod


# -- status, written as a kubelet reports it -------------------------------------------------------


def _container_status(pod: Obj, state: dict[str, Any], ready: bool) -> dict[str, Any]:
    container = pod["spec"]["containers"][0]
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
        "started": "running" in state,
        "state": state,
    }


def _conditions(pod: Obj, ready: bool, ts: str, phase: str = "Running") -> list[dict[str, Any]]:
    """The kubelet's four pod conditions. A transition time moves only when a status flips; a pod
    that is not ready says why, in the kubelet's words."""
    before = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or []}
    container = pod["spec"]["containers"][0]["name"]
    if ready:
        why: dict[str, str] = {}
    elif phase in ("Succeeded", "Failed"):
        why = {"reason": "PodCompleted" if phase == "Succeeded" else "PodFailed"}
    else:
        why = {"reason": "ContainersNotReady", "message": f"containers with unready status: [{container}]"}
    out = []
    for kind, status in ((names.POD_SCHEDULED, True), ("Initialized", True), ("ContainersReady", ready), ("Ready", ready)):
        value = "True" if status else "False"
        old = before.get(kind) or {}
        since = old.get("lastTransitionTime") if old.get("status") == value else ts
        out.append({"type": kind, "status": value, "lastTransitionTime": since or ts, **({} if status else why)})
    return out


def set_running(store: Store, namespace: str, name: str, ip: str, ready: bool = False) -> Obj | None:
    pod = store.try_get(PODS, namespace, name)
    if pod is None:
        return None
    status = pod.setdefault("status", {})
    ts = now()
    started = status.get("startTime") or ts
    status.update(
        phase="Running",
        podIP=ip,
        podIPs=[{"ip": ip}],
        hostIP="127.0.0.1",
        startTime=started,
        conditions=_conditions(pod, ready, ts),
        containerStatuses=[_container_status(pod, {"running": {"startedAt": started}}, ready)],
    )
    return store.update(PODS, pod, status=True)


def set_terminated(
    store: Store, namespace: str, name: str, exit: Exit, reason: str | None = None, message: str = ""
) -> Obj | None:
    """Terminal phase: `Succeeded` only for exit 0; reason `Completed`, `Error` or `OOMKilled`."""
    pod = store.try_get(PODS, namespace, name)
    if pod is None:
        return None
    status = pod.setdefault("status", {})
    ts = now()
    terminated: dict[str, Any] = {
        "exitCode": exit.code,
        "reason": reason or ("Completed" if exit.ok else "Error"),
        "startedAt": status.get("startTime") or ts,
        "finishedAt": ts,
    }
    if exit.signal:
        terminated["signal"] = exit.signal
    if message:
        terminated["message"] = message
    phase = "Succeeded" if exit.ok else "Failed"
    status.update(
        phase=phase,
        conditions=_conditions(pod, False, ts, phase),
        containerStatuses=[_container_status(pod, {"terminated": terminated}, False)],
    )
    if message:
        status["message"] = message
    if reason and not exit.ok:
        status["reason"] = reason
    return store.update(PODS, pod, status=True)
