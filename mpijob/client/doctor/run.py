"""Running the checks in order, each over what the earlier ones found (`Facts`), and the job they check
when none is given."""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import TRAINJOBS
from mpijob.api.trainer import runtimes
from mpijob.client.core import Op
from mpijob.client.doctor import cluster, network, queues, runtime
from mpijob.client.doctor.model import Check, CheckFn, Facts, Status, could_not, skipped
from mpijob.client.errors import Unreachable

DEFAULT_JOB = "doctor-default"

# After `api` (which decides whether anything else can be asked), in order: later checks read what
# earlier ones found (the runtime's plan, the ClusterQueue).
CHECKS: tuple[tuple[str, CheckFn], ...] = (
    ("trainer", cluster.trainer),
    ("jobset", cluster.jobset),
    ("kueue", cluster.kueue),
    ("runtime", runtime.runtime),
    ("can-create", cluster.can_create),
    ("queue", queues.queue),
    ("quota", queues.quota_fit),
    ("istio", runtime.istio),
    ("network-policy", network.network_policy),
    ("nodes", runtime.nodes),
    ("slots", runtime.slots),
)
NAMES = ("api", *(name for name, _ in CHECKS))


def default_job(namespace: str) -> Obj:
    """The job checked without -f: one on the bundled runtime, with its defaults and no queue label."""
    return {"apiVersion": names.TRAINER_API_VERSION, "kind": TRAINJOBS.kind,
            "metadata": {"name": DEFAULT_JOB, "namespace": namespace},
            "spec": {"runtimeRef": {"name": runtimes.BUNDLED_NAME}}}


def _one(name: str, check: CheckFn, facts: Facts) -> Op[Check]:
    """A check's verdict; a read it may not do, or a server that fails it, is a warning, never a crash."""
    try:
        result = check(facts)
        return result if isinstance(result, Check) else (yield from result)
    except (ApiError, Unreachable, TimeoutError) as exc:
        return could_not(name, exc, "it")


def diagnose(facts: Facts) -> Op[list[Check]]:
    """Every check, in order; when the API server cannot be reached, the others are skipped."""
    first = yield from cluster.api(facts)
    if first.status is Status.FAIL:
        return [first, *(skipped(name, "needs the API server (see the api check)") for name, _ in CHECKS)]
    try:
        yield from cluster.discover(facts)
    except (ApiError, Unreachable, TimeoutError) as exc:
        return [first, could_not("discovery", exc, "which APIs the cluster serves")]
    out = [first]
    for name, check in CHECKS:
        out.append((yield from _one(name, check, facts)))
    return out
