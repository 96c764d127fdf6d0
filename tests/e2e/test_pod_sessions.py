"""Getting inside a running job with kubectl as it is: exec (plain, with stdin, with a terminal), cp both
ways, attach, port-forward to a port a rank serves, and the `kubernetes` client's stream(); who may, what
is audited, and that nothing reaches out of the pod's sandbox.

One job runs for the whole module: two nodes, rank 0 serving HTTP on port 7000 in the job's network,
every rank sleeping. A second job (in another tenant's namespace) holds a port of its own, which the
first job's port-forward must not reach."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import socket
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.stream import stream

from support import KUBECTL, create, job_pods, scaled, trainjob, two_tenants, wait_for, wait_log

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
SERVE = """
import http.server, socketserver, time
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
if rank == 0:
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"rank {rank} of job {__import__('os').environ['E2E_JOB']}".encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args): pass
    server = socketserver.ThreadingTCPServer(("0.0.0.0", PORT), Answer)
    __import__("threading").Thread(target=server.serve_forever, daemon=True).start()
    print("serving", flush=True)
time.sleep(900)
"""
PORT = 7000


def _serving_job(api: httpx.Client, name: str, namespace: str) -> dict[str, str]:
    """Start a job whose rank 0 serves PORT; its pods by role once it serves."""
    program = SERVE.replace("PORT", str(PORT))
    create(api, trainjob(name, ["mpirun", "-n", "2", "python3", "-c", program]), namespace)
    pods: dict[str, str] = {}

    def running() -> bool:
        for p in job_pods(api, name, namespace):
            pods[p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name", "")] = p["metadata"]["name"]
        return "launcher" in pods

    wait_for(running, timeout=scaled(60), what=f"job {name}'s pods")
    wait_log(api, pods["launcher"], lambda text: "serving" in text, namespace, timeout=scaled(90))
    return {role: pod for role, pod in pods.items() if role} | {
        "node": sorted(p["metadata"]["name"] for p in job_pods(api, name, namespace)
                       if "-node-" in p["metadata"]["name"])[0]}


@pytest.fixture(scope="module")
def tenants(home: Path, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return two_tenants(home, kubectl, lambda user: tmp_path_factory.mktemp(f"cache-{user}"), "ee-sess", "ee-sess")


@pytest.fixture(scope="module")
def job(api: httpx.Client, tenants: dict[str, Any]) -> Iterator[dict[str, str]]:
    """Team a's serving job (`ns`, `launcher`, `node`), and team b's in its own namespace (`other_ns`, …)."""
    a, b = tenants["a"]["ns"], tenants["b"]["ns"]
    mine = _serving_job(api, "sess", a)
    theirs = _serving_job(api, "sess-b", b)
    yield {"ns": a, **mine, "other_ns": b, "other_node": theirs["node"]}
    for ns, name in ((a, "sess"), (b, "sess-b")):
        api.delete(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}")
    for ns, name in ((a, "sess"), (b, "sess-b")):  # gone before the server may stop: nothing outlives the test
        wait_for(lambda ns=ns, name=name: not job_pods(api, name, ns), timeout=scaled(60), what=f"{name}'s pods gone")


def test_exec_runs_as_the_pod_runs(kubectl: Kubectl, job: dict[str, str]) -> None:
    said = kubectl("exec", "-n", job["ns"], job["node"], "--", "sh", "-c",
                   'id -u; hostname; echo "$E2E_JOB"; echo $$; cat /proc/1/comm; '
                   "grep -c . /proc/self/cgroup; ls /proc | grep -c '^[0-9]'").stdout.splitlines()
    uid, hostname, tag, pid, init, _, processes = said
    assert tag == "sess", said  # the container's environment (trainer.env reaches it)
    assert hostname in job["node"] or job["node"].startswith(hostname), said  # its UTS namespace
    assert int(pid) < 1000 and init == "sh", said  # its PID namespace: PID 1 is the sandbox's shell
    assert int(processes) < 40, said  # the pod's processes only, not the machine's
    # the same user as the pod's sshd sessions (the ranks): their uid, read on the machine
    ranks = [p for p in Path("/proc").iterdir() if p.name.isdigit() and b"E2E_JOB=sess\0" in _environ(p)
             and _name(p) in ("python3", "mpijob-rank")]
    assert ranks, "no rank of the job found on the machine"
    assert int(uid) == ranks[0].stat().st_uid, (said, ranks)


def test_exec_joins_the_pods_cgroup(kubectl: Kubectl, job: dict[str, str]) -> None:
    """An exec'd command counts against the pod's limits: it is in the pod's cgroups, as its ranks are."""
    mine = kubectl("exec", "-n", job["ns"], job["node"], "--", "cat", "/proc/self/cgroup").stdout.splitlines()
    rank = next(p for p in Path("/proc").iterdir() if p.name.isdigit() and b"E2E_JOB=sess\0" in _environ(p)
                and _name(p) == "python3" and _pod_of(p) == job["node"])
    theirs = (rank / "cgroup").read_text().splitlines()
    memory = [line for line in theirs if ":memory:" in line or line.startswith("0::")]
    assert memory and set(memory) <= set(mine), (mine, theirs)
    assert job["node"] in " ".join(memory), memory  # the pod's own cgroup, not the server's


