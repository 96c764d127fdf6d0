"""A bare pod's admission when it is created (`api/core/bare_pods.py`), in kube-apiserver's order: the defaults,
what cannot run here (422), its ServiceAccount (403 when missing, as kube's ServiceAccount admission refuses),
OpenShift's SCC admission (403; the ids it decides are written into the pod), then LimitRanger (its defaults
written into the container) and ResourceQuota (403) against what the namespace's jobs and bare pods use.

The server asks it for every new Pod no job owns, through `server/ports.py`, when the controllers run; a server
without controllers runs nothing, and stores a Pod as it is given.
"""

from __future__ import annotations

from mpijob.api import Obj
from mpijob.api.core import bare_pods, quota, rbac
from mpijob.api.core.errors import ApiError, invalid
from mpijob.api.core.resources import LIMIT_RANGES, PODS, RESOURCE_QUOTAS, SERVICE_ACCOUNTS
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer.render import service_account_name
from mpijob.controllers import scc
from mpijob.controllers.quota import namespace_usage
from mpijob.store.objects import Store


def admit(store: Store, pod: Obj, requester: rbac.User | None, mode: SandboxMode) -> None:
    """Admit a new pod (changed in place, as admission plugins mutate it) or raise the ApiError that refuses it.
    A pod a job owns is left as it is: its job's controller made it."""
    if not bare_pods.is_bare(pod):
        return
    meta = pod["metadata"]
    name, ns = meta.get("name") or "", meta.get("namespace") or "default"
    bare_pods.default(pod)
    if causes := bare_pods.refusals(pod, mode):
        raise invalid(PODS.kind, name, causes)
    account = service_account_name(pod["spec"])
    if store.try_get(SERVICE_ACCOUNTS, ns, account) is None:
        raise _forbidden(name, f'error looking up service account {ns}/{account}: serviceaccount "{account}" '
                               f"not found; create it (kubectl create serviceaccount {account} -n {ns}) or leave "
                               "serviceAccountName unset")
    bare_pods.admitted(pod, scc.admit_pod(store, bare_pods.plan(pod), requester))
    ranges = store.list(LIMIT_RANGES, ns)[0]
    container = bare_pods.container(pod)
    resources = quota.defaulted(container.get("resources"), ranges)
    if resources or "resources" in container:
        container["resources"] = resources
    why = quota.limit_violations([resources], ranges)
    quotas = [q for q in store.list(RESOURCE_QUOTAS, ns)[0] if quota.constrains(q)]
    if not why and quotas:
        refusal = quota.check(quotas, namespace_usage(store, ns, ranges), [resources], bare=container.get("name", ""))
        why = [refusal] if refusal else []
    if why:
        raise _forbidden(name, quota.aggregate(why))


def _forbidden(name: str, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'pods "{name}" is forbidden: {why}', name, "", PODS.plural)
