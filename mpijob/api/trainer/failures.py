"""Why a job failed, in one sentence with its fix: a pure classifier of what the runner saw.

A Trainer cluster reports a failed MPI job as "the launcher failed" and hides the rank the kernel
OOM-killed or the daemon Open MPI lost behind it (mpi-operator #90, #152); the Kubeflow MCP server
guesses from log patterns alone. The local cluster's runner knows more: which pod exited first and
how, each pod's OOM kills with its peak memory and limit, whether a node's sshd answered before its
readiness deadline, and the launcher's last lines with the rank of each. `classify` turns those facts
into a class (a reason word of `names`), the failing pod, rank and host, a fix, and the section of
docs/troubleshooting.md that explains it. No I/O: `controllers/trainer/runner.py` gathers the facts.

Every class is earned: one that blames the launch (a program not found, a key refused, a host unknown,
too few slots, a daemon lost, a rank signalled) comes only from what mpirun, ssh or the MPI daemons said,
in the shape they say it, never from a rank's text (`api/trainer/launch_log.py` tells them apart); a rank's own
error is `ProgramFailed`, with its exit code and last line. Open MPI's words are matched as Open MPI 4.1
(ORTE) and 5 (PRRTE) print them, Hydra's as MPICH and Intel MPI do.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from dataclasses import dataclass

from mpijob.api import names
from mpijob.api.trainer import launch_log
from mpijob.api.trainer.launch_log import Line, Said

GUIDE = "docs/troubleshooting.md"
ANCHORS = {  # each class's section of the guide (GitHub's anchor of its heading)
    names.FAILURE_SSH_AUTH: "ssh-authentication-refused",
    names.FAILURE_HOST_UNRESOLVABLE: "host-name-not-resolvable",
    names.FAILURE_SSHD_NOT_READY: "sshd-not-ready",
    names.REASON_OOM_KILLED: "oom-killed",
    names.FAILURE_SIGNALED: "rank-killed-by-a-signal",
    names.FAILURE_COMMAND_NOT_FOUND: "command-not-found",
    names.FAILURE_NOT_ENOUGH_SLOTS: "not-enough-slots",
    names.FAILURE_DAEMON_LOST: "open-mpi-daemon-lost",
    names.FAILURE_NCCL: "nccl-error-or-timeout",
    names.FAILURE_ONE_SIDED: "one-sided-communication-unavailable",
    names.FAILURE_PROGRAM: "program-failed",
    names.FAILURE_MPI_NOT_INSTALLED: "mpi-implementation-not-installed",
}


@dataclass(frozen=True)
class PodFacts:
    """One pod of the job as the runner last saw it."""

    name: str
    host: str  # its Trainer host name, `<job>-node-0-1.<job>`
    launcher: bool = False
    exit_code: int | None = None  # None: still running when the job ended
    signal: int | None = None
    oom_kills: int = 0
    memory_peak: int | None = None  # bytes, the most its cgroup held
    memory_limit: int | None = None  # bytes, its resources.limits.memory
    last_line: str = ""  # the end of its own log (a node's sshd says there why it stopped)


@dataclass(frozen=True)
class Facts:
    job: str
    culprit: str  # the pod whose exit, or failed start, ended the job
    pods: tuple[PodFacts, ...]
    launcher_log: tuple[Line, ...] = ()  # its last lines
    slots: int = 0  # slots in the hostfile, all hosts together
    hosts: int = 0  # hosts in the hostfile
    key_dir: str = ""  # where the pods find the job's SSH key (the runtime's sshAuthMountPath)
    starting: bool = False  # the culprit failed before every node accepted the job key
    ready_timeout: float = 0.0  # its sshd had that long to accept the key
    # the MPI that ran (names.MPI_IMPLEMENTATIONS): one MPI's words never count under another
    # (api/trainer/launch_log.py)
    implementation: str = ""  # "" not known: every MPI's words count
    # A run past one of its bounds (api/trainer/bounds.py; read by the builders at the end of this module)
    bound: float = 0.0  # the bound it passed, in seconds
    world_size: int = 0  # the ranks mpirun started, as a rank's environment says (0: no rank seen)
    ranks_seen: tuple[int, ...] = ()  # the ranks seen running, or heard from in the log
    reporting: tuple[str, ...] = ()  # the pods a rank ran in
    daemons: tuple[str, ...] = ()  # the pods an MPI daemon ran in
    idle: tuple[str, ...] = ()  # the pods whose processes used no CPU for `bound` seconds
    idle_ranks: tuple[int, ...] = ()  # the ranks running in them
    why: tuple[tuple[str, str], ...] = ()  # (pod, what the runner could tell of why it is not ready)
    namespace: str = ""  # the job's, where a message names a command to run on it


@dataclass(frozen=True)
class Failure:
    reason: str  # the class, a word of `names`
    summary: str  # what happened, naming the pod, rank and host where known
    fix: str
    pod: str | None = None
    rank: int | None = None
    host: str | None = None

    @property
    def anchor(self) -> str:
        return ANCHORS[self.reason]

    @property
    def message(self) -> str:
        """The Failed condition's message: class, what happened, the fix, where to read more."""
        return f"{self.reason}: {self.summary}. Fix: {self.fix} See {GUIDE}#{self.anchor}"


