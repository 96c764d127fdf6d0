"""Hydra's proxies call `mpiexec` back at its host name unless told otherwise; in the process sandbox that name
is the machine's, which a fresh Debian root does not resolve. The process sandbox's launcher variables
(`Implementation.elsewhere_env`) must make real MPICH and Intel MPI launch on a machine whose name resolves
nowhere. The machine is a UTS namespace with an unresolvable host name; the proxies start through a local
stand-in for ssh (the callback, not ssh, is what is tested: the e2e tests use real ssh)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mpijob.api import names
from mpijob.api.trainer import mpi_impl
from mpijob.controllers.kubelet import mpi_installs

UNRESOLVABLE = "no-such-host-mpijob-test"
# ssh's stand-in: drops ssh's options and the host, and runs the remote command here
LOCAL_SSH = '#!/bin/bash\nwhile [[ $1 == -* ]]; do [[ $1 == -[oFpil] ]] && shift; shift; done\nshift\nexec bash -c "$*"\n'


def run_under_unresolvable_name(impl: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    install = mpi_installs.prefix(mpi_impl.IMPLEMENTATIONS[impl])
    assert install is not None and (install / "bin" / "mpiexec").exists(), f"{impl}: run `make setup`"
    ssh = tmp_path / "ssh"
    if not ssh.exists():  # once per test: rewritten, it was "Text file busy" while the first run's proxies ended
        ssh.write_text(LOCAL_SSH)
        ssh.chmod(0o755)
    full = {"PATH": f"{install}/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LD_LIBRARY_PATH": f"{install}/lib",
            "I_MPI_ROOT": str(install), **env}
    mpiexec = f"{install}/bin/mpiexec -launcher ssh -launcher-exec {ssh} -hosts 127.0.0.2,127.0.0.3 -n 2 hostname"
    return subprocess.run(["unshare", "--uts", "sh", "-c", f"hostname {UNRESOLVABLE} && exec {mpiexec}"],
                          env=full, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("impl", [names.MPI_MPICH, names.MPI_INTEL])
def test_hydra_launches_in_the_process_sandbox_where_the_host_name_does_not_resolve(impl: str, tmp_path: Path) -> None:
    assert os.geteuid() == 0, "a UTS namespace of its own needs root"
    loopback = {k: v for k, v in mpi_impl.IMPLEMENTATIONS[impl].elsewhere_env("/x/hostfile", "/x/ssh_config").items()
                if k in (names.HYDRA_IFACE, names.I_MPI_IFACE)}
    without = run_under_unresolvable_name(impl, tmp_path, {})
    assert without.returncode != 0 and UNRESOLVABLE in without.stderr, without  # the failure this guards against
    done = run_under_unresolvable_name(impl, tmp_path, loopback)
    assert done.returncode == 0, done
    assert done.stdout.split() == [UNRESOLVABLE] * 2
