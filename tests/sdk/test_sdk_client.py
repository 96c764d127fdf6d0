"""The sync `Client` against a real local cluster: the whole life of a job, and typed exceptions."""

from __future__ import annotations

import time

import pytest
from mpijob import Client, TrainJob
from mpijob.sdk.errors import (
    InvalidInput,
    JobFailed,
    NotFound,
    ServerUnavailable,
    Timeout,
)
from mpijob.store.server_process import ServerInfo
from sdk_support import hello


def test_create_get_list_wait_logs_events_delete(client: Client) -> None:
    created = client.create(TrainJob(**hello("sdk-life", nodes=2), labels={"suite": "sdk-life"}))
    assert created["metadata"]["name"] == "sdk-life" and created["metadata"]["uid"]
    assert client.get("sdk-life")["metadata"]["uid"] == created["metadata"]["uid"]
    assert [j["metadata"]["name"] for j in client.list(label_selector="suite=sdk-life")] == ["sdk-life"]

    done = client.wait("sdk-life", timeout=120)
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in done["status"]["conditions"])
    lines = list(client.logs("sdk-life"))
    assert sorted(line for line in lines if line.startswith("sdk rank=")) == ["sdk rank=0 of 2", "sdk rank=1 of 2"]
    assert all("\n" not in line for line in lines)
    assert list(client.logs("sdk-life", rank=1)) == ["sdk rank=1 of 2"]  # Open MPI's tags, read and removed

    events = client.events("sdk-life")
    kinds = {e["involvedObject"]["kind"] for e in events}
    assert "TrainJob" in kinds and kinds <= {"TrainJob", "Pod", "Workload"}
    assert all(e["involvedObject"]["name"] == "sdk-life" or e["involvedObject"]["name"].count("sdk-life")
               for e in events)

    client.delete("sdk-life")
    gone(client, "sdk-life")
    assert "sdk-life" not in [j["metadata"]["name"] for j in client.list()]


def gone(client: Client, name: str, timeout: float = 60) -> None:
    """Poll until `get` raises NotFound (finalizers may keep a deleted TrainJob a moment)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.get(name)
        except NotFound:
            return
        time.sleep(0.1)
    raise AssertionError(f"trainjob {name} still exists {timeout}s after delete")


def test_follow_logs_stream_until_the_launcher_ends(client: Client) -> None:
    client.create(TrainJob(**hello("sdk-follow", nodes=2, sleep=1)))
    try:
        lines = list(client.logs("sdk-follow", follow=True, timeout=120))
        assert sorted(line for line in lines if line.startswith("sdk rank=")) == ["sdk rank=0 of 2",
                                                                                   "sdk rank=1 of 2"]
        assert client.wait("sdk-follow", for_="Finished", timeout=60)["metadata"]["name"] == "sdk-follow"
    finally:
        client.delete("sdk-follow")


def test_suspend_and_resume_flip_spec_suspend(client: Client) -> None:
    client.create(TrainJob(**hello("sdk-suspend", nodes=1, sleep=30)))
    try:
        assert client.suspend("sdk-suspend")["spec"]["suspend"] is True
        job = client.get("sdk-suspend")
        assert job["spec"]["suspend"] is True
        assert client.resume("sdk-suspend")["spec"]["suspend"] is False
        running = client.wait("sdk-suspend", for_="Running", timeout=120)
        assert running["spec"]["suspend"] is False
    finally:
        client.delete("sdk-suspend")


def test_a_manifest_dict_is_accepted_as_is(client: Client) -> None:
    obj = TrainJob(**hello("sdk-dict", nodes=1)).to_object()
    try:
        assert client.create(obj)["spec"]["trainer"]["numNodes"] == 1
        assert client.wait("sdk-dict", timeout=120)["metadata"]["name"] == "sdk-dict"
    finally:
        client.delete("sdk-dict")


def test_failed_job_raises_job_failed_with_its_condition(client: Client) -> None:
    client.create(TrainJob(**hello("sdk-fail", nodes=2, fail=True)))
    try:
        with pytest.raises(JobFailed) as info:
            client.wait("sdk-fail", timeout=120)
        assert info.value.exit_code == 1 and info.value.reason
        assert info.value.trainjob is not None and info.value.trainjob["metadata"]["name"] == "sdk-fail"
        assert "sdk-fail" in str(info.value)
        assert client.wait("sdk-fail", for_="Failed", timeout=5)["metadata"]["name"] == "sdk-fail"
        assert any("sdk rank=" in line for line in client.logs("sdk-fail"))  # a failed job's logs stay
    finally:
        client.delete("sdk-fail")


def test_not_found_is_typed(client: Client) -> None:
    for call in (lambda: client.get("sdk-none"), lambda: client.delete("sdk-none"),
                 lambda: client.suspend("sdk-none"), lambda: client.wait("sdk-none", timeout=1),
                 lambda: list(client.logs("sdk-none"))):
        with pytest.raises(NotFound) as info:
            call()
        assert info.value.code == 404 and info.value.exit_code == 4


def test_server_side_rejection_is_invalid_input_with_causes(client: Client) -> None:
    bad = TrainJob(name="sdk-bad", runtime="no-such-runtime").to_object()
    bad["spec"]["trainer"] = {"numNodes": 2, "env": [{"name": "OMPI_MCA_plm_rsh_args", "value": "x"}]}
    with pytest.raises(InvalidInput) as info:
        client.create(bad)
    err = info.value
    assert err.code == 422 and err.reason == "Invalid" and err.exit_code == 3
    assert "spec.trainer.env[0].name" in [c.field for c in err.causes]
    with pytest.raises(NotFound):
        client.get("sdk-bad")


def test_builder_errors_send_nothing(client: Client) -> None:
    with pytest.raises(InvalidInput):
        client.create(TrainJob(name="sdk-never", num_nodes=0))
    with pytest.raises(NotFound):
        client.get("sdk-never")


def test_duplicate_create_is_invalid_input(client: Client) -> None:
    client.create(TrainJob(**hello("sdk-dup", nodes=1, sleep=30)))
    try:
        with pytest.raises(InvalidInput) as info:
            client.create(TrainJob(**hello("sdk-dup", nodes=1)))
        assert info.value.code == 409 and info.value.reason == "AlreadyExists"
    finally:
        client.delete("sdk-dup")


def test_wait_times_out_and_validates_for(client: Client) -> None:
    client.create(TrainJob(**hello("sdk-slow", nodes=1, sleep=60)))
    try:
        with pytest.raises(Timeout) as info:
            client.wait("sdk-slow", timeout=0.5)
        assert info.value.exit_code == 7 and "sdk-slow" in str(info.value)
        with pytest.raises(InvalidInput, match="Complete, Failed, Running, Finished"):
            client.wait("sdk-slow", for_="Done")
    finally:
        client.delete("sdk-slow")


def test_unknown_context_and_dead_server_are_typed(server: ServerInfo, tmp_path) -> None:
    with pytest.raises(InvalidInput, match="context 'nope' not found"):
        Client(context="nope", kubeconfig=str(server.kubeconfig))
    dead = tmp_path / "dead.kubeconfig"
    text = server.kubeconfig.read_text()
    port = server.url.rsplit(":", 1)[1].strip("/")
    dead.write_text(text.replace(f":{port}", ":1"))
    with Client(kubeconfig=str(dead)) as c, pytest.raises(ServerUnavailable) as info:
        c.list()
    assert info.value.exit_code == 8
