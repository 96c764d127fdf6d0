"""The RBAC objects every local cluster has from its first start, as a kube cluster plus a Trainer and a
Kueue install have them.

* kube-apiserver's bootstrap policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`): the
  user-facing ClusterRoles `cluster-admin`, `admin`, `edit`, `view` (the last three aggregated from
  `system:aggregate-to-*` through the `rbac.authorization.k8s.io/aggregate-to-*` labels, `view`
  feeding `edit` feeding `admin`), and what every authenticated user may do: discovery
  (`system:discovery`), the public info (`system:public-info-viewer`), asking what it may do
  (`system:basic-user`: SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview);
  `cluster-admin` bound to `system:masters`.
* Kueue's user-facing ClusterRoles (`config/components/rbac`, named with its `kueue-` prefix): the
  editor and viewer role of each Kueue kind, aggregated into `kueue-batch-admin-role` and
  `kueue-batch-user-role` by `rbac.kueue.x-k8s.io/batch-admin|batch-user`; the viewers of LocalQueues
  and TrainJobs also into `view`/`edit`/`admin`, the cluster-level viewers into `admin`.
* Trainer's user-facing roles, named `kubeflow-trainer-admin|edit|view` and aggregated into `admin`,
  `edit`, `view` (and Kubeflow's `kubeflow-admin|edit|view`) as Kubeflow's manifests aggregate the
  training roles: TrainJobs for `edit`, TrainingRuntimes too for `admin`, everything read-only for
  `view`. What Trainer's manifests give every authenticated user: reading ClusterTrainingRuntimes
  (`kubeflow-trainer-view-cluster-runtimes`) and the `kubeflow-trainer-public` ConfigMap in
  `kubeflow-system` (a Role and RoleBinding there), which the upstream SDK reads first.
* One deliberate addition: Kueue's viewers of Workloads and of a LocalQueue's pending workloads are
  aggregated into `view`/`edit`/`admin` too (upstream an admin binds `kueue-batch-user-role`), so whoever
  may run jobs in a namespace sees why they wait (docs/parity.md).
* MPI Operator's `kubeflow-mpijobs-admin|edit|view`, as its manifests aggregate them (and into
  `admin`, `edit`, `view`), for the MPIJobs the local cluster serves.
* OpenShift's `system:openshift:scc:nonroot-v2` and `system:openshift:scc:anyuid`: the `use` of that
  SCC, bound to nobody (an admin binds them to let a user's pods run as a UID outside its namespace's
  range, or as root: docs/security.md, "Tenant UIDs").
* Who may read metrics (docs/metrics.md): `metrics-reader` (`get` on /metrics, bound to nobody) and
  metrics-server's `system:aggregated-metrics-reader` (PodMetrics and NodeMetrics, into view/edit/admin).
* mpijob's `mpijob-history-view`: reading the job history (`jobrecords`, docs/history.md), into
  view/edit/admin, so whoever may look at a namespace's jobs may read what ran there.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.rbac import ALL_VERBS, READ_VERBS, WRITE_VERBS
from mpijob.api.core.resources import MPIJOBS
from mpijob.api.openshift import scc

EDITOR_VERBS = tuple(v for v in ALL_VERBS if v != "deletecollection")  # kubebuilder's editor roles

RBAC_API_VERSION = f"{names.RBAC_GROUP}/{names.RBAC_VERSION}"
DEFAULTS_LABEL = {names.LABEL_BOOTSTRAPPING: "rbac-defaults"}
AUTOUPDATE = {names.ANNOTATION_RBAC_AUTOUPDATE: "true"}
CLUSTER_ADMIN, ADMIN, EDIT, VIEW = "cluster-admin", "admin", "edit", "view"
KUEUE_BATCH_ADMIN, KUEUE_BATCH_USER = "kueue-batch-admin-role", "kueue-batch-user-role"
TRAINER_ADMIN, TRAINER_EDIT, TRAINER_VIEW = "kubeflow-trainer-admin", "kubeflow-trainer-edit", "kubeflow-trainer-view"
TRAINER_VIEW_CLUSTER_RUNTIMES = "kubeflow-trainer-view-cluster-runtimes"
HISTORY_VIEW = "mpijob-history-view"
MPIJOBS_ADMIN, MPIJOBS_EDIT, MPIJOBS_VIEW = "kubeflow-mpijobs-admin", "kubeflow-mpijobs-edit", "kubeflow-mpijobs-view"


def rule(groups: list[str], resources: list[str], verbs: tuple[str, ...] | list[str]) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": list(verbs)}


def _cluster_role(name: str, rules: list[Obj], labels: dict[str, str] | None = None,
                  selectors: list[str] | None = None, bootstrap: bool = True) -> Obj:
    meta: Obj = {"name": name, "labels": {**(DEFAULTS_LABEL if bootstrap else {}), **(labels or {})}}
    if bootstrap:
        meta["annotations"] = dict(AUTOUPDATE)
    role: Obj = {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": meta, "rules": rules}
    if selectors:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {key: "true"}} for key in selectors]}
    return role


def _binding(name: str, role: str, groups: list[str], namespace: str = "", bootstrap: bool = True) -> Obj:
    """A ClusterRoleBinding of `role`, or in `namespace` a RoleBinding of the Role `role`, to `groups`."""
    meta: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    if bootstrap:
        meta |= {"labels": dict(DEFAULTS_LABEL), "annotations": dict(AUTOUPDATE)}
    return {
        "apiVersion": RBAC_API_VERSION, "kind": "RoleBinding" if namespace else "ClusterRoleBinding", "metadata": meta,
        "roleRef": {"apiGroup": names.RBAC_GROUP, "kind": "Role" if namespace else "ClusterRole", "name": role},
        "subjects": [{"apiGroup": names.RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


def _kube() -> list[Obj]:
    rw = WRITE_VERBS
    view = [
        rule([""], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
                    "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
                    "services/status"], READ_VERBS),
        rule([""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                    "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"], READ_VERBS),
        rule([""], ["namespaces"], READ_VERBS),
        rule(["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                        "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
                        "statefulsets", "statefulsets/scale", "statefulsets/status"], READ_VERBS),
        rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ_VERBS),
        rule([names.NETWORKING_GROUP], ["ingresses", "ingresses/status", "networkpolicies"], READ_VERBS),
    ]
    edit = [
        rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
             READ_VERBS),
        rule([""], ["serviceaccounts"], ["impersonate"]),
        rule([""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], rw),
        rule([""], ["pods/eviction"], ["create"]),
        rule([""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                    "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"], rw),
        rule([""], ["serviceaccounts/token"], ["create"]),
        rule(["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                        "replicasets/scale", "statefulsets", "statefulsets/scale"], rw),
        rule(["batch"], ["cronjobs", "jobs"], rw),
        rule([names.NETWORKING_GROUP], ["ingresses", "networkpolicies"], rw),
    ]
    admin = [
        rule([names.AUTHORIZATION_GROUP], ["localsubjectaccessreviews"], ["create"]),
        rule([names.RBAC_GROUP], ["rolebindings", "roles"], ALL_VERBS),
    ]
    discovery_urls = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
                      "/readyz", "/version", "/version/"]
    return [
        _cluster_role(CLUSTER_ADMIN, [rule(["*"], ["*"], ["*"]), {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _cluster_role(ADMIN, [], selectors=[names.LABEL_AGGREGATE_TO_ADMIN]),
        _cluster_role(EDIT, [], {names.LABEL_AGGREGATE_TO_ADMIN: "true"}, [names.LABEL_AGGREGATE_TO_EDIT]),
        _cluster_role(VIEW, [], {names.LABEL_AGGREGATE_TO_EDIT: "true"}, [names.LABEL_AGGREGATE_TO_VIEW]),
        _cluster_role("system:aggregate-to-admin", admin, {names.LABEL_AGGREGATE_TO_ADMIN: "true"}),
        _cluster_role("system:aggregate-to-edit", edit, {names.LABEL_AGGREGATE_TO_EDIT: "true"}),
        _cluster_role("system:aggregate-to-view", view, {names.LABEL_AGGREGATE_TO_VIEW: "true"}),
        _cluster_role("system:discovery", [{"nonResourceURLs": discovery_urls, "verbs": ["get"]}]),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version",
                                                                          "/version/"], "verbs": ["get"]}]),
        _cluster_role("system:basic-user", [
            rule([names.AUTHORIZATION_GROUP], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], ["create"]),
            rule([names.AUTHENTICATION_GROUP], ["selfsubjectreviews"], ["create"]),
        ]),
    ]


def _kueue() -> list[Obj]:
    g = [names.KUEUE_GROUP]
    admin, user = names.LABEL_KUEUE_BATCH_ADMIN, names.LABEL_KUEUE_BATCH_USER
    to_all = [names.LABEL_AGGREGATE_TO_VIEW, names.LABEL_AGGREGATE_TO_EDIT, names.LABEL_AGGREGATE_TO_ADMIN]

    def role(name: str, rules: list[Obj], *keys: str, kind_role: str = "") -> Obj:
        labels = dict.fromkeys(keys, "true")
        if kind_role:
            labels[names.LABEL_KUEUE_ROLE] = kind_role
        return _cluster_role(f"kueue-{name}", rules, labels, bootstrap=False)

    def editor(plural: str, status: bool, *keys: str) -> Obj:
        rules = [rule(g, [plural], EDITOR_VERBS)]
        if status:
            rules.append(rule(g, [f"{plural}/status"], ["get"]))
        return role(f"{plural[:-1]}-editor-role", rules, *keys, kind_role=f"{plural[:-1]}-editor")

    def viewer(plural: str, status: bool, *keys: str) -> Obj:
        rules = [rule(g, [plural], READ_VERBS)]
        if status:
            rules.append(rule(g, [f"{plural}/status"], ["get"]))
        return role(f"{plural[:-1]}-viewer-role", rules, *keys)

    trainjob_rules = [rule([names.TRAINER_GROUP], ["trainjobs"], EDITOR_VERBS),
                      rule([names.TRAINER_GROUP], ["trainjobs/status"], ["get"])]
    return [
        _cluster_role(KUEUE_BATCH_ADMIN, [], selectors=[admin], bootstrap=False),
        _cluster_role(KUEUE_BATCH_USER, [], selectors=[user], bootstrap=False),
        editor("clusterqueues", True, admin),
        viewer("clusterqueues", True, admin, names.LABEL_AGGREGATE_TO_ADMIN),
        editor("localqueues", True, admin),
        viewer("localqueues", True, admin, user, *to_all),
        editor("resourceflavors", False, admin),
        viewer("resourceflavors", False, admin, names.LABEL_AGGREGATE_TO_ADMIN),
        editor("workloads", True, admin),
        viewer("workloads", True, admin, user, *to_all),  # into view/edit/admin: ours (module doc)
        editor("cohorts", False, admin),
        viewer("cohorts", False, admin, names.LABEL_AGGREGATE_TO_ADMIN),
        editor("workloadpriorityclasses", False, admin),
        viewer("workloadpriorityclasses", False, admin, names.LABEL_AGGREGATE_TO_ADMIN),
        role("trainjob-editor-role", trainjob_rules, admin, user, kind_role="trainjob-editor"),
        role("trainjob-viewer-role", [rule([names.TRAINER_GROUP], ["trainjobs"], READ_VERBS),
                                      rule([names.TRAINER_GROUP], ["trainjobs/status"], ["get"])],
             admin, user, *to_all),
        role("pending-workloads-cq-viewer-role",
             [rule([names.KUEUE_VISIBILITY_GROUP], ["clusterqueues/pendingworkloads"], READ_VERBS)], admin),
        role("pending-workloads-lq-viewer-role",
             [rule([names.KUEUE_VISIBILITY_GROUP], ["localqueues/pendingworkloads"], READ_VERBS)], admin, user,
             *to_all),
    ]


def _trainer() -> list[Obj]:
    t = [names.TRAINER_GROUP]
    return [
        _cluster_role(TRAINER_ADMIN, [rule(t, ["trainingruntimes"], ALL_VERBS)],
                      {names.LABEL_AGGREGATE_TO_ADMIN: "true", names.LABEL_KUBEFLOW_AGGREGATE_TO_ADMIN: "true"},
                      bootstrap=False),
        _cluster_role(TRAINER_EDIT, [rule(t, ["trainjobs"], ALL_VERBS), rule(t, ["trainjobs/status"], ["get"])],
                      {names.LABEL_AGGREGATE_TO_EDIT: "true", names.LABEL_KUBEFLOW_AGGREGATE_TO_EDIT: "true"},
                      bootstrap=False),
        _cluster_role(TRAINER_VIEW, [rule(t, ["trainjobs", "trainingruntimes", "clustertrainingruntimes"], READ_VERBS),
                                     rule(t, ["trainjobs/status"], ["get"])],
                      {names.LABEL_AGGREGATE_TO_VIEW: "true", names.LABEL_KUBEFLOW_AGGREGATE_TO_VIEW: "true"},
                      bootstrap=False),
        _cluster_role(TRAINER_VIEW_CLUSTER_RUNTIMES, [rule(t, ["clustertrainingruntimes"], READ_VERBS)],
                      bootstrap=False),
    ]


def _mpi_operator() -> list[Obj]:
    """MPI Operator's user-facing roles (its `manifests/base/cluster-role.yaml`): `kubeflow-mpijobs-edit` and
    `-view`, aggregated into Kubeflow's roles as there and, as Trainer's are here, into `edit` and `view`;
    `kubeflow-mpijobs-admin` aggregates the edit role, into `admin`."""
    g, jobs = [names.MPI_OPERATOR_GROUP], [MPIJOBS.plural, f"{MPIJOBS.plural}/status"]
    return [
        _cluster_role(MPIJOBS_ADMIN, [], {names.LABEL_AGGREGATE_TO_ADMIN: "true",
                                          names.LABEL_KUBEFLOW_AGGREGATE_TO_ADMIN: "true"},
                      [names.LABEL_KUBEFLOW_AGGREGATE_TO_MPIJOBS_ADMIN], bootstrap=False),
        _cluster_role(MPIJOBS_EDIT, [rule(g, jobs, ALL_VERBS)],
                      {names.LABEL_AGGREGATE_TO_EDIT: "true", names.LABEL_KUBEFLOW_AGGREGATE_TO_EDIT: "true",
                       names.LABEL_KUBEFLOW_AGGREGATE_TO_MPIJOBS_ADMIN: "true"}, bootstrap=False),
        _cluster_role(MPIJOBS_VIEW, [rule(g, jobs, READ_VERBS)],
                      {names.LABEL_AGGREGATE_TO_VIEW: "true", names.LABEL_KUBEFLOW_AGGREGATE_TO_VIEW: "true"},
                      bootstrap=False),
    ]


def _openshift() -> list[Obj]:
    """OpenShift's roles that let their subjects use an SCC beyond `restricted-v2` (`api/openshift/scc.py`)."""
    return [_cluster_role(f"{names.SCC_ROLE_PREFIX}{name}", [
        {**rule([names.SECURITY_GROUP], [names.SCC_RESOURCE], [scc.USE]), "resourceNames": [name]}], bootstrap=False)
        for name in scc.GRANTED]


