"""A restarted (or upgraded) server reconciles its bootstrap ClusterRoles as kube-apiserver does: what a newer
server ships is added, what an admin added is kept, and `autoupdate: "false"` leaves a role alone."""

from __future__ import annotations

from pathlib import Path

from mpijob.api.resources import CLUSTER_ROLES
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
