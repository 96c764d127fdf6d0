"""PersistentVolumeClaims on the local cluster: kube's PV controller, a provisioner and the PVC protection
controller in one (docs/volumes.md).

Every claim is bound at once to a directory of its own, `$MPIJOB_HOME/volumes/pvc-<uid>`, owned by its
namespace's first UID and group (OpenShift's ranges, `api/openshift/scc.py`) with the group's setgid bit, so the
namespace's pods can write and its files stay the namespace's. The claim shows `Bound`, its volume
`pvc-<uid>`, its capacity (the request: a directory is not limited) and access modes. The directory is
kept while the claim exists, across server restarts, and removed when the claim is deleted; a claim that
a pod of a job still running mounts waits for it (`kubernetes.io/pvc-protection`), as on a cluster.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from mpijob.api import Obj, names
from mpijob.api.core.resources import NAMESPACES, PERSISTENT_VOLUME_CLAIMS, PODS
from mpijob.api.core.volumes import STORAGE, claim_names
from mpijob.api.openshift import scc
from mpijob.controllers import events
from mpijob.store.home import Home
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
COMPONENT = "persistentvolume-controller"  # the Events' source, as kube-controller-manager names it
DIRECTORY_MODE = 0o2770  # the namespace's UID and group; setgid keeps new files the namespace group's
UNFINISHED = ("Pending", "Running")  # the pod phases that keep a claim in use


def directory(home: Home, claim: Obj) -> Path:
    """Where a claim's data lives on this machine."""
    return home.volumes / names.volume_name(claim["metadata"]["uid"])


class Claims:
    def __init__(self, store: Store, home: Home) -> None:
        self.store, self.home = store, home

    def reconcile(self, claim: Obj) -> None:
        """Bind an unbound claim to a new directory; keep its status in step with its spec; let a deleted
        one go once no unfinished pod mounts it."""
        current = self.store.try_get(PERSISTENT_VOLUME_CLAIMS, claim["metadata"]["namespace"],
                                     claim["metadata"]["name"])
        if current is None or current["metadata"]["uid"] != claim["metadata"]["uid"]:
            return  # a late event of a claim deleted since
        claim = current
        meta = claim["metadata"]
        if meta.get("deletionTimestamp"):
            self._release(claim)
            return
        volume = names.volume_name(meta["uid"])
        if (claim["spec"].get("volumeName") != volume
                or names.PVC_PROTECTION_FINALIZER not in meta.get("finalizers", [])):
            self._make(claim)
            meta["finalizers"] = [*[f for f in meta.get("finalizers") or [] if f != names.PVC_PROTECTION_FINALIZER],
                                  names.PVC_PROTECTION_FINALIZER]
            meta["annotations"] = {**(meta.get("annotations") or {}), names.ANNOTATION_BIND_COMPLETED: "yes",
                                   names.ANNOTATION_BOUND_BY_CONTROLLER: "yes",
                                   names.ANNOTATION_STORAGE_PROVISIONER: names.LOCAL_PROVISIONER}
            claim["spec"]["volumeName"] = volume
            claim = self.store.update(PERSISTENT_VOLUME_CLAIMS, claim)
            events.record(self.store, claim, names.REASON_PROVISIONING_SUCCEEDED,
                          f"Successfully provisioned volume {volume} at {directory(self.home, claim)}",
                          component=names.LOCAL_PROVISIONER)
        wanted = {"phase": names.CLAIM_BOUND, "accessModes": list(claim["spec"].get("accessModes") or []),
                  "capacity": {STORAGE: str(claim["spec"]["resources"]["requests"][STORAGE])}}
        if claim.get("status") != wanted:
            claim["status"] = wanted
            self.store.update(PERSISTENT_VOLUME_CLAIMS, claim, status=True)

    def _make(self, claim: Obj) -> None:
        """The claim's directory, owned by its namespace's first UID and group."""
        self.home.volumes.mkdir(parents=True, exist_ok=True)
        os.chmod(self.home.volumes, 0o711)  # pods reach their claim's directory; nobody lists the others
        path = directory(self.home, claim)
        path.mkdir(exist_ok=True)
        namespace = self.store.try_get(NAMESPACES, "", claim["metadata"]["namespace"])
        ranges = scc.Ranges.of(namespace)
        if ranges is not None and os.geteuid() == 0:
            os.chown(path, ranges.uids.first, ranges.groups.first)
        os.chmod(path, DIRECTORY_MODE if ranges is not None else 0o700)

    def in_use(self, claim: Obj) -> bool:
        """Whether a pod that has not finished mounts the claim (kube's PVC protection)."""
        meta = claim["metadata"]
        return any(meta["name"] in claim_names(p.get("spec") or {})
                   and (p.get("status") or {}).get("phase", "Pending") in UNFINISHED
                   for p in self.store.list(PODS, meta["namespace"])[0])

    def _release(self, claim: Obj) -> None:
        meta = claim["metadata"]
        if self.in_use(claim):
            return
        finalizers = [f for f in meta.get("finalizers") or [] if f != names.PVC_PROTECTION_FINALIZER]
        if finalizers != (meta.get("finalizers") or []):
            meta["finalizers"] = finalizers
            claim = self.store.update(PERSISTENT_VOLUME_CLAIMS, claim)
        if not finalizers:
            self.store.delete(PERSISTENT_VOLUME_CLAIMS, meta["namespace"], meta["name"])
            self.deleted(claim)

    def deleted(self, claim: Obj) -> None:
        """The claim is gone: so is its data."""
        shutil.rmtree(directory(self.home, claim), ignore_errors=True)

    def pod_changed(self, pod: Obj) -> None:
        """A pod finished or went: the deleted claims it held may go too."""
        ns = pod["metadata"]["namespace"]
        for name in claim_names(pod.get("spec") or {}):
            claim = self.store.try_get(PERSISTENT_VOLUME_CLAIMS, ns, name)
            if claim is not None and claim["metadata"].get("deletionTimestamp"):
                self._release(claim)

    def recover(self) -> None:
        """At start: every claim bound (or released), and directories whose claim is gone removed."""
        claims = self.store.list(PERSISTENT_VOLUME_CLAIMS, None)[0]
        for claim in claims:
            self.reconcile(claim)
        kept = {directory(self.home, c) for c in claims}
        if self.home.volumes.is_dir():
            for d in self.home.volumes.iterdir():
                if d not in kept:
                    log.warning("removing %s: its claim no longer exists", d)
                    shutil.rmtree(d, ignore_errors=True)
