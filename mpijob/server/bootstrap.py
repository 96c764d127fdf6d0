"""Objects every local cluster has from its first start; re-running is a no-op.

Like a kube cluster's system namespaces plus what a Trainer install adds: the public version
ConfigMap the Kubeflow SDK reads and the bundled MPI ClusterTrainingRuntime. Plus kube-apiserver's
RBAC bootstrap policy and Trainer's and Kueue's user-facing ClusterRoles (`mpijob.api.core.rbac_policy`),
aggregated, the `default` ServiceAccount and the UID range (OpenShift's annotations) of every namespace.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from mpijob.api.core import rbac_policy, validation
from mpijob.api.core.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CLUSTER_TRAINING_RUNTIMES,
    CONFIGMAPS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    Resource,
)
from mpijob.api.core.tokens import CA_FILE
from mpijob.api.names import (
    ANNOTATION_DESCRIPTION,
    ANNOTATION_RBAC_AUTOUPDATE,
    DEFAULT_SERVICE_ACCOUNT,
    LABEL_APP_NAME,
    LABEL_NAMESPACE_NAME,
    ROOT_CA_CONFIGMAP,
    ROOT_CA_DESCRIPTION,
    TRAINER_CONTROLLER_NAMESPACE,
    TRAINER_PUBLIC_CONFIGMAP,
)
from mpijob.api.openshift import scc
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
LEGACY_MPI_USER = 1000  # upstream's runAsUser and fsGroup, which the bundled runtime had before tenant UIDs

SYSTEM_NAMESPACES = ("default", "kube-system", "kubeflow-system")
TRAINER_VERSION = "2.1.0"


def run(store: Store, ca_pem: str = "") -> None:
    """What a new cluster has, made where missing: system namespaces, the bundled runtimes, the RBAC policy,
    every namespace's UID range and defaults (`namespace_defaults`, with the cluster's CA `ca_pem`)."""
    for ns in SYSTEM_NAMESPACES:
        _create_missing(store, NAMESPACES, {"metadata": {"name": ns}, "spec": {"finalizers": ["kubernetes"]},
                                            "status": {"phase": "Active"}})
    _create_missing(
        store,
        CONFIGMAPS,
        {
            "metadata": {"name": TRAINER_PUBLIC_CONFIGMAP, "namespace": TRAINER_CONTROLLER_NAMESPACE,
                         "labels": {LABEL_APP_NAME: "trainer"}},
            "data": {"kubeflow_trainer_version": TRAINER_VERSION},
        },
    )
    for runtime in _bundled_runtimes():
        _create_missing(store, CLUSTER_TRAINING_RUNTIMES, runtime)
        _drop_fixed_ids(store, runtime)
    rbac_policy_objects(store)
    uid_ranges(store)
    namespace_name_labels(store)
    for namespace in store.list(NAMESPACES, None)[0]:
        namespace_defaults(store, namespace["metadata"]["name"], ca_pem)


def rbac_policy_objects(store: Store) -> None:
    """The bootstrap ClusterRoles and ClusterRoleBindings, then the aggregated roles' rules."""
    from mpijob.server.authz import reconcile_aggregation

    for role in rbac_policy.cluster_roles():
        _reconcile_role(store, role)
    for binding in rbac_policy.cluster_role_bindings():
        _create_missing(store, CLUSTER_ROLE_BINDINGS, binding)
    for role in rbac_policy.roles():
        _create_missing(store, ROLES, role)
    for binding in rbac_policy.role_bindings():
        _create_missing(store, ROLE_BINDINGS, binding)
    reconcile_aggregation(store)


def uid_ranges(store: Store) -> None:
    """Give each namespace without one its UID range (`mpijob.api.openshift.scc`): the bootstrap namespaces, and
    those of a home made before namespaces had ranges, oldest first, each the lowest free block."""
    def age(ns: dict[str, Any]) -> tuple[str, str]:
        return ns["metadata"].get("creationTimestamp") or "", ns["metadata"]["name"]

    for ns in sorted(store.list(NAMESPACES, None)[0], key=age):
        if scc.Ranges.of(ns) is None:
            scc.own_ranges(ns, None, store.list(NAMESPACES, None)[0])
            store.update(NAMESPACES, ns)


