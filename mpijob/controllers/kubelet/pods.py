"""The kubelet's part: one pod = one process tree, its output in the log store, its status in the store."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.resources import PODS
from mpijob.api.names import CONTAINER
from mpijob.controllers.kubelet import shim
from mpijob.controllers.kubelet.cgroups import PodCgroup
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store, now


@dataclass
class Exit:
    code: int  # exit code, or 128 + signal like a container runtime reports it
    signal: int | None = None

    @property
    def ok(self) -> bool:
        return self.code == 0


@dataclass
class PodProcess:
    """A pod, held by its supervisor (`shim.py`): `wait()` returns its `Exit` once the supervisor has
    recorded it; `kill()` signals every process of the pod. The same whether this server started the pod
    or re-adopted it after a restart (`adopt`)."""

    namespace: str
    name: str
    pid: int  # the pod's first process: its session and process group are the pod's
    state_dir: Path  # the supervisor's spec, state and exit record
    ended: asyncio.Future[None]  # done once the supervisor has recorded the exit and gone

    @property
    def running(self) -> bool:
        return not self.ended.done()

    async def wait(self) -> Exit:
        await asyncio.shield(self.ended)
        return recorded_exit(self.state_dir)

    def lost(self) -> str:
        """Why a pod that has ended left no exit status ("" when it did, or still runs)."""
        if self.running or (self.state_dir / shim.EXIT).exists():
            return ""
        state = json.loads((self.state_dir / shim.STATE).read_text())
        if state.get("boot_id") != shim.boot_id():
            return "the machine restarted while the local cluster's control plane was down"
        if failure := shim.failure(self.state_dir):
            return f"its supervisor failed: {failure}"
        return "its supervisor was killed while the local cluster's control plane was down"

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the pod's process group; in namespace mode its init takes the namespace with it."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)


# A pod whose supervisor went without a record (it was killed, or the machine rebooted): as if SIGKILLed.
LOST = Exit(128 + signal.SIGKILL, signal.SIGKILL)


def exit_of(returncode: int) -> Exit:
    """A pod's exit as a container runtime reports it, from its first process's return code."""
    if returncode < 0:
        return Exit(128 - returncode, -returncode)
    if 128 < returncode < 128 + signal.NSIG:  # the sandbox's shell reports a killed command as 128 + signal
        return Exit(returncode, returncode - 128)
    return Exit(returncode)


def recorded_exit(state_dir: Path) -> Exit:
    try:
        record = json.loads((state_dir / shim.EXIT).read_text())
    except (OSError, ValueError):
        return LOST
    return exit_of(int(record["returncode"]))


def forget(state_dir: Path) -> None:
    """Remove what an earlier supervisor recorded in `state_dir`, so that no restarted server adopts it."""
    for old in (shim.STATE, shim.EXIT, shim.ERRORS):
        (state_dir / old).unlink(missing_ok=True)


async def spawn(
    logs: LogStore, namespace: str, name: str, argv: list[str], env: dict[str, str], state_dir: Path,
    cwd: str | None = None, mpi: dict[str, bool] | None = None, cgroup: PodCgroup | None = None,
    ends_with: Path | None = None, rank_output: Path | None = None, stdin: bool = False, container: str = CONTAINER,
) -> PodProcess:
    """Start a pod under a supervisor of its own (`shim.py`), which writes its stdout and stderr, stamped,
    to its container log (`container`'s; each line with its rank for a launcher: `mpi` holds LauncherOutput's
    options, and `rank_output` the directory its ranks' agents write to; `stdin`: the container
    reads a pipe `kubectl attach -i` writes to) and records its exit in `state_dir`; a node pod
    stops itself a while after `ends_with` (its launcher's exit record) appears, should no server do it.
    Returns once the pod's first process runs."""
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    forget(state_dir)
    log = logs.path(namespace, name, container)
    log.parent.mkdir(parents=True, exist_ok=True)
    shim.write_atomically(state_dir / shim.SPEC, {
        "argv": argv, "env": env, "cwd": cwd, "log": str(log), "mpi": mpi, "ends_with": str(ends_with or ""),
        "rank_output": str(rank_output or ""), "stdin": stdin,
        "cgroup": {"path": str(cgroup.path), "version": cgroup.version} if cgroup else None}, durable=False)
    answer = await _fork_server().supervise(state_dir)
    if not answer.isdigit():  # the pod could not be started: the supervisor says why
        raise OSError(f"pod {namespace}/{name} could not start: {answer.removeprefix('! ')}")
    state = json.loads((state_dir / shim.STATE).read_text())
    return PodProcess(namespace, name, int(answer), state_dir, _supervisor_end(state))


class _ForkServer:
    """The supervisors' fork server of this server (`shim.serve`), started on first use and again should
    it die. Not asyncio's subprocess: its child watcher would outlive the loop with the process."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.waiting: dict[str, asyncio.Future[str]] = {}
        self.tokens = itertools.count()

    def _start(self, loop: asyncio.AbstractEventLoop) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-I", "-m", shim.__name__], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env={"PATH": os.environ.get("PATH", "")}, start_new_session=True)
        assert proc.stdout
        fd, pending = proc.stdout.fileno(), [b""]
        os.set_blocking(fd, False)

        def answers() -> None:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return
            if not chunk:  # it died: whoever waits is told, and the next pod starts a new one
                loop.remove_reader(fd)
                proc.wait()
                for waiter in self.waiting.values():
                    if not waiter.done():
                        waiter.set_exception(OSError("the supervisors' fork server exited"))
                self.waiting.clear()
                return
            *lines, pending[0] = (pending[0] + chunk).split(b"\n")
            for line in lines:
                token, _, answer = line.decode(errors="replace").partition(" ")
                if (future := self.waiting.pop(token, None)) and not future.done():
                    future.set_result(answer)

        loop.add_reader(fd, answers)
        return proc

    async def supervise(self, state_dir: Path) -> str:
        """Have a supervisor started for the pod `state_dir` describes: its pod's pid, or `! <why>`."""
        loop = asyncio.get_running_loop()
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start(loop)
        token = str(next(self.tokens))
        self.waiting[token] = future = loop.create_future()
        assert self.proc.stdin
        self.proc.stdin.write(f"{token}\t{state_dir}\n".encode())
        self.proc.stdin.flush()
        return await future


_fork_servers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _ForkServer] = weakref.WeakKeyDictionary()


