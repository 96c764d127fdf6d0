"""The job's checks: its runtime exists and is MPI, Istio will not put a sidecar in its pods, some Node
can hold its pods, and it runs one rank per GPU."""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.quantity import format_quantity, to_base_units
from mpijob.api.core.resources import CLUSTER_TRAINING_RUNTIMES, NODES, TRAINING_RUNTIMES
from mpijob.api.trainer import runtimes
from mpijob.api.trainer.plan import PodPlan, gpu_count, resolve
from mpijob.client import core
from mpijob.client.core import Call, Op
from mpijob.client.doctor.model import Check, Facts, could_not, failed, passed, skipped, warned
from mpijob.client.errors import Unreachable

NEEDS_RUNTIME = "needs the job's runtime (see the runtime check)"


def runtime(facts: Facts) -> Op[Check]:
    """3. The runtime the job names exists (TrainingRuntime in its namespace, else ClusterTrainingRuntime) and is
    MPI (`spec.mlPolicy.mpi`); the job resolves against it into a run plan."""
    ref = (facts.job.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or CLUSTER_TRAINING_RUNTIMES.kind
    name = str(ref.get("name") or "")
    unread = ""
    try:
        found = yield from core.runtime_for(facts.job, facts.namespace)
    except (ApiError, Unreachable) as exc:
        bundled = [r for r in runtimes.bundled() if r["metadata"]["name"] == name]
        if not (facts.local and kind == CLUSTER_TRAINING_RUNTIMES.kind and bundled and isinstance(exc, ApiError)
                and exc.code == 403):
            return could_not("runtime", exc, f"{kind} {name}")
        found, unread = runtimes.default(bundled[0]), exc.message  # the local cluster's own, as it bundles it
    where = f" in namespace {facts.namespace}" if kind == TRAINING_RUNTIMES.kind else ""
    if found is None:
        listing = yield from _runtime_names(facts, kind)
        choices = f" (there: {', '.join(listing)})" if listing else ""
        return failed("runtime", f"{kind} {name!r} does not exist{where}{choices}",
                      "set spec.runtimeRef.name (and kind) to an existing MPI runtime, or create it "
                      "(`mpijob platform render` writes one)")
    mpi = ((found.get("spec") or {}).get("mlPolicy") or {}).get("mpi")
    if mpi is None:
        return failed("runtime", f"{kind} {name} is not an MPI runtime: it has no spec.mlPolicy.mpi",
                      "name an MPI runtime in spec.runtimeRef (one with spec.mlPolicy.mpi), e.g. mpi-distributed")
    facts.runtime = found
    candidate = {**facts.job, "metadata": {**(facts.job.get("metadata") or {}), "namespace": facts.namespace,
                                           "uid": (facts.job.get("metadata") or {}).get("uid") or "doctor"}}
    try:
        facts.plan = resolve(candidate, found)
    except ApiError as exc:
        causes = "; ".join(f"{c.field}: {c.message}" for c in exc.causes) or exc.message
        return failed("runtime", f"{kind} {name} cannot run this job: {causes}", "fix the fields named")
    impl = (found["metadata"].get("annotations") or {}).get(names.ANNOTATION_MPI_IMPLEMENTATION) or \
        mpi.get("mpiImplementation") or names.OPEN_MPI
    plan = facts.plan
    said = (f"{kind} {name}{where} is MPI ({impl}): {plan.num_nodes} node(s) × {plan.slots} slot(s), "
            f"{len(plan.pods)} pod(s)")
    if unread:
        return warned("runtime", f"could not read {kind} {name} (forbidden: {unread}); checked the job against the "
                      f"local cluster's bundled {name}: {said}", "ask an administrator to let you read runtimes "
                      "if the bundled one was changed")
    return passed("runtime", said)


def _runtime_names(facts: Facts, kind: str) -> Op[list[str]]:
    try:
        found = (yield from core.list_runtimes(facts.namespace)) if kind == TRAINING_RUNTIMES.kind else \
            (yield from core.list_cluster_runtimes())
    except (ApiError, Unreachable):
        return []
    return sorted(o["metadata"]["name"] for o in found)


def _roles(pods: list[PodPlan]) -> list[PodPlan]:
    """One pod of each role (`node`, `launcher`): pods of a role are alike."""
    seen: dict[str, PodPlan] = {}
    for p in pods:
        seen.setdefault(p.rjob, p)
    return list(seen.values())


def istio(facts: Facts) -> Op[Check]:
    """7. A namespace with Istio's sidecar injection gives every pod a proxy that intercepts mpirun's ssh and
    MPI's own connections, unless the pod template opts out (`sidecar.istio.io/inject: "false"`)."""
    if facts.plan is None:
        return skipped("istio", NEEDS_RUNTIME)
    try:
        labels = yield from facts.namespace_labels()
    except (ApiError, Unreachable) as exc:
        return could_not("istio", exc, f"namespace {facts.namespace}'s labels")
    injection = labels.get(names.LABEL_ISTIO_INJECTION)
    revision = labels.get(names.LABEL_ISTIO_REVISION)
    if injection != "enabled" and not (revision and injection != "disabled"):
        return passed("istio", f"namespace {facts.namespace} has no Istio sidecar injection")
    said = (f"{names.LABEL_ISTIO_INJECTION}=enabled" if injection == "enabled"
            else f"{names.LABEL_ISTIO_REVISION}={revision}")
    key = names.ANNOTATION_ISTIO_INJECT
    exposed = [p.rjob for p in _roles(facts.plan.pods)
               if p.annotations.get(key) != "false" and p.labels.get(key) != "false"]
    if not exposed:
        return passed("istio", f"namespace {facts.namespace} injects Istio sidecars ({said}), and every pod "
                      f"template of the runtime opts out ({key}: \"false\")")
    return failed("istio", f"namespace {facts.namespace} injects Istio sidecars ({said}) and the runtime's "
                  f"{', '.join(exposed)} pods do not opt out: the proxy intercepts mpirun's ssh and MPI's traffic",
                  f"add the annotation {key}: \"false\" to the runtime's pod templates (spec.template.spec."
                  "replicatedJobs[*].template.spec.template.metadata.annotations), or run in a namespace without "
                  "injection")


def _needs(pod: PodPlan) -> dict[str, str]:
    """What one pod requests (requests, else limits), as quantities."""
    resources = pod.resources or {}
    return {**{k: str(v) for k, v in (resources.get("limits") or {}).items()},
            **{k: str(v) for k, v in (resources.get("requests") or {}).items()}}


def _short(node: Obj, selector: dict[str, str], needs: dict[str, str]) -> str:
    """Why a Node cannot hold a pod ("" when it can): a label it lacks, or a resource it has too little of."""
    labels = node["metadata"].get("labels") or {}
    missing = [f"{k}={v}" for k, v in selector.items() if labels.get(k) != v]
    if missing:
        return f"lacks the label(s) {', '.join(missing)}"
    if (node.get("spec") or {}).get("unschedulable"):
        return "is cordoned (unschedulable)"
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    for res, qty in sorted(needs.items()):
        try:
            want, have = to_base_units(res, qty), to_base_units(res, allocatable.get(res, "0"))
        except ValueError:
            continue
        if want > have:
            return f"has {format_quantity(res, have)} {res} allocatable, the pod asks {format_quantity(res, want)}"
    return ""


def nodes(facts: Facts) -> Op[Check]:
    """9. Some Node has the labels the job's pods select (nodeSelector) and the GPUs, CPU and memory one pod
    asks for. Reading Nodes needs a cluster-wide grant a namespace user may lack: then it is unchecked."""
    if facts.plan is None:
        return skipped("nodes", NEEDS_RUNTIME)
    try:
        found = core.items((yield from Call("GET", core.collection_path(NODES))))
    except (ApiError, Unreachable) as exc:
        return could_not("nodes", exc, "the Nodes")
    if not found:
        return failed("nodes", "the cluster has no Node", "add a Node (or start the local cluster again)")
    placed: list[str] = []
    for pod in _roles(facts.plan.pods):
        selector = {str(k): str(v) for k, v in (pod.pod_spec.get("nodeSelector") or {}).items()}
        needs = _needs(pod)
        why = {n["metadata"]["name"]: _short(n, selector, needs) for n in found}
        fit = sorted(n for n, w in why.items() if not w)
        if not fit:
            asked = ", ".join([f"{k}={v}" for k, v in selector.items()]
                              + [f"{r}={q}" for r, q in sorted(needs.items())])
            reasons = "; ".join(f"{n} {w}" for n, w in sorted(why.items()))
            return failed("nodes", f"no Node can hold a {pod.rjob} pod ({asked or 'nothing asked'}): {reasons}",
                          "change the runtime's nodeSelector or the job's resourcesPerNode to what a Node has, "
                          "or add a Node that has it (`kubectl get nodes --show-labels`)")
        more = f" and {len(fit) - 3} more" if len(fit) > 3 else ""
        placed.append(f"a {pod.rjob} pod fits on {', '.join(fit[:3])}{more}")
    return passed("nodes", "; ".join(placed))


def slots(facts: Facts) -> Check:
    """10. One MPI rank per GPU: numProcPerNode (the hostfile's slots) equal to the GPUs each node asks for."""
    if facts.plan is None:
        return skipped("slots", NEEDS_RUNTIME)
    plan = facts.plan
    hosts = [p for p in plan.pods if p.in_hostfile]
    gpus = max((gpu_count(p.resources) for p in hosts), default=0)
    if gpus == 0:
        return passed("slots", f"{plan.slots} slot(s) per node; no GPUs asked for")
    if plan.slots == gpus:
        return passed("slots", f"{plan.slots} slot(s) per node, one per GPU")
    effect = ("ranks share GPUs (and their memory)" if plan.slots > gpus else f"{gpus - plan.slots} GPU(s) per node "
              "stay idle")
    return warned("slots", f"numProcPerNode {plan.slots} but {gpus} GPU(s) per node: {effect}",
                  f"set spec.trainer.numProcPerNode: {gpus} (one rank per GPU), or ask for {plan.slots} GPU(s) "
                  "per node in spec.trainer.resourcesPerNode")