def _metrics() -> list[Obj]:
    """Who may read metrics: `metrics-reader`, `get` on /metrics (the role kubebuilder projects and
    kube-prometheus ship for a Prometheus to bind), and metrics-server's `system:aggregated-metrics-reader`,
    aggregated into view/edit/admin, so whoever may read pods may `kubectl top` them."""
    to_all = {names.LABEL_AGGREGATE_TO_VIEW: "true", names.LABEL_AGGREGATE_TO_EDIT: "true",
              names.LABEL_AGGREGATE_TO_ADMIN: "true"}
    return [
        _cluster_role(names.METRICS_READER_ROLE, [{"nonResourceURLs": [names.METRICS_PATH], "verbs": ["get"]}],
                      bootstrap=False),
        _cluster_role(names.AGGREGATED_METRICS_READER_ROLE,
                      [rule([names.METRICS_GROUP], ["pods", "nodes"], READ_VERBS)], to_all, bootstrap=False),
    ]


def _history() -> list[Obj]:
    to_all = {names.LABEL_AGGREGATE_TO_VIEW: "true", names.LABEL_AGGREGATE_TO_EDIT: "true",
              names.LABEL_AGGREGATE_TO_ADMIN: "true"}
    return [_cluster_role(HISTORY_VIEW, [rule([names.MPIJOB_GROUP], [names.JOB_RECORDS], READ_VERBS)], to_all,
                          bootstrap=False)]


