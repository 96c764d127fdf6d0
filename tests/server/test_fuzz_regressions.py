"""What the fuzzer (tests/server/test_fuzz.py) found, one regression test each: every one was a 500, a
dropped connection or a server that died, and is now a 4xx Status naming the field or parameter, the
value and the fix."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from mpijob.api.core.errors import ApiError
from mpijob.server.http import MAX_DEPTH, MAX_REQUEST_BYTES, BodyLimit, decode_body, parse_int, plain

CM = "/api/v1/namespaces/default/configmaps"
TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"


def refused(answer: httpx.Response, code: int, reason: str, *words: str) -> dict[str, Any]:
    assert answer.status_code == code, answer.text[:500]
    status = answer.json()
    assert status["kind"] == "Status" and status["code"] == code and status["reason"] == reason, status
    for word in words:
        assert word in status["message"], status["message"]
    return status


def rv(http: httpx.Client) -> str:
    return str(http.get("/api/v1/namespaces", params={"limit": "1"}).json()["metadata"]["resourceVersion"])


# -- request bodies over 3 MiB: 413 before they are read -----------------------------------------------


def big_configmap(size: int) -> bytes:
    shell = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "too-big"}, "data": {"k": ""}})
    return shell.replace('"k": ""', '"k": "' + "x" * (size - len(shell)) + '"').encode()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_body_is_413_and_nothing_is_stored(http: httpx.Client, chunked: bool) -> None:
    body = big_configmap(MAX_REQUEST_BYTES + 1)
    before = rv(http)
    sent = iter([body[i:i + 65536] for i in range(0, len(body), 65536)]) if chunked else body
    answer = http.post(CM, content=sent, headers={"content-type": "application/json"})
    refused(answer, 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728", "smaller")
    assert rv(http) == before and http.get(f"{CM}/too-big").status_code == 404


def test_an_oversized_patch_is_413(http: httpx.Client) -> None:
    http.post(CM, json={"metadata": {"name": "patched-big"}, "data": {"k": "v"}})
    answer = http.patch(f"{CM}/patched-big", content=big_configmap(MAX_REQUEST_BYTES + 1),
                        headers={"content-type": "application/merge-patch+json"})
    refused(answer, 413, "RequestEntityTooLarge")
    assert http.get(f"{CM}/patched-big").json()["data"] == {"k": "v"}


def test_an_unauthenticated_oversized_body_is_401_unread(connect: Any) -> None:
    with connect(token="") as anonymous:
        refused(anonymous.post(CM, content=big_configmap(MAX_REQUEST_BYTES + 1)), 401, "Unauthorized")


def test_a_chunked_body_is_cut_off_at_the_limit() -> None:
    """An endless chunked body: BodyLimit stops reading just past the limit and answers 413."""
    reads = 0
    chunk = b"x" * 65536

    async def endless() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:  # a route reading the whole body, as Request.body() does
            await receive()

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [(b"transfer-encoding", b"chunked")]}
    asyncio.run(BodyLimit(app)(scope, endless, send))
    assert reads == MAX_REQUEST_BYTES // len(chunk) + 1
    assert sent[0]["status"] == 413 and json.loads(sent[1]["body"])["reason"] == "RequestEntityTooLarge"


def test_a_declared_oversized_length_is_refused_before_reading() -> None:
    async def receive() -> dict[str, Any]:
        raise AssertionError("the body was read")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "headers": [(b"content-length", str(MAX_REQUEST_BYTES + 1).encode())]}
    asyncio.run(BodyLimit(app)(scope, receive, send))
    assert sent[0]["status"] == 413


# -- bodies that crashed the decoder, or the server ----------------------------------------------------


@pytest.mark.parametrize("ctype", ["application/json", "application/yaml"])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 990, 100_000])
def test_deeply_nested_bodies_are_400(http: httpx.Client, ctype: str, depth: int) -> None:
    """`[[[[...]]]]` 100,000 deep was a RecursionError (a 500 and a dropped connection); 150 deep got
    through the decoder and failed deeper in the server."""
    answer = http.post(CM, content=b"[" * depth + b"]" * depth, headers={"content-type": ctype})
    refused(answer, 400, "BadRequest", f"nested more than {MAX_DEPTH} levels")
    nested = b'{"metadata": {"name": "deep"}, "data": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
    refused(http.post(CM, content=nested, headers={"content-type": ctype}), 400, "BadRequest", "nested")


@pytest.mark.parametrize("ctype", ["application/merge-patch+json", "application/json-patch+json",
                                   "application/apply-patch+yaml"])
def test_a_deeply_nested_patch_is_400(http: httpx.Client, ctype: str) -> None:
    http.post(CM, json={"metadata": {"name": "deep-patch"}, "data": {"k": "v"}})
    refused(http.patch(f"{CM}/deep-patch", content=b"[" * 100_000 + b"]" * 100_000, headers={"content-type": ctype}),
            400, "BadRequest", "nested")


def test_a_nested_object_within_the_limit_is_accepted(http: httpx.Client) -> None:
    annotations = {"a": "b"}
    body = {"metadata": {"name": "not-deep", "annotations": annotations}, "data": {"k": "v"}}
    assert http.post(CM, json=body).status_code == 201


@pytest.mark.parametrize("body", [b'{"metadata": {"name": "n"}, "data": {"k": NaN}}', b'{"a": Infinity}',
                                  b'{"a": -Infinity}', b'{"metadata": {"name": "n"}, "a": 1e999}'])
def test_non_finite_numbers_are_400(http: httpx.Client, body: bytes) -> None:
    """Python's decoder took NaN and 1e999 (inf), which the server would have stored and sent back as
    JSON no client can read."""
    refused(http.post(CM, content=body, headers={"content-type": "application/json"}), 400, "BadRequest",
            "finite number")


@pytest.mark.parametrize("ctype", ["application/json", "application/yaml"])
def test_a_5000_digit_number_is_400(http: httpx.Client, ctype: str) -> None:
    body = b'{"metadata": {"name": "n"}, "a": ' + b"1" * 5000 + b"}"
    refused(http.post(CM, content=body, headers={"content-type": ctype}), 400, "BadRequest", "4300 digits")


def test_a_yaml_billion_laughs_is_400_at_once(http: httpx.Client) -> None:
    """Nine levels of aliases, 10⁹ strings once expanded: the server grew to 23 GB and the kernel killed
    it. Aliases may now add no more than a little to what was sent."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: lol}", "a: &a [x,x,x,x,x,x,x,x,x,x]"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]" for i in range(8)]
    started = time.monotonic()
    answer = http.post(CM, content="\n".join(lines).encode(), headers={"content-type": "application/yaml"})
    refused(answer, 400, "BadRequest", "aliases expand it")
    assert time.monotonic() - started < 5
    assert http.get("/readyz").status_code == 200


