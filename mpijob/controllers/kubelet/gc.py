"""Garbage collection: ownerReference cascade, job directories, and processes a dead server left."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Collection
from pathlib import Path

from mpijob.api.core.resources import CONFIGMAPS, PODS, SECRETS, WORKLOADS
from mpijob.api.kueue import owners
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

OWNED = (PODS, SECRETS, CONFIGMAPS, WORKLOADS)


def cascade(store: Store, logs: LogStore, owner_uid: str) -> int:
    """Delete everything whose ownerReferences name `owner_uid`; pods take their logs along."""
    deleted = 0
    for res in OWNED:
        items, _ = store.list(res)
        for obj in items:
            if any(ref.get("uid") == owner_uid for ref in obj["metadata"].get("ownerReferences") or []):
                meta = obj["metadata"]
                store.delete(res, meta["namespace"], meta["name"])
                if res is PODS:
                    logs.remove(meta["namespace"], meta["name"])
                deleted += 1
    return deleted


def sweep_orphans(store: Store, logs: LogStore, home: Home) -> None:
    """After a restart: finish cascades that a dead server did not (of TrainJobs and MPIJobs), and drop
    their job directories."""
    jobs = [job for kind in owners.KINDS.values() for job in store.list(kind.resource)[0]]
    live = {j["metadata"]["uid"] for j in jobs}
    for res in OWNED:
        items, _ = store.list(res)
        for obj in items:
            refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("kind") in owners.KINDS]
            if refs and not any(r.get("uid") in live for r in refs):
                cascade(store, logs, refs[0]["uid"])
    kept = {home.job_dir(j["metadata"]["namespace"], j["metadata"]["name"], j["metadata"]["uid"]) for j in jobs}
    if home.jobs.is_dir():
        for d in home.jobs.iterdir():
            if d not in kept:
                remove_tree(d)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def kill_leftovers(cluster_id: str, keep: Collection[str] = ()) -> int:
    """SIGKILL every process tagged with this cluster's marker (the pods of a previous server's runs) but
    those of the pods in `keep` (`<namespace>/<pod>`: re-adopted ones). The supervisor of a pod killed so
    records its exit and ends (`shim.py`); supervisors carry no marker themselves."""
    marker = f"MPIJOB_CLUSTER={cluster_id}".encode()
    kept = {f"MPIJOB_POD={pod}".encode() for pod in keep}
    me = os.getpid()
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            env = set((entry / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if marker in env and not env & kept:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed
