"""resolve(): node counts, hostfile, slots, env and field placement as Trainer's MPI plugin does them."""

from __future__ import annotations

import copy
import re

import pytest
from mpijob.api.trainer.plan import resolve
from mpijob.api.trainer.runtimes import bundled


def without_launcher_as_node(rt: dict) -> dict:
    rt = copy.deepcopy(rt)
    rt["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    return rt


@pytest.mark.parametrize("num_nodes,replicas", [(1, 1), (2, 1), (4, 3)])
def test_launcher_as_node_counts_and_hostfile(make_trainjob, num_nodes, replicas):
    plan = resolve(make_trainjob(numNodes=num_nodes, command=["mpirun", "hostname"]), bundled()[0])
    assert plan.launcher_as_node and plan.num_nodes == num_nodes and plan.node_replicas == replicas
    assert [p.rjob for p in plan.pods] == ["node"] * replicas + ["launcher"]
    hosts = [f"pi-node-0-{i}.pi" for i in range(replicas)] + ["pi-launcher-0-0.pi"]
    assert plan.hostfile == "".join(f"{h} slots=1\n" for h in hosts)
    assert all(p.in_hostfile for p in plan.pods)


@pytest.mark.parametrize("num_nodes", [1, 2, 4])
def test_launcher_not_a_node(make_trainjob, num_nodes):
    plan = resolve(make_trainjob(numNodes=num_nodes, command=["mpirun", "x"]), without_launcher_as_node(bundled()[0]))
    assert plan.node_replicas == num_nodes and not plan.launcher_as_node
    assert plan.hostfile == "".join(f"pi-node-0-{i}.pi slots=1\n" for i in range(num_nodes))
    launcher = plan.pods[-1]
    assert launcher.is_launcher and not launcher.in_hostfile


def test_num_nodes_defaults_to_the_runtime(make_trainjob):
    rt = copy.deepcopy(bundled()[0])
    rt["spec"]["mlPolicy"]["numNodes"] = 3
    plan = resolve(make_trainjob(command=["x"]), rt)
    assert plan.num_nodes == 3 and plan.node_replicas == 2


def test_slots_rule(make_trainjob):
    rt = bundled()[0]
    assert resolve(make_trainjob(numNodes=2, numProcPerNode=3, command=["x"]), rt).slots == 3
    gpus = {"limits": {"nvidia.com/gpu": 4}}
    assert resolve(make_trainjob(numNodes=2, resourcesPerNode=gpus, command=["x"]), rt).slots == 4
    assert resolve(make_trainjob(numNodes=2, resourcesPerNode={"requests": {"amd.com/gpu": "2"}}, command=["x"]),
                   rt).slots == 2
    assert resolve(make_trainjob(numNodes=2, resourcesPerNode={"limits": {"nvidia.com/gpu": 1}}, command=["x"]),
                   rt).slots == 1
    # explicit numProcPerNode beats the GPU count
    assert resolve(make_trainjob(numNodes=2, numProcPerNode=1, resourcesPerNode=gpus, command=["x"]), rt).slots == 1
    # a runtime numProcPerNode other than 1 is kept even with GPUs
    rt2 = copy.deepcopy(rt)
    rt2["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] = 2
    plan = resolve(make_trainjob(numNodes=2, resourcesPerNode=gpus, command=["x"]), rt2)
    assert plan.slots == 2 and plan.hostfile.count("slots=2\n") == 2


def test_slots_from_runtime_gpu_resources(make_trainjob):
    rt = copy.deepcopy(bundled()[0])
    node = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    assert resolve(make_trainjob(numNodes=2, command=["x"]), rt).slots == 8


def test_fields_go_where_trainer_puts_them(make_trainjob):
    tj = make_trainjob(numNodes=3, image="my/image:1", command=["mpirun", "python3", "t.py"], args=["--x"],
                       env=[{"name": "FOO", "value": "bar"}], resourcesPerNode={"limits": {"cpu": 2}})
    for rt, nodes_get_env in ((bundled()[0], True), (without_launcher_as_node(bundled()[0]), False)):
        plan = resolve(tj, rt)
        launcher = plan.pods[-1]
        assert launcher.image == "my/image:1"
        assert launcher.command == ["mpirun", "python3", "t.py"] and launcher.args == ["--x"]
        assert {"name": "FOO", "value": "bar"} in launcher.env
        assert launcher.resources == {"limits": {"cpu": 2}}
        for node in plan.pods[:-1]:
            assert node.image == "ghcr.io/kubeflow/trainer/mpi-runtime"
            assert node.command == ["/usr/sbin/sshd"] and node.runs_sshd
            assert ({"name": "FOO", "value": "bar"} in node.env) is nodes_get_env
            assert (node.resources == {"limits": {"cpu": 2}}) is nodes_get_env
        assert plan.user_env == [{"name": "FOO", "value": "bar"}]


def test_env_order_and_mpi_variables(make_trainjob):
    rt = copy.deepcopy(bundled()[0])
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rj["template"]["spec"]["template"]["spec"]["containers"][0]["env"] = [
            {"name": "RT", "value": "1"}, {"name": "FOO", "value": "runtime"}]
    plan = resolve(make_trainjob(numNodes=2, numProcPerNode=2, command=["x"],
                                 env=[{"name": "FOO", "value": "user"}, {"name": "NEW", "value": "2"}]), rt)
    launcher = plan.pods[-1]
    assert [e["name"] for e in launcher.env] == [
        "RT", "FOO", "NEW",
        "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots",
        "OMPI_MCA_plm_rsh_args", "PRTE_MCA_prte_default_hostfile", "PRTE_MCA_prte_keep_fqdn_hostnames",
        "PRTE_MCA_prte_set_default_slots", "PRTE_MCA_plm_ssh_args", "JOB_COMPLETION_INDEX"]
    env = {e["name"]: e["value"] for e in launcher.env}
    assert env["FOO"] == "user"  # upserted in place
    assert env["OMPI_MCA_orte_default_hostfile"] == env["PRTE_MCA_prte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_orte_set_default_slots"] == env["PRTE_MCA_prte_set_default_slots"] == "2"
    assert env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert env["OMPI_MCA_plm_rsh_args"] == "-o ConnectionAttempts=10"
    node_env = {e["name"]: e["value"] for e in plan.pods[0].env}
    assert "OMPI_MCA_orte_default_hostfile" not in node_env  # only the launcher, as upstream
    assert node_env["JOB_COMPLETION_INDEX"] == "0"


def test_names_hosts_labels_and_determinism(make_trainjob):
    tj = make_trainjob(numNodes=3, command=["x"])
    plan = resolve(tj, bundled()[0])
    node1 = plan.pods[1]
    assert (node1.hostname, node1.host, node1.pod_index, node1.job_index) == ("pi-node-0-1", "pi-node-0-1.pi", 1, 0)
    assert re.fullmatch(r"pi-node-0-1-[bcdfghjklmnpqrstvwxz2456789]{5}", node1.name)
    assert node1.labels["jobset.sigs.k8s.io/jobset-name"] == "pi"
    assert node1.labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
    assert node1.labels["jobset.sigs.k8s.io/replicatedjob-replicas"] == "1"
    assert node1.labels["jobset.sigs.k8s.io/job-index"] == "0"
    assert node1.labels["batch.kubernetes.io/job-completion-index"] == "1"
    assert "trainer.kubeflow.org/trainjob-ancestor-step" not in node1.labels
    launcher = plan.pods[-1]
    assert launcher.labels["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
    assert launcher.depends_on_nodes_ready and not node1.depends_on_nodes_ready
    assert launcher.run_as_user is None and node1.run_as_user is None  # the namespace's range decides (api/openshift/scc.py)
    assert launcher.scc == node1.scc == ""  # not admitted yet
    assert not launcher.runs_sshd
    assert [p.name for p in resolve(copy.deepcopy(tj), bundled()[0]).pods] == [p.name for p in plan.pods]
    other = copy.deepcopy(tj)
    other["metadata"]["uid"] = "another-uid"
    assert {p.name for p in resolve(other, bundled()[0]).pods}.isdisjoint({p.name for p in plan.pods})
    assert len({p.name for p in plan.pods}) == len(plan.pods)


def test_upstream_deepspeed_runtime_resolves(make_trainjob, deepspeed):
    plan = resolve(make_trainjob(numNodes=2, command=["mpirun", "x"]), deepspeed)
    assert plan.ssh_auth_mount_path == "/home/mpiuser/.ssh" and plan.mpi_implementation == "OpenMPI"
    node = plan.pods[0]
    assert node.runs_sshd and node.args == ["-De", "-f", "/home/mpiuser/.sshd_config"]
    assert plan.hostfile == "pi-node-0-0.pi slots=1\npi-launcher-0-0.pi slots=1\n"


def test_security_context_container_beats_pod(make_trainjob):
    rt = copy.deepcopy(bundled()[0])
    spec = rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    spec["securityContext"] = {"runAsUser": 5, "runAsGroup": 6}
    spec["containers"][0]["securityContext"] = {"runAsUser": 7}
    launcher = resolve(make_trainjob(command=["x"]), rt).pods[-1]
    assert (launcher.run_as_user, launcher.run_as_group) == (7, 6)


def test_non_mpi_runtime_is_refused(make_trainjob, torch_runtime):
    from mpijob.api.core.errors import ApiError

    with pytest.raises(ApiError) as info:
        resolve(make_trainjob(command=["x"]), torch_runtime)
    assert info.value.code == 422 and "MPI runtimes only" in info.value.causes[0].message