def test_yaml_is_read_as_kubernetes_reads_it(http: httpx.Client) -> None:
    """Dates stay strings, keys become strings, !!binary its base64 (they were 500s: a date or an int key
    reached code that expects strings)."""
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yaml-types}\n"
            b"data: {day: 2024-01-01, 2: two, true: yes-key, bin: !!binary aGVsbG8=}\n")
    made = http.post(CM, content=body, headers={"content-type": "application/yaml"})
    assert made.status_code == 201, made.text
    assert made.json()["data"] == {"day": "2024-01-01", "2": "two", "true": "yes-key", "bin": "aGVsbG8="}


@pytest.mark.parametrize("body,words", [(b"a: !!set {x, y}", "!!set"), (b"a: .inf", "finite"),
                                        (b"a: .nan", "finite"), (b"? [a, b]\n: c", "not valid YAML")])
def test_yaml_without_a_json_form_is_400(http: httpx.Client, body: bytes, words: str) -> None:
    refused(http.post(CM, content=body, headers={"content-type": "application/yaml"}), 400, "BadRequest", words)


@pytest.mark.parametrize("body,words", [
    (b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x06\x0a\x04\x0a\x02\xc3\x28", "not UTF-8"),  # a bad name
    (b"k8s\x00\x0a\x02\x08\x01", "wire type 0"),  # typeMeta as a number
    (b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x06\x0a\x04\x5a\x02\x08\x01", "wire type 0"),  # labels
    (b"k8s\x00\x0a\x7f\x0a\x02v1", "truncated"),
])
def test_malformed_protobuf_is_400(http: httpx.Client, body: bytes, words: str) -> None:
    answer = http.post(CM, content=body, headers={"content-type": "application/vnd.kubernetes.protobuf"})
    refused(answer, 400, "BadRequest", words)


def test_decode_body_gives_plain_json_values() -> None:
    assert decode_body(b"a: 2024-01-01\n1: x\nnull: y\n", "application/yaml") == {"a": "2024-01-01", "1": "x",
                                                                                 "null": "y"}
    assert plain([[1]] * 3, 100) == [[1], [1], [1]]
    with pytest.raises(ApiError) as err:
        plain([["x" * 1000]] * 1000, 100, "YAML")
    assert "aliases expand it" in err.value.message


# -- fields and parameters of the wrong type ------------------------------------------------------------


@pytest.mark.parametrize("value", [5, ["a"], {"a": "b"}, True])
def test_generate_name_of_the_wrong_type_is_400(http: httpx.Client, value: Any) -> None:
    for path in (CM, TJ):
        answer = http.post(path, json={"metadata": {"generateName": value}})
        refused(answer, 400, "BadRequest", "metadata.generateName must be a string")


@pytest.mark.parametrize("key", ["1.5", "a[0]", "x.y.z", "[1]"])
def test_an_unknown_field_whose_name_holds_a_dot_is_dropped(http: httpx.Client, key: str) -> None:
    """The unknown field's path was re-split on `.` and `[`, which walked into a string (a 500)."""
    name = f"dotted-{abs(hash(key)) % 10_000}"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}, key: "x"}
    made = http.post(CM, json=body)
    assert made.status_code == 201, made.text
    assert key not in made.json() and f'unknown field \\"{key}\\"' in made.headers["warning"]
    refused(http.post(CM, json={**body, "metadata": {"name": name + "s"}}, params={"fieldValidation": "Strict"}),
            400, "BadRequest", f'unknown field "{key}"')


