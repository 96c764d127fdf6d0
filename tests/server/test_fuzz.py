"""Hostile input against every route the server serves (issue 12, item 8), as hypothesis properties.

The routes are read from the server itself: discovery (`/api`, `/apis`, each group-version's resources,
verbs and subresources, Kueue's visibility API), the OpenAPI v3 documents' operations and the
non-resource paths (`/version`, `/healthz`, `/openapi/...`), plus every method a path does not serve.
Each route gets malformed, type-confused, deeply nested and exotic bodies (JSON, YAML, protobuf, the
four PATCH types), odd names and namespaces (`..`, `%2F`, unicode, 254 characters, empty), bad
selectors and query parameters, bad content types, as no user, as a user with a bad token and as the
admin. For every answer:

* never a 5xx, and always an answer (no hang, no dropped connection);
* every error is a `kind: Status` JSON whose `code` is the HTTP status;
* a refused write leaves the store as it was (its resourceVersion, which every write moves, unchanged):
  never a partial object;
* an unauthenticated request is refused (401/403) everywhere but the health probes;
* a JSON success body is strict JSON (no `NaN`);
* the server stays up: `/readyz` answers `ok` after each route's batch and at the end.

Deterministic (`derandomize=True`, no example database). The default run sends a few examples per
route (about a minute on two cores); `MPIJOB_FUZZ_EXAMPLES=5000` spreads that many authorized examples
over the routes instead. Run with `-s` to see the counts (requests per route and status code).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fuzz_routes import FUZZ_NS, HEALTH, MAX_BODY, VISIBILITY, Route, _collection, discover, seed_objects
from fuzz_support import (
    BAD_SELECTORS,
    CONTENT_TYPES,
    COPY_BOMB,
    DEPTH_PATCH,
    ODD_NAMES,
    QUERY,
    SPECIAL_BODIES,
    Case,
    Record,
    case,
    relevant,
    url,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mpijob.api.trainer.runtimes import bundled
from mpijob.store.server_process import ServerInfo

DEFAULT_EXAMPLES = 2400  # authorized examples over all routes in the default run (6 per route)
EXAMPLES = int(os.environ.get("MPIJOB_FUZZ_EXAMPLES") or DEFAULT_EXAMPLES)
BAD_TOKENS: list[bytes] = [b"Bearer bad-token", b"Bearer", b"Basic YWRtaW46YWRtaW4=", b"Bearer \xff\xfe",
                           b"bearer a,b,c", b"Bearer " + b"x" * 2000, b"Token abc"]


MEMORY_CAP = 4 * 1024**3  # the fuzzed server's address space: a body that blew up would fail it, not the machine


@pytest.fixture(scope="module")
def fuzz_server(servers: Any) -> ServerInfo:
    """A server of its own (the fuzzer creates and deletes objects other tests would trip on), under a
    memory cap: a body that blew up would fail that server, not the machine."""
    info = servers.start("fuzz", controllers=False)
    resource.prlimit(info.pid, resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    return info


class Fuzzer:
    def __init__(self, info: ServerInfo, connect: Any, record: Record) -> None:
        self.admin = connect(info)
        self.anonymous = connect(info, token="")
        self.record = record
        self.rv = self.resource_version()
        self.seeds: dict[tuple[str, str], dict[str, Any] | None] = {}
        self.routes: list[Route] = []
        self.last_failure = ""  # the last (shrunk) example's failure, which hypothesis reports in its own words

    def close(self) -> None:
        self.admin.close()
        self.anonymous.close()

    def resource_version(self) -> str:
        answer = self.admin.get("/api/v1/namespaces", params={"limit": "1"})
        assert answer.status_code == 200, answer.text
        return str(answer.json()["metadata"]["resourceVersion"])

    def seed(self, route: Route) -> dict[str, Any] | None:
        """The route's resource's seed object as its version shows it (None for non-resource paths)."""
        if not route.plural or not route.api_version:
            return None
        key = (route.api_version, route.plural)
        if key not in self.seeds:
            prefix = f"/apis/{route.api_version}" if "/" in route.api_version else f"/api/{route.api_version}"
            name = FUZZ_NS if route.plural == "namespaces" else "fuzz-seed"
            path = _collection(prefix, route.plural, route.namespaced).replace("{namespace}", FUZZ_NS)
            got = self.admin.get(f"{path}/{name}")
            self.seeds[key] = got.json() if got.status_code == 200 else None
        return self.seeds[key]

    def send(self, route: Route, c: Case, auth: bytes | None) -> None:
        """One request and every check on its answer."""
        headers: dict[str, Any] = {}
        if c.content_type is not None:
            headers["content-type"] = c.content_type
        if c.accept is not None:
            headers["accept"] = c.accept
        http = self.admin if auth is None else self.anonymous
        if auth:
            headers["authorization"] = auth
        target = url(route, c)
        request = http.build_request(c.method, target, params=c.params, content=c.body, headers=headers)
        where = f"{route.label} as {'admin' if auth is None else auth[:20]!r}: {c.describe()}"
        try:
            answer = http.send(request, stream=True)
        except httpx.HTTPError as exc:
            self.last_failure = f"no answer ({type(exc).__name__}: {exc}) to {where}"
            raise AssertionError(self.last_failure) from None
        try:
            streaming = answer.status_code < 300 and "content-length" not in answer.headers
            if not streaming:
                answer.read()
        finally:
            answer.close()
        who = "admin" if auth is None else ("none" if not auth else "bad-token")
        self.record.saw(route, who, answer.status_code)
        self.check(route, c, answer, who, streaming, where)

    def check(self, route: Route, c: Case, answer: httpx.Response, who: str, streaming: bool, where: str) -> None:
        code = answer.status_code
        problems: list[str] = []
        if code >= 500:
            problems.append(f"{code}: {answer.text[:500]}")
        if code >= 400 and c.method != "HEAD":
            self.record.checks["error is a Status"] += 1
            try:
                status = answer.json()
            except ValueError:
                status = None
            if not (isinstance(status, dict) and status.get("kind") == "Status" and status.get("code") == code
                    and status.get("status") == "Failure" and status.get("reason") and status.get("message")):
                problems.append(f"error {code} is not a Status with that code: {answer.text[:300]!r}")
        elif code < 300 and not streaming and "json" in answer.headers.get("content-type", "") and answer.content:
            self.record.checks["success is strict JSON"] += 1
            try:
                json.loads(answer.content, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError as exc:
                problems.append(f"a {code} answer is not strict JSON ({exc}): {answer.text[:200]!r}")
        path = answer.request.url.path
        if who != "admin" and path not in HEALTH:
            self.record.checks["unauthenticated refused"] += 1
            allowed = (401,) if who == "bad-token" else (401, 403)
            if code not in allowed and not (who == "none" and path == "/version" and code < 500):
                problems.append(f"unauthenticated ({who}) request answered {code}, not {allowed}")
        if c.method in ("POST", "PUT", "PATCH", "DELETE"):
            rv = self.resource_version()
            if code >= 300:
                self.record.checks["refused write left the store unchanged"] += 1
                if rv != self.rv:
                    problems.append(f"a refused write ({code}) changed the store: resourceVersion {self.rv} → {rv}")
            self.rv = rv
        if problems:
            self.last_failure = f"{'; '.join(problems)} — {where}"
            raise AssertionError(self.last_failure)

    def ready(self, after: str) -> None:
        answer = self.anonymous.get("/readyz")
        self.record.checks["readyz after a batch"] += 1
        assert answer.status_code == 200 and answer.text == "ok", f"the server is not ready after {after}"

    def fuzz(self, route: Route, examples: int, auths: list[bytes | None]) -> None:
        seed = self.seed(route)

        @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate, Phase.shrink],
                  report_multiple_bugs=False, print_blob=False)
        @given(case(route, seed), st.sampled_from(auths))
        def run(c: Case, auth: bytes | None) -> None:
            self.record.examples[route.label] += 1
            self.send(route, c, auth)

        self.last_failure = ""
        try:
            run()
        except Exception as exc:  # noqa: BLE001 — one route's finding must not hide the next route's
            said = self.last_failure or (str(exc).splitlines() or [type(exc).__name__])[0]
            self.record.findings.append(f"{route.label}: {said[:1500]}")


@pytest.fixture(scope="module")
def fuzzer(fuzz_server: ServerInfo, connect: Any) -> Iterator[Fuzzer]:
    f = Fuzzer(fuzz_server, connect, Record())
    try:
        f.routes = discover(f.admin)
        yield f
    finally:
        f.close()


def reseed(fuzzer: Fuzzer) -> None:
    """The seed objects (in namespace `fuzz`, named `fuzz-seed`) exist again, as created."""
    for path, _, obj in seed_objects(bundled()[0]):
        made = fuzzer.admin.post(path, json=obj)
        assert made.status_code in (201, 409), f"seed {obj['kind']}: {made.text}"
    fuzzer.seeds.clear()
    fuzzer.rv = fuzzer.resource_version()


def finish(fuzzer: Fuzzer, title: str, settings: str) -> None:
    fuzzer.ready(f"the whole {title}")
    print(f"\n== {title}\n" + fuzzer.record.summary(fuzzer.routes, settings))
    findings = fuzzer.record.findings
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(findings[:30])


def test_discovery_names_every_kind_of_route(fuzzer: Fuzzer) -> None:
    verbs = {r.verb for r in fuzzer.routes}
    assert {"list", "watch", "get", "create", "update", "patch", "delete", "deletecollection", "other"} <= verbs
    templates = {r.template for r in fuzzer.routes}
    for needed in ("/api/v1/namespaces/{namespace}/pods/{name}/log", "/version", "/healthz", "/openapi/v2",
                   "/openapi/v3/apis/trainer.kubeflow.org/v1alpha1", "/apis/kueue.x-k8s.io/v1beta1",
                   "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status",
                   "/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads/{name}/status",
                   "/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies/{name}",
                   "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads",
                   "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/{name}/pendingworkloads"):
        assert needed in templates, f"{needed} was not discovered"


def body_routes(fuzzer: Fuzzer) -> list[Route]:
    return [r for r in fuzzer.routes if r.method in ("POST", "PUT", "PATCH", "DELETE") and r.plural]


def test_hostile_bodies_on_every_route_that_reads_one(fuzzer: Fuzzer) -> None:
    """Every special body (deep nesting to 100,000 levels, NaN, 5000-digit numbers, YAML bombs and exotic
    tags, broken protobuf, a JSON patch that copies itself, ...) in every content type, spread over every
    route that reads a body, on the seed objects (dry run or not): the same checks as the fuzzer's."""
    fuzzer.record = Record()
    reseed(fuzzer)
    routes = body_routes(fuzzer)
    combos = [(b, t) for b in (*SPECIAL_BODIES, COPY_BOMB, DEPTH_PATCH) for t in (*CONTENT_TYPES, None)]
    cases = []
    for i, (content, ctype) in enumerate(combos):
        route = routes[i % len(routes)]
        seed = fuzzer.seed(route) or {}
        name = (seed.get("metadata") or {}).get("name", "fuzz-seed")
        params = [("dryRun", "All")] if i % 2 else []
        cases.append((route, Case(route.method, FUZZ_NS, name, params, ctype, None, content)))
    sweep(fuzzer, cases)
    finish(fuzzer, "hostile bodies", f"{len(combos)} body × content-type pairs over {len(routes)} routes")


