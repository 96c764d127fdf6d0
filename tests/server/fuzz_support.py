"""The fuzzer's parts: the hostile inputs (hypothesis strategies) and a recorder of what was sent and
answered; the routes and seed objects are in `fuzz_routes`.

Kept apart from the test so the test reads as the properties it checks (tests/server/test_fuzz.py).
"""

from __future__ import annotations

import copy
import json
import time
import urllib.parse
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from fuzz_routes import FUZZ_NS, METHODS, VISIBILITY, Route
from hypothesis import strategies as st

# -- hostile inputs ----------------------------------------------------------------------------------

ODD_NAMES = ["", ".", "..", "%2F", "a/b", "%", "é", "名前", "a" * 254, "a" * 253, "a" * 64, "A_B", "-a", "a-",
             "a..b", "\x00", " ", "a b", "default", "kube-system", "?x=1", "#frag", "\\", "'", '"', "a\nb",
             "\u202e", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"), "0", "true", "null",
             "fuzz-seed", "missing-object"]
names = st.one_of(st.sampled_from(ODD_NAMES), st.text(max_size=20))

BAD_SELECTORS = ["=", "!", "a in (", "a in b", "a notin ()", "a==b==c", "a!=", "(", ")", ",", ",,", "a,!", "!a=b",
                 "a=b,c", "a=" + "b" * 300, "x" * 400 + "=y", "a in (b,c", "a)", "metadata.name=", "spec.x.y.z=1",
                 "metadata.name==fuzz-seed", "a=\u00e9", "\x00", "a b", "a=b c", "a&b", "a>1", "a<1", "a gt 1",
                 "status.phase=Running", "metadata.namespace!=default", "%", "a=%2F"]
selectors = st.one_of(st.sampled_from(BAD_SELECTORS), st.text(max_size=30))

QUERY: dict[str, list[str]] = {
    "limit": ["-1", "0", "1", "x", "99999999999999999999999", "1.5", "", " 1"],
    "continue": ["garbage", "", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0",  # rv 1: expired
                 "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTk5OTk5OTk5LCJzdGFydCI6ImEifQ",  # rv from the future
                 "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiYVx1MDAwMCJ9",  # rv -1
                 "W10", "bnVsbA", "eyJ2IjoieCJ9", "%%%", "eyJydiI6IjEifQ"],
    "resourceVersion": ["abc", "0", "1", "-1", "99999999999", "", "1.5", "1e3"],
    "resourceVersionMatch": ["Exact", "NotOlderThan", "Bogus", ""],
    "watch": ["maybe", "true", "false", "1", "", "0"],
    "timeoutSeconds": ["x", "-5", "1", "0", "1e9", "99999999999999999999"],
    "fieldValidation": ["Bogus", "Strict", "Warn", "Ignore", "", "strict"],
    "dryRun": ["Bogus", "All", "", "all"],
    "pretty": ["true", "x", ""],
    "propagationPolicy": ["Foreground", "Background", "Orphan", "Bogus"],
    "gracePeriodSeconds": ["x", "-1", "0"],
    "includeObject": ["Object", "None", "Metadata", "Bogus"],
    "allowWatchBookmarks": ["maybe", "true"],
    "sendInitialEvents": ["maybe", "true"],
    "fieldManager": ["x" * 300, "", "kubectl"],
    "force": ["maybe", "true"],
    "container": ["main", "missing", "", "../x"],
    "follow": ["maybe", "true", "false"],
    "previous": ["maybe", "true"],
    "timestamps": ["maybe", "true"],
    "tailLines": ["-1", "x", "0", "99999999999999999999999"],
    "limitBytes": ["0", "x", "-1", "1"],
    "sinceSeconds": ["0", "x", "-1", "1"],
    "sinceTime": ["x", "2024-01-01T00:00:00Z"],
    "offset": ["-1", "x", "5", "99999999999999999999999"],
}


LIST_PARAMS = ["limit", "continue", "resourceVersion", "resourceVersionMatch", "labelSelector", "fieldSelector",
               "watch", "timeoutSeconds", "includeObject", "pretty", "allowWatchBookmarks", "sendInitialEvents"]