def classify(facts: Facts) -> Failure:
    """The class of a failed run; the first rule that recognises it wins, most telling first."""
    culprit = _pod(facts, facts.culprit)
    if facts.starting:
        return _not_ready(facts, culprit)
    if ooms := [p for p in facts.pods if p.oom_kills]:
        return _oom(facts, ooms[0])
    if not culprit.launcher:
        return _node_lost(culprit)
    said = launch_log.read(facts.launcher_log, facts.implementation)
    for rule in _RULES:
        if found := rule(facts, said):
            return found
    return _launcher_exit(facts, culprit, said)


# -- helpers ---------------------------------------------------------------------------------------


def _pod(facts: Facts, name: str) -> PodFacts:
    return next((p for p in facts.pods if p.name == name), PodFacts(name, ""))


def _by_host(facts: Facts, host: str) -> PodFacts | None:
    """The pod a host name Open MPI or ssh printed belongs to (with or without its subdomain)."""
    short = host.split(".", maxsplit=1)[0]
    return next((p for p in facts.pods if host == p.host or short == p.host.split(".")[0]), None)


def _launcher(facts: Facts) -> PodFacts:
    return next((p for p in facts.pods if p.launcher), PodFacts("", ""))


def _where(pod: PodFacts | None, host: str = "") -> str:
    if pod is None:
        return f"host {host}"
    kind = "launcher" if pod.launcher else "node"
    return f"{kind} pod {pod.name} (host {host or pod.host})"


def _exit(pod: PodFacts) -> str:
    if pod.signal:
        return f"signal {pod.signal} ({_signal_name(pod.signal)})"
    return f"code {pod.exit_code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def _mib(amount: int | None) -> str:
    return "unknown" if amount is None else f"{amount / (1 << 20):.1f} MiB"


def _said(line: str) -> str:
    line = line.strip()
    return f": {line[:300]}" if line else ""


# -- before the launcher: a node's sshd ------------------------------------------------------------


def _not_ready(facts: Facts, node: PodFacts) -> Failure:
    where = _where(node)
    if node.exit_code is not None:
        return Failure(names.FAILURE_SSHD_NOT_READY, f"the sshd of {where} exited with {_exit(node)} before it "
                       f"answered on port 2222{_said(node.last_line)}",
                       "sshd could not start; its last line above says why (a runtime whose node command "
                       "is not sshd's, a host key it cannot read, its port 2222 taken).", node.name, None, node.host)
    return Failure(names.FAILURE_SSHD_NOT_READY, f"the sshd of {where} did not answer on port 2222 within "
                   f"{facts.ready_timeout:g}s", "A loaded machine starts sshd slowly: run fewer jobs at once, or give "
                   "nodes longer (MPIJOB_READY_TIMEOUT on the server, in seconds).", node.name, None, node.host)


def _key_fix(facts: Facts) -> str:
    where = f" ({facts.key_dir})" if facts.key_dir else ""
    return (f"Leave the job's SSH key as Trainer mounts it{where}: id_rsa and authorized_keys from the Secret "
            f"{names.ssh_secret_name(facts.job)}. A command that replaces or regenerates the key, or an image whose "
            "sshd reads keys from elsewhere, locks mpirun out.")


