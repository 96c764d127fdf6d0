"""A pod's cgroups account what its processes use, as cAdvisor reads them for the kubelet: CPU seconds,
the working set and the peak (`PodCgroup.usage`, the source of `kubectl top` and of job accounting)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from mpijob.controllers.kubelet import cgroups
from mpijob.controllers.kubelet.cgroups import PodCgroup

# burns ~0.5 s of CPU, then holds 64 MiB (touched) until told to go
HOG = ("import sys, time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"
       "a = bytearray(64 << 20)\nprint('ready', flush=True)\nsys.stdin.readline()\n")


def test_usage_counts_cpu_time_working_set_and_peak() -> None:
    assert os.geteuid() == 0, "pod cgroups need root (CI runs as root)"
    cgroup = PodCgroup.create("test-usage", uuid.uuid4().hex[:8], {"limits": {"memory": "256Mi"}})
    assert cgroup is not None
    procs = " && ".join(f"echo $$ > {p}" for p in cgroup.procs)
    hog = subprocess.Popen(["sh", "-c", f'{procs} && exec "$0" -c "$1"', sys.executable, HOG],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout and hog.stdout.readline() == "ready\n"
        used = cgroup.usage()
        assert used is not None
        assert used.cpu_seconds is not None and 0.4 < used.cpu_seconds < 5, used
        assert 64 << 20 <= used.memory_bytes < 256 << 20, used
        assert used.memory_peak_bytes is not None and used.memory_peak_bytes >= used.memory_bytes, used
    finally:
        assert hog.stdin
        hog.stdin.close()
        hog.wait(timeout=10)
        cgroup.remove()
    assert cgroup.usage() is None and not cgroup.path.exists()


def test_a_server_sweeps_the_pod_cgroups_it_does_not_keep_and_its_own_when_empty() -> None:
    """Pod cgroups of runs that ended while no server ran go at the next start (`sweep`), the kept ones and any
    that still hold a process stay; the cluster's directory goes once empty (`remove_cluster`, at stop)."""
    assert os.geteuid() == 0, "pod cgroups need root (CI runs as root)"
    cluster = "test-sweep-" + uuid.uuid4().hex[:8]
    kept, gone, busy = (PodCgroup.create(cluster, cgroups.job_pod(uuid.uuid4().hex, "pi-worker-0"), {})
                        for _ in range(3))
    assert kept and gone and busy and len({kept.path, gone.path, busy.path}) == 3  # same pod name, three jobs
    procs = " && ".join(f"echo $$ > {p}" for p in busy.procs)
    holder = subprocess.Popen(["sh", "-c", f"{procs} && echo in && read line"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout and holder.stdout.readline() == "in\n"
        assert cgroups.sweep(cluster, {kept.path.name}) == 1
        assert kept.path.is_dir() and busy.path.is_dir() and not gone.path.exists()
        cgroups.remove_cluster(cluster)
        assert kept.path.parent.is_dir()  # not while pods' cgroups remain
    finally:
        assert holder.stdin
        holder.stdin.close()
        holder.wait(timeout=10)
    busy.remove()
    assert cgroups.sweep(cluster, ()) == 1
    cgroups.remove_cluster(cluster)
    assert not kept.path.parent.exists() and (kept.cpu_path is None or not kept.cpu_path.parent.exists())