WRITE_PARAMS = ["dryRun", "fieldValidation", "fieldManager", "pretty"]
RELEVANT: dict[str, list[str]] = {
    "list": LIST_PARAMS, "watch": LIST_PARAMS,
    "deletecollection": ["labelSelector", "fieldSelector", "dryRun", "propagationPolicy", "gracePeriodSeconds",
                         "limit", "continue", "resourceVersion"],
    "create": WRITE_PARAMS, "update": WRITE_PARAMS, "patch": [*WRITE_PARAMS, "force"],
    "delete": ["dryRun", "propagationPolicy", "gracePeriodSeconds", "pretty"],
    "get": ["resourceVersion", "pretty", "includeObject"],
    "log": ["container", "follow", "previous", "timestamps", "tailLines", "limitBytes", "sinceSeconds", "sinceTime"],
    "visibility": ["offset", "limit"],
}


def relevant(route: Route) -> list[str]:
    """The query parameters the route's handler reads (what is worth getting wrong)."""
    if route.sub == "log":
        return RELEVANT["log"]
    if route.template.startswith(VISIBILITY):
        return RELEVANT["visibility"]
    return RELEVANT.get(route.verb, sorted(QUERY))


def value_of(key: str) -> st.SearchStrategy[str]:
    """Mostly the listed hostile values, now and then any text."""
    listed = st.sampled_from(BAD_SELECTORS) if key in ("labelSelector", "fieldSelector") \
        else st.sampled_from(QUERY.get(key, [""]))
    return st.one_of(listed, listed, listed, listed, st.text(max_size=8))


@st.composite
def query(draw: Any, route: Route) -> list[tuple[str, str]]:
    keys = draw(st.lists(st.sampled_from(relevant(route)), max_size=3, unique=True))
    if draw(st.integers(0, 2)) == 0:  # now and then a parameter the route does not read, or a nameless one
        keys.append(draw(st.sampled_from([*sorted(QUERY), "labelSelector", "x", ""])))
    out: list[tuple[str, str]] = []
    if route.verb == "watch":
        out += [("watch", "true"), ("timeoutSeconds", "1")]
    out += [(key, draw(value_of(key))) for key in keys]
    if route.method != "GET" and draw(st.booleans()):
        out.append(("dryRun", "All"))  # writes that pass reach the end of admission without storing
    return out


def deep(depth: int, form: str = "list") -> bytes:
    if form == "list":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


BILLION_LAUGHS = "\n".join(["a: &a [x,x,x,x,x,x,x,x,x,x]"] + [
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]" for i in range(8)]).encode()
SPECIAL_BODIES: list[bytes] = [
    b"", b" ", b"null", b"1", b'"s"', b"[]", b"{}", b"true", b"[{}]", b"{", b"}", b"\xff\xfe\x00",
    b'{"metadata": {"name": NaN}}', b'{"metadata": {"name": "x"}, "a": Infinity}', b'{"data": {"k": 1e999}}',
    b'{"a": ' + b"1" * 5000 + b"}", b'{"a": -' + b"9" * 4400 + b"}",
    b'{"metadata": {"name": "dup", "name": "b"}}', '{"é": "\u2028"}'.encode("utf-16"),
    b'{"metadata": {"name": "x\\ud800"}}', b'{"metadata": "x"}', b'{"metadata": []}', b'{"metadata": {"name": 1}}',
    b'{"metadata": {"generateName": 5}}', b'{"metadata": {"labels": "x"}}', b'{"metadata": {"labels": {"a": 1}}}',
    b'{"metadata": {"namespace": 5}}', b'{"metadata": {"annotations": [1]}}', b'{"metadata": {"finalizers": "x"}}',
    b'{"metadata": {"ownerReferences": [1]}}', b'{"metadata": {"resourceVersion": 5, "name": "fuzz-seed"}}',
    b'{"apiVersion": 5, "kind": []}', b'{"kind": {"a": 1}}', b'{"spec": 5}', b'{"spec": []}', b'{"status": "x"}',
    b'{"preconditions": "x"}', b'{"preconditions": {"uid": 5, "resourceVersion": []}}',
    b'{"propagationPolicy": 5, "dryRun": "All", "gracePeriodSeconds": "x"}', b'{"dryRun": ["All"]}',
    deep(50), deep(101), deep(500), deep(990), deep(5000), deep(100_000), deep(100_000, "object"), deep(3000, "object"),
    BILLION_LAUGHS, b"a: !!python/object/apply:os.system ['true']", b"? [a, b]\n: c", b"2024-01-01: x",
    b"metadata: {name: 2024-01-01}", b"a: !!binary aGVsbG8=", b"a: !!set {x, y}", b"a: .inf", b"a: .nan",
    b"{1: a, null: b, true: c, 1.5: d}", b"metadata:\n  name: [a]\n", b"a: &x 1\nb: *y", b"- - - - - - - - x",
    b"--- a\n--- b", b"a: !!timestamp 2024-01-01", b"a: 0o777", b"a: 1_000", b"[" * 20000,
    b"metadata:\n" + b"  " * 5000 + b"x: 1",
    b"k8s\x00", b"k8s\x00\x0a\x00", b"k8s\x00\x0a\x03\x12\x01\xff", b"k8s\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    b"k8s\x00\x0a\x0b\x0a\x02v1\x12\x05Other", b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x04\x0a\x02\xc3\x28",
    b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x06\x0a\x04\x5a\x02\x08\x01",
    b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x03\x12\x01\x08",
    b"k8s\x00\x08\x01", b"k8s\x00\x0a\x02\x08\x01\x12\x02\x08\x05",
]

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
                         st.sampled_from(ODD_NAMES))
