"""rank_exits reads a rank's exit status through a pidfd, though the rank is another process's child, and
finds the first non-zero exit among the children of Hydra's proxies (real processes: a shell started under
the proxy's name stands in for hydra_pmi_proxy)."""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
from pathlib import Path

from mpijob.api import names
from mpijob.controllers.trainer import rank_exits


def test_the_kernel_tells_a_pidfds_holder_the_exit_status_from_linux_6_15() -> None:
    release = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    assert rank_exits.supported() == (release >= (6, 15)), release


def proxy(tmp_path: Path, script: str) -> subprocess.Popen[bytes]:
    """`script` run by bash under the name `hydra_pmi_proxy` (the kernel names a process after the file it ran)."""
    link = tmp_path / rank_exits.PROXY
    link.symlink_to("/bin/bash")
    return subprocess.Popen([str(link), "-c", script])


def test_a_grandchilds_exit_status_is_read_from_its_pidfd() -> None:
    sh = subprocess.Popen(["sh", "-c", "(sleep 0.3; exit 3) & wait"])
    try:
        kids = rank_exits._children(sh.pid)
        for _ in range(100):
            if kids:
                break
            select.select([], [], [], 0.01)
            kids = rank_exits._children(sh.pid)
        fd = os.pidfd_open(kids[0])
        assert rank_exits.exit_status(fd) is None  # still running
        select.select([fd], [], [], 5)
        status = None
        for _ in range(100):  # readable at its exit; the status once its parent has reaped it
            if (status := rank_exits.exit_status(fd)) is not None:
                break
            select.select([], [], [], 0.01)
        os.close(fd)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3
    finally:
        sh.wait()


def test_the_first_non_zero_exit_below_a_proxy_is_the_failure_not_a_zero_exit_nor_a_signal(tmp_path: Path) -> None:
    """The ranks end only once the watch has seen all four (under load, a look could otherwise come after a
    rank had already gone): rank 0 exits 0 and rank 1 is killed at once, rank 2 exits 5, rank 3 exits 7 later."""
    go = tmp_path / "go"
    wait = f"while [ ! -e {go} ]; do sleep 0.02; done"
    script = (f"PMI_RANK=0 bash -c '{wait}; exit 0' & "
              f"PMI_RANK=1 bash -c '{wait}; kill -9 $$' & "
              f"PMI_RANK=2 bash -c '{wait}; sleep 0.5; exit 5' & "
              f"PMI_RANK=3 bash -c '{wait}; sleep 3; exit 7' & wait")
    proc = proxy(tmp_path, script)
    try:
        async def watch() -> rank_exits.RankExit:
            w = rank_exits.Watch({"node-0": ("host-0", (proc.pid,))}, 1)
            first = asyncio.ensure_future(w.first_failure())
            for _ in range(1000):  # 10 s
                if sorted(rank for *_, rank in w.watched.values() if rank is not None) == [0, 1, 2, 3]:
                    break
                await asyncio.sleep(0.01)
            go.touch()
            return await asyncio.wait_for(first, 10)

        ended = asyncio.run(watch())
        assert ended == rank_exits.RankExit(2, 5, "node-0", "host-0")
    finally:
        proc.wait()


def test_the_failure_names_the_rank_its_code_its_last_line_and_the_launchers_end() -> None:
    found = rank_exits.failure("job", rank_exits.RankExit(1, 3, "job-node-0-0", "job-node-0-0.job"), "job-launcher",
                               "ls: cannot access '/x'\n", 137)
    assert found.reason == names.FAILURE_PROGRAM and (found.pod, found.rank) == ("job-node-0-0", 1)
    assert found.message.startswith(f"{names.FAILURE_PROGRAM}: rank 1 on node pod job-node-0-0 (host job-node-0-0.job) "
                                    "exited with code 3: rank 1: ls: cannot access '/x'; "), found.message
    assert "launcher pod job-launcher exited with code 137" in found.message
    assert "mpijob logs job --rank 1" in found.message
