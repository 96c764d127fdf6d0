"""The cluster checks: is the API server there and who are we to it, are Trainer, JobSet and Kueue
installed in versions that work together, and may we create TrainJobs."""

from __future__ import annotations

from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import TRAINJOBS
from mpijob.client.core import Call, Op
from mpijob.client.doctor.model import Check, Facts, could_not, failed, passed, warned
from mpijob.client.errors import CREDENTIALS_HINT, Unreachable

LOCAL_MARK = "-mpijob"  # the local cluster's gitVersion ends so (v1.32.0-mpijob)
REFUSED = "refused the credentials"  # in the api check's finding when the server answered 401
TRAINER_DOCS = "https://www.kubeflow.org/docs/components/trainer/operator-guides/installation/"


def api(facts: Facts) -> Op[Check]:
    """1. The API server answers `/version`, and says who the credentials are (SelfSubjectReview)."""
    try:
        version = (yield from Call("GET", "/version")) or {}
    except Unreachable as exc:
        return failed("api", f"cannot reach the API server at {exc.url}: {exc.detail}",
                      "start the local cluster (`mpijob server start`), or pick the cluster with --kubeconfig/"
                      "--context (`kubectl cluster-info` must work with the same kubeconfig)")
    except TimeoutError as exc:
        return failed("api", str(exc), "check the network path to the API server (VPN, proxy, firewall)")
    except ApiError as exc:
        if exc.code == 401:
            return failed("api", f"the API server at {facts.server} {REFUSED}: {exc.message}",
                          CREDENTIALS_HINT)
        version = {}  # /version is public on kube; a server that hides it is still there
    facts.version = str(version.get("gitVersion") or "")
    facts.local = facts.version.endswith(LOCAL_MARK)
    try:
        review = yield from Call("POST", f"/apis/{names.AUTHENTICATION_GROUP}/{names.AUTHORIZATION_VERSION}/"
                                 "selfsubjectreviews", body={"apiVersion": f"{names.AUTHENTICATION_GROUP}/"
                                                             f"{names.AUTHORIZATION_VERSION}",
                                                             "kind": "SelfSubjectReview"})
        facts.user = str(((review or {}).get("status") or {}).get("userInfo", {}).get("username") or "")
    except ApiError as exc:
        if exc.code == 401:
            return failed("api", f"the API server at {facts.server} {REFUSED}: {exc.message}",
                          CREDENTIALS_HINT)
    what = "the local mpijob cluster" if facts.local else "Kubernetes"
    who = f" as {facts.user}" if facts.user else ""
    return passed("api", f"{what} {facts.version or '(version hidden)'} at {facts.server}{who}")


def discover(facts: Facts) -> Op[None]:
    """The served API groups and their versions (`/apis`), into `facts.groups`."""
    found = (yield from Call("GET", "/apis")) or {}
    facts.groups = {str(g.get("name")): [str(v.get("version")) for v in g.get("versions") or []]
                    for g in found.get("groups") or []}


def _schema(doc: Obj, kind: str) -> Obj | None:
    """The schema of `kind` in an OpenAPI v3 document (by its group-version-kind, else by its name)."""
    schemas = (doc.get("components") or {}).get("schemas") or {}
    for name, schema in schemas.items():
        gvks = schema.get("x-kubernetes-group-version-kind") or []
        if any(g.get("kind") == kind and g.get("group") == names.TRAINER_GROUP for g in gvks) or \
                name.endswith(f".{kind}"):
            return _resolve(schema, schemas)
    return None


def _resolve(schema: Any, schemas: Obj) -> Obj:
    """A schema with a `$ref` (or a one-element `allOf`) replaced by what it refers to."""
    for _ in range(5):
        if not isinstance(schema, dict):
            return {}
        if "$ref" in schema:
            schema = schemas.get(str(schema["$ref"]).rsplit("/", 1)[-1]) or {}
        elif len(schema.get("allOf") or []) == 1:
            schema = schema["allOf"][0]
        else:
            return schema
    return {}