# -- resources -------------------------------------------------------------------------------------

def _oom(facts: Facts, pod: PodFacts) -> Failure:
    said = launch_log.read(facts.launcher_log, facts.implementation)
    rank = None
    for m in (launch_log.BOX_SIGNAL.match(box) for box in said.boxes):
        if m and _by_host(facts, m.group(2)) == pod:
            rank = int(m.group(1))
    who = f"rank {rank} on {_where(pod)}" if rank is not None else f"a process of {_where(pod)}"
    kills = f"{pod.oom_kills} OOM kill{'s' if pod.oom_kills > 1 else ''}"
    return Failure(names.REASON_OOM_KILLED, f"{who} was killed by the kernel for exceeding the pod's memory limit: "
                   f"peak {_mib(pod.memory_peak)} of a {_mib(pod.memory_limit)} limit ({kills})",
                   "Raise trainer.resourcesPerNode.limits.memory above what a node's ranks need together, or make "
                   "them need less (fewer processes per node, smaller batches).", pod.name, rank, pod.host)


# -- a node pod that ended while the job ran --------------------------------------------------------


def _node_lost(node: PodFacts) -> Failure:
    return Failure(names.FAILURE_DAEMON_LOST, f"{_where(node)} exited with {_exit(node)} while the job was running, "
                   f"and the Open MPI daemon on it went with it{_said(node.last_line)}",
                   "A node pod ends only when its sshd does: something killed it or deleted the pod. Rerun the job; "
                   "look at the pod's status and the TrainJob's events for who did.", node.name, None, node.host)


# -- what mpirun, ssh or the MPI daemons said (api/trainer/launch_log.py tells it from what a rank printed) ----


def _ssh_refused(facts: Facts, said: Said) -> Failure | None:
    if not (m := said.line(launch_log.SSH_REFUSED_KEY)) or not said.daemons_not_started:
        return None
    node = _by_host(facts, m.group(1))
    return Failure(names.FAILURE_SSH_AUTH, f"the sshd of {_where(node, m.group(1))} refused the job's SSH key "
                   f"when mpirun on {_where(_launcher(facts))} logged in (Permission denied (publickey))",
                   _key_fix(facts), node.name if node else None, None, m.group(1))


def _unresolvable(facts: Facts, said: Said) -> Failure | None:
    if (m := said.line(launch_log.SSH_UNRESOLVABLE)) and said.daemons_not_started:
        host, why = m.group(1), f"ssh: {m.group(2).strip()}"
    elif (m := said.hydra_line(launch_log.INTEL_PROXY_NOT_STARTED)) and _by_host(facts, m.group(1)) is None:
        # Intel MPI keeps ssh's words to itself: its own line names the host, the job's pods say it is none of theirs
        host, why = m.group(1), f"Intel MPI: Unable to run bstrap_proxy on {m.group(1)}"
    else:
        return None
    launcher = _launcher(facts)
    return Failure(names.FAILURE_HOST_UNRESOLVABLE, f"mpirun on {_where(launcher)} was given host {host}, "
                   f"which is not a pod of this job ({why})",
                   "Let mpirun use the hostfile Trainer writes (/etc/mpi/hostfile, its default): it names the job's "
                   "own pods. A hand-written --host or --hostfile, or another job's host name, does not resolve in "
                   "this job's network.", launcher.name, None, host)


def _connection_refused(facts: Facts, said: Said) -> Failure | None:
    if not (m := said.line(launch_log.SSH_CONNECTION_REFUSED)) or not said.daemons_not_started:
        return None
    node = _by_host(facts, m.group(1))
    return Failure(names.FAILURE_SSHD_NOT_READY, f"nothing listens on port {m.group(2)} of {_where(node, m.group(1))} "
                   "when mpirun connects (ssh: Connection refused)",
                   "A node's container must run sshd (the runtime's node command); a node that runs something else "
                   "never becomes a host mpirun can reach.", node.name if node else None, None, m.group(1))