def cluster_roles() -> list[Obj]:
    return [*_kube(), *_kueue(), *_trainer(), *_mpi_operator(), *_openshift(), *_metrics(), *_history()]


def cluster_role_bindings() -> list[Obj]:
    return [
        _binding(CLUSTER_ADMIN, CLUSTER_ADMIN, [names.SYSTEM_MASTERS]),
        _binding("system:discovery", "system:discovery", [names.SYSTEM_AUTHENTICATED]),
        _binding("system:basic-user", "system:basic-user", [names.SYSTEM_AUTHENTICATED]),
        _binding("system:public-info-viewer", "system:public-info-viewer",
                 [names.SYSTEM_AUTHENTICATED, names.SYSTEM_UNAUTHENTICATED]),
        _binding(TRAINER_VIEW_CLUSTER_RUNTIMES, TRAINER_VIEW_CLUSTER_RUNTIMES, [names.SYSTEM_AUTHENTICATED],
                 bootstrap=False),
    ]


def roles() -> list[Obj]:
    """Trainer's Role in its namespace: `get` on the ConfigMap the upstream SDK reads its version from."""
    public = names.TRAINER_PUBLIC_CONFIGMAP
    return [{"apiVersion": RBAC_API_VERSION, "kind": "Role",
             "metadata": {"name": public, "namespace": names.TRAINER_CONTROLLER_NAMESPACE},
             "rules": [{**rule([""], ["configmaps"], ["get"]), "resourceNames": [public]}]}]


def role_bindings() -> list[Obj]:
    public = names.TRAINER_PUBLIC_CONFIGMAP
    return [_binding(public, public, [names.SYSTEM_AUTHENTICATED], names.TRAINER_CONTROLLER_NAMESPACE,
                     bootstrap=False)]