def groups(routes: list[Route]) -> dict[str, list[Route]]:
    """Routes by the handler behind them (what one hostile value is worth trying on once)."""
    out: dict[str, list[Route]] = {}
    for route in routes:
        if route.plural and route.method != "*":
            kind = "log" if route.sub == "log" else "visibility" if route.template.startswith(VISIBILITY) \
                else f"{route.verb}{'/' + route.sub if route.sub else ''}"
            out.setdefault(kind, []).append(route)
    return out


def ordinary(fuzzer: Fuzzer, route: Route, i: int, params: list[tuple[str, str]], name: str | None = None,
             namespace: str = FUZZ_NS) -> Case:
    """A request that would pass but for what a sweep puts in it: the seed's name, a body that fits, a dry
    run for writes (unless the sweep is about dryRun), a one-second watch."""
    seed = fuzzer.seed(route)
    seed_name = (seed or {}).get("metadata", {}).get("name", "fuzz-seed")
    keys = {k for k, _ in params}
    if route.method != "GET" and "dryRun" not in keys:
        params = [*params, ("dryRun", "All")]
    if route.verb == "watch":
        params = [*params, *[(k, v) for k, v in (("watch", "true"), ("timeoutSeconds", "1")) if k not in keys]]
    ctype, content = None, None
    if route.method in ("POST", "PUT") and seed is not None:
        obj = json.loads(json.dumps(seed))
        if route.method == "POST":
            obj["metadata"] = {**obj["metadata"], "name": name if name is not None else f"fuzz-sweep-{i}"}
            obj["metadata"].pop("resourceVersion", None)
        ctype, content = "application/json", json.dumps(obj).encode()
    elif route.method == "PATCH":
        ctype, content = "application/merge-patch+json", b'{"metadata": {"labels": {"swept": "yes"}}}'
    return Case(route.method, namespace, seed_name if name is None else name, params, ctype, None, content)