def _slots(facts: Facts, said: Said) -> Failure | None:
    if not (m := said.box(launch_log.BOX_SLOTS)):
        return None
    asked, launcher = int(m.group(1)), _launcher(facts)
    per = f" ({facts.hosts} host{'s' if facts.hosts != 1 else ''})" if facts.hosts else ""
    return Failure(names.FAILURE_NOT_ENOUGH_SLOTS, f"mpirun on {_where(launcher)} was asked for {asked} processes, but "
                   f"the hostfile offers {facts.slots} slot{'s' if facts.slots != 1 else ''}{per}",
                   f"Ask for at most {facts.slots} (-n {facts.slots}, or no -n: one process per slot), or give the job "
                   "more slots: trainer.numNodes × trainer.numProcPerNode.", launcher.name, None, launcher.host)


def _executable(facts: Facts, said: Said) -> Failure | None:
    hydra = said.hydra_line(launch_log.HYDRA_EXECVP, tagged=True)
    # mpiexec exits 255 after its proxy's execvp error; or, on a loaded machine, ends on a signal while it
    # tears the job down (seen once on a fresh root, Intel MPI): the exec that failed is still the cause
    launcher = _launcher(facts)
    if hydra and (launcher.exit_code == launch_log.HYDRA_EXEC_FAILED_EXIT or launcher.signal is not None):
        pod = _by_host(facts, hydra.group(1))
        return Failure(names.FAILURE_COMMAND_NOT_FOUND, f"mpirun could not start the program {hydra.group(2)!r} on "
                       f"{_where(pod, hydra.group(1))} ({hydra.group(3)})",
                       _NOT_EXECUTABLE_FIX if hydra.group(3) == "Permission denied" else _NOT_FOUND_FIX,
                       pod.name if pod else None, None, hydra.group(1))
    if m := said.box(launch_log.BOX_EXEC_FAILED):
        box = m.string
        program = p.group(1) if (p := _APPLICATION.search(box)) else "the program"
        host = h.group(1) if (h := _LOCAL_HOST.search(box)) else ""
        error = e.group(1) if (e := _ERROR.search(box)) else "execve failed"
        pod = _by_host(facts, host) if host else None
        return Failure(names.FAILURE_COMMAND_NOT_FOUND, f"mpirun could not start the program {program!r} on "
                       f"{_where(pod, host) if host else 'its hosts'} ({error})", _NOT_EXECUTABLE_FIX,
                       pod.name if pod else None, None, host or None)
    if not (m := said.box(launch_log.BOX_NOT_FOUND)):
        return None
    box = m.string
    program = p.group(1) if (p := _EXECUTABLE.search(box)) else "the program"
    host = h.group(1) if (h := _NODE.search(box)) else ""
    rank = int(r.group(1)) if (r := _FIRST_RANK.search(box)) else None
    pod = _by_host(facts, host) if host else None
    at = f" for rank {rank}" if rank is not None else ""
    return Failure(names.FAILURE_COMMAND_NOT_FOUND, f"mpirun could not find the program {program!r} on "
                   f"{_where(pod, host) if host else 'its hosts'}{at}", _NOT_FOUND_FIX,
                   pod.name if pod else None, rank, host or None)


# the fields of Open MPI's boxes, read from a box's collapsed text
_EXECUTABLE = re.compile(r"Executable: (\S+)")
_NODE = re.compile(r"Node: (\S+)")
_FIRST_RANK = re.compile(r"first reported for process rank (\d+)")
_APPLICATION = re.compile(r"Application name: (\S+)")
_LOCAL_HOST = re.compile(r"Local host: (\S+)")
_ERROR = re.compile(r"Error: (.+)$")
_REMOTE_DAEMON = re.compile(r"Remote daemon: \S+ on node (\S+)")
_NOT_FOUND_FIX = ("Check the spelling, and that the program is on the PATH of every pod (or give its full path); "
                  "mpirun takes the first word it does not know for the program, so a misspelt option looks like "
                  "this too.")
_NOT_EXECUTABLE_FIX = ("The file is there but cannot be executed: make it executable (chmod +x) with a #! line, or "
                       "name its interpreter first (python3 train.py).")