json_values = st.recursive(json_scalars, lambda kids: st.lists(kids, max_size=4)
                           | st.dictionaries(st.text(max_size=8) | st.sampled_from(["metadata", "spec", "name"]),
                                             kids, max_size=4), max_leaves=12)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value (dict keys and list indexes), the root included."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: Any, base: dict[str, Any]) -> Any:
    """The seed with 1–3 type confusions: a value replaced by another type, a key removed or added, an odd
    name, an unknown field."""
    obj: Any = copy.deepcopy(base)
    for key in ("uid", "creationTimestamp", "managedFields"):
        obj.get("metadata", {}).pop(key, None)
    for _ in range(draw(st.integers(1, 3))):
        candidates = paths(obj)
        path = draw(st.sampled_from(candidates))
        action = draw(st.sampled_from(["replace", "remove", "add", "name", "unknown"]))
        if action == "name" and isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            obj["metadata"][draw(st.sampled_from(["name", "generateName", "namespace"]))] = draw(names)
            continue
        if not path:
            if action == "replace":
                obj = draw(json_values)
            continue
        parent = obj
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if action == "remove":
            del parent[last]
        elif action in ("add", "unknown") and isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(json_values)
        elif action in ("add", "unknown") and isinstance(parent, list):
            parent.append(draw(json_values))
        else:
            parent[last] = draw(json_values)
    return obj


json_patch_ops = st.lists(st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]) | json_scalars},
    optional={"path": st.sampled_from(["", "/", "/metadata", "/metadata/name", "/metadata/labels/x", "/spec",
                                       "/spec/0", "/data/k", "/a~1b", "/a~2", "/metadata/labels/-", "x", "/-",
                                       "/spec/containers/99", "/status"]) | json_scalars,
              "from": st.sampled_from(["", "/metadata", "/spec", "/nope", "/metadata/labels"]) | json_scalars,
              "value": json_values}), max_size=5)
COPY_BOMB = json.dumps([{"op": "copy", "from": "/metadata", "path": f"/metadata/x{i}"} for i in range(40)]).encode()


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


DEPTH_PATCH = json.dumps([{"op": "add", "path": "/metadata/x", "value": _nested(90)},
                          {"op": "add", "path": "/metadata/x" + "/a" * 89, "value": _nested(90)}]).encode()

CONTENT_TYPES = ["application/json", "application/yaml", "application/merge-patch+json",
                 "application/json-patch+json", "application/strategic-merge-patch+json",
                 "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf", "text/plain",
                 "application/cbor", "application/x-www-form-urlencoded", "garbage/;;", "",
                 "application/json; charset=utf-16", "APPLICATION/JSON", "application/vnd.kubernetes.protobuf;x=y"]
ACCEPTS = [None, "application/json", "application/json;as=Table;v=v1;g=meta.k8s.io",
           "application/json;as=Table;v=v1beta1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf",
           "application/yaml", "*/*", "garbage/;;", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "text/html", ""]


@dataclass
class Case:
    method: str
    namespace: str
    name: str
    params: list[tuple[str, str]]
    content_type: str | None
    accept: str | None
    body: bytes | None

    def describe(self) -> str:
        body = None if self.body is None else self.body[:200]
        return (f"{self.method} ns={self.namespace!r} name={self.name!r} params={self.params} "
                f"content-type={self.content_type!r} accept={self.accept!r} body={body!r}")


def encode(value: Any, form: str) -> bytes:
    if form == "yaml":
        import yaml

        return yaml.safe_dump(value).encode()
    return json.dumps(value).encode()