def test_exec_exit_code_and_stdin(kubectl: Kubectl, job: dict[str, str]) -> None:
    failed = kubectl("exec", "-n", job["ns"], job["launcher"], "--", "sh", "-c", "echo out; echo err >&2; exit 3",
                     check=False)
    assert failed.returncode == 3, failed
    assert failed.stdout == "out\n" and "err" in failed.stderr, failed
    assert "command terminated with exit code 3" in failed.stderr, failed
    data = os.urandom(1 << 20).hex()  # 2 MiB through stdin, and back
    echoed = kubectl("exec", "-i", "-n", job["ns"], job["node"], "--", "sh", "-c", "cat; echo; echo done",
                     input=data, timeout=scaled(60))
    assert echoed.stdout == data + "\ndone\n"
    missing = kubectl("exec", "-n", job["ns"], job["node"], "--", "no-such-program", check=False)
    assert missing.returncode == 127 and "no-such-program" in missing.stderr, missing


def test_exec_with_a_terminal_and_its_size(job: dict[str, str], server: Any) -> None:
    """`kubectl exec -it` from a real terminal: the command sees a terminal of the size kubectl's has, and
    a resize reaches it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", str(server.kubeconfig), "exec", "-it", "-n", job["ns"],
                             job["node"], "--", "sh"], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        os.write(master, b"tty; stty size; echo mark-$((6*7))\n")
        seen = _read_until(master, b"mark-42", scaled(20))
        assert b"/dev/pts/" in seen and b"33 101" in seen, seen
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
        time.sleep(0.5)
        os.write(master, b"stty size; exit 5\n")
        seen += _read_until(master, b"50 132", scaled(20))
        assert proc.wait(timeout=scaled(20)) == 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_cp_both_ways(kubectl: Kubectl, job: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "a.txt").write_text("alpha\n")
    (out / "sub" / "b.bin").write_bytes(os.urandom(300_000))
    home = kubectl("exec", "-n", job["ns"], job["node"], "--", "sh", "-c", "echo $HOME").stdout.strip()
    kubectl("cp", str(out), f"{job['ns']}/{job['node']}:{home}/copied", timeout=scaled(60))
    listed = kubectl("exec", "-n", job["ns"], job["node"], "--", "sh", "-c",
                     f"cd {home}/copied && ls -ln sub/b.bin && cat a.txt").stdout
    assert "300000" in listed and "alpha" in listed, listed
    back = tmp_path / "back"
    kubectl("cp", f"{job['ns']}/{job['node']}:{home}/copied", str(back), timeout=scaled(60))
    assert (back / "a.txt").read_text() == "alpha\n"
    assert (back / "sub" / "b.bin").read_bytes() == (out / "sub" / "b.bin").read_bytes()


def test_nothing_reaches_out_of_the_sandbox(kubectl: Kubectl, job: dict[str, str], tenants: dict[str, Any],
                                            home: Path, api: httpx.Client) -> None:
    """A tenant's exec sees its pod only: not the machine's root through /proc/1/root, not another job's
    directory or processes; `cp` of a link does not follow it out either."""
    team = tenants["a"]["kubectl"]
    other = api.get(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{job['other_ns']}/trainjobs/sess-b").json()
    tried = team("exec", "-n", job["ns"], job["node"], "--", "sh", "-c",
                 f"ls /proc/1/root/ 2>&1; ls {home}/jobs/*{other['metadata']['uid']}* 2>&1; "
                 "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c E2E_JOB=sess-b", check=False).stdout
    lines = tried.strip().splitlines()
    assert "Permission denied" in lines[0], tried
    assert "No such file or directory" in lines[1], tried  # the server's files are not the pod's
    assert lines[-1] == "0", tried  # no process of the other job is visible
    # up and out of the pod's home with `..`: the pod's user's rights, nothing more. (`kubectl cp` itself
    # exits once the archive has ended, maybe before tar's complaint reaches it: exec says why, cp leaks nothing)
    climb = "../../../../etc/shadow"
    refused = team("exec", "-n", job["ns"], job["node"], "--", "tar", "cf", "-", climb, check=False)
    assert refused.returncode != 0 and "Permission denied" in refused.stderr, refused
    climbed = team("cp", f"{job['ns']}/{job['node']}:{climb}", "/dev/stdout", check=False)
    assert not re.search(r"^root:", climbed.stdout, re.M), climbed
    # a link in the pod to the machine's /etc/shadow: copying it out gives the link, never the file
    team("exec", "-n", job["ns"], job["node"], "--", "sh", "-c", "ln -sf /etc/shadow $HOME/shadow-link")
    got = team("cp", f"{job['ns']}/{job['node']}:shadow-link", "/dev/stdout", check=False)
    assert not re.search(r"^root:", got.stdout, re.M), got


def test_port_forward_reaches_a_rank_and_only_its_job(job: dict[str, str], server: Any) -> None:
    local, other = _free_port(), _free_port()
    forward = subprocess.Popen([KUBECTL, "--kubeconfig", str(server.kubeconfig), "port-forward", "-n", job["ns"],
                                f"pod/{job['node']}", f"{local}:{PORT}", f"{other}:{PORT + 1}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert forward.stdout is not None
        line = forward.stdout.readline()
        assert f"Forwarding from 127.0.0.1:{local} -> {PORT}" in line, (line, forward.stderr)
        for _ in range(3):  # a connection each time
            body = httpx.get(f"http://127.0.0.1:{local}/", timeout=scaled(20)).text
            assert body == "rank 0 of job sess", body
        # team b's job serves PORT too, in its own network: the answer above was this job's. PORT + 1:
        # nothing listens on it here, and the connection ends at once, kubectl saying why
        with socket.create_connection(("127.0.0.1", other), timeout=scaled(20)) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            s.settimeout(scaled(20))
            try:
                assert s.recv(100) == b""
            except ConnectionResetError:
                pass
    finally:
        forward.kill()
        forward.wait()


def test_the_kubernetes_clients_stream(job: dict[str, str], server: Any) -> None:
    api = k8s_client.CoreV1Api(k8s_config.new_client_from_config(str(server.kubeconfig)))
    out = stream(api.connect_get_namespaced_pod_exec, job["node"], job["ns"],
                 command=["sh", "-c", "echo from-$E2E_JOB; echo to-stderr >&2"], stderr=True, stdin=False,
                 stdout=True, tty=False)
    assert "from-sess" in out, out
    resp = stream(api.connect_get_namespaced_pod_exec, job["node"], job["ns"], command=["sh", "-c", "exit 4"],
                  stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    resp.run_forever(timeout=scaled(20))
    assert resp.returncode == 4


def test_who_may(kubectl: Kubectl, job: dict[str, str], tenants: dict[str, Any], home: Path,
                 tmp_path: Path) -> None:
    b = tenants["b"]
    for verb in (["exec", "-n", job["ns"], job["node"], "--", "true"],
                 ["port-forward", "-n", job["ns"], job["node"], f"{_free_port()}:{PORT}"]):
        denied = b["kubectl"](*verb, check=False, timeout=scaled(30))  # another tenant's pod: not even seen
        assert denied.returncode != 0 and f'User "{b["user"]}" cannot get resource "pods"' in denied.stderr, denied
    from support import add_user, kubectl_runner
    viewer = f"ee-sess-viewer-{os.urandom(2).hex()}"
    kubectl("create", "rolebinding", f"{viewer}-view", "--clusterrole=view", f"--user={viewer}", "-n", job["ns"])
    view = kubectl_runner(add_user(home, viewer), tmp_path / "cache")
    assert view("get", "pods", "-n", job["ns"]).returncode == 0
    for verb, sub in ((["exec", job["node"], "--", "true"], "exec"),
                      (["attach", job["node"]], "attach"),
                      (["port-forward", job["node"], f"{_free_port()}:{PORT}"], "portforward")):
        denied = view("-n", job["ns"], *verb, check=False, timeout=scaled(30))  # `view` reads, never enters
        assert f'cannot create resource "pods/{sub}"' in denied.stderr, denied
    allowed = tenants["a"]["kubectl"]("exec", "-n", job["ns"], job["node"], "--", "echo", "audited-42")
    assert allowed.stdout == "audited-42\n"
    events = [json.loads(line) for line in (home / "audit.log").read_text().splitlines() if "pods" in line]
    mine = [e for e in events if (e.get("objectRef") or {}).get("subresource") == "exec"
            and e["user"]["username"] == tenants["a"]["user"]
            and (e.get("annotations") or {}).get("mpijob.io/command") == "echo audited-42"]
    assert mine and mine[-1]["verb"] == "create" and mine[-1]["responseStatus"]["code"] == 101, events[-3:]
    assert mine[-1]["annotations"]["mpijob.io/exit-code"] == "0"
    refused = [e for e in events if (e.get("objectRef") or {}).get("subresource") == "exec"
               and e["user"]["username"] == viewer]
    assert refused and refused[-1]["responseStatus"]["code"] == 403


def test_attach_follows_the_container(kubectl: Kubectl, job: dict[str, str], server: Any, api: httpx.Client) -> None:
    """`kubectl attach` shows what the container prints from then on; -i on a container without stdin is
    refused saying how to get one; an old client's SPDY is refused saying which kubectl works."""
    refused = kubectl("attach", "-i", "-n", job["ns"], job["launcher"], check=False, timeout=scaled(30))
    assert "stdin: true" in refused.stderr, refused
    spdy = subprocess.run([KUBECTL, "--kubeconfig", str(server.kubeconfig), "exec", "-n", job["ns"], job["node"],
                           "--", "true"], capture_output=True, text=True, timeout=scaled(30),
                          env={**os.environ, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"})
    assert spdy.returncode != 0 and "kubectl 1.30 or later" in spdy.stderr, spdy


def test_not_running(kubectl: Kubectl, api: httpx.Client, job: dict[str, str]) -> None:
    create(api, trainjob("sess-done", ["mpirun", "true"]), job["ns"])
    wait_for(lambda: any(p.get("status", {}).get("phase") == "Succeeded" for p in job_pods(api, "sess-done", job["ns"])
                         if "launcher" in p["metadata"]["name"]), timeout=scaled(90), what="sess-done's launcher")
    launcher = next(p["metadata"]["name"] for p in job_pods(api, "sess-done", job["ns"]) if "launcher" in p["metadata"]["name"])
    said = kubectl("exec", "-n", job["ns"], launcher, "--", "true", check=False)
    assert "cannot exec into a container in a completed pod; current phase is Succeeded" in said.stderr, said


# -- helpers -----------------------------------------------------------------------------------------


def _environ(p: Path) -> bytes:
    try:
        return (p / "environ").read_bytes()
    except OSError:
        return b""


def _name(p: Path) -> str:
    try:
        return (p / "comm").read_text().strip()
    except OSError:
        return ""


def _pod_of(p: Path) -> str:
    marker = next((v for v in _environ(p).split(b"\0") if v.startswith(b"MPIJOB_POD=")), b"")
    return marker.decode().rpartition("/")[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_until(fd: int, want: bytes, timeout: float) -> bytes:
    seen, deadline = b"", time.monotonic() + timeout
    while want not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen



def test_attach_writes_to_a_container_that_reads_stdin(api: httpx.Client, job: dict[str, str], server: Any) -> None:
    """A runtime whose launcher asks for a stdin (`stdin: true`): `kubectl attach -i` writes to what it reads,
    and shows what it prints back."""
    runtimes = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
    runtime = api.get(f"{runtimes}/mpi-distributed").json()
    runtime["metadata"] = {"name": "ee-sess-stdin"}
    runtime.pop("status", None)
    for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        if rj["name"] == "launcher":
            rj["template"]["spec"]["template"]["spec"]["containers"][0]["stdin"] = True
    assert api.post(runtimes, json=runtime).status_code == 201
    echo = ["sh", "-c", "while read line; do echo got:$line; done"]
    create(api, trainjob("sess-stdin", echo, num_nodes=1, runtime="ee-sess-stdin"), job["ns"])
    launcher = ""

    def running() -> bool:
        nonlocal launcher
        launcher = next((p["metadata"]["name"] for p in job_pods(api, "sess-stdin", job["ns"])
                         if "launcher" in p["metadata"]["name"] and p.get("status", {}).get("phase") == "Running"), "")
        return bool(launcher)

    wait_for(running, timeout=scaled(60), what="sess-stdin's launcher running")
    attach = subprocess.Popen([KUBECTL, "--kubeconfig", str(server.kubeconfig), "attach", "-i", "-n", job["ns"],
                               launcher], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        assert attach.stdin is not None and attach.stdout is not None
        seen = b""
        deadline = time.monotonic() + scaled(20)
        while b"got:hello-42" not in seen and time.monotonic() < deadline:
            attach.stdin.write(b"hello-42\n")  # again until seen: the first may come before the session is up
            attach.stdin.flush()
            if select.select([attach.stdout], [], [], 0.5)[0]:
                seen += os.read(attach.stdout.fileno(), 4096)
        assert b"got:hello-42" in seen, seen
    finally:
        attach.kill()
        attach.wait()
        api.delete(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{job['ns']}/trainjobs/sess-stdin")
        api.delete(f"{runtimes}/ee-sess-stdin")
