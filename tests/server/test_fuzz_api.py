"""Schemathesis, a third-party OpenAPI fuzzer, against every operation the served OpenAPI documents list
(issue 30): generated requests, schema-conforming and schema-violating, to a server of its own, each
sent as a tenant (a user made with `mpijob user add`, holding `edit` in one namespace) and as the admin;
then a short sweep of the Trainer document with the controllers on.

Each case's path is pinned to a seed object (one per kind, made again before each operation when a
DELETE took it), to a namespace alone, or left to the generator. For every answer:

* never a 5xx, and every request answered within `REQUEST_BOUND` (a watch or a followed log is a
  stream: its headers must come in that time);
* an error is a `Status` with the HTTP status as its `code`;
* a refused write changes nothing (with the controllers off: the store's resourceVersion stays);
* afterwards the server still answers `/readyz` and lists, and its log holds no traceback.

Deterministic (`derandomize=True`, no example database): the same operation draws the same cases. The
sweep gives each operation its share of `SECONDS` (scaled like every test bound): `EXAMPLES` cases per
generation mode while on time, one once behind, so it takes about 2 minutes on two cores whatever their
load. `MPIJOB_API_FUZZ_EXAMPLES=30 MPIJOB_API_FUZZ_SECONDS=1200` goes deeper;
`MPIJOB_API_FUZZ_ONLY=apis/trainer.kubeflow.org` fuzzes one document (a finding's, to reproduce it);
`-s` prints the counts by operation and status code.
"""

from __future__ import annotations

import copy
import json
import os
import resource
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import schemathesis
from fuzz_routes import FUZZ_NS, seed_objects
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mpijob.api.trainer.runtimes import bundled
from mpijob.store.home import Home
from mpijob.store.server_process import ServerInfo
from schemathesis import GenerationMode
from schemathesis.schemas import APIOperation

from support import add_user, https_client, scaled

EXAMPLES = int(os.environ.get("MPIJOB_API_FUZZ_EXAMPLES") or 5)  # at most, per operation and generation mode
SECONDS = float(os.environ.get("MPIJOB_API_FUZZ_SECONDS") or 75)  # about how long the sweep of every operation takes
LIVE_SECONDS = float(os.environ.get("MPIJOB_API_FUZZ_LIVE_SECONDS") or 15)  # the Trainer sweep, controllers on
ONLY = os.environ.get("MPIJOB_API_FUZZ_ONLY", "")  # e.g. apis/trainer.kubeflow.org: that document's operations
REQUEST_BOUND = scaled(15)  # seconds: an answer (a stream's headers) later than this is a hang
MEMORY_CAP = 4 * 1024**3
TENANT_NS = "fuzz-tenant"
SCRATCH_NS = "fuzz-scratch"  # the namespace the admin's namespace operations may delete
SEED = "fuzz-seed"
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)

# kube's merge and apply patches are JSON and YAML: schemathesis sends them as it sends those
schemathesis.serializer.alias("application/apply-patch+yaml", "application/yaml")


@dataclass
class Record:
    started: float = field(default_factory=time.monotonic)
    by_operation: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    findings: list[str] = field(default_factory=list)
    slowest: float = 0.0
    waited: float = 0.0  # seconds spent waiting for the server (the rest is generating cases)
    examples: int = 0

    def summary(self) -> str:
        codes: Counter[int] = Counter()
        for counts in self.by_operation.values():
            codes.update(counts)
        lines = [(f"schemathesis: {sum(codes.values())} requests to {len(self.by_operation)} operations in "
                  f"{time.monotonic() - self.started:.1f} s ({self.waited:.1f} s waiting for answers), slowest "
                  f"answer {self.slowest:.2f} s; {self.examples} cases (at most {EXAMPLES} per operation and "
                  f"mode), each sent as every user"),
                 f"schemathesis: status codes {dict(sorted(codes.items()))}"]
        lines += [f"  {op}: {dict(sorted(c.items()))}" for op, c in sorted(self.by_operation.items())]
        return "\n".join(lines)


def _key(path: str) -> tuple[str, str]:
    """(group, plural) of a collection or an operation's path (`/apis/<group>/<version>/.../<plural>[/{name}...]`)."""
    collection = path.split("/{name}", maxsplit=1)[0].split("/")
    return (collection[2] if collection[1] == "apis" else ""), collection[-1]


