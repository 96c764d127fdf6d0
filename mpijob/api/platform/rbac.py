"""The bundle's RBAC: one ClusterRole per persona, bound per team namespace (or cluster-wide) to groups.

The personas are the requirements' four:

* data scientist: runs and watches TrainJobs (and legacy MPIJobs) in the team namespace, reads their
  pods, logs, events, queue and history, and the cluster's runtimes; no Secrets, no exec;
* MLOps engineer (CI/CD automation): a data scientist who also keeps the team's own TrainingRuntimes
  and deletes in bulk; bound to a group and to the team's `mpijob-ci` ServiceAccount a pipeline uses;
* platform administrator: the runtimes, every Kueue object, quotas, NetworkPolicies and SCCs, cluster-wide;
* auditor / viewer: reads all of it and changes nothing; cluster-wide for the auditors' group, one
  namespace for a team's viewers.

Group names are placeholders derived from the options (`<team>-data-scientists`, `<team>-mlops`,
`<team>-viewers`, the admin and auditor groups): bind the groups your identity provider sends.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.rbac import READ_VERBS, WRITE_VERBS
from mpijob.api.core.resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, SERVICE_ACCOUNTS, Resource
from mpijob.api.platform.options import Options, Team
from mpijob.api.platform.runtimes import PART_OF

DATA_SCIENTIST, MLOPS, PLATFORM_ADMIN, VIEWER = ("mpijob-data-scientist", "mpijob-mlops", "mpijob-platform-admin",
                                                 "mpijob-viewer")
RUNTIME_READER = "mpijob-runtime-reader"  # what every team member reads cluster-wide
CI_SERVICE_ACCOUNT = "mpijob-ci"
MPIJOBS = "mpijobs"  # MPI Operator's plural (legacy MPIJobs, served by the local cluster too)

_T, _K, _CORE = [names.TRAINER_GROUP], [names.KUEUE_GROUP], [""]


def _rule(groups: list[str], resources: list[str], verbs: tuple[str, ...] | list[str]) -> Obj:
    return {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}


def _team_reads() -> list[Obj]:
    """What every member of a team reads in its namespace."""
    return [
        _rule(_T, ["trainjobs", "trainingruntimes"], READ_VERBS),
        _rule(_T, ["trainjobs/status"], ["get"]),
        _rule([names.MPI_OPERATOR_GROUP], [MPIJOBS], READ_VERBS),
        _rule(_K, ["localqueues", "workloads"], READ_VERBS),
        _rule([names.KUEUE_VISIBILITY_GROUP], ["localqueues/pendingworkloads"], ["get"]),
        _rule(_CORE, ["pods", "pods/log", "events", "configmaps", "resourcequotas", "limitranges"], READ_VERBS),
        _rule([names.MPIJOB_GROUP], [names.JOB_RECORDS], READ_VERBS),
        _rule([names.METRICS_GROUP], ["pods"], READ_VERBS),
    ]


def cluster_roles() -> list[Obj]:
    write = [v for v in WRITE_VERBS if v != "deletecollection"]  # one at a time; bulk deletes are MLOps'
    scientist = [*_team_reads(),
                 _rule(_T, ["trainjobs"], write),
                 _rule([names.MPI_OPERATOR_GROUP], [MPIJOBS], write)]
    mlops = [*scientist,
             _rule(_T, ["trainingruntimes"], write),
             _rule(_T, ["trainjobs"], ["deletecollection"])]
    viewer = [*_team_reads(),
              _rule(_T, ["clustertrainingruntimes"], READ_VERBS),
              _rule(_K, ["clusterqueues", "resourceflavors", "workloadpriorityclasses", "cohorts"], READ_VERBS),
              _rule([names.NETWORKING_GROUP], ["networkpolicies"], READ_VERBS),
              _rule([names.RBAC_GROUP], ["roles", "rolebindings"], READ_VERBS),
              _rule([names.SECURITY_GROUP], [names.SCC_RESOURCE], READ_VERBS)]
    admin = [_rule(_T, ["*"], ["*"]),
             _rule(_K, ["*"], ["*"]),
             _rule([names.KUEUE_VISIBILITY_GROUP], ["*"], ["get"]),
             _rule([names.MPI_OPERATOR_GROUP], [MPIJOBS], ["*"]),
             _rule([names.NETWORKING_GROUP], ["networkpolicies"], ["*"]),
             _rule(_CORE, ["resourcequotas", "limitranges", "serviceaccounts"], ["*"]),
             _rule(_CORE, ["namespaces", "nodes", "pods", "pods/log", "events"], READ_VERBS),
             _rule([names.RBAC_GROUP], ["roles", "rolebindings"], READ_VERBS),
             _rule([names.SECURITY_GROUP], [names.SCC_RESOURCE], ["*"]),
             _rule([names.MPIJOB_GROUP], [names.JOB_RECORDS], READ_VERBS),
             _rule([names.METRICS_GROUP], ["pods", "nodes"], READ_VERBS)]
    reader = [_rule(_T, ["clustertrainingruntimes"], READ_VERBS),
              _rule(_K, ["clusterqueues", "resourceflavors", "workloadpriorityclasses"], READ_VERBS),
              _rule([names.KUEUE_VISIBILITY_GROUP], ["clusterqueues/pendingworkloads"], ["get"])]
    return [_role(DATA_SCIENTIST, scientist), _role(MLOPS, mlops), _role(PLATFORM_ADMIN, admin),
            _role(VIEWER, viewer), _role(RUNTIME_READER, reader)]


def _role(name: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": CLUSTER_ROLES.api_version, "kind": CLUSTER_ROLES.kind,
            "metadata": {"name": name, "labels": {names.LABEL_PART_OF: PART_OF}}, "rules": rules}


def groups(team: Team) -> dict[str, str]:
    """The team's placeholder group of each persona bound in its namespace."""
    return {DATA_SCIENTIST: f"{team.name}-data-scientists", MLOPS: f"{team.name}-mlops",
            VIEWER: f"{team.name}-viewers"}


