"""Checks every write passes before it is stored, in kube-apiserver's order: the body's apiVersion/kind
(the URL's resource), what belongs to the request (the URL's namespace and name, generateName), then
`mpijob.api.core.validation.admit`, the one judge of an object's metadata and kind-specific rules, and last
the references a new TrainJob makes to other objects.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable
from functools import cache, partial
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core import netpol, quota, rbac, validation, volumes
from mpijob.api.core.errors import ApiError, Cause, bad_request, invalid
from mpijob.api.core.openapi import unknown_field_locations
from mpijob.api.core.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    LIMIT_RANGES,
    MPIJOBS,
    NAMESPACES,
    NETWORK_POLICIES,
    PODS,
    RESOURCE_QUOTAS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    Resource,
)
from mpijob.api.kueue.adapters import DEFAULT_CLUSTER_QUEUE, workload
from mpijob.api.kueue.fit import never_fits  # the scheduler's own answer, on the controllers' snapshot
from mpijob.api.mpioperator import naming
from mpijob.api.mpioperator.convert import convert
from mpijob.api.names import LABEL_QUEUE_NAME
from mpijob.api.openshift import scc, scc_crd
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import mpi_impl, patches, support
from mpijob.api.trainer.plan import RunPlan, resolve, size
from mpijob.api.trainer.trainjob import check_runtime_ref
from mpijob.server import openapi
from mpijob.server.ports import Controllers
from mpijob.store.objects import Store


def check_type(res: Resource, obj: Obj) -> None:
    """The body's apiVersion/kind must be the URL's (400, `validation.check_type`); a body without metadata
    gets an empty one, for the request checks that follow (admission then says what is missing)."""
    validation.check_type(res, obj)
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}


def check_namespace(res: Resource, obj: dict[str, Any], namespace: str | None) -> None:
    meta = obj["metadata"]
    if not res.namespaced:
        meta.pop("namespace", None)
        return
    given = meta.get("namespace")
    if given and namespace and given != namespace:
        raise bad_request(
            f"the namespace of the provided object ({given}) does not match the namespace sent on the "
            f"request ({namespace})"
        )
    meta["namespace"] = namespace or given or "default"


def generate_name(obj: dict[str, Any]) -> None:
    """`metadata.generateName` + 5 random characters, as kube-apiserver names it."""
    meta = obj["metadata"]
    if not meta.get("name") and meta.get("generateName"):
        if not isinstance(meta["generateName"], str):
            raise bad_request(f"metadata.generateName must be a string, not {meta['generateName']!r}: "
                              "send a name prefix such as \"train-\"")
        meta["name"] = meta["generateName"] + "".join(secrets.choice(names.SUFFIX_ALPHABET) for _ in range(5))


def check_name(obj: Obj, url_name: str | None = None) -> str:
    """The object's name, which must be the URL's when the URL names one (400); whether it is a valid
    name is `admit`'s to judge (422, with the object's other problems)."""
    meta = obj["metadata"]
    name = meta.get("name")
    if url_name is not None:
        if name and name != url_name:
            raise bad_request(f"the name of the object ({name}) does not match the name on the URL ({url_name})")
        name = meta["name"] = url_name
    return name if isinstance(name, str) else ""


def check_references(store: Store, res: Resource, obj: dict[str, Any], user: rbac.User,
                     sandbox_mode: SandboxMode | None, controllers: Controllers) -> None:
    """A new TrainJob must name a runtime that exists and that the local cluster can run in its sandbox
    (`sandbox_mode`, the controllers'; None without them) (422), whose pods `user` may run (403) and that
    fits its namespace's quota and its ClusterQueue (403); a new MPIJob must fit its ClusterQueue (403).

    The job's run plan is resolved once, when a check first needs it, and every check reads that one plan
    (a frozen `RunPlan`, whose pod specs none of them changes); a runtime that cannot run raises its 422
    from the first check that asks, as it would from a fresh resolve there.

    A new Pod no job owns runs on this machine when the controllers run (docs/bare-pods.md): they admit it
    (`kubelet/bare_admission.py`: what cannot run here is refused, its SCC, LimitRange and quota applied)."""
    if res.key == PODS.key and sandbox_mode is not None:
        controllers.admit_bare_pod(store, obj, user, sandbox_mode)
        return
    if res.key == MPIJOBS.key:
        check_mpijob_fits(store, obj, controllers)
    if res is not TRAINJOBS:
        return
    ref = obj.get("spec", {}).get("runtimeRef", {})
    if ref.get("kind", "ClusterTrainingRuntime") == "TrainingRuntime":
        kind, ns = TRAINING_RUNTIMES, obj["metadata"].get("namespace", "default")
    else:
        kind, ns = CLUSTER_TRAINING_RUNTIMES, ""
    runtime = store.try_get(kind, ns, ref.get("name", ""))
    available = [] if runtime else [r["metadata"]["name"] for r in store.list(kind, ns or None)[0]]
    check_runtime_ref(obj, runtime, available)
    assert runtime is not None
    candidate = _candidate(obj)
    plan = cache(partial(resolve, candidate, runtime))
    check_mpi_install(obj, runtime, sandbox_mode, controllers)
    check_machine(obj, runtime, sandbox_mode, controllers)
    check_volumes(obj, runtime, plan, sandbox_mode)
    check_root_sshd(obj, plan, sandbox_mode)
    if causes := patches.runtime_causes(obj, runtime):  # Trainer's webhook, with the runtime in hand
        raise invalid(res.kind, obj["metadata"].get("name", ""), causes, res.group)
    check_security(store, plan(), user, controllers)
    check_quota(store, obj, plan(), controllers)
    check_fits(store, candidate, plan(), controllers)


def check_mpi_install(trainjob: dict[str, Any], runtime: dict[str, Any], sandbox_mode: SandboxMode | None,
                      controllers: Controllers) -> None:
    """Refuse (422) a TrainJob whose runtime's MPI implementation has no install on this machine, or cannot
    run in the controllers' sandbox (`mpijob.controllers.kubelet.mpi_installs`), rather than let its mpirun
    fail once it runs."""
    if why := controllers.mpi_refusal(mpi_impl.of_runtime(runtime), sandbox_mode):
        ref = trainjob.get("spec", {}).get("runtimeRef", {}).get("name", "")
        raise invalid("TrainJob", trainjob["metadata"].get("name", ""),
                      [Cause("spec.runtimeRef.name", f'Invalid value: "{ref}": {why}')], names.TRAINER_GROUP)


def check_machine(trainjob: dict[str, Any], runtime: dict[str, Any], sandbox_mode: SandboxMode | None,
                  controllers: Controllers) -> None:
    """Refuse (422) a TrainJob with more pods than this machine could ever run (`kubelet.capacity`), naming the
    limit and the largest job that fits, before its pods are planned. Trainer sets no bound on numNodes; a
    cluster's is its nodes."""
    if sandbox_mode is None:
        return
    pods, slots = size(trainjob, runtime)
    if why := controllers.machine_refusal(pods, slots):
        nodes = (trainjob.get("spec", {}).get("trainer") or {}).get("numNodes", pods)
        raise invalid("TrainJob", trainjob["metadata"].get("name", ""), [Cause(
            "spec.trainer.numNodes", f"Invalid value: {nodes}: {why}; ask for fewer nodes (or processes per node), "
            "or run the job on a cluster")], names.TRAINER_GROUP)


def check_volumes(trainjob: dict[str, Any], runtime: dict[str, Any], plan: Callable[[], RunPlan],
                  sandbox_mode: SandboxMode | None) -> None:
    """Refuse (422) a TrainJob whose pods ask for volumes when the controllers run the process sandbox, which
    cannot mount them (docs/volumes.md), naming where they come from: its runtime, or its patches. `plan`
    gives the job's plan, resolved only in the process sandbox; a refusal resolves the job once more
    without its patches, to say which."""
    if sandbox_mode != SandboxMode.PROCESS or not any(volumes.has_volumes(p.pod_spec) for p in plan().pods):
        return
    unpatched = {**trainjob, "spec": {k: v for k, v in trainjob.get("spec", {}).items() if k != "runtimePatches"}}
    own = any(volumes.has_volumes(p.pod_spec) for p in resolve(_candidate(unpatched), runtime).pods)
    ref = trainjob.get("spec", {}).get("runtimeRef", {}).get("name", "")
    where, said = ("spec.runtimeRef.name", f'Invalid value: "{ref}": ') if own else (patches.FIELD, "Forbidden: ")
    raise invalid("TrainJob", trainjob["metadata"].get("name", ""), [Cause(where, said + volumes.PROCESS_SANDBOX)],
                  names.TRAINER_GROUP)


def check_root_sshd(trainjob: dict[str, Any], plan: Callable[[], RunPlan], sandbox_mode: SandboxMode | None) -> None:
    """Refuse (422), in the rootless sandbox, a TrainJob whose sshd would run as root (`runAsUser: 0`): root's
    sshd drops to a user of its own and sets groups, which a user namespace that maps one uid cannot, so its
    nodes would never accept the job's key (docs/sandbox.md)."""
    if sandbox_mode != SandboxMode.ROOTLESS:
        return
    impl = mpi_impl.IMPLEMENTATIONS[plan().mpi_implementation]
    for pod in plan().pods:
        if pod.run_as_user == 0 and (pod.runs_sshd or (pod.is_launcher and pod.in_hostfile and impl.ssh_to_itself)):
            ref = trainjob.get("spec", {}).get("runtimeRef", {}).get("name", "")
            why = (f"its {pod.rjob} pods run sshd as root (runAsUser 0), which the rootless sandbox of a server run "
                   "without root cannot (root's sshd needs users and groups a one-uid user namespace lacks); "
                   "use a runtime without runAsUser 0 (its pods' own user runs sshd), or run the server as root")
            raise invalid("TrainJob", trainjob["metadata"].get("name", ""),
                          [Cause("spec.runtimeRef.name", f'Invalid value: "{ref}": {why}')], names.TRAINER_GROUP)


def _candidate(trainjob: dict[str, Any]) -> dict[str, Any]:
    """The TrainJob as the controllers will see it, with a uid (it gets its own when stored)."""
    return {**trainjob, "metadata": {**trainjob["metadata"], "uid": trainjob["metadata"].get("uid", "new")}}


def check_security(store: Store, plan: RunPlan, user: rbac.User, controllers: Controllers) -> None:
    """OpenShift's SCC admission of the job's pods, in advance (`mpijob.controllers.scc`): refuse (403) a
    TrainJob whose launcher or nodes would run as an identity neither `user` nor the pod's ServiceAccount
    may use, such as root or another namespace's UID, before anything is created."""
    controllers.admit_pods(store, plan, user)


def check_quota(store: Store, trainjob: dict[str, Any], plan: RunPlan, controllers: Controllers) -> None:
    """LimitRanger and ResourceQuota admission over the whole job (`mpijob.api.core.quota`): refuse (403) a
    TrainJob whose pods (its `plan`'s) break the namespace's LimitRanges, or that would take its namespace
    past a ResourceQuota, counted against what the namespace's other TrainJobs use
    (`mpijob.controllers.quota.namespace_usage`), before anything is created.

    No lock is needed: the server answers requests on one event loop, and nothing between this check
    and the store's write of the TrainJob awaits (`routes/crud.create`), so two creates cannot both be
    counted against the same usage. Keep it that way: an `await` between the two would open the race."""
    ns = trainjob["metadata"].get("namespace") or "default"
    ranges = store.list(LIMIT_RANGES, ns)[0]
    resource_quotas = [q for q in store.list(RESOURCE_QUOTAS, ns)[0] if quota.constrains(q)]
    if not ranges and not resource_quotas:
        return
    pods = [p.resources for p in controllers.with_limit_ranges(plan, ranges).pods]
    why = quota.limit_violations(pods, ranges)
    if not why and resource_quotas:
        refusal = quota.check(resource_quotas, controllers.namespace_usage(store, ns, ranges), pods)
        why = [refusal] if refusal else []
    if why:
        name = trainjob["metadata"]["name"]
        raise ApiError(403, "Forbidden", f'{TRAINJOBS.group_resource} "{name}" is forbidden: {quota.aggregate(why)}',
                       name, names.TRAINER_GROUP, TRAINJOBS.plural)


def check_fits(store: Store, candidate: dict[str, Any], plan: RunPlan, controllers: Controllers) -> None:
    """Refuse (403, "exceeded quota") a TrainJob (`candidate`: `_candidate`'s) its ClusterQueue could never
    admit, before anything exists."""
    rendered = controllers.render_workload(store, candidate, plan, {})
    _refuse_never_fitting(store, TRAINJOBS, candidate, rendered, controllers)


def check_mpijob_fits(store: Store, job: dict[str, Any], controllers: Controllers) -> None:
    """Refuse (403, "exceeded quota") an MPIJob its ClusterQueue could never admit, as a TrainJob is, its
    Workload made as the MPI Operator controller will make it (`controllers/mpioperator`)."""
    candidate = _candidate(job)
    form = convert(candidate, always_runtime=True)
    plan = naming.rename(resolve({**form.trainjob, "metadata": {**form.trainjob["metadata"], **candidate["metadata"]}},
                                 form.runtime or {}))
    rendered = controllers.render_workload(store, candidate, plan, {})
    _refuse_never_fitting(store, MPIJOBS, candidate, rendered, controllers)


def _refuse_never_fitting(store: Store, res: Resource, job: dict[str, Any], rendered: Obj,
                          controllers: Controllers) -> None:
    """Kueue's scheduler asked in advance whether the job's Workload (`rendered`) could ever be admitted."""
    wl = workload(rendered, controllers.local_queues(store))
    if not wl.cluster_queue and LABEL_QUEUE_NAME not in (job["metadata"].get("labels") or {}):
        wl = dataclasses.replace(wl, cluster_queue=DEFAULT_CLUSTER_QUEUE)  # its LocalQueue is made on demand
    snap = controllers.snapshot(store)
    if wl.cluster_queue and wl.cluster_queue in snap.cluster_queues and (why := never_fits(snap, wl)):
        raise ApiError(403, "Forbidden", f'{res.group_resource} "{job["metadata"]["name"]}" is '
                       f"forbidden: exceeded quota: {why}", job["metadata"]["name"], res.group, res.plural)


def uid_ranges(store: Store, res: Resource, obj: Obj, old: Obj | None) -> None:
    """A Namespace's UID and group ranges belong to the server, as OpenShift's namespace controller owns
    them (`mpijob.api.openshift.scc.own_ranges`): allocated at creation from what the stored namespaces hold,
    whatever the client sent, and kept on every update."""
    if res is NAMESPACES:
        scc.own_ranges(obj, old, store.list(NAMESPACES, None)[0] if scc.Ranges.of(old) is None else [])


def admit(res: Resource, obj: Obj, old: Obj | None) -> Obj:
    """Metadata, kind-specific defaults and validation (422 with causes): `mpijob.api.core.validation.admit`."""
    return validation.admit(res, obj, old)


def warnings(res: Resource, obj: dict[str, Any], old: dict[str, Any] | None, sandbox_mode: SandboxMode | None,
             controllers: Controllers) -> list[str]:
    """What kube-apiserver would send as `Warning` headers for a write: the fields the local cluster
    accepts but that have no effect here (`mpijob.api.trainer.support`), and what its network does otherwise
    than a NetworkPolicy asks (`mpijob.api.core.netpol`, which depends on the controllers' `sandbox_mode`);
    none for a status-only write."""
    if res.group == names.MPI_OPERATOR_GROUP and res.kind == names.MPIJOB_KIND:  # as for a deprecated version
        changed = support.desired_changed(obj, old)
        return [names.MPIJOB_DEPRECATED, *(support.check(res.kind, obj).warnings if changed else [])]
    if not support.desired_changed(obj, old):
        return []
    if res.group == names.SECURITY_GROUP:
        return scc_crd.warnings(obj)
    if res is NETWORK_POLICIES:
        return netpol.warnings(obj, controllers.kubernetes_service,
                               shared_network=sandbox_mode == SandboxMode.PROCESS)
    return support.check(res.kind, obj).warnings


FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


def unknown_fields(res: Resource, obj: dict[str, Any], mode: str | None) -> list[str]:
    """kube-apiserver's `fieldValidation` for the built-in kinds (custom resources are checked against
    their structural schema, which refuses unknown fields, in `admit`): `Strict` (what kubectl sends)
    refuses a body with fields the kind does not have, `Warn` (the default) and `Ignore` drop them, Warn
    with a warning each. Returns the warnings."""
    mode = mode or "Warn"
    if mode not in FIELD_VALIDATION:
        raise bad_request(f'invalid fieldValidation "{mode}": use one of {", ".join(FIELD_VALIDATION)}')
    if not res.builtin:
        return []
    located = unknown_field_locations(openapi.v2_shared(), res.group, res.version, res.kind, obj)
    unknown = [shown for shown, _ in located]
    if unknown and mode == "Strict":
        said = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise bad_request(f"{res.kind} in version \"{res.version}\" cannot be handled as a {res.kind}: "
                          f"strict decoding error: {said}")
    for _, steps in located:
        _drop(obj, steps)
    return [f'unknown field "{u}"' for u in unknown] if mode == "Warn" else []


def _drop(obj: dict[str, Any], steps: tuple[str | int, ...]) -> None:
    """Remove the field at `steps` (keys and indexes: exact even for a key holding `.` or `[`)."""
    node: Any = obj
    *parents, last = steps
    for step in parents:
        node = node[step]
    node.pop(last, None)


def warm() -> None:
    """Build the validation schemas at start so the first write does not pay for it."""
    validation.warm()