def trainer(facts: Facts) -> Op[Check]:
    """2a. Kubeflow Trainer serves TrainJob v1alpha1, with `runtimePatches` (Trainer ≥ 2.2), which Kueue's
    TrainJob integration writes to; an older Trainer has `podTemplateOverrides` only."""
    if names.TRAINER_VERSION not in facts.groups.get(names.TRAINER_GROUP, []):
        return failed("trainer", f"the cluster does not serve {names.TRAINER_API_VERSION}: Kubeflow Trainer is not "
                      "installed", f"install Kubeflow Trainer ≥ 2.2 ({TRAINER_DOCS})")
    try:
        doc = (yield from Call("GET", f"/openapi/v3/apis/{names.TRAINER_GROUP}/{names.TRAINER_VERSION}")) or {}
    except ApiError as exc:
        return could_not("trainer", exc, "the TrainJob schema (OpenAPI v3)")
    schema = _schema(doc, TRAINJOBS.kind) or {}
    spec = _resolve((schema.get("properties") or {}).get("spec"), (doc.get("components") or {}).get("schemas") or {})
    fields = spec.get("properties") or {}
    if "runtimePatches" in fields:
        return passed("trainer", f"Kubeflow Trainer serves {names.TRAINER_API_VERSION} with spec.runtimePatches "
                      "(Trainer ≥ 2.2)")
    if "podTemplateOverrides" in fields:
        says = "Trainer older than 2.2: TrainJob has spec.podTemplateOverrides, not spec.runtimePatches"
        fix = f"upgrade Trainer to ≥ 2.2 ({TRAINER_DOCS})"
        if facts.kueue_version:
            return failed("trainer", f"{says}, and Kueue's TrainJob integration writes runtimePatches: queued jobs "
                          "stay suspended", fix)
        return warned("trainer", f"{says} (Kueue, when installed, needs runtimePatches)", fix)
    if not fields:
        return warned("trainer", "the served TrainJob schema has no spec fields to tell Trainer's version by",
                      f"make sure Trainer ≥ 2.2 is installed ({TRAINER_DOCS})")
    return warned("trainer", "the served TrainJob has neither spec.runtimePatches nor spec.podTemplateOverrides",
                  f"install Kubeflow Trainer ≥ 2.2 ({TRAINER_DOCS})")


def jobset(facts: Facts) -> Check:
    """2b. JobSet, which Trainer builds every TrainJob's pods with; the local cluster does its work itself."""
    if facts.local:
        return passed("jobset", "not needed: the local mpijob cluster runs TrainJobs itself")
    versions = facts.groups.get(names.JOBSET_GROUP)
    if not versions:
        return failed("jobset", f"the cluster does not serve {names.JOBSET_GROUP}: JobSet is not installed, and "
                      "Trainer cannot start a TrainJob without it",
                      "install JobSet (Trainer's installation includes it: " + TRAINER_DOCS + ")")
    return passed("jobset", f"JobSet serves {names.JOBSET_GROUP}/{versions[0]}")


def kueue(facts: Facts) -> Check:
    """2c. Kueue at v1beta2 or v1beta1."""
    version = facts.kueue_version
    if version is None:
        served = facts.groups.get(names.KUEUE_GROUP)
        if served:
            return warned("kueue", f"Kueue serves {names.KUEUE_GROUP} {', '.join(served)} only; mpijob reads "
                          f"{names.KUEUE_VERSION} or {names.KUEUE_V1BETA1}", "upgrade Kueue to ≥ 0.9")
        return warned("kueue", f"Kueue is not installed ({names.KUEUE_GROUP} is not served): TrainJobs start "
                      "at once, with no queueing and no quota", "install Kueue if jobs must share quota")
    return passed("kueue", f"Kueue serves {names.KUEUE_GROUP}/{version}")


def can_create(facts: Facts) -> Op[Check]:
    """4. `kubectl auth can-i create trainjobs` in the namespace (a SelfSubjectAccessReview)."""
    body = {"apiVersion": f"{names.AUTHORIZATION_GROUP}/{names.AUTHORIZATION_VERSION}",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": facts.namespace, "verb": "create",
                                            "group": names.TRAINER_GROUP, "resource": TRAINJOBS.plural}}}
    try:
        review = yield from Call("POST", f"/apis/{names.AUTHORIZATION_GROUP}/{names.AUTHORIZATION_VERSION}/"
                                 "selfsubjectaccessreviews", body=body)
    except ApiError as exc:
        return could_not("can-create", exc, "whether you may create TrainJobs")
    status = (review or {}).get("status") or {}
    who = facts.user or "these credentials"
    if status.get("allowed"):
        return passed("can-create", f"{who} may create {TRAINJOBS.group_resource} in namespace {facts.namespace}")
    why = f" ({status['reason']})" if status.get("reason") else ""
    return failed("can-create", f"{who} may not create {TRAINJOBS.group_resource} in namespace "
                  f"{facts.namespace}{why}",
                  f"ask an administrator for a RoleBinding in {facts.namespace} to the edit ClusterRole (or a Role "
                  f"with create on {TRAINJOBS.group_resource}), or pick your own namespace with -n")