def sweep(fuzzer: Fuzzer, cases: list[tuple[Route, Case]]) -> None:
    for i, (route, c) in enumerate(cases):
        fuzzer.record.examples[route.label] += 1
        try:
            fuzzer.send(route, c, None)
        except AssertionError as exc:
            fuzzer.record.findings.append(str(exc)[:1500])
        if i % 100 == 99:
            fuzzer.ready(f"{i + 1} requests")


def test_hostile_query_parameters_on_every_handler(fuzzer: Fuzzer) -> None:
    """Every listed hostile value of every parameter a handler reads (limit=-1, continue=garbage,
    resourceVersion=abc, watch=maybe, timeoutSeconds=x, fieldValidation=Bogus, dryRun=Bogus, bad label and
    field selectors, ...), once per handler, on its routes in turn."""
    fuzzer.record = Record()
    reseed(fuzzer)
    cases = []
    for routes in groups(fuzzer.routes).values():
        pairs = [(key, value) for key in relevant(routes[0])
                 for value in (BAD_SELECTORS if key.endswith("Selector") else QUERY[key])]
        for i, pair in enumerate(pairs):
            route = routes[i % len(routes)]
            cases.append((route, ordinary(fuzzer, route, len(cases), [pair])))
    sweep(fuzzer, cases)
    finish(fuzzer, "hostile query parameters", f"{len(cases)} parameter values")