_NCCL = re.compile(r"NCCL WARN|NCCL error|nccl\w*Error|NCCL communicator was aborted|"
                   r"Watchdog caught collective operation timeout")
_NCCL_TIMEOUT = re.compile(r"timeout|timed out", re.I)
_NCCL_HOST = re.compile(r"^(\S+?):\d+:\d+ \[\d+\] ")  # NCCL's own prefix: host:pid:tid [cuda device]


def _nccl(facts: Facts, said: Said) -> Failure | None:
    """NCCL's words are the ranks' own (NCCL is a library in the program), so any line counts."""
    lines = [ln for ln in facts.launcher_log if _NCCL.search(ln.text)]
    if not lines:
        return None
    line = next((ln for ln in lines if _NCCL_HOST.search(ln.text)), lines[0])  # NCCL's own line names the host
    m = _NCCL_HOST.search(line.text)
    host = m.group(1) if m else ""
    pod = _by_host(facts, host) if host else None
    what = "an NCCL timeout" if _NCCL_TIMEOUT.search(line.text) else "an NCCL error"
    who = f"rank {line.rank}" if line.rank is not None else "a rank"
    at = f" on {_where(pod, host)}" if host else ""
    return Failure(names.FAILURE_NCCL, f"{who}{at} reported {what}: {line.text.strip()[:300]}",
                   "Set NCCL_DEBUG=INFO in trainer.env to see which step failed. A timeout usually means one rank "
                   "stalled or died first (read the other ranks' output); a failed connection, that NCCL_SOCKET_IFNAME "
                   "names an interface the pods do not share.", pod.name if pod else None, line.rank, host or None)


# Open MPI 4.1 cannot make a window whose ranks are in more than one pod (docs/mpi-implementations.md,
# "One-sided communication"): MPI_Win_create, _allocate and _create_dynamic fail with this error, which
# mpi4py raises and Open MPI's fatal error handler prints (`[host:pid] *** MPI_ERR_WIN: invalid window`).
_WINDOW_REFUSED = re.compile(r"MPI_ERR_WIN: invalid window")
_ERRHANDLER_HOST = re.compile(r"^\[([^\]:\s]+):\d+\] \*\*\* ")


def _one_sided(facts: Facts, said: Said) -> Failure | None:
    """A window across pods under Open MPI 4.1. The error is the MPI library's, raised in the program, so any
    line counts (as NCCL's), but only where it has this cause: Open MPI 4.1 and more than one host."""
    if facts.implementation != names.OPEN_MPI or facts.hosts < 2:
        return None
    if not (line := next((ln for ln in facts.launcher_log if _WINDOW_REFUSED.search(ln.text)), None)):
        return None
    m = _ERRHANDLER_HOST.search(line.text)
    host = m.group(1) if m else ""
    pod = _by_host(facts, host) if host else None
    who = f"rank {line.rank}" if line.rank is not None else "a rank"
    at = f" on {_where(pod, host)}" if host else ""
    return Failure(names.FAILURE_ONE_SIDED, f"{who}{at} could not make an MPI window ({line.text.strip()[:200]}): "
                   f"Open MPI 4.1 makes windows among the ranks of one pod only, not across the job's {facts.hosts} "
                   "pods (it has no one-sided component for TCP)",
                   f"Run the job on a runtime annotated {names.ANNOTATION_MPI_IMPLEMENTATION}: "
                   f"{names.MPI_OPEN_MPI_5} (or {names.MPI_MPICH}, {names.MPI_INTEL}), whose one-sided communication "
                   "works between pods; or keep every rank in one pod (trainer.numNodes: 1 on a runtime with "
                   "runLauncherAsNode: false).",
                   pod.name if pod else None, line.rank, host or None)


def _daemon_lost(facts: Facts, said: Said) -> Failure | None:
    if not (m := said.box(launch_log.BOX_DAEMON_LOST)):
        return None
    host = r.group(1) if (r := _REMOTE_DAEMON.search(m.string)) else ""
    node = _by_host(facts, host) if host else None
    return Failure(names.FAILURE_DAEMON_LOST, f"mpirun lost the Open MPI daemon on "
                   f"{_where(node, host) if host else 'a node'}",
                   "The daemon or its node died under the ranks: the pod killed or deleted, the kernel's OOM killer, "
                   "the network between the pods. Look at that node pod's status and log, then rerun.",
                   node.name if node else None, None, host or None)


