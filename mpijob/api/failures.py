"""Why a job failed, in one sentence with its fix: a pure classifier of what the runner saw.

A Trainer cluster reports a failed MPI job as "the launcher failed" and hides the rank the kernel
OOM-killed or the daemon Open MPI lost behind it (mpi-operator #90, #152); the Kubeflow MCP server
guesses from log patterns alone. The local cluster's runner knows more: which pod exited first and
how, each pod's OOM kills with its peak memory and limit, whether a node's sshd answered before its
readiness deadline, and the launcher's last lines with the rank of each. `classify` turns those facts
into a class (a reason word of `names`), the failing pod, rank and host, a fix, and the section of
docs/troubleshooting.md that explains it. No I/O: `controllers/trainer/runner.py` gathers the facts.

Open MPI's own words are matched as Open MPI 4.1 (ORTE) prints them, and as Open MPI 5 (PRRTE) does
where it words them otherwise.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from dataclasses import dataclass

from mpijob.api import names

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
class Line:
    """A line of the launcher's log and the MPI rank that printed it (None: mpirun, ssh, the shell)."""

    rank: int | None
    text: str


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
    sshd_answered: bool = False  # its sshd spoke SSH before the deadline (so the key was what it refused)
    # A run past one of its bounds (api/bounds.py; read by the builders at the end of this module)
    bound: float = 0.0  # the bound it passed, in seconds
    world_size: int = 0  # the ranks mpirun started, as a rank's environment says (0: no rank seen)
    ranks_seen: tuple[int, ...] = ()  # the ranks seen running, or heard from in the log
    reporting: tuple[str, ...] = ()  # the pods a rank ran in
    daemons: tuple[str, ...] = ()  # the pods an MPI daemon ran in
    idle: tuple[str, ...] = ()  # the pods whose processes used no CPU for `bound` seconds
    idle_ranks: tuple[int, ...] = ()  # the ranks running in them
    why: tuple[tuple[str, str], ...] = ()  # (pod, what the runner could tell of why it is not ready)


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
    text = "\n".join(line.text for line in facts.launcher_log)
    for rule in _RULES:
        if found := rule(facts, text):
            return found
    return _launcher_exit(facts, culprit)


# -- helpers ---------------------------------------------------------------------------------------


def _pod(facts: Facts, name: str) -> PodFacts:
    return next((p for p in facts.pods if p.name == name), PodFacts(name, ""))


def _by_host(facts: Facts, host: str) -> PodFacts | None:
    """The pod a host name Open MPI or ssh printed belongs to (with or without its subdomain)."""
    short = host.split(".")[0]
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
                       f"accepted the job's SSH key{_said(node.last_line)}",
                       "sshd could not start; its last line above says why (a runtime whose node command "
                       "is not sshd's, a host key it cannot read, its port 2222 taken).", node.name, None, node.host)
    if facts.sshd_answered:
        return Failure(names.FAILURE_SSH_AUTH, f"the sshd of {where} answered but did not accept the job's SSH "
                       f"key within {facts.ready_timeout:g}s", _key_fix(facts), node.name, None, node.host)
    return Failure(names.FAILURE_SSHD_NOT_READY, f"the sshd of {where} did not answer on port 2222 within "
                   f"{facts.ready_timeout:g}s", "A loaded machine starts sshd slowly: run fewer jobs at once, or give "
                   "nodes longer (MPIJOB_READY_TIMEOUT on the server, in seconds).", node.name, None, node.host)


def _key_fix(facts: Facts) -> str:
    where = f" ({facts.key_dir})" if facts.key_dir else ""
    return (f"Leave the job's SSH key as Trainer mounts it{where}: id_rsa and authorized_keys from the Secret "
            f"{names.ssh_secret_name(facts.job)}. A command that replaces or regenerates the key, or an image whose "
            "sshd reads keys from elsewhere, locks mpirun out.")


# -- resources -------------------------------------------------------------------------------------

_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) \(([^)]*)\)")


def _oom(facts: Facts, pod: PodFacts) -> Failure:
    rank = None
    for m in _SIGNAL.finditer("\n".join(line.text for line in facts.launcher_log)):
        if _by_host(facts, m.group(2)) == pod:
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


# -- what mpirun, ssh or a rank said ----------------------------------------------------------------