def _fork_server() -> _ForkServer:
    """This event loop's fork server: a server has one loop, a test may run several."""
    return _fork_servers.setdefault(asyncio.get_running_loop(), _ForkServer())


def _supervisor_end(state: dict[str, Any]) -> asyncio.Future[None]:
    """Done once the supervisor `state.json` names has ended (at once when it has already: gone, of an
    earlier boot, or its pid another process's now), seen through a pidfd: it is no child of ours."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    try:
        if state["boot_id"] != shim.boot_id() or shim.start_time(int(state["shim"])) != int(state["shim_start"]):
            raise ProcessLookupError
        fd = os.pidfd_open(int(state["shim"]))
    except OSError:  # ProcessLookupError among them
        ended.set_result(None)
        return ended

    def gone() -> None:
        loop.remove_reader(fd)
        os.close(fd)
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(fd, gone)
    return ended


def adopt(namespace: str, name: str, state_dir: Path) -> PodProcess | None:
    """The pod a supervisor of an earlier server holds, if one was started (None: never). Its supervisor
    may still run (the pod is watched through a pidfd, as it is no child of ours), or have ended while no
    server ran: its exit record says how; none means the supervisor was killed or the machine rebooted."""
    try:
        state = json.loads((state_dir / shim.STATE).read_text())
    except (OSError, ValueError):
        return None
    return PodProcess(namespace, name, int(state["pid"]), state_dir, _supervisor_end(state))


# -- status, written as a kubelet reports it -------------------------------------------------------


@dataclass(frozen=True)
class Restarts:
    """A restarted container's history, as its status shows it: how often it was restarted, and how its last
    run ended (`lastState.terminated`; empty before its first restart)."""

    count: int = 0
    last: dict[str, Any] = field(default_factory=dict)


NO_RESTARTS = Restarts()  # a container started once


def _container_status(pod: Obj, state: dict[str, Any], ready: bool, restarts: Restarts) -> dict[str, Any]:
    container = pod["spec"]["containers"][0]
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": ready,
        "restartCount": restarts.count,
        "started": "running" in state,
        "state": state,
        **({"lastState": {"terminated": restarts.last}} if restarts.last else {}),
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
    for kind, status in ((names.POD_SCHEDULED, True), ("Initialized", True), ("ContainersReady", ready),
                         ("Ready", ready)):
        value = "True" if status else "False"
        old = before.get(kind) or {}
        since = old.get("lastTransitionTime") if old.get("status") == value else ts
        out.append({"type": kind, "status": value, "lastTransitionTime": since or ts, **({} if status else why)})
    return out


def set_running(store: Store, namespace: str, name: str, ip: str, ready: bool = False,
                restarts: Restarts = NO_RESTARTS) -> Obj | None:
    """Running, its container started (now, when it was `restarts`ed; else when the pod started)."""
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
        containerStatuses=[_container_status(
            pod, {"running": {"startedAt": ts if restarts.count else started}}, ready, restarts)],
    )
    return store.update(PODS, pod, status=True)


def set_waiting(store: Store, namespace: str, name: str, reason: str, message: str, restarts: Restarts) -> Obj | None:
    """Running, its container waiting to be started again (`CrashLoopBackOff`), as a restartable pod stays."""
    pod = store.try_get(PODS, namespace, name)
    if pod is None:
        return None
    status = pod.setdefault("status", {})
    status.update(phase="Running", conditions=_conditions(pod, False, now()), containerStatuses=[
        _container_status(pod, {"waiting": {"reason": reason, "message": message}}, False, restarts)])
    return store.update(PODS, pod, status=True)


def terminated_state(exit: Exit, started: str, reason: str | None = None, message: str = "") -> dict[str, Any]:
    """A container's `state.terminated` now: `reason` `Completed` for exit 0, else `Error`, unless given."""
    terminated: dict[str, Any] = {
        "exitCode": exit.code,
        "reason": reason or (names.REASON_CONTAINER_COMPLETED if exit.ok else names.REASON_CONTAINER_ERROR),
        "startedAt": started,
        "finishedAt": now(),
    }
    if exit.signal:
        terminated["signal"] = exit.signal
    if message:
        terminated["message"] = message
    return terminated


def set_terminated(
    store: Store, namespace: str, name: str, exit: Exit, reason: str | None = None, message: str = "",
    restarts: Restarts = NO_RESTARTS, started: str = "",
) -> Obj | None:
    """Terminal phase: `Succeeded` only for exit 0; reason `Completed`, `Error` or `OOMKilled`. `started`: when
    the container that ended started (default: when the pod did)."""
    pod = store.try_get(PODS, namespace, name)
    if pod is None:
        return None
    status = pod.setdefault("status", {})
    ts = now()
    terminated = terminated_state(exit, started or status.get("startTime") or ts, reason, message)
    phase = "Succeeded" if exit.ok else "Failed"
    status.update(
        phase=phase,
        conditions=_conditions(pod, False, ts, phase),
        containerStatuses=[_container_status(pod, {"terminated": terminated}, False, restarts)],
    )
    if message:
        status["message"] = message
    if reason and not exit.ok:
        status["reason"] = reason
    return store.update(PODS, pod, status=True)
