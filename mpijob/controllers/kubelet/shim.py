"""A pod's supervisor, as containerd-shim or conmon is to a container: the pod outlives the server.

The server has one started per pod (`pods.spawn`), in a session of its own, then lets it be. The
supervisor starts the pod's sandbox command as its child (in a session of its own too: the pod's
processes are that session's), answers the pod's pid, writes the pod's stdout and stderr, stamped and
with each launcher line's rank, straight into the container log, and once the pod has exited and its
output is drained, records the exit status (code or signal, the OOM kills of the pod's cgroup) in
`exit.json`, written atomically, and exits. It never reads from the server, so a server that is killed,
stopped or upgraded leaves it and its pod running; a restarted server finds it by `state.json` and
re-adopts the pod (`pods.adopt`). The namespace sandbox dies with the supervisor (its `--pdeathsig`), so
a supervisor killed takes its pod along and leaves no orphan.

Run as `python -m mpijob.controllers.kubelet.shim`, this module is the supervisors' fork server
(`serve`): started once per server with what a supervisor needs already imported, it forks one per
pod, so a supervisor costs a fork, not a Python start-up. It imports nothing of the server but how a
log line is written and how the kernel counts OOM kills.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from mpijob.api.trainer.mpi_output import LauncherOutput
from mpijob.controllers.kubelet.cgroups import oom_kills
from mpijob.controllers.kubelet.rank_files import RankFiles
from mpijob.store.logfile import LogWriter

SPEC, STATE, EXIT = "spec.json", "state.json", "exit.json"
ERRORS = "errors"  # what went wrong in the supervisor itself once its pod started (its stderr)
STDIN = "stdin"  # the pipe a container with `stdin: true` reads (`kubectl attach -i` writes to it)
PIPE_SIZE = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size: a burst of output waits in the kernel, not in mpirun
# A pod's output pipes: written by any user of the pod (`echo x > /dev/stderr` reopens the pipe, as a
# container's FIFO allows), read by the supervisor alone
PIPE_MODE = 0o622
# How often a launcher's output pipes are made blocking again (`_hold_blocking`), seconds
BLOCKING_CHECK = 0.05
# How often the ranks' output files are read (`rank_files.py`): with the log's follow, how late a rank's line
# reaches `kubectl logs -f`
RANK_POLL = 0.02
READ_SIZE = PIPE_SIZE  # one read empties a full pipe
QUEUED_READS = 64  # reads waiting to be stored (at most 64 MiB); past that, the pod's writes wait
ORPHANED = 10.0  # seconds a node pod outlives its launcher's end before it stops itself (a server does it in 2)
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")  # a new one each boot: a pod of an earlier boot is gone


def boot_id() -> str:
    return BOOT_ID.read_text().strip()


def start_time(pid: int) -> int:
    """The process's start, in clock ticks since boot: with the boot id, tells a reused pid apart."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    return int(raw.rpartition(")")[2].split()[19])


