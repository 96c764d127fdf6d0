"""The kinds of job Kueue's integrations manage on the local cluster, and what each kind's integration knows
without the store: its Workload's name, its pod sets, where its user suspends it and how it ends.

Kueue has one integration per job kind (`pkg/controller/jobs/<kind>`) behind one generic reconciler; this
table is their pure half, so the Workload, the scheduler's reads and the messages stay kind-free (the
controllers' half is `controllers/kueue/integrations.py`). A TrainJob's Workload is
`trainjob-<name>-<hash of its uid>` (the local cluster's name since its first release, kept so stored
Workloads stay their jobs'), pod sets `launcher` and `node`; an MPIJob's is named as Kueue's
`GetWorkloadNameForOwnerWithGVK` names it, pod sets `launcher` and `worker` (Kueue's MPIJob integration:
each replica type, lowercased).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mpijob.api import Obj, names
from mpijob.api.core.resources import MPIJOBS, TRAINJOBS, Resource

HASH_LENGTH = 5  # Kueue's: the hash at the end of a Workload's name
MAX_PREFIX = 252 - HASH_LENGTH  # Kueue's: a name has at most 253 characters, '-' and the hash included


def kueue_workload_name(name: str, uid: str, kind: str, group: str) -> str:
    """Kueue's `GetWorkloadNameForOwnerWithGVK`: `<kind, lowercased>-<name>`, cut to fit, `-`, then the first
    five hex digits of the SHA-1 of the kind, group, name and uid, a newline between each."""
    digest = hashlib.sha1("\n".join((kind, group, name, uid)).encode()).hexdigest()[:HASH_LENGTH]
    return f"{f'{kind.lower()}-{name}'[:MAX_PREFIX]}-{digest}"


@dataclass(frozen=True)
class JobKind:
    resource: Resource
    suspend_field: tuple[str, ...]  # where its user suspends a job of this kind
    pod_sets: tuple[tuple[str, str], ...]  # (the run plan's replicated job, Kueue's pod set name), in order
    succeeded: str  # the condition type of a job that succeeded (`Failed` is both kinds' failure)
    kueue_name: bool  # its Workload is named as Kueue names it (else the TrainJob's local name)

    @property
    def kind(self) -> str:
        return self.resource.kind

    def suspended(self, job: Obj) -> bool:
        """Whether its user suspended the job."""
        node: object = job
        for key in self.suspend_field:
            node = node.get(key) if isinstance(node, dict) else None
        return node is True

    def suspend_path(self) -> str:
        return ".".join(self.suspend_field)

    def workload_name(self, job: Obj) -> str:
        meta = job["metadata"]
        if self.kueue_name:
            return kueue_workload_name(meta["name"], meta["uid"], self.kind, self.resource.group)
        return f"{self.kind.lower()}-{meta['name']}-{hashlib.sha256(meta['uid'].encode()).hexdigest()[:HASH_LENGTH]}"

    def end(self, job: Obj) -> Obj | None:
        """The condition that ended the job (Failed, or its kind's success), None while it runs or waits."""
        conditions = (job.get("status") or {}).get("conditions") or []
        for kind in (names.FAILED, self.succeeded):
            found = next((c for c in conditions if c.get("type") == kind and c.get("status") == "True"), None)
            if found is not None:
                return found
        return None


TRAINJOB = JobKind(TRAINJOBS, ("spec", "suspend"), ((names.LAUNCHER, names.LAUNCHER), (names.NODE, names.NODE)),
                   names.COMPLETE, kueue_name=False)
MPIJOB = JobKind(MPIJOBS, ("spec", "runPolicy", "suspend"),
                 ((names.LAUNCHER, names.LAUNCHER), (names.NODE, names.MPI_ROLE_WORKER)),
                 names.MPIJOB_SUCCEEDED_CONDITION, kueue_name=True)
KINDS: dict[str, JobKind] = {k.kind: k for k in (TRAINJOB, MPIJOB)}


def of(job: Obj) -> JobKind:
    """The kind of `job`; a TrainJob when it says none (as tests' and old callers' dicts may not)."""
    return KINDS.get(job.get("kind") or TRAINJOB.kind, TRAINJOB)


def owner(obj: Obj) -> tuple[JobKind, Obj] | None:
    """The kind and ownerReference of the job that owns `obj` (a Workload, a pod), if a known kind does."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        kind = KINDS.get(ref.get("kind", ""))
        if kind is not None and ref.get("apiVersion", kind.resource.api_version) == kind.resource.api_version:
            return kind, ref
    return None
