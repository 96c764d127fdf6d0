"""A server run as someone without root: a user the tests make (`mpijob-ci`), as a data scientist on a
shared machine runs `mpijob server run`. Run by root, the tests switch to that user; run by anyone else,
they are that user already."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mpijob.store import server_process
from mpijob.store.home import Home

MPIJOB = str(Path(sys.executable).parent / "mpijob")
USER, UID = "mpijob-ci", 23456
READY_S = 60  # for the server to answer: it starts from nothing, and detects its sandbox


def _userns_refused() -> str:
    """Why this environment refuses user namespaces even to this process ("" when it allows them). Where
    the tests run as root, a refusal is the environment's, not a setting an ordinary user lacks: the kernel
    refuses them to every process in a chroot (`unshare(2)`, EPERM), and ../shared/fresh-machine runs the
    tests in one. There a server without root falls back to the process sandbox and says why."""
    if os.geteuid() != 0:
        return ""  # an ordinary user: whether it may is what the tests are there to find out
    probe = subprocess.run(["unshare", "--user", "true"], capture_output=True, text=True, check=False)
    return "" if probe.returncode == 0 else (
        f"this environment refuses user namespaces even to root ({probe.stderr.strip()}), as the kernel does in a "
        "chroot such as ../shared/fresh-machine's: the rootless sandbox cannot be tried here")


USERNS_REFUSED = _userns_refused()


def ensure_user() -> None:
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/bash", "-u", str(UID), USER], check=True)


def as_user(argv: list[str], env: dict[str, str]) -> list[str]:
    """`argv` run as USER. This interpreter may live under a 0700 /root (pyenv): in a private mount
    namespace of the test only, /root becomes a tmpfs with just the interpreter bound back."""
    prefix = Path(sys.base_prefix)
    reach = ""
    if prefix.is_relative_to("/root"):
        reach = (f"mkdir -p /run/mpijob-test-stage && mount --bind /root /run/mpijob-test-stage && "
                 f"mount -t tmpfs -o mode=0755 tmpfs /root && mkdir -p {prefix} && "
                 f"mount --bind /run/mpijob-test-stage/{prefix.relative_to('/root')} {prefix} && ")
    envs = " ".join(f"{k}={v}" for k, v in env.items())
    script = f"{reach}exec setpriv --reuid={UID} --regid={UID} --clear-groups env -i {envs} " + " ".join(argv)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


@contextmanager
def unprivileged_server(prefix: str, env: dict[str, str] | None = None) -> Iterator[Home]:
    """`mpijob server run` as USER in a fresh home (its own directory, USER's), with `env` added; stopped,
    and its directory removed, afterwards."""
    if os.geteuid() != 0:  # already unprivileged: the plain server is the one under test
        with tempfile.TemporaryDirectory(prefix=prefix) as root:
            home = Home(Path(root) / "home").ensure()
            server_process.start(home, timeout=READY_S, env=env)
            try:
                yield home
            finally:
                server_process.stop(home)
        return
    ensure_user()
    root = Path(tempfile.mkdtemp(prefix=prefix))  # pytest's tmp dirs are 0700 root
    os.chown(root, UID, UID)
    home = Home(root / "home")
    full = {"HOME": str(root), "PATH": "/usr/bin:/bin", "MPIJOB_HOME": str(home.root), **(env or {})}
    proc = subprocess.Popen(as_user([MPIJOB, "server", "run"], full), cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + READY_S
        while server_process.status(home) is None:
            log = home.server_log.read_text(errors="replace")[-3000:] if home.server_log.exists() else "(none)"
            assert proc.poll() is None, f"the server exited early; its log:\n{log}"
            assert time.monotonic() < deadline, f"the server did not answer within {READY_S} s; its log:\n{log}"
            time.sleep(0.1)
        yield home
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