def test_odd_names_and_namespaces_on_every_handler(fuzzer: Fuzzer) -> None:
    """`..`, `.`, `%2F`, unicode, 254 characters, empty, NUL, ... as the name (in the URL, and in the body of
    a create) and as the namespace, once per handler."""
    fuzzer.record = Record()
    reseed(fuzzer)
    cases = []
    for routes in groups(fuzzer.routes).values():
        for i, odd in enumerate(ODD_NAMES):
            route = routes[i % len(routes)]
            if "{name}" in route.template or route.method == "POST":
                cases.append((route, ordinary(fuzzer, route, len(cases), [], name=odd)))
            if "{namespace}" in route.template:
                cases.append((route, ordinary(fuzzer, route, len(cases), [], namespace=odd)))
    sweep(fuzzer, cases)
    finish(fuzzer, "odd names", f"{len(cases)} names and namespaces")


def test_oversized_bodies_are_refused_with_413(fuzzer: Fuzzer) -> None:
    """A body over 3 MiB is a 413 `RequestEntityTooLarge` Status, whether its length is declared or it is
    chunked, in every format and on every kind of write; nothing is stored; one at the limit is read.
    Unauthenticated, the body is never read: 401."""
    fuzzer.record = Record()
    reseed(fuzzer)
    cm = f"/api/v1/namespaces/{FUZZ_NS}/configmaps"
    big = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": ""}})
    pad = MAX_BODY + 1 - len(big)
    oversized = big.replace('"k": ""', '"k": "' + "x" * pad + '"').encode()
    assert len(oversized) == MAX_BODY + 1
    at_limit = big.replace('"k": ""', '"k": "' + "x" * (pad - 1) + '"').encode()
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {k: " + b"x" * MAX_BODY + b"}\n"
    proto = b"k8s\x00" + b"\x0a" * (MAX_BODY + 1)
    patch_ops = json.dumps([{"op": "add", "path": "/data/k", "value": "x" * MAX_BODY}]).encode()
    writes = [
        ("POST", cm, "application/json", oversized), ("POST", cm, "application/yaml", yaml_body),
        ("POST", cm, "application/vnd.kubernetes.protobuf", proto),
        ("PUT", f"{cm}/fuzz-seed", "application/json", oversized),
        ("PATCH", f"{cm}/fuzz-seed", "application/merge-patch+json", oversized),
        ("PATCH", f"{cm}/fuzz-seed", "application/strategic-merge-patch+json", oversized),
        ("PATCH", f"{cm}/fuzz-seed", "application/json-patch+json", patch_ops),
        ("PATCH", f"{cm}/fuzz-seed", "application/apply-patch+yaml", yaml_body),
        ("DELETE", f"{cm}/fuzz-seed", "application/json", oversized), ("DELETE", cm, "application/json", oversized),
        ("PUT", f"/api/v1/namespaces/{FUZZ_NS}/pods/fuzz-seed/status", "application/json", oversized),
        ("PATCH", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{FUZZ_NS}/trainjobs/fuzz-seed/status",
         "application/merge-patch+json", oversized),
        ("POST", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{FUZZ_NS}/trainjobs", "application/json", oversized),
        ("POST", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues", "application/yaml", yaml_body),
    ]
    writes += [(m, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json", oversized)
               for m in ("POST",) if any(r.plural == "selfsubjectaccessreviews" for r in fuzzer.routes)]
    route = Route("*", "(oversized)", "oversized")
    for method, path, ctype, content in writes:
        for chunked in (False, True):
            sent = iter([content[i:i + 65536] for i in range(0, len(content), 65536)]) if chunked else content
            answer = fuzzer.admin.request(method, path, content=sent, headers={"content-type": ctype})
            fuzzer.record.saw(route, "admin", answer.status_code)
            where = f"{method} {path} {ctype} ({'chunked' if chunked else 'Content-Length'})"
            body = answer.json()
            assert answer.status_code == 413, f"{where}: {answer.status_code} {answer.text[:300]}"
            assert body["kind"] == "Status" and body["reason"] == "RequestEntityTooLarge" and body["code"] == 413
            assert "limit is 3145728" in body["message"], body
            assert fuzzer.resource_version() == fuzzer.rv, f"{where} changed the store"
        fuzzer.record.checks["oversized refused, store unchanged"] += 2
    assert fuzzer.admin.get(f"{cm}/big").status_code == 404
    refused = fuzzer.anonymous.post(cm, content=oversized, headers={"content-type": "application/json"})
    assert refused.status_code == 401, refused.text
    fuzzer.record.saw(route, "none", refused.status_code)
    created = fuzzer.admin.post(cm, content=at_limit, headers={"content-type": "application/json"})
    fuzzer.record.saw(route, "admin", created.status_code)
    assert created.status_code == 201, created.text[:300]
    assert len(fuzzer.admin.get(f"{cm}/big").json()["data"]["k"]) == pad - 1
    finish(fuzzer, "oversized bodies", f"{len(writes)} writes, each with Content-Length and chunked")


def test_fuzz_every_route(fuzzer: Fuzzer) -> None:
    fuzzer.record = Record()
    reseed(fuzzer)
    routes = fuzzer.routes
    per_route = max(1, EXAMPLES // len(routes))
    unauthenticated = max(1, per_route // 6)
    for route in routes:
        fuzzer.fuzz(route, unauthenticated, [b""])  # no token
        fuzzer.fuzz(route, unauthenticated, BAD_TOKENS)
        fuzzer.fuzz(route, per_route, [None])  # the admin
        fuzzer.ready(route.label)
    time.sleep(0.2)
    finish(fuzzer, "fuzz", f"{per_route} authorized + 2×{unauthenticated} unauthenticated examples per route "
                           f"(MPIJOB_FUZZ_EXAMPLES={EXAMPLES})")