_PUBLICKEY = re.compile(r"(?:\S+@)?(\S+?): Permission denied \(publickey")
_UNRESOLVABLE = re.compile(r"ssh: Could not resolve hostname (\S+?): (.+)")
_REFUSED = re.compile(r"ssh: connect to host (\S+) port (\d+): Connection refused")
_SLOTS = re.compile(r"not enough slots available in the system to satisfy the (\d+)\s+slots")
_NO_EXECUTABLE = re.compile(r"unable to find the specified executable|could not access\s+or execute an executable")
# Hydra's (MPICH, Intel MPI) proxy on a host failing to start a rank: `[proxy:0:1@host] ... execvp error on file X (...)`
_HYDRA_EXECVP = re.compile(r"\[proxy:[\d:]+@([^\]\s]+)\].*?execvp error on file (\S+) \((No such file or directory|"
                           r"Permission denied)\)")
_EXECUTABLE = re.compile(r"Executable:\s*(\S+)")
_NODE = re.compile(r"Node:\s*(\S+)")
_FIRST_RANK = re.compile(r"first reported for process\s+rank (\d+)")
_NCCL = re.compile(r"NCCL WARN|NCCL error|nccl\w*Error|NCCL communicator was aborted|"
                   r"Watchdog caught collective operation timeout")
_NCCL_TIMEOUT = re.compile(r"timeout|timed out", re.I)
_NCCL_HOST = re.compile(r"^(\S+?):\d+:\d+ \[\d+\] ")  # NCCL's own prefix: host:pid:tid [cuda device]
_DAEMON_LOST = re.compile(r"(?:ORTE|PRRTE|PRTE) has lost communication with a remote daemon")
_REMOTE_DAEMON = re.compile(r"Remote daemon:\s*\S+ on node (\S+)")
_EXIT_CODE = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s*Exit code:\s*(\d+)", re.S)
_NOT_FOUND = re.compile(r"command not found|No such file or directory")


def _ssh_refused(facts: Facts, text: str) -> Failure | None:
    if not (m := _PUBLICKEY.search(text)):
        return None
    node = _by_host(facts, m.group(1))
    return Failure(names.FAILURE_SSH_AUTH, f"the sshd of {_where(node, m.group(1))} refused the job's SSH key "
                   f"when mpirun on {_where(_launcher(facts))} logged in (Permission denied (publickey))",
                   _key_fix(facts), node.name if node else None, None, m.group(1))


def _unresolvable(facts: Facts, text: str) -> Failure | None:
    if not (m := _UNRESOLVABLE.search(text)):
        return None
    launcher = _launcher(facts)
    return Failure(names.FAILURE_HOST_UNRESOLVABLE, f"mpirun on {_where(launcher)} was given host {m.group(1)}, "
                   f"which is not a pod of this job (ssh: {m.group(2).strip()})",
                   "Let mpirun use the hostfile Trainer writes (/etc/mpi/hostfile, its default): it names the job's "
                   "own pods. A hand-written --host or --hostfile, or another job's host name, does not resolve in "
                   "this job's network.", launcher.name, None, m.group(1))


def _connection_refused(facts: Facts, text: str) -> Failure | None:
    if not (m := _REFUSED.search(text)):
        return None
    node = _by_host(facts, m.group(1))
    return Failure(names.FAILURE_SSHD_NOT_READY, f"nothing listens on port {m.group(2)} of {_where(node, m.group(1))} "
                   "when mpirun connects (ssh: Connection refused)",
                   "A node's container must run sshd (the runtime's node command); a node that runs something else "
                   "never becomes a host mpirun can reach.", node.name if node else None, None, m.group(1))


def _slots(facts: Facts, text: str) -> Failure | None:
    if not (m := _SLOTS.search(text)):
        return None
    asked, launcher = int(m.group(1)), _launcher(facts)
    per = f" ({facts.hosts} host{'s' if facts.hosts != 1 else ''})" if facts.hosts else ""
    return Failure(names.FAILURE_NOT_ENOUGH_SLOTS, f"mpirun on {_where(launcher)} was asked for {asked} processes, but "
                   f"the hostfile offers {facts.slots} slot{'s' if facts.slots != 1 else ''}{per}",
                   f"Ask for at most {facts.slots} (-n {facts.slots}, or no -n: one process per slot), or give the job "
                   "more slots: trainer.numNodes × trainer.numProcPerNode.", launcher.name, None, launcher.host)


def _executable(facts: Facts, text: str) -> Failure | None:
    if hydra := _HYDRA_EXECVP.search(text):
        pod = _by_host(facts, hydra.group(1))
        return Failure(names.FAILURE_COMMAND_NOT_FOUND, f"mpirun could not start the program {hydra.group(2)!r} on "
                       f"{_where(pod, hydra.group(1))} ({hydra.group(3)})", _NOT_FOUND_FIX, pod.name if pod else None,
                       None, hydra.group(1))
    if not _NO_EXECUTABLE.search(text):
        return None
    program = m.group(1) if (m := _EXECUTABLE.search(text)) else "the program"
    host = m.group(1) if (m := _NODE.search(text)) else ""
    rank = int(m.group(1)) if (m := _FIRST_RANK.search(text)) else None
    pod = _by_host(facts, host) if host else None
    at = f" for rank {rank}" if rank is not None else ""
    return Failure(names.FAILURE_COMMAND_NOT_FOUND, f"mpirun could not find the program {program!r} on "
                   f"{_where(pod, host) if host else 'its hosts'}{at}", _NOT_FOUND_FIX,
                   pod.name if pod else None, rank, host or None)


