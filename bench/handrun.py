"""The baseline: the same `mpirun` run by hand, without mpijob, over freshly started plain sshds.

This is the floor any MPI launcher on one machine pays (keys, sshd start-up, ssh logins, orted
wire-up), so the difference to it is mpijob's own overhead. Everything lives in a temp directory
and every process started here is killed and reaped before `run` returns.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mpijob.controllers.kubelet.mpi_env import LOCAL_MCA
from mpijob.controllers.kubelet.sandbox import KEX, PRIVSEP_DIR

SSHD = "/usr/sbin/sshd"
SSH_PORT = 2222
REMOTE_HOSTS = 3  # plus localhost as the 4th host, like a launcher that is also a node
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Sample:
    ranks_running_s: float
    complete_s: float


class BaselineError(RuntimeError):
    """The hand-run did not finish; the message carries what mpirun or sshd printed."""


def free_addresses(count: int, port: int = SSH_PORT) -> list[str]:
    """Loopback addresses in 127.0.250.0/24 nobody listens on at `port` (mpijob's pool uses
    127.<hash>.x.y, but check anyway so the two never collide)."""
    found: list[str] = []
    for n in range(1, 255):
        ip = f"127.0.250.{n}"
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((ip, port))
            except OSError:
                continue
        found.append(ip)
        if len(found) == count:
            return found
    raise BaselineError(f"no {count} free loopback addresses with port {port} free in 127.0.250.0/24")


async def run(command_script: str, marker: str, nodes: int) -> Sample:
    """Time start → all `nodes` rank lines printed and start → mpirun exit. The timer starts
    before the keys are generated and the sshds are started."""
    t0 = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="mpijob-bench-hand-"))
    sshds: list[asyncio.subprocess.Process] = []
    mpirun: asyncio.subprocess.Process | None = None
    try:
        key, host_key = work / "id_ecdsa", work / "host_ed25519"
        await asyncio.gather(
            _check(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "521", "-N", "", "-C", "bench", "-f", str(key)]),
            _check(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench-host", "-f", str(host_key)]),
        )
        shutil.copyfile(key.with_suffix(".pub"), work / "authorized_keys")
        if os.geteuid() == 0:  # what a root sshd needs and only the ssh service creates: by hand, we make it
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        ips = free_addresses(nodes - 1)
        (work / "home").mkdir()
        for i, ip in enumerate(ips):
            cfg = work / f"sshd_{i}.conf"
            (tmp := work / f"tmp_{i}").mkdir()
            cfg.write_text(_sshd_config(ip, host_key, work / "authorized_keys", work / "home", tmp))
            log = open(work / f"sshd_{i}.log", "wb")  # noqa: SIM115 — handed to the child
            sshds.append(await asyncio.create_subprocess_exec(
                SSHD, "-D", "-e", "-f", str(cfg), stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True,
            ))
            log.close()
        # The hostfile names the sshds by address: names the machine's resolver does not know cost mpirun a
        # DNS timeout (5 s at 16 hosts here), where the pods' names are in their /etc/hosts
        (work / "ssh_config").write_text(_ssh_config(key))
        (work / "hostfile").write_text("".join(f"{h} slots=1\n" for h in [*ips, "localhost"]))
        await asyncio.gather(*(_wait_tcp(ip, SSH_PORT, sshds[i], work / f"sshd_{i}.log") for i, ip in enumerate(ips)))

        env = dict(
            os.environ,
            **LOCAL_MCA,  # what every pod's mpirun gets too

            OMPI_MCA_orte_default_hostfile=str(work / "hostfile"),
            OMPI_MCA_plm_rsh_agent=f"ssh -F {work / 'ssh_config'}",
            OMPI_MCA_btl_tcp_if_include="lo",
            OMPI_MCA_oob_tcp_if_include="lo",
            OMPI_ALLOW_RUN_AS_ROOT="1",
            OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        )
        mpirun = await asyncio.create_subprocess_exec(
            "mpirun", "bash", "-c", command_script, env=env, cwd=str(work),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        out, ranks_at = await asyncio.wait_for(_read_ranks(mpirun, marker, nodes, t0), TIMEOUT_S)
        code = await asyncio.wait_for(mpirun.wait(), TIMEOUT_S)
        complete = time.perf_counter() - t0
        if code != 0 or ranks_at is None:
            raise BaselineError(f"hand-run mpirun exited with {code}, ranks seen: {ranks_at is not None}:\n"
                                f"{out[-2000:]}")
        return Sample(ranks_running_s=ranks_at, complete_s=complete)
    except TimeoutError:
        raise BaselineError(f"hand-run mpirun did not finish within {TIMEOUT_S:.0f}s") from None
    finally:
        for proc in ([mpirun] if mpirun else []) + sshds:
            await _kill(proc)
        shutil.rmtree(work, ignore_errors=True)


async def _read_ranks(proc: asyncio.subprocess.Process, marker: str, nodes: int, t0: float) -> tuple[str, float | None]:
    """Read mpirun's output to the end; note when the last of the `nodes` rank lines appeared."""
    assert proc.stdout is not None
    seen: set[str] = set()
    ranks_at: float | None = None
    out: list[str] = []
    async for raw in proc.stdout:
        line = raw.decode(errors="replace")
        out.append(line)
        rank = parse_rank(line, marker)
        if rank is not None and ranks_at is None:
            seen.add(rank)
            if len(seen) == nodes:
                ranks_at = time.perf_counter() - t0
    return "".join(out), ranks_at


