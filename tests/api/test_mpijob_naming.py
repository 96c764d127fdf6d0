"""MPI Operator's names for an MPIJob's run (`mpijob.api.mpioperator.naming`), checked against what its
controller names things (pkg/controller/mpi_job_controller.go)."""

from __future__ import annotations

import copy

import yaml
from mpijob.api import names
from mpijob.api.mpioperator import naming
from mpijob.api.mpioperator.convert import convert
from mpijob.api.trainer import render
from mpijob.api.trainer.plan import RunPlan, resolve

from support import UPSTREAM


def _plan(job: dict) -> RunPlan:
    form = convert(job, always_runtime=True)
    meta = job["metadata"]
    trainjob = {**form.trainjob, "metadata": {**form.trainjob["metadata"], **meta}}
    return naming.rename(resolve(trainjob, form.runtime or {}))


def _example(launcher_as_worker: bool = False) -> dict:
    job = yaml.safe_load((UPSTREAM / "mpi-operator" / "example_pi.yaml").read_text())
    job["metadata"] |= {"namespace": "team-a", "uid": "0f6c-uid"}
    job["spec"]["runLauncherAsWorker"] = launcher_as_worker
    return job


def test_workers_and_launcher_get_mpi_operators_names_hosts_and_labels() -> None:
    plan = _plan(_example())
    workers = [p for p in plan.pods if not p.is_launcher]
    [launcher] = [p for p in plan.pods if p.is_launcher]
    assert [(p.name, p.hostname, p.host) for p in workers] == [
        ("pi-worker-0", "pi-worker-0", "pi-worker-0.pi.team-a.svc"),
        ("pi-worker-1", "pi-worker-1", "pi-worker-1.pi.team-a.svc")]
    assert launcher.name.startswith("pi-launcher-") and len(launcher.name) == len("pi-launcher-") + 5
    assert set(launcher.name[-5:]) <= set(names.SUFFIX_ALPHABET)
    assert (launcher.hostname, launcher.host) == ("pi-launcher", "pi-launcher.pi.team-a.svc")
    assert launcher.name == _plan(_example()).pods[-1].name  # the same pod for the same job: found again on restart
    assert plan.hostfile == "pi-worker-0.pi.team-a.svc slots=1\npi-worker-1.pi.team-a.svc slots=1\n"
    assert workers[1].labels == {names.LABEL_MPI_OPERATOR_NAME: "mpi-operator", names.LABEL_MPI_JOB_NAME: "pi",
                                 names.LABEL_MPI_JOB_ROLE: "worker", names.LABEL_MPI_REPLICA_INDEX: "1"}
    assert launcher.labels[names.LABEL_MPI_JOB_ROLE] == "launcher"
    assert names.LABEL_MPI_REPLICA_INDEX not in launcher.labels and names.LABEL_JOBSET_NAME not in launcher.labels
    assert {"name": "K_MPI_JOB_ROLE", "value": "worker"} in workers[0].env
    assert {"name": "K_MPI_JOB_ROLE", "value": "launcher"} in launcher.env
    assert not any(e["name"] == names.ENV_COMPLETION_INDEX for p in plan.pods for e in p.env)
    assert plan.subdomain == "pi"


def test_launcher_as_worker_comes_first_in_the_hostfile_and_workers_count_from_one() -> None:
    plan = _plan(_example(launcher_as_worker=True))
    assert plan.hostfile.splitlines() == ["pi-launcher.pi.team-a.svc slots=1", "pi-worker-0.pi.team-a.svc slots=1",
                                          "pi-worker-1.pi.team-a.svc slots=1"]
    indexes = {p.hostname: p.labels[names.LABEL_MPI_REPLICA_INDEX] for p in plan.pods}
    assert indexes == {"pi-launcher": "0", "pi-worker-0": "1", "pi-worker-1": "2"}


def test_a_hydra_hostfile_is_renamed_in_its_own_format() -> None:
    hosts = {"a-node-0-0.a": ("a-worker-0.a.ns.svc", False), "a-launcher-0-0.a": ("a-launcher.a.ns.svc", True)}
    renamed = naming._hostfile("a-node-0-0.a:4\na-launcher-0-0.a:4\n", hosts)
    assert renamed == "a-launcher.a.ns.svc:4\na-worker-0.a.ns.svc:4\n"


def test_rendered_objects_carry_mpi_operators_secret_config_map_and_volume_names() -> None:
    plan = _plan(_example())
    owner = {"apiVersion": names.MPI_OPERATOR_API_VERSION, "kind": names.MPIJOB_KIND, "metadata": {"name": "pi", "uid": "u"}}
    secret = naming.secret(render.render_secret(plan, "KEY", "PUB\n", owner), "pi")
    config = naming.config_map(render.render_hostfile_configmap(plan, owner), "pi")
    assert (secret["metadata"]["name"], config["metadata"]["name"]) == ("pi-ssh", "pi-config")
    assert config["data"]["hostfile"] == plan.hostfile
    launcher = next(p for p in plan.pods if p.is_launcher)
    rendered = render.render_pod(plan, launcher, owner)
    pod = naming.pod(rendered, "pi", "team-a")
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["ssh-auth"]["secret"]["secretName"] == "pi-ssh"
    assert volumes["mpi-job-config"]["configMap"]["name"] == "pi-config"
    mounts = {m["name"]: m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert mounts["ssh-auth"] == "/home/mpiuser/.ssh" and mounts["mpi-job-config"] == "/etc/mpi"
    assert pod["spec"]["dnsConfig"]["searches"] == ["pi.team-a.svc.cluster.local"]
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("pi-launcher", "pi")
    assert names.LABEL_COMPLETION_INDEX not in pod["metadata"]["annotations"]
    assert rendered == render.render_pod(plan, launcher, owner)  # the rendered pod itself is left as it was
    assert copy.deepcopy(pod) == naming.pod(rendered, "pi", "team-a")