def namespace_name_labels(store: Store) -> None:
    """Label every namespace with its name as kube-apiserver does (`validation.name_label`): the
    bootstrap namespaces, and those of a home made before the server did."""
    for ns in store.list(NAMESPACES, None)[0]:
        if (ns["metadata"].get("labels") or {}).get(LABEL_NAMESPACE_NAME) != ns["metadata"]["name"]:
            validation.name_label(ns["metadata"])
            store.update(NAMESPACES, ns)


def namespace_defaults(store: Store, namespace: str, ca_pem: str) -> None:
    """What kube's controllers put in every namespace: its `default` ServiceAccount (serviceaccounts
    controller) and, given the cluster's CA, the `kube-root-ca.crt` ConfigMap holding it as `ca.crt`
    (root-ca-cert-publisher), which every pod's projected ServiceAccount volume names."""
    if store.try_get(NAMESPACES, "", namespace) is None:
        return
    _create_missing(store, SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                              "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}})
    if not ca_pem:
        return
    data = {CA_FILE: ca_pem}
    current = store.try_get(CONFIGMAPS, namespace, ROOT_CA_CONFIGMAP)
    if current is None:
        meta = {"name": ROOT_CA_CONFIGMAP, "namespace": namespace,
                "annotations": {ANNOTATION_DESCRIPTION: ROOT_CA_DESCRIPTION}}
        store.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}, namespace)
    elif current.get("data") != data:  # a new CA: the publisher writes it back
        store.update(CONFIGMAPS, {**current, "data": data})


def _bundled_runtimes() -> list[dict[str, Any]]:
    try:
        from mpijob.api.trainer.runtimes import bundled
    except ModuleNotFoundError as exc:
        if exc.name != "mpijob.api.trainer.runtimes":
            raise
        log.warning("mpijob.api.trainer.runtimes is not available: no bundled ClusterTrainingRuntime installed")
        return []
    return bundled()


def _drop_fixed_ids(store: Store, runtime: dict[str, Any]) -> None:
    """Servers before tenant UIDs installed the bundled runtime with upstream's `runAsUser`/`fsGroup` 1000,
    which restricted-v2 refuses to every tenant: a stored copy that differs from today's by exactly those
    ids (nobody edited it) becomes today's."""
    stored = store.try_get(CLUSTER_TRAINING_RUNTIMES, "", runtime["metadata"]["name"])
    if stored is None:
        return
    old = copy.deepcopy(runtime["spec"])
    for rjob in old["template"]["spec"]["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]["spec"]
        pod["securityContext"] = {"fsGroup": LEGACY_MPI_USER}
        for container in pod["containers"]:
            container["securityContext"] = {"runAsUser": LEGACY_MPI_USER}
    if stored.get("spec") == old:
        store.update(CLUSTER_TRAINING_RUNTIMES, {**stored, "spec": runtime["spec"]})
        log.info("bootstrap: %s no longer fixes its pods' UID (restricted-v2 gives them their namespace's)",
                 runtime["metadata"]["name"])


def _reconcile_role(store: Store, role: dict[str, Any]) -> None:
    """kube-apiserver's reconciliation of a bootstrap ClusterRole at start: made when missing, and given the
    rules, labels and aggregation a newer server ships (an upgraded home's `edit` learns a new resource),
    keeping what an admin added, unless its `autoupdate` annotation is "false"."""
    stored = store.try_get(CLUSTER_ROLES, "", role["metadata"]["name"])
    if stored is None:
        _create_missing(store, CLUSTER_ROLES, role)
        return
    meta, rules = stored["metadata"], stored.get("rules") or []
    if (meta.get("annotations") or {}).get(ANNOTATION_RBAC_AUTOUPDATE) == "false":
        return
    labels = {**(meta.get("labels") or {}), **(role["metadata"].get("labels") or {})}
    wanted = {**stored, "metadata": {**meta, "labels": labels},
              "rules": [*rules, *(r for r in role.get("rules") or [] if r not in rules)]}
    if "aggregationRule" in role:
        wanted["aggregationRule"] = role["aggregationRule"]
    if wanted != stored:
        store.update(CLUSTER_ROLES, wanted)
        log.info("bootstrap: reconciled ClusterRole %s", meta["name"])


def _create_missing(store: Store, res: Resource, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    if store.try_get(res, meta.get("namespace", ""), meta["name"]) is None:
        store.create(res, obj, meta.get("namespace", ""))
        log.debug("bootstrap: created %s %s", res.kind, meta["name"])
