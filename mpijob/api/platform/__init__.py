"""The platform bundle: what an administrator applies to a cluster so teams can run MPI TrainJobs on it
(`mpijob platform render`, docs/platform.md). Pure: options in, objects out.

The objects come in groups, one file each, applied in this order: the team namespaces; the MPI
runtimes; Kueue's flavors, queues and priorities; RBAC for the four personas; a NetworkPolicy per team
namespace; OpenShift's SecurityContextConstraints and who may use them.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.resources import NAMESPACES
from mpijob.api.platform import network, queues, rbac, runtimes, scc
from mpijob.api.platform.options import OptionError, Options, Team, build

__all__ = ["FILES", "OptionError", "Options", "Team", "build", "groups", "render"]

# file name → what it holds, in the order to apply
FILES = {
    "00-namespaces.yaml": "the team namespaces",
    "10-runtimes.yaml": "MPI ClusterTrainingRuntimes",
    "20-kueue.yaml": "Kueue flavors, priorities and queues",
    "30-rbac.yaml": "ClusterRoles, bindings and CI ServiceAccounts",
    "40-network.yaml": "NetworkPolicies",
    "50-openshift.yaml": "SecurityContextConstraints and their use",
}


def namespaces(opts: Options) -> list[Obj]:
    return [{"apiVersion": NAMESPACES.api_version, "kind": NAMESPACES.kind,
             "metadata": {"name": t.namespace, "labels": {names.LABEL_PART_OF: runtimes.PART_OF}}}
            for t in opts.teams]


def groups(opts: Options) -> dict[str, list[Obj]]:
    """The bundle by file, in the order to apply."""
    parts = [namespaces(opts), runtimes.render(opts), queues.render(opts), rbac.render(opts),
             network.render(opts), scc.render(opts)]
    return dict(zip(FILES, parts))


def render(opts: Options | None = None) -> list[Obj]:
    """Every object of the bundle, in the order to apply."""
    return [obj for part in groups(opts or Options()).values() for obj in part]
