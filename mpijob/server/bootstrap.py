"""Objects every local cluster has from its first start; re-running is a no-op.

Like a kube cluster's system namespaces plus what a Trainer install adds: the public version
ConfigMap the Kubeflow SDK reads and the bundled MPI ClusterTrainingRuntime. Plus kube-apiserver's
RBAC bootstrap policy and Trainer's and Kueue's user-facing ClusterRoles (`mpijob.api.rbac_policy`),
aggregated, and the `default` ServiceAccount of every namespace.
"""

from __future__ import annotations

import logging
from typing import Any

from mpijob.api import rbac_policy
from mpijob.api.names import DEFAULT_SERVICE_ACCOUNT, LABEL_APP_NAME
from mpijob.api.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CLUSTER_TRAINING_RUNTIMES,
    CONFIGMAPS,
    NAMESPACES,
    SERVICE_ACCOUNTS,
    Resource,
)
from mpijob.store.objects import Store

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kubeflow-system")
TRAINER_VERSION = "2.1.0"
VERSION_CONFIGMAP = "kubeflow-trainer-public"


def run(store: Store) -> None:
    for ns in SYSTEM_NAMESPACES:
        _create_missing(store, NAMESPACES, {"metadata": {"name": ns}, "spec": {"finalizers": ["kubernetes"]},
                                            "status": {"phase": "Active"}})
    _create_missing(
        store,
        CONFIGMAPS,
        {
            "metadata": {"name": VERSION_CONFIGMAP, "namespace": "kubeflow-system",
                         "labels": {LABEL_APP_NAME: "trainer"}},
            "data": {"kubeflow_trainer_version": TRAINER_VERSION},
        },
    )
    for runtime in _bundled_runtimes():
        _create_missing(store, CLUSTER_TRAINING_RUNTIMES, runtime)
    rbac_policy_objects(store)
    for ns in store.list(NAMESPACES, None)[0]:
        default_service_account(store, ns["metadata"]["name"])


def rbac_policy_objects(store: Store) -> None:
    """The bootstrap ClusterRoles and ClusterRoleBindings, then the aggregated roles' rules."""
    from mpijob.server.authz import reconcile_aggregation

    for role in rbac_policy.cluster_roles():
        _create_missing(store, CLUSTER_ROLES, role)
    for binding in rbac_policy.cluster_role_bindings():
        _create_missing(store, CLUSTER_ROLE_BINDINGS, binding)
    reconcile_aggregation(store)


def default_service_account(store: Store, namespace: str) -> None:
    """A namespace's `default` ServiceAccount (kube's serviceaccounts controller makes it)."""
    if store.try_get(NAMESPACES, "", namespace) is None:
        return
    _create_missing(store, SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                              "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}})


def _bundled_runtimes() -> list[dict[str, Any]]:
    try:
        from mpijob.api.runtimes import bundled
    except ModuleNotFoundError as exc:
        if exc.name != "mpijob.api.runtimes":
            raise
        log.warning("mpijob.api.runtimes is not available: no bundled ClusterTrainingRuntime installed")
        return []
    return bundled()


def _create_missing(store: Store, res: Resource, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    if store.try_get(res, meta.get("namespace", ""), meta["name"]) is None:
        store.create(res, obj, meta.get("namespace", ""))
        log.debug("bootstrap: created %s %s", res.kind, meta["name"])