def parse_rank(line: str, marker: str) -> str | None:
    """The rank of a hello line carrying this run's marker, else None."""
    if f"marker={marker}" not in line:
        return None
    found = re.search(r"\brank=(\d+)", line)  # anywhere in the line: a hand run may tag its output
    return found[1] if found else None


def _sshd_config(ip: str, host_key: Path, authorized_keys: Path, home: Path, tmp: Path) -> str:
    """Sessions get an empty HOME, as mpijob's pods do: the login user's dotfiles (here root's
    `pyenv init`, ~0.1 s per ssh session, ~0.6 s per tree-spawned mpirun) are the machine's cost,
    not the floor of an MPI start. Each host gets a TMPDIR of its own, where Open MPI keeps its session
    directory, as separate machines (and pods) have."""
    return "\n".join([
        f"ListenAddress {ip}:{SSH_PORT}",
        f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized_keys}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "PidFile none",
        "PrintMotd no",
        "LogLevel ERROR",
        "MaxStartups 200",
        f"SetEnv HOME={home} TMPDIR={tmp}",
    ]) + "\n"


def _ssh_config(key: Path) -> str:
    lines = [
        "Host *",
        "  StrictHostKeyChecking no",
        "  UserKnownHostsFile /dev/null",
        f"  Port {SSH_PORT}",
        f"  IdentityFile {key}",
        "  IdentitiesOnly yes",
        "  BatchMode yes",
        "  LogLevel ERROR",
        f"  KexAlgorithms {KEX}",  # as the pods' ssh does
    ]
    return "\n".join(lines) + "\n"


async def _check(argv: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise BaselineError(f"{argv[0]} exited with {proc.returncode}: {out.decode(errors='replace')}")


async def _wait_tcp(ip: str, port: int, proc: asyncio.subprocess.Process, log: Path) -> None:
    """Poll every 10 ms until the sshd accepts a TCP connection."""
    deadline = time.perf_counter() + 10
    while time.perf_counter() < deadline:
        if proc.returncode is not None:
            raise BaselineError(f"sshd on {ip}:{port} exited with {proc.returncode}: {log.read_text(errors='replace')}")
        try:
            _, writer = await asyncio.open_connection(ip, port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.01)
    raise BaselineError(f"sshd on {ip}:{port} did not accept a connection within 10s: "
                        f"{log.read_text(errors='replace')}")


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill the process group (sshd session children, orted, ranks) and reap the leader."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    await proc.wait()