_NOT_FOUND_FIX = ("Check the spelling, and that the program is on the PATH of every pod (or give its full path); "
                  "mpirun takes the first word it does not know for the program, so a misspelt option looks like "
                  "this too.")


def _nccl(facts: Facts, text: str) -> Failure | None:
    said = [ln for ln in facts.launcher_log if _NCCL.search(ln.text)]
    if not said:
        return None
    line = next((ln for ln in said if _NCCL_HOST.search(ln.text)), said[0])  # NCCL's own line names the host
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


def _daemon_lost(facts: Facts, text: str) -> Failure | None:
    if not _DAEMON_LOST.search(text):
        return None
    host = m.group(1) if (m := _REMOTE_DAEMON.search(text)) else ""
    node = _by_host(facts, host) if host else None
    return Failure(names.FAILURE_DAEMON_LOST, f"mpirun lost the Open MPI daemon on "
                   f"{_where(node, host) if host else 'a node'}",
                   "The daemon or its node died under the ranks: the pod killed or deleted, the kernel's OOM killer, "
                   "the network between the pods. Look at that node pod's status and log, then rerun.",
                   node.name if node else None, None, host or None)


def _signaled(facts: Facts, text: str) -> Failure | None:
    if not (m := _SIGNAL.search(text)):
        return None
    rank, host, number, name = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
    pod = _by_host(facts, host)
    return Failure(names.FAILURE_SIGNALED, f"rank {rank} on {_where(pod, host)} exited on signal {number} ({name})",
                   _signal_fix(number, facts.job, rank), pod.name if pod else None, rank, host)


def _signal_fix(number: int, job: str, rank: int | None) -> str:
    logs = f"mpijob logs {job}" + (f" --rank {rank}" if rank is not None else "")
    if number in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT):
        return (f"The program crashed: read its last words ({logs}), and check that every pod runs the same build "
                "of it and of its libraries.")
    return (f"Something outside the program sent it: a person, a script, the kernel (SIGKILL). Its last words: "
            f"{logs}.")


def _exit_code(facts: Facts, text: str) -> Failure | None:
    if not (m := _EXIT_CODE.search(text)):
        return None
    rank, code, launcher = int(m.group(1)), int(m.group(2)), _launcher(facts)
    said = next((ln.text for ln in reversed(facts.launcher_log) if ln.rank == rank and ln.text.strip()), "")
    summary = f"rank {rank} exited with code {code}{_said(said)}; {_where(launcher)} exited with {_exit(launcher)}"
    if code == 127 and _NOT_FOUND.search(said):
        return Failure(names.FAILURE_COMMAND_NOT_FOUND, summary, _NOT_FOUND_FIX, launcher.name, rank, None)
    return Failure(names.FAILURE_PROGRAM, summary, f"Read what it printed: mpijob logs {facts.job} --rank {rank}.",
                   launcher.name, rank, None)


_RULES: tuple[Callable[[Facts, str], Failure | None], ...] = (
    _ssh_refused, _unresolvable, _connection_refused, _slots, _executable, _nccl, _daemon_lost, _signaled, _exit_code)


# -- the launcher's own command --------------------------------------------------------------------


def _launcher_exit(facts: Facts, launcher: PodFacts) -> Failure:
    summary = f"{_where(launcher)} exited with {_exit(launcher)}{_said(launcher.last_line)}"
    if launcher.exit_code == 127 or (not launcher.signal and _NOT_FOUND.search(launcher.last_line)):
        return Failure(names.FAILURE_COMMAND_NOT_FOUND, summary, _NOT_FOUND_FIX, launcher.name, None, launcher.host)
    if launcher.signal:
        return Failure(names.FAILURE_SIGNALED, summary, _signal_fix(launcher.signal, facts.job, None), launcher.name,
                       None, launcher.host)
    return Failure(names.FAILURE_PROGRAM, summary, f"Read what it printed: mpijob logs {facts.job}.", launcher.name,
                   None, launcher.host)

# -- the classes of a run past one of its bounds (api/bounds.py): built by api/bound_failures.py -------------

ANCHORS.update({names.FAILURE_WIREUP_TIMEOUT: "wire-up-timeout", names.FAILURE_STALLED: "stalled"})
