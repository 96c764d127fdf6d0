"""A restarted (or upgraded) server reconciles its bootstrap ClusterRoles as kube-apiserver does: what a newer
server ships is added, what an admin added is kept, and `autoupdate: "false"` leaves a role alone; and an
untouched bundled runtime follows what today's server ships."""

from __future__ import annotations

import copy
from pathlib import Path

from mpijob.api.core.resources import CLUSTER_ROLES, CLUSTER_TRAINING_RUNTIMES
from mpijob.api.trainer.runtimes import bundled
from mpijob.server import bootstrap
from mpijob.store.objects import Store

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
NETPOL_READ = {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "ingresses/status", "networkpolicies"],
               "verbs": ["get", "list", "watch"]}
EXTRA = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}


def _roles(store: Store) -> dict[str, dict]:
    return {r["metadata"]["name"]: r for r in store.list(CLUSTER_ROLES, None)[0]}


def test_an_older_homes_roles_learn_new_rules_and_keep_an_admins(tmp_path: Path) -> None:
    store = Store(tmp_path / "cluster.db")
    try:
        bootstrap.run(store)
        old = _roles(store)["system:aggregate-to-view"]
        assert NETPOL_READ in old["rules"]
        old["rules"] = [r for r in old["rules"] if r != NETPOL_READ] + [EXTRA]  # as an older server stored it
        store.update(CLUSTER_ROLES, old)
        pinned = _roles(store)["system:aggregate-to-edit"]
        pinned["metadata"]["annotations"][AUTOUPDATE] = "false"
        pinned["rules"] = [EXTRA]
        store.update(CLUSTER_ROLES, pinned)

        bootstrap.run(store)
        roles = _roles(store)
        assert NETPOL_READ in roles["system:aggregate-to-view"]["rules"]
        assert EXTRA in roles["system:aggregate-to-view"]["rules"]
        assert NETPOL_READ in roles["view"]["rules"]  # and the aggregated role follows
        assert roles["system:aggregate-to-edit"]["rules"] == [EXTRA]  # the admin pinned it
        before = _roles(store)
        bootstrap.run(store)
        assert _roles(store) == before  # nothing changes twice
    finally:
        store.close()


def test_an_older_homes_bundled_runtime_stops_fixing_uid_1000_unless_edited(tmp_path: Path) -> None:
    """Before tenant UIDs the bundled runtime asked for upstream's runAsUser/fsGroup 1000, which restricted-v2
    refuses to every tenant: a start migrates an untouched copy, and leaves an edited one alone."""
    store = Store(tmp_path / "cluster.db")
    try:
        old = copy.deepcopy(bundled()[0])
        for rjob in old["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = rjob["template"]["spec"]["template"]["spec"]
            pod["securityContext"] = {"fsGroup": 1000}
            for container in pod["containers"]:
                container["securityContext"] = {"runAsUser": 1000}
        edited = copy.deepcopy(old)
        edited["metadata"]["name"] = "edited"
        edited["spec"]["mlPolicy"]["numNodes"] = 3
        store.create(CLUSTER_TRAINING_RUNTIMES, old)
        store.create(CLUSTER_TRAINING_RUNTIMES, edited)
        bootstrap.run(store)
        assert store.get(CLUSTER_TRAINING_RUNTIMES, "", "mpi-distributed")["spec"] == bundled()[0]["spec"]
        assert store.get(CLUSTER_TRAINING_RUNTIMES, "", "edited")["spec"] == edited["spec"]
    finally:
        store.close()
