"""A job's processes, found in /proc: what must be running while it runs, and gone once it ended."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from support.jobs import TAG
from support.timing import scaled
from support.waits import wait_for


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def job_processes(name: str, namespace: str = "default", pods: Sequence[str] = (), job_dir: Path | None = None
                  ) -> list[str]:
    """Live processes of one job, as `"<pid> <cmdline>"`: anything whose environment carries the job's
    `E2E_JOB` tag (every rank and orted: trainer.env reaches them) or a pod marker
    `MPIJOB_POD=<ns>/<pod>`, and anything whose command line names the job directory (its sshds)."""
    wanted = {f"{TAG}={name}".encode(), *(f"MPIJOB_POD={namespace}/{p}".encode() for p in pods)}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        stat = _read(entry / "stat")
        if b") Z " in stat or b") X " in stat:
            continue  # a zombie has run its course; only its parent's wait is missing
        cmdline = _read(entry / "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
        env = set(_read(entry / "environ").split(b"\0"))
        if env & wanted or (job_dir is not None and str(job_dir) in cmdline):
            found.append(f"{entry.name} {cmdline[:200]}")
    return found


def wait_no_processes(name: str, namespace: str = "default", pods: Sequence[str] = (), job_dir: Path | None = None,
                      timeout: float = 5) -> None:
    """Every process of the job is gone (a short grace: the kernel tears a PID namespace down after
    its init has been reaped)."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while left := job_processes(name, namespace, pods, job_dir):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes of job {name} still running {timeout:.0f}s after it ended:\n"
                                 + "\n".join(left))
        time.sleep(0.05)


def wait_ranks_seen(name: str, pods: Sequence[str], job_dir: Path, ranks: int, command: str = "sleep 60"
                    ) -> list[str]:
    """Wait until `job_processes` sees `ranks` processes running exactly `command` (remote ranks
    included): proof that the scan finds what it is later asked to find gone."""

    def probe() -> list[str]:
        found = job_processes(name, pods=pods, job_dir=job_dir)
        return found if sum(line.split(" ", 1)[1] == command for line in found) == ranks else []

    return wait_for(probe, f"{ranks} ranks of {name} running {command!r}", timeout=30)


def sshd_of(job_dir: Path, hostname: str) -> int:
    """The pid of the real sshd (not its sandbox wrapper, not a session) of one pod: its command line
    names an sshd_config inside the job directory and the pod's host name."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        words = _read(entry / "cmdline").replace(b"\0", b" ").split()  # sshd rewrites its argv into one
        config = next((w for w in words if w.endswith(b"sshd_config")), b"")
        is_listener = not any(b"@" in w for w in words)  # "sshd: user@notty" is a session
        if Path(exe).name == "sshd" and is_listener and str(job_dir).encode() in config and hostname.encode() in config:
            return int(entry.name)
    raise AssertionError(f"no sshd of {hostname} running under {job_dir}")


def job_dirs(home: Path, name: str, namespace: str = "default") -> list[Path]:
    """The job's working directories under $MPIJOB_HOME/jobs (`<ns>_<name>_<uid8>`)."""
    return sorted((home / "jobs").glob(f"{namespace}_{name}_*"))