def _subject_group(name: str) -> Obj:
    return {"apiGroup": names.RBAC_GROUP, "kind": "Group", "name": name}


def _binding(res: Resource, name: str, role: str, subjects: list[Obj], namespace: str | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": {names.LABEL_PART_OF: PART_OF}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": res.api_version, "kind": res.kind, "metadata": meta,
            "roleRef": {"apiGroup": names.RBAC_GROUP, "kind": CLUSTER_ROLES.kind, "name": role},
            "subjects": subjects}


def team_objects(team: Team) -> list[Obj]:
    """The team's CI ServiceAccount and one RoleBinding per persona in its namespace."""
    ns = team.namespace
    sa = {"apiVersion": SERVICE_ACCOUNTS.api_version, "kind": SERVICE_ACCOUNTS.kind,
          "metadata": {"name": CI_SERVICE_ACCOUNT, "namespace": ns, "labels": {names.LABEL_PART_OF: PART_OF}}}
    out = [sa]
    for role, group in groups(team).items():
        subjects = [_subject_group(group)]
        if role == MLOPS:
            subjects.append({"kind": SERVICE_ACCOUNTS.kind, "name": CI_SERVICE_ACCOUNT, "namespace": ns})
        out.append(_binding(ROLE_BINDINGS, role, role, subjects, ns))
    return out


def render(opts: Options) -> list[Obj]:
    """The ClusterRoles, the cluster-wide bindings, then each team's namespace objects."""
    members = [_subject_group(g) for t in opts.teams for g in groups(t).values()]
    members += [{"kind": SERVICE_ACCOUNTS.kind, "name": CI_SERVICE_ACCOUNT, "namespace": t.namespace}
                for t in opts.teams]
    out = cluster_roles()
    out += [_binding(CLUSTER_ROLE_BINDINGS, PLATFORM_ADMIN, PLATFORM_ADMIN, [_subject_group(opts.admin_group)]),
            _binding(CLUSTER_ROLE_BINDINGS, VIEWER, VIEWER, [_subject_group(opts.auditor_group)]),
            _binding(CLUSTER_ROLE_BINDINGS, RUNTIME_READER, RUNTIME_READER, members)]
    for team in opts.teams:
        out += team_objects(team)
    return out