class Fuzzer:
    def __init__(self, info: ServerInfo, admin: httpx.Client, tenant: httpx.Client | None = None) -> None:
        """Seeds in `fuzz` (and, with a tenant, in its namespace); with the controllers on, the seed
        TrainJob is suspended (no job runs for it unless a case resumes it)."""
        self.info, self.admin, self.tenant = info, admin, tenant
        self.record = Record()
        self.rv = ""
        self.seeds: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        base = [(p, o) for p, _, o in seed_objects(bundled()[0])]
        for _, obj in base:
            if obj["kind"] == "TrainJob" and info.sandbox_mode is not None:
                obj["spec"]["suspend"] = True
        tenants = [(p.replace(f"/namespaces/{FUZZ_NS}/", f"/namespaces/{TENANT_NS}/"), o)
                   for p, o in base if f"/namespaces/{FUZZ_NS}/" in p] if tenant is not None else []
        scratch = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SCRATCH_NS}}
        for path, obj in [*base, *tenants, ("/api/v1/namespaces", scratch)]:
            self.seeds[_key(path)].append((path, obj))

    def log_tracebacks(self) -> list[str]:
        """The server log's tracebacks: an error no answer showed (a controller's, a stream's)."""
        text = Home(self.info.home).server_log.read_text(errors="replace")
        return [chunk[:1500] for chunk in text.split("Traceback (most recent call last)")[1:]]

    def documents(self) -> dict[str, dict[str, Any]]:
        root = self.admin.get("/openapi/v3").json()["paths"]
        return {gv: self.admin.get(entry["serverRelativeURL"]).json() for gv, entry in root.items()}

    def resource_version(self) -> str:
        answer = self.admin.get("/api/v1/namespaces", params={"limit": "1"})
        assert answer.status_code == 200, answer.text
        return str(answer.json()["metadata"]["resourceVersion"])

    def reseed(self, key: tuple[str, str] | None = None, *, strict: bool = False) -> None:
        """The seed objects (of one resource, or all) exist again, as created. One the fuzzer changed into
        what a seed depends on refuses (a runtime without `mpi` for the TrainJob) stays away unless `strict`."""
        for k, seeds in self.seeds.items():
            if key is None or k == key:
                for path, obj in seeds:
                    if self.admin.get(f"{path}/{obj['metadata']['name']}").status_code == 404:
                        made = self.admin.post(path, json=obj)
                        assert made.status_code in ((201, 409) if strict else (201, 409, 403, 422)), \
                            f"seed {obj['kind']} at {path}: {made.text}"
        self.rv = self.resource_version()

    def send(self, client: httpx.Client, who: str, op: APIOperation, case: Any) -> None:
        kwargs = case.as_transport_kwargs(base_url=self.info.url)
        headers = {k: v for k, v in kwargs.get("headers", {}).items() if k.lower() != "authorization"}
        if "json" in kwargs:
            content: bytes | str | None = json.dumps(kwargs["json"])
        else:
            content = kwargs.get("data")
        params = [(k, _param(v)) for k, v in (kwargs.get("params") or {}).items()]
        request = client.build_request(kwargs["method"], kwargs["url"], params=params, content=content,
                                       headers=headers)
        where = f"{who}: {kwargs['method']} {request.url} {headers.get('Content-Type', '')} {str(content)[:300]!r}"
        started = time.monotonic()
        try:
            answer = client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise AssertionError(f"no answer within {REQUEST_BOUND:.0f} s ({type(exc).__name__}) to {where}") from None
        try:
            streaming = answer.status_code < 300 and "content-length" not in answer.headers
            if not streaming:
                answer.read()
        except httpx.HTTPError as exc:
            raise AssertionError(f"the answer did not end in {REQUEST_BOUND:.0f} s ({exc}) to {where}") from None
        finally:
            answer.close()
        self.record.slowest = max(self.record.slowest, time.monotonic() - started)
        self.record.waited += time.monotonic() - started
        code = answer.status_code
        self.record.by_operation[op.label][code] += 1
        problems = []
        if code >= 500:
            problems.append(f"{code}: {answer.text[:600]}")
        elif code >= 400:
            try:
                status = answer.json()
            except ValueError:
                status = None
            if not (isinstance(status, dict) and status.get("kind") == "Status" and status.get("code") == code):
                problems.append(f"error {code} is not a Status with that code: {answer.text[:300]!r}")
        if kwargs["method"] != "GET" and self.info.sandbox_mode is None:  # controllers write too, when on
            started = time.monotonic()
            rv = self.resource_version()
            self.record.waited += time.monotonic() - started
            if code >= 400 and rv != self.rv:
                problems.append(f"a refused write ({code}) changed the store: resourceVersion {self.rv} → {rv}")
            self.rv = rv
        assert not problems, f"{'; '.join(problems)} — {where}"

    def fuzz(self, op: APIOperation, users: list[User], until: float) -> None:
        """`EXAMPLES` cases of each generation mode, each sent as every user (its path pinned per user);
        a mode started past `until` (a `time.monotonic()`) gets one. A create or replace also gets its
        kind's seed with a few fields set to odd values (nulls most often): a body that passes the schema
        elsewhere, which generated ones rarely do, so what admission does after the schema is reached."""
        self.reseed(_key(op.path))
        seeds = self.seeds.get(_key(op.path)) if op.method in ("post", "put") and "{name}/" not in op.path else None
        for mode in MODES:
            # an operation with only free path strings has nothing to violate
            if mode is GenerationMode.POSITIVE or op.query or op.body:
                self._fuzz(op, mode, users, until)
        if seeds:
            self._fuzz(op, GenerationMode.POSITIVE, users, until, seed=seeds[0][1])

    def _fuzz(self, op: APIOperation, mode: GenerationMode, users: list[User], until: float,
              seed: dict[str, Any] | None = None) -> None:
        names = {p.name for p in op.path_parameters}
        query = {"labelSelector": "fuzz=seed"} if op.method == "delete" and "{name}" not in op.path else None
        pins = st.integers(0, max(len(u.pins) for u in users))
        bodies = st.just(None) if seed is None else mutated(seed)
        failure: list[str] = []

        @settings(max_examples=EXAMPLES if time.monotonic() < until else 1, derandomize=True, database=None,
                  deadline=None, print_blob=False, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
        @given(op.as_strategy(mode, query=query, **({} if seed is None else {"body": seed})), pins, bodies)
        def run(case: Any, pin: int, body: dict[str, Any] | None) -> None:
            self.record.examples += 1
            if body is not None:
                case.body = body
            generated = dict(case.path_parameters)
            try:
                for user in users:
                    chosen = user.pins[pin] if pin < len(user.pins) else {}
                    case.path_parameters = {**generated, **{k: v for k, v in chosen.items() if k in names}}
                    self.send(user.client, user.name, op, case)
            except AssertionError as exc:
                failure[:] = [str(exc)]
                raise

        try:
            run()
        except Exception as exc:  # noqa: BLE001 — one operation's finding must not hide the next one's
            said = failure[0] if failure else (str(exc).splitlines() or [type(exc).__name__])[0]
            kind = "seed" if seed is not None else mode.value
            self.record.findings.append(f"{op.label} [{kind}] {said[:1500]}")

    def sweep(self, operations: list[APIOperation], users: list[User], seconds: float) -> None:
        """Fuzz every operation within about `seconds`: each gets its share of the time, and what a quick
        one leaves goes to the ones after it."""
        started = time.monotonic()
        for i, op in enumerate(operations):
            self.fuzz(op, users, started + seconds * (i + 1) / len(operations))

    def operations(self, only: str = "") -> list[APIOperation]:
        """Every operation of the documents (of group-versions starting with `only`), deletions last."""
        ops = [r.ok() for gv, doc in self.documents().items() if gv.startswith(only)
               for r in schemathesis.openapi.from_dict(doc).get_all_operations()]
        order = {"get": 0, "post": 1, "put": 2, "patch": 2, "delete": 3}
        return sorted(ops, key=lambda op: order[op.method])


@dataclass
class User:
    name: str
    client: httpx.Client
    pins: list[dict[str, str]]  # path parameters to pin, drawn per case; {} leaves them generated


def pins(*namespaces: str) -> list[dict[str, str]]:
    """Per namespace, the seed there (namespaces: the scratch one) and any name there; then nothing pinned."""
    out: list[dict[str, str]] = []
    for ns in namespaces:
        out += [{"namespace": ns, "name": SEED}, {"namespace": ns}]
    return [*out, {"name": SCRATCH_NS}]  # a Namespace's {name}: the one its deletion may take


ODD = st.one_of(st.none(), st.sampled_from(["", 0, -1, 2**63, 1.5, True, [], {}, [None], {"": None}, "x" * 300]))


def _places(node: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every field and list item under `node` (not metadata's name and namespace: the path's to judge)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if at == ("metadata",) and key in ("name", "namespace"):
            continue
        yield (*at, key)
        yield from _places(value, (*at, key))


def _put(obj: Any, at: tuple[str | int, ...], value: Any) -> Any:
    obj = copy.deepcopy(obj)
    node = obj
    for key in at[:-1]:
        node = node[key]
    node[at[-1]] = value
    return obj


def mutated(seed: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """`seed` with one to three of its fields (or list items) set to odd values, null most often."""
    places = sorted(_places(seed), key=str)
    changes = st.lists(st.tuples(st.sampled_from(places), ODD), min_size=1, max_size=3)

    def apply(pairs: list[tuple[tuple[str | int, ...], Any]]) -> dict[str, Any]:
        out = seed
        for at, value in pairs:
            try:
                out = _put(out, at, value)
            except (KeyError, IndexError, TypeError):
                pass  # an earlier change took that place away
        return out

    return changes.map(apply)


def _param(value: Any) -> str:
    """A generated query value as it goes on the wire: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def start(servers: Any, name: str, *, controllers: bool) -> ServerInfo:
    """A server of its own (the fuzzer writes and deletes), under a memory cap."""
    info = servers.start(name, controllers=controllers)
    resource.prlimit(info.pid, resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    return info


@pytest.fixture(scope="module")
def fuzzer(servers: Any) -> Iterator[Fuzzer]:
    """The controllers off; a tenant with `edit` in `fuzz-tenant`, made as an administrator makes one."""
    info = start(servers, "fuzz-api", controllers=False)
    admin = https_client(info.kubeconfig, REQUEST_BOUND)
    user = f"tenant-{uuid.uuid4().hex[:6]}"
    assert admin.post("/api/v1/namespaces", json={"metadata": {"name": TENANT_NS}}).status_code == 201
    binding = {"metadata": {"name": f"{user}-edit"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    made = admin.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{TENANT_NS}/rolebindings", json=binding)
    assert made.status_code == 201, made.text
    tenant = https_client(add_user(info.home, user), REQUEST_BOUND)
    assert tenant.get(f"/api/v1/namespaces/{TENANT_NS}/configmaps").status_code == 200
    assert tenant.get("/api/v1/namespaces/default/configmaps").status_code == 403
    try:
        yield Fuzzer(info, admin, tenant)
    finally:
        admin.close()
        tenant.close()


def finish(fuzzer: Fuzzer) -> None:
    """The server still answers and lists; no finding, and no traceback in its log."""
    print("\n" + fuzzer.record.summary())
    ready = fuzzer.admin.get("/readyz")
    assert ready.status_code == 200 and ready.text == "ok"
    listed = fuzzer.admin.get("/apis/trainer.kubeflow.org/v1alpha1/trainjobs")
    assert listed.status_code == 200 and listed.json()["kind"] == "TrainJobList"
    findings = fuzzer.record.findings + [f"server log: {t}" for t in fuzzer.log_tracebacks()]
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(findings[:40])


def test_schemathesis_reads_both_documents(fuzzer: Fuzzer) -> None:
    """Schemathesis loads every served document, v2 and v3, and finds the same operations in both."""
    v3: set[str] = set()
    listed = 0
    for doc in fuzzer.documents().values():
        v3 |= {r.ok().label for r in schemathesis.openapi.from_dict(doc).get_all_operations()}
        listed += sum(len(item) - 1 for item in doc["paths"].values())  # the methods beside "parameters"
    v2 = fuzzer.admin.get("/openapi/v2", headers={"Accept": "application/json"}).json()
    assert {r.ok().label for r in schemathesis.openapi.from_dict(v2).get_all_operations()} == v3
    assert len(v3) == listed
    assert "GET /apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs" in v3


def test_no_operation_answers_5xx_or_hangs(fuzzer: Fuzzer) -> None:
    """Every operation of every document, each case as the tenant and then as the admin; then the server
    still answers, and the tenant's grant still works."""
    assert fuzzer.tenant is not None
    fuzzer.reseed(strict=True)
    users = [User("tenant", fuzzer.tenant, pins(TENANT_NS, FUZZ_NS)), User("admin", fuzzer.admin, pins(FUZZ_NS))]
    fuzzer.sweep(fuzzer.operations(ONLY), users, scaled(SECONDS))
    assert fuzzer.tenant.get(f"/api/v1/namespaces/{TENANT_NS}/configmaps").status_code == 200
    finish(fuzzer)


def test_trainer_operations_with_the_controllers_on(servers: Any) -> None:
    """A short sweep of the Trainer document, as the admin, with the controllers running: what admission
    lets through must not break a controller either."""
    info = start(servers, "fuzz-api-live", controllers=True)
    with https_client(info.kubeconfig, REQUEST_BOUND) as admin:
        fuzzer = Fuzzer(info, admin)
        fuzzer.reseed(strict=True)
        fuzzer.sweep(fuzzer.operations("apis/trainer.kubeflow.org"), [User("admin", admin, pins(FUZZ_NS))],
                     scaled(LIVE_SECONDS))
        finish(fuzzer)