def write_atomically(path: Path, obj: object, durable: bool = True) -> None:
    """`obj` as JSON at `path`, complete or not at all; `durable`: even across a machine crash (an fsync,
    ~10 ms here: not for what a crash makes moot, such as a pod's spec, its pod gone with the machine)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    os.fchmod(w, PIPE_MODE)
    return r, w


def _hold_blocking(ends: list[int]) -> None:
    """Clear O_NONBLOCK on the write ends of a launcher's output pipes, which the pod's processes share.

    ssh sets it on its stdout and stderr when its session opens, and those are mpirun's: ssh inherits them.
    Open MPI 4.1's mpirun then keeps in memory what the pipe cannot take at once and, when the job ends,
    tries each held chunk once more and drops the rest (`iof_hnp.c`, `finalize`): a job that printed
    faster than its log was stored lost the tail of it, exit code 0. Blocking, mpirun's writes wait for
    room, as they do when nothing has set the flag (a bare `mpirun`, a terminal). ssh sets it once per
    session, at wire-up, before any rank runs, so clearing it every BLOCKING_CHECK keeps it cleared."""
    for fd in ends:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        if flags & os.O_NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)


def _end_if_orphaned(pod: subprocess.Popen[bytes], launcher_exit: Path) -> None:
    """A node pod outlives its job's launcher only while no server tears the job down: ORPHANED seconds
    after the launcher's exit record, it is stopped (SIGTERM, then SIGKILL), so a job whose server never
    returns holds no sshd, port or key beyond its end."""
    try:
        since = time.time() - launcher_exit.stat().st_mtime
    except OSError:
        return
    if since > ORPHANED and pod.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pod.pid, signal.SIGKILL if since > ORPHANED + 2 else signal.SIGTERM)


def run(state_dir: Path, token: str) -> int:
    """Supervise the pod `state_dir/spec.json` describes until it has ended; answer `<token> <pod pid>` (or
    `<token> ! <why>` when it could not start) on stdout, the fork server's answers."""
    spec = json.loads((state_dir / SPEC).read_text())
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        # The pod's fate is the pod's: only SIGKILL ends its supervisor. Handled, not ignored: an ignored
        # signal would stay ignored in the pod's programs, a handled one is theirs again after exec.
        signal.signal(sig, lambda signum, frame: None)
    mpi = spec.get("mpi")
    pipes = [_pipe(), _pipe()]
    stdin = subprocess.DEVNULL
    if spec.get("stdin"):  # a container with `stdin: true`: what `kubectl attach -i` writes to (`entry.py`)
        (state_dir / STDIN).unlink(missing_ok=True)
        os.mkfifo(state_dir / STDIN, 0o600)
        stdin = os.open(state_dir / STDIN, os.O_RDWR)  # held open: the pod's stdin never ends, as kube's
    try:
        pod = subprocess.Popen(spec["argv"], stdin=stdin, stdout=pipes[0][1], stderr=pipes[1][1],
                               env=spec["env"], cwd=spec.get("cwd"), start_new_session=True)
    except OSError as e:
        _answer(f"{token} ! {e}")
        return 1
    held = [w for _, w in pipes] if mpi is not None else []  # a launcher's, kept until it exits (_hold_blocking)
    for _, w in pipes:
        if w not in held:
            os.close(w)
    write_atomically(state_dir / STATE, {"shim": os.getpid(), "shim_start": start_time(os.getpid()),
                                         "pid": pod.pid, "boot_id": boot_id()})
    _answer(f"{token} {pod.pid}")
    devnull = os.open(os.devnull, os.O_RDWR)
    errors = os.open(state_dir / ERRORS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for fd, to in ((0, devnull), (1, devnull), (2, errors)):
        os.dup2(to, fd)

    writers = [LogWriter(Path(spec["log"]), LauncherOutput(**mpi) if mpi is not None else None) for _ in pipes]
    ranks = RankFiles(Path(spec["rank_output"]), Path(spec["log"])) if spec.get("rank_output") else None
    _store_output([r for r, _ in pipes], writers, pod, held,
                  Path(spec["ends_with"]) if spec.get("ends_with") else None, ranks)
    if ranks:
        ranks.close()
    code = pod.wait()
    cgroup = spec.get("cgroup")
    oom = oom_kills(Path(cgroup["path"]), cgroup["version"]) if cgroup else 0
    write_atomically(state_dir / EXIT, {"returncode": code, "oom_kills": oom})
    return 0


def _drain(fd: int, writer: LogWriter, into: queue.Queue[tuple[LogWriter, bytes]]) -> None:
    """Read one stream of the pod into `into` as fast as it comes, `b""` at its end (then closed)."""
    try:
        while chunk := os.read(fd, READ_SIZE):
            into.put((writer, chunk))
    finally:
        os.close(fd)
        into.put((writer, b""))


def _store_output(fds: list[int], writers: list[LogWriter], pod: subprocess.Popen[bytes], held: list[int],
                  ends_with: Path | None, ranks: RankFiles | None = None) -> None:
    """Store the pod's streams until each has ended. A thread per stream only reads, so a pipe is emptied
    as fast as the pod fills it, whatever storing the lines costs (ranks read from tags, each line
    stamped); this thread stores them. So mpirun seldom finds its stdout full, and never when its job
    ends: Open MPI 4.1's mpirun writes what it still holds then in one try per chunk. `ranks`: the files
    the ranks' agents write (`rank_agent.py`), read at each turn and before each chunk mpirun wrote."""
    chunks: queue.Queue[tuple[LogWriter, bytes]] = queue.Queue(maxsize=QUEUED_READS)
    for fd, writer in zip(fds, writers):
        threading.Thread(target=_drain, args=(fd, writer, chunks), daemon=True).start()
    streams = len(fds)
    while streams:
        if ends_with:
            _end_if_orphaned(pod, ends_with)
        if held:
            _hold_blocking(held)
            if pod.poll() is not None:  # the pod ended: let its pipes go, or their streams never end
                for w in held:
                    os.close(w)
                held = []
        try:
            wait = RANK_POLL if ranks else BLOCKING_CHECK if held else 1.0 if ends_with else None
            writer, chunk = chunks.get(timeout=wait)
        except queue.Empty:
            if ranks:
                ranks.poll()
            continue
        if ranks:
            ranks.poll()
        if chunk:
            writer.write(chunk)
        else:
            writer.close()
            streams -= 1


def failure(state_dir: Path) -> str:
    """The last line the supervisor wrote to its ERRORS file ("" for none): why it ended without a record."""
    try:
        lines = (state_dir / ERRORS).read_text(errors="replace").split("\n")
    except OSError:
        return ""
    return next((ln.strip() for ln in reversed(lines) if ln.strip()), "")


def _answer(line: str) -> None:
    os.write(1, f"{line}\n".encode())  # one short write: answers of supervisors started at once never mix


def serve() -> int:
    """The fork server: one per server, started once with all a supervisor needs already imported, so a
    pod's supervisor costs a fork, not a Python start. Each line on stdin, `<token>\t<state dir>`, forks
    one supervisor in a session of its own; the kernel reaps them, and they outlive this process, which
    ends with its server (stdin closed)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in sys.stdin.buffer:
        token, _, state_dir = line.decode().rstrip("\n").partition("\t")
        if os.fork() == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a supervisor waits for its pod itself
            os.setsid()
            code = 1
            try:
                code = run(Path(state_dir), token)
            except BaseException as e:  # noqa: BLE001 — whatever it was, the server must hear of it
                _answer(f"{token} ! {e!r}")  # once the pod runs, nobody listens: its ERRORS file has it
                traceback.print_exc()
            finally:
                os._exit(code)
    return 0


if __name__ == "__main__":
    sys.exit(serve())