@pytest.mark.parametrize("preconditions", ["x", 5, ["uid"]])
def test_delete_preconditions_of_the_wrong_type_are_400(http: httpx.Client, preconditions: Any) -> None:
    http.post(CM, json={"metadata": {"name": "preconditioned"}, "data": {"k": "v"}})
    answer = http.request("DELETE", f"{CM}/preconditioned", json={"preconditions": preconditions})
    refused(answer, 400, "BadRequest", "DeleteOptions.preconditions must be an object")
    assert http.get(f"{CM}/preconditioned").status_code == 200


@pytest.mark.parametrize("params", [{"resourceVersion": "abc"}, {"resourceVersion": "abc", "watch": "true"},
                                    {"resourceVersion": "-1", "watch": "1"}, {"resourceVersion": "1" * 5000}])
def test_a_resource_version_that_is_not_a_number_is_400(http: httpx.Client, params: dict[str, str]) -> None:
    """A watch from resourceVersion=abc was an empty 200 stream (the error died in its task)."""
    refused(http.get(CM, params=params), 400, "BadRequest", "resourceVersion=", "digits")


@pytest.mark.parametrize("value", ["99999999999999999999999", "1_0", " 1", "1" * 5000, "٣"])
def test_integers_are_parsed_as_go_parses_them(http: httpx.Client, value: str) -> None:
    """`limit=99999999999999999999999` reached itertools.islice (a 500); Python's int() also took `1_0`,
    ` 1` and Arabic digits, which kube refuses."""
    refused(http.get(CM, params={"limit": value}), 400, "BadRequest", "limit=", "integer")
    with pytest.raises(ApiError):
        parse_int(value, "limit")
    assert parse_int("-5", "x") == -5 and parse_int("+7", "x") == 7


@pytest.mark.parametrize("key", ["\r", "a\x0bb", "é\n"])
def test_a_warning_about_a_field_with_control_characters_is_sent(http: httpx.Client, key: str) -> None:
    """An unknown field named "\\r" made a `Warning` header h11 refused to send: the connection dropped
    without an answer. Warnings now carry printable ASCII only."""
    name = f"ctl-{ord(key[-1])}"
    made = http.post(CM, json={"metadata": {"name": name}, "data": {"k": "v"}, key: 1})
    assert made.status_code == 201, made.text
    assert made.headers["warning"].startswith('299 - "unknown field ')


# -- what schemathesis (tests/server/test_fuzz_api.py) found -----------------------------------------------

CTR = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"


def test_a_null_field_of_a_runtime_gets_its_default(http: httpx.Client) -> None:
    """`mlPolicy.mpi.numProcPerNode: null` in a ClusterTrainingRuntime reached the `>= 1` check as None: a
    500 InternalError. A null is now dropped before defaulting, as kube-apiserver drops it."""
    from mpijob.api.trainer.runtimes import bundled

    (runtime,) = bundled()
    runtime["metadata"] = {"name": f"null-{time.monotonic_ns() % 10**8}"}
    runtime["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] = None
    runtime["spec"]["mlPolicy"]["numNodes"] = None
    made = http.post(CTR, json=runtime)
    assert made.status_code == 201, made.text
    policy = made.json()["spec"]["mlPolicy"]
    assert policy["mpi"]["numProcPerNode"] == 1 and "numNodes" not in policy
    stored = http.get(f"{CTR}/{runtime['metadata']['name']}").json()["spec"]["mlPolicy"]
    assert stored == policy
    patched = http.patch(f"{CTR}/{runtime['metadata']['name']}", headers={"Content-Type": "application/json-patch+json"},
                         content=json.dumps([{"op": "add", "path": "/spec/mlPolicy/mpi/runLauncherAsNode",
                                              "value": None}]))
    assert patched.status_code == 200 and patched.json()["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] is False
    http.delete(f"{CTR}/{runtime['metadata']['name']}")
