"""OpenShift's SCC admission of a job's pods, over the store: the namespace's ranges from its annotations,
the SCCs stored through the API beside the built-in ones, who may use which SCC from RBAC (and a stored
SCC's own users and groups); the decision itself is `mpijob.api.openshift.scc`.

It is asked twice, because a runtime (or an SCC) can change between the two: by the API server when a
TrainJob is created, for the requesting user (a refusal is the create's 403, and nothing is stored), and
by the Trainer controller when it starts the job's pods, for the job's creator (a refusal fails the job,
and no pod is created). Either way the pod's ServiceAccount may also hold the grant, as on OpenShift. A bare
pod (`api/core/bare_pods.py`) is asked once, when it is created, as OpenShift admits a pod (`admit_pod`).
"""

from __future__ import annotations

from collections.abc import Callable

from mpijob.api import Obj
from mpijob.api.core import rbac
from mpijob.api.core.resources import NAMESPACES, SECURITY_CONTEXT_CONSTRAINTS
from mpijob.api.openshift import scc
from mpijob.api.trainer.plan import PodPlan, RunPlan
from mpijob.api.trainer.render import service_account_name
from mpijob.store.authorizer import enabled, index
from mpijob.store.objects import Store


def admit(store: Store, plan: RunPlan, requester: rbac.User | None) -> RunPlan:
    """The plan with the ids each pod runs as, or the 403 of `scc.admit`. With authorization off
    (AlwaysAllow) every SCC is usable, and the first in OpenShift's order that accepts a pod still wins."""
    ranges, stored, usable_by = _inputs(store, plan, requester)
    return scc.admit(plan, ranges, usable_by, requester.name if requester else "", stored)


def admit_pod(store: Store, plan: RunPlan, requester: rbac.User | None) -> RunPlan:
    """A bare pod's admission at its creation (`plan`: `api/core/bare_pods.plan`), refused in a Pod's words."""
    ranges, stored, usable_by = _inputs(store, plan, requester)
    return scc.admit_pod(plan, ranges, usable_by, requester.name if requester else "", stored)


def _inputs(store: Store, plan: RunPlan, requester: rbac.User | None
            ) -> tuple[scc.Ranges | None, list[Obj], Callable[[PodPlan], frozenset[str]]]:
    """The namespace's ranges, the stored SCCs, and which SCCs each pod may use (every one without RBAC)."""
    ranges = scc.Ranges.of(store.try_get(NAMESPACES, "", plan.namespace))
    stored = store.list(SECURITY_CONTEXT_CONSTRAINTS, None)[0]
    if not enabled():
        everything = frozenset(scc.GRANTED) | {o["metadata"]["name"] for o in stored}
        return ranges, stored, lambda pod: everything
    authorizer = index(store).authorizer()

    def usable_by(pod: PodPlan) -> frozenset[str]:
        account = rbac.service_account_user(plan.namespace, service_account_name(pod.pod_spec))
        return scc.usable(authorizer, [*([requester] if requester else []), account], plan.namespace, stored)

    return ranges, stored, usable_by