def _signaled(facts: Facts, said: Said) -> Failure | None:
    rank: int | None
    if m := said.box(launch_log.BOX_SIGNAL):
        rank, host, number, name = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
    elif (banner := said.hydra_banner()) and (s := launch_log.HYDRA_SIGNAL.search(banner)):
        at = launch_log.HYDRA_RANK_AT.search(banner)
        rank = int(at.group(1)) if at and at.group(1) else None
        host = at.group(2) if at else ""
        number, name = (int(s.group(1)), s.group(2)) if s.group(1) else (int(s.group(4)), s.group(3))
    else:
        return None
    pod = _by_host(facts, host) if host else None
    who = f"rank {rank}" if rank is not None else "a rank"
    return Failure(names.FAILURE_SIGNALED, f"{who} on {_where(pod, host) if host else 'its host'} exited on signal "
                   f"{number} ({name})", _signal_fix(number, facts.job, rank), pod.name if pod else None, rank,
                   host or None)


def _signal_fix(number: int, job: str, rank: int | None) -> str:
    logs = f"mpijob logs {job}" + (f" --rank {rank}" if rank is not None else "")
    if number in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT):
        return (f"The program crashed: read its last words ({logs}), and check that every pod runs the same build "
                "of it and of its libraries.")
    return (f"Something outside the program sent it: a person, a script, the kernel (SIGKILL). Its last words: "
            f"{logs}.")


def _exit_code(facts: Facts, said: Said) -> Failure | None:
    """A rank's non-zero exit as mpirun reports it: the program failed, whatever its last line says."""
    if not (m := said.box(launch_log.BOX_EXIT_CODE)):
        return None
    rank, code, launcher = int(m.group(1)), int(m.group(2)), _launcher(facts)
    summary = (f"rank {rank} exited with code {code}{_said(said.last_words(rank))}; {_where(launcher)} exited with "
               f"{_exit(launcher)}")
    return Failure(names.FAILURE_PROGRAM, summary, f"Read what it printed: mpijob logs {facts.job} --rank {rank}.",
                   launcher.name, rank, None)


_RULES: tuple[Callable[[Facts, Said], Failure | None], ...] = (
    _ssh_refused, _unresolvable, _connection_refused, _slots, _executable, _nccl, _one_sided, _daemon_lost, _signaled,
    _exit_code)


# -- the launcher's own command --------------------------------------------------------------------

# The shell's and env's words for a command they could not run: 127 not found, 126 found but not executable.
# Only the launcher's own: an exit code mpirun passed on from a rank (one that printed) is the program's.
_NOT_FOUND_EXIT, _NOT_EXECUTABLE_EXIT = 127, 126


def _launcher_exit(facts: Facts, launcher: PodFacts, said: Said) -> Failure:
    words = said.last_words() or launcher.last_line
    summary = f"{_where(launcher)} exited with {_exit(launcher)}{_said(words)}"
    if launcher.signal:
        return Failure(names.FAILURE_SIGNALED, summary, _signal_fix(launcher.signal, facts.job, None), launcher.name,
                       None, launcher.host)
    if not said.ranks_printed and launcher.exit_code in (_NOT_FOUND_EXIT, _NOT_EXECUTABLE_EXIT):
        fix = _NOT_FOUND_FIX if launcher.exit_code == _NOT_FOUND_EXIT else _NOT_EXECUTABLE_FIX
        return Failure(names.FAILURE_COMMAND_NOT_FOUND, summary, fix, launcher.name, None, launcher.host)
    return Failure(names.FAILURE_PROGRAM, summary, f"Read what it printed: mpijob logs {facts.job}.", launcher.name,
                   None, launcher.host)


# -- the classes of a run past one of its bounds (api/trainer/bounds.py): built by api/trainer/bound_failures.py -------

ANCHORS.update({names.FAILURE_WIREUP_TIMEOUT: "wire-up-timeout", names.FAILURE_STALLED: "stalled"})