@st.composite
def body(draw: Any, route: Route, seed: dict[str, Any] | None) -> tuple[bytes | None, str | None]:
    """A body and its content type; the type fits the route most of the time and is a lie the rest."""
    method = route.method
    if method == "PATCH":
        fitting = ["application/merge-patch+json", "application/json-patch+json",
                   "application/strategic-merge-patch+json", "application/apply-patch+yaml"]
    elif method in ("POST", "PUT"):
        fitting = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
    else:
        fitting = ["application/json"]
    ctype = draw(st.sampled_from(fitting) | st.sampled_from(CONTENT_TYPES)) if draw(st.integers(0, 4)) else None
    if method in ("GET", "*") and draw(st.integers(0, 3)):
        return None, ctype
    if method == "DELETE" and draw(st.booleans()):
        return None, ctype
    choice = draw(st.sampled_from(["special", "json", "mutated", "mutated", "patch", "bytes"]))
    if choice == "special":
        return draw(st.sampled_from([*SPECIAL_BODIES, COPY_BOMB, DEPTH_PATCH])), ctype
    if choice == "bytes":
        return draw(st.binary(max_size=64)), ctype
    if choice == "json":
        return encode(draw(json_values), draw(st.sampled_from(["json", "yaml"]))), ctype
    if choice == "patch" or (choice == "mutated" and seed is None):
        if ctype == "application/json-patch+json" or draw(st.booleans()):
            return encode(draw(json_patch_ops), "json"), ctype
        return encode(draw(json_values), "json"), ctype
    assert seed is not None
    form = "yaml" if ctype and "yaml" in ctype else "json"
    return encode(draw(mutated(seed)), form), ctype


def case(route: Route, seed: dict[str, Any] | None) -> st.SearchStrategy[Case]:
    method = st.sampled_from([m for m in (*METHODS, "HEAD", "OPTIONS") if m != "GET"]) if route.method == "*" \
        else st.just(route.method)
    seed_name = (seed or {}).get("metadata", {}).get("name", "missing-object")
    name = st.one_of(st.just(seed_name), st.just(seed_name), names)
    namespace = st.one_of(st.just(FUZZ_NS), st.just(FUZZ_NS), st.just("default"), names)

    @st.composite
    def build(draw: Any) -> Case:
        content, ctype = draw(body(route, seed))
        return Case(draw(method), draw(namespace), draw(name), draw(query(route)), ctype,
                    draw(st.sampled_from(ACCEPTS)), content)

    return build()


def path_segment(value: str) -> str:
    """A name as one URL path segment, dots included (httpx would resolve a bare `.` or `..`)."""
    quoted = urllib.parse.quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted.strip(".") == "" else quoted


def url(route: Route, c: Case, *, raw_slash: bool = False) -> str:
    seg = (lambda v: v) if raw_slash else path_segment
    return route.template.replace("{namespace}", seg(c.namespace)).replace("{name}", seg(c.name))


# -- the record of a run -----------------------------------------------------------------------------


@dataclass
class Record:
    started: float = field(default_factory=time.monotonic)
    by_route: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    by_code: Counter[int] = field(default_factory=Counter)
    by_auth: Counter[str] = field(default_factory=Counter)
    examples: Counter[str] = field(default_factory=Counter)
    findings: list[str] = field(default_factory=list)
    checks: Counter[str] = field(default_factory=Counter)

    def saw(self, route: Route, auth: str, code: int) -> None:
        self.by_route[route.label][code] += 1
        self.by_code[code] += 1
        self.by_auth[auth] += 1

    @property
    def requests(self) -> int:
        return sum(self.by_code.values())

    def summary(self, routes: list[Route], settings: str) -> str:
        seconds = time.monotonic() - self.started
        lines = [
            (f"fuzz: {self.requests} requests to {len(self.by_route)} routes ({len(routes)} discovered) in "
            f"{seconds:.1f} s ({self.requests / max(seconds, 1e-9):.0f}/s); {settings}"),
            f"fuzz: hypothesis examples {sum(self.examples.values())}; by auth {dict(sorted(self.by_auth.items()))}",
            f"fuzz: status codes {dict(sorted(self.by_code.items()))}",
            f"fuzz: checks {dict(sorted(self.checks.items()))}",
            f"fuzz: findings {len(self.findings)}",
        ]
        verbs: dict[str, Counter[int]] = defaultdict(Counter)
        for route in routes:
            verbs[route.verb].update(self.by_route.get(route.label, Counter()))
        lines.append("fuzz: by verb " + "; ".join(f"{v} {dict(sorted(c.items()))}" for v, c in sorted(verbs.items())))
        for label in sorted(self.by_route):
            codes = self.by_route[label]
            lines.append(f"  {sum(codes.values()):5d}  {label}  {dict(sorted(codes.items()))}")
        lines += [f"FINDING {f}" for f in self.findings]
        return "\n".join(lines)
