"""What runs above each MPI rank on the local cluster, so that not a line of its output is lost.

Open MPI forwards each rank's output to `mpirun` in chunks of up to 4,096 bytes, and with tagging on (the
only place a line's rank exists there) Open MPI 4.1 tags each chunk into a buffer of 8,192 bytes: a chunk
of short lines (under 14 bytes) that grows past it loses the rest, silently (`bench/output.py`: a bare
`mpirun --tag-output` kept 323,518 of 400,000 short lines). Untagged, a line has no rank, and two ranks
writing at once share lines. So the local cluster reads each rank where it runs instead: Open MPI's daemons
start every rank through this program (Open MPI 4's `orte_fork_agent`, Open MPI 5's
`odls_base_exec_agent`), which gives the rank what the daemon would (a terminal for stdout, a pipe for
stderr, the same environment, directory, stdin and process group), appends what it reads to a file per
rank and stream in the job's rank-output directory, and ends as the rank ended (its exit code, or its
signal). The launcher's supervisor (`rank_files.py`) stores those lines with their rank.

Run as `python -I -S rank_agent.py <directory> <program> [args...]`, so it starts in a few milliseconds:
it imports nothing but the standard library. The daemons start it through `LAUNCH`, which runs the program
itself where that Python cannot run (a root pod's own home hides a Python under `/root`). When it cannot
capture (the directory is gone or not writable), it runs the program in its place, and the output goes
through `mpirun` as it would without it.
"""

from __future__ import annotations

import os
import re
import select
import signal
import struct
import sys
import time
from collections.abc import Mapping

PROCESS_NAME = "mpijob-rank"  # its name in /proc: looked through like MPI's daemons (`workload.py`)
# A rank's files: `<job>.<rank>.<fd>`, the job being Open MPI's (a number in 4, PMIx's namespace in 5)
FILE = re.compile(r"(?P<job>[\w@-]+)\.(?P<rank>\d+)\.(?P<fd>[12])")
UNSAFE = re.compile(r"[^\w@-]")
READ_SIZE = 1 << 16
# Each read is appended as one record: when it was read (ns since the epoch) and its length, then its bytes,
# so the launcher's supervisor stores the ranks' output in the order it was written, across ranks, and
# stamps each line with the time its rank wrote it
RECORD = struct.Struct("<qI")
LEFTOVER_WAIT = 0.2  # seconds without output after which a rank that has exited is taken as done (a child it
# left behind may hold its stdout open for ever)
FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGCONT, signal.SIGALRM)
# What Python ignores at start-up, which an exec'd program would inherit ignored: Open MPI's daemon gives a
# rank these at their default, as a program expects (a pipe's reader gone ends `yes | head`)
RESET = (signal.SIGPIPE, signal.SIGXFSZ)
# What the daemons run (`/bin/sh <this file> <python> <agent> <directory> <program> [args...]`): the agent
# when its Python can run in the pod, else the program, so a rank never fails for want of its agent
LAUNCH = """\
python=$1 agent=$2 directory=$3
shift 3
[ -x "$python" ] && [ -r "$agent" ] && exec "$python" -I -S "$agent" "$directory" "$@"
exec "$@"
"""


def file_name(env: Mapping[str, str], fd: int) -> str:
    """Where a rank's stream `fd` goes, from the variables its MPI gives it."""
    job = env.get("OMPI_MCA_ess_base_jobid") or env.get("PMIX_NAMESPACE") or "0"
    rank = env.get("OMPI_COMM_WORLD_RANK") or env.get("PMIX_RANK") or "0"
    return f"{UNSAFE.sub('_', job)}.{rank}.{fd}"


def records(data: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """The complete records in `data` as (ns, bytes), and what follows them (a record still being written)."""
    out, at = [], 0
    while len(data) - at >= RECORD.size:
        ns, size = RECORD.unpack_from(data, at)
        end = at + RECORD.size + size
        if end > len(data):
            break
        out.append((ns, data[at + RECORD.size:end]))
        at = end
    return out, data[at:]


def _open(directory: str, fd: int) -> int:
    return os.open(os.path.join(directory, file_name(os.environ, fd)),
                   os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal for the rank's stdout, as Open MPI's daemon gives one (a program line-buffers its
    output on a terminal), with no output processing (`\\n` stays `\\n`) and no echo."""
    import pty
    import termios
    parent, child = pty.openpty()
    attrs = termios.tcgetattr(child)
    attrs[1] &= ~termios.OPOST
    attrs[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(child, termios.TCSANOW, attrs)
    return parent, child


def _copy(sources: dict[int, int], pid: int) -> int:
    """Append what each source fd gives to its file until every source has ended, or the rank has exited
    and nothing came for LEFTOVER_WAIT; the rank's wait status."""
    status = None
    while sources:
        try:
            ready, _, _ = select.select(list(sources), [], [], LEFTOVER_WAIT)
        except InterruptedError:
            continue
        if not ready:
            if status is not None:
                break
            done, status_now = os.waitpid(pid, os.WNOHANG)
            status = status_now if done else None
            continue
        for fd in ready:
            try:
                data = os.read(fd, READ_SIZE)
            except OSError:  # EIO: the terminal's last writer has closed it
                data = b""
            if data:
                out = memoryview(RECORD.pack(time.time_ns(), len(data)) + data)
                while out:
                    out = out[os.write(sources[fd], out):]
            else:
                os.close(fd)
                del sources[fd]
    return status if status is not None else os.waitpid(pid, 0)[1]


def _end_as(status: int) -> None:
    """Exit as the rank did: its code, or killed by its signal (without a core file of this process)."""
    if os.WIFSIGNALED(status):
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL, SIGSTOP: never handled
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str]) -> None:
    directory, program = argv[1], argv[2:]
    try:
        with open("/proc/self/comm", "w") as comm:
            comm.write(PROCESS_NAME)
    except OSError:
        pass
    try:
        files = _open(directory, 1), _open(directory, 2)
        terminal, child_end = _terminal()
    except OSError:
        os.execvp(program[0], program)  # capture cannot work here: the rank's output goes through mpirun
    err_read, err_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        for sig in RESET:
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(child_end, 1)
        os.dup2(err_write, 2)
        for fd in (terminal, child_end, err_read, err_write, *files):
            os.close(fd)
        try:
            os.execvp(program[0], program)
        except OSError as e:
            os.write(2, f"{program[0]}: {e.strerror}\n".encode())
            os._exit(127)
    os.close(child_end)
    os.close(err_write)
    for sig in FORWARDED:  # what the daemon or the kubelet sends the rank reaches it
        signal.signal(sig, lambda signum, frame: os.kill(pid, signum))
    _end_as(_copy({terminal: files[0], err_read: files[1]}, pid))


if __name__ == "__main__":
    main(sys.argv)
