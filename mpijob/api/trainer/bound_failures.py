"""Why a run that passed one of its bounds ended (api/trainer/bounds.py): the failure classes only the runner's
watchdog sees — wire-up timed out, a stall, an mpirun that outlived its ranks — and what /proc told of a node
that never became ready, in the words and shape of `api/trainer/failures.py`. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import replace

from mpijob.api import names
from mpijob.api.trainer.failures import Facts, Failure, PodFacts
from mpijob.api.trainer.stacks import stack_hint


def wireup_timeout(facts: Facts) -> Failure:
    """mpirun started, but not every rank ran within the bound: the hosts that never reported, and why."""
    launcher = _launcher(facts)
    ranks = f"{len(facts.ranks_seen)} of {facts.world_size} ranks ran" if facts.world_size else "no rank ran"
    if facts.world_size and (absent := sorted(set(range(facts.world_size)) - set(facts.ranks_seen))):
        ranks += f" (never seen: rank{'s' if len(absent) > 1 else ''} {_ranks(absent)})"
    silent = [p for p in facts.pods if not p.launcher and p.name not in facts.reporting]
    hosts = "; ".join(f"{_where(p)}: {_silence(facts, p)}{_said(p.last_line)}" for p in silent[:8])
    more = f" and {len(silent) - 8} more" if len(silent) > 8 else ""
    heard = f". Never reported: {hosts}{more}" if hosts else ""
    last = next((ln.text for ln in reversed(facts.launcher_log) if ln.text.strip()), "")
    said = f". The launcher said last{_said(last)}" if last else ""
    culprit = silent[0] if silent else launcher
    return Failure(names.FAILURE_WIREUP_TIMEOUT, f"mpirun on {_where(launcher)} started {facts.bound:g}s ago and "
                   f"{ranks}{heard}{said}",
                   "Something between mpirun and the ranks hangs: an ssh session that never opens, a daemon that "
                   "cannot call mpirun back, a rank blocked before it starts. Read the named pods' logs; on a "
                   f"machine that is only slow, give wire-up longer (annotation {names.ANNOTATION_WIREUP_TIMEOUT}, "
                   'e.g. "10m", on the job or its runtime).', culprit.name, None, culprit.host)


def stalled(facts: Facts) -> Failure:
    """No rank printed anything and no pod used CPU for the bound: the job looks stalled."""
    idle = [p for p in facts.pods if p.name in facts.idle]
    pods = ", ".join(p.name for p in idle[:8]) + (f" and {len(idle) - 8} more" if len(idle) > 8 else "")
    ranks = f" (rank{'s' if len(facts.idle_ranks) > 1 else ''} {_ranks(facts.idle_ranks)})" if facts.idle_ranks else ""
    first = idle[0] if idle else _launcher(facts)
    return Failure(names.FAILURE_STALLED, f"nothing was printed and no process of pods {pods}{ranks} used CPU for "
                   f"{facts.bound:g}s", "A rank waits for something that never comes: a peer that ended quietly, a "
                   f"lock, a file, input; {stack_hint(facts.job, facts.namespace or 'default')}. For a job that "
                   f"is quiet on purpose, give it longer (annotation {names.ANNOTATION_STALL_TIMEOUT}) or only a "
                   f"warning ({names.ANNOTATION_ON_STALL}: {names.ON_STALL_WARN}).", first.name,
                   min(facts.idle_ranks) if facts.idle_ranks else None, first.host)


# mpirun's (ORTE, PRRTE) and Hydra's own report of a rank that ended badly: lines no rank printed
_EXITED = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s*Exit code:\s*(\d+)", re.S)
_SIGNALED = re.compile(r"rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)")
_HYDRA = re.compile(r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES.*?RANK (\d+) .*?EXIT CODE: (\d+)", re.S)


def launcher_hung(facts: Facts, exits: tuple[tuple[int, int], ...] = ()) -> Failure | None:
    """mpirun did not exit after every rank had ended and the log had gone quiet: the ranks' outcome, from
    their own exit statuses where the runner read them (`exits`: rank, code; -N for signal N), else as mpirun
    and its daemons reported it; None when no rank failed (the job completed)."""
    launcher = _launcher(facts)
    if failed := sorted((rank, code) for rank, code in exits if code):
        rank, code = failed[0]
        how = f"signal {-code}" if code < 0 else f"code {code}"
        last = next((ln.text for ln in reversed(facts.launcher_log) if ln.rank == rank and ln.text.strip()), "")
        return Failure(names.FAILURE_PROGRAM, f"rank {rank} exited with {how}{_said(last)}; mpirun on "
                       f"{_where(launcher)} had not exited {facts.bound:g}s after its last rank ended, and was stopped",
                       f"Read what it printed: mpijob logs {facts.job} --rank {rank}.", launcher.name, rank,
                       launcher.host)
    said = "\n".join(ln.text for ln in facts.launcher_log if ln.rank is None)
    for pattern, how in ((_EXITED, "code"), (_SIGNALED, "signal"), (_HYDRA, "code")):
        if m := pattern.search(said):
            rank, code = int(m.group(1)), int(m.group(2))
            last = next((ln.text for ln in reversed(facts.launcher_log) if ln.rank == rank and ln.text.strip()), "")
            return Failure(names.FAILURE_PROGRAM, f"rank {rank} ended with {how} {code}{_said(last)}; mpirun on "
                           f"{_where(launcher)} had not exited {facts.bound:g}s after its last rank ended, and was "
                           "stopped", f"Read what it printed: mpijob logs {facts.job} --rank {rank}.", launcher.name,
                           rank, launcher.host)
    return None


ELSEWHERE = "it listens elsewhere than"  # how the runner's /proc reading (procfs.not_listening) begins, when it is so


def not_ready_why(found: Failure, facts: Facts) -> Failure:
    """A node's failure to become ready, with what the runner could tell of why (`Facts.why`), and the fix
    that follows from it; a timeout's fix names the job's own bound too."""
    why = dict(facts.why).get(found.pod or "", "")
    if why.startswith(ELSEWHERE):
        return replace(found, summary=f"{found.summary}: {why}", fix=(
            "mpirun reaches every node's sshd on port 2222, where the job's key is accepted: start sshd as the "
            "node's command itself (/usr/sbin/sshd -De, as MPI Operator's examples do: the local cluster then "
            "runs it on 2222 with the job's key), not on another port or behind a shell."))
    fix = found.fix
    if found.reason == names.FAILURE_SSHD_NOT_READY and facts.starting and facts.ready_timeout:
        fix = f"{fix} For one job or runtime: annotation {names.ANNOTATION_READY_TIMEOUT} (e.g. \"5m\")."
    return replace(found, summary=f"{found.summary}: {why}" if why else found.summary, fix=fix)


def _ranks(ranks: list[int] | tuple[int, ...]) -> str:
    shown = ", ".join(map(str, sorted(ranks)[:16]))
    return shown + (f" and {len(ranks) - 16} more" if len(ranks) > 16 else "")


def _silence(facts: Facts, pod: PodFacts) -> str:
    if pod.name in facts.daemons:
        return "its MPI daemon started but ran no rank"
    return "no MPI daemon started there (mpirun's ssh session never reached it, or is still opening)"


def _launcher(facts: Facts) -> PodFacts:
    return next((p for p in facts.pods if p.launcher), PodFacts("", ""))


def _where(pod: PodFacts) -> str:
    return f"{'launcher' if pod.launcher else 'node'} pod {pod.name} (host {pod.host})"


def _said(line: str) -> str:
    line = line.strip()
    return f": {line[:300]}" if line else ""
