"""The platform bundle (`mpijob.api.platform`): every object valid for upstream's CRDs, kube's models and
the local cluster's admission; the runtimes shaped as Trainer's MPI runtimes; options changing what they
should; bad options refused naming the option, the value and the fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiClient
from mpijob.api import names, platform
from mpijob.api.core import validation
from mpijob.api.core.resources import for_kind
from mpijob.api.openshift.scc_crd import causes as scc_causes
from mpijob.api.platform import options as popts
from mpijob.api.platform import queues, rbac, runtimes, scc
from mpijob.api.platform.options import GPU, OptionError, build
from mpijob.api.trainer import mpi_impl
from mpijob.api.trainer.runtimes import bundled
from mpijob.api.trainer.support import check

CTR_CRD = "trainer/trainer.kubeflow.org_clustertrainingruntimes.yaml"
KUEUE_CRDS = {"ResourceFlavor": "kueue/kueue.x-k8s.io_resourceflavors.yaml",
              "ClusterQueue": "kueue/kueue.x-k8s.io_clusterqueues.yaml",
              "LocalQueue": "kueue/kueue.x-k8s.io_localqueues.yaml",
              "WorkloadPriorityClass": "kueue/kueue.x-k8s.io_workloadpriorityclasses.yaml"}
K8S_MODELS = {"Namespace": "V1Namespace", "ServiceAccount": "V1ServiceAccount", "ClusterRole": "V1ClusterRole",
              "ClusterRoleBinding": "V1ClusterRoleBinding", "RoleBinding": "V1RoleBinding",
              "NetworkPolicy": "V1NetworkPolicy"}
FULL = build(teams=["ml", "vision:cv"], gpu_types=["a100", "h100"], quotas=["vision=cpu:8,nvidia.com/gpu:4"],
             weights=["ml=2"], net_bind_service=True)


class _Response:
    def __init__(self, obj: dict) -> None:
        self.data = json.dumps(obj)


def _by_kind(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o["kind"] == kind]


def _named(objs: list[dict], name: str, kind: str = "ClusterTrainingRuntime") -> dict:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _pod(runtime: dict, rjob: str) -> dict:
    (rj,) = [r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == rjob]
    return rj["template"]["spec"]["template"]


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or []}


def _strip_nulls(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_strip_nulls(v) for v in node]
    return node


# -- valid everywhere ----------------------------------------------------------------------------------


@pytest.mark.parametrize("opts", [popts.Options(), FULL], ids=["defaults", "two-teams-gpus"])
def test_every_object_is_valid_for_upstream_crds_kube_models_and_local_admission(
        opts: popts.Options, assert_crd_file: Callable[[dict, str], None]) -> None:
    objs = platform.render(opts)
    kinds = {o["kind"] for o in objs}
    assert kinds == {"Namespace", "ClusterTrainingRuntime", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue",
                     "LocalQueue", "ClusterRole", "ClusterRoleBinding", "RoleBinding", "ServiceAccount",
                     "NetworkPolicy", "SecurityContextConstraints"}
    client = ApiClient()
    for obj in objs:
        kind = obj["kind"]
        if kind == "ClusterTrainingRuntime":
            assert_crd_file(obj, CTR_CRD)
        elif kind in KUEUE_CRDS:
            assert_crd_file(obj, KUEUE_CRDS[kind])
        elif kind in K8S_MODELS:  # kube's model takes every field and gives it back unchanged: none unknown
            model = client.deserialize(_Response(obj), K8S_MODELS[kind])
            assert _strip_nulls(client.sanitize_for_serialization(model)) == obj
        else:
            assert scc_causes(obj) == []
        res = for_kind(obj["apiVersion"], kind)
        assert res is not None, kind
        validation.admit(res, obj)  # raises a 422 with the causes if the local cluster would refuse it
        assert check(kind, obj).causes == []


def test_objects_names_are_unique_and_all_carry_the_bundle_label() -> None:
    objs = platform.render(FULL)
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs]
    assert len(keys) == len(set(keys))
    assert all(o["metadata"]["labels"][names.LABEL_PART_OF] == runtimes.PART_OF for o in objs)


def test_groups_are_the_files_in_apply_order() -> None:
    groups = platform.groups(popts.Options())
    assert list(groups) == sorted(groups) == list(platform.FILES)
    assert {o["kind"] for o in groups["00-namespaces.yaml"]} == {"Namespace"}
    assert {o["kind"] for o in groups["10-runtimes.yaml"]} == {"ClusterTrainingRuntime"}
    assert _by_kind(groups["50-openshift.yaml"], "SecurityContextConstraints")
    assert platform.render() == [o for part in groups.values() for o in part]


# -- the runtimes ---------------------------------------------------------------------------------------


def test_runtimes_have_the_shape_of_trainers_mpi_runtimes() -> None:
    objs = _by_kind(platform.render(), "ClusterTrainingRuntime")
    assert [o["metadata"]["name"] for o in objs] == [
        "mpi-distributed", "openmpi5-distributed", "mpich-distributed", "intel-mpi-distributed",
        "mpi-distributed-gpu", "openmpi5-distributed-gpu", "mpich-distributed-gpu", "intel-mpi-distributed-gpu",
        "mpi-distributed-rdma", "mpi-distributed-nccl-safe"]
    local = bundled()[0]["spec"]["mlPolicy"]["mpi"]
    for rt in objs:
        spec = rt["spec"]
        mpi = spec["mlPolicy"]["mpi"]
        assert mpi["mpiImplementation"] == names.OPEN_MPI  # the CRD's only value, whatever the MPI
        assert (mpi["runLauncherAsNode"], mpi["sshAuthMountPath"]) == (local["runLauncherAsNode"],
                                                                       local["sshAuthMountPath"])
        js = spec["template"]["spec"]
        assert js["network"] == {"publishNotReadyAddresses": True}
        assert js["successPolicy"] == {"operator": "All", "targetReplicatedJobs": [names.LAUNCHER]}
        node, launcher = js["replicatedJobs"]
        assert (node["name"], launcher["name"]) == (names.NODE, names.LAUNCHER)  # node first: rank 0 on node-0-0
        assert launcher["dependsOn"] == [{"name": names.NODE, "status": "Ready"}]
        assert launcher["template"]["metadata"]["labels"] == {names.LABEL_ANCESTOR: names.ANCESTOR_TRAINER}
        for rjob in (names.NODE, names.LAUNCHER):
            pod = _pod(rt, rjob)
            assert pod["metadata"]["annotations"][names.ANNOTATION_ISTIO_INJECT] == "false"
            security = pod["spec"]["securityContext"]
            assert security["runAsNonRoot"] is True
            assert "runAsUser" not in security and "fsGroup" not in security  # OpenShift gives the namespace's UID
            (c,) = pod["spec"]["containers"]
            assert c["name"] == names.CONTAINER
            assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                            "runAsNonRoot": True}
        (sshd,) = _pod(rt, names.NODE)["spec"]["containers"]
        assert sshd["command"] == ["/usr/sbin/sshd"] and sshd["args"][:1] == ["-De"]
        assert sshd["readinessProbe"]["tcpSocket"] == {"port": 2222}
        assert sshd["ports"] == [{"containerPort": 2222, "name": "ssh", "protocol": "TCP"}]


def test_other_mpis_are_named_by_annotation_with_their_launcher_variables() -> None:
    objs = platform.render()
    expect = {"mpi-distributed": None, "openmpi5-distributed": names.MPI_OPEN_MPI_5,
              "mpich-distributed": names.MPI_MPICH, "intel-mpi-distributed": names.MPI_INTEL}
    for name, impl in expect.items():
        rt = _named(objs, name)
        assert (rt["metadata"].get("annotations") or {}).get(names.ANNOTATION_MPI_IMPLEMENTATION) == impl
    launcher = {n: _env(_pod(_named(objs, n), names.LAUNCHER)["spec"]["containers"][0]) for n in expect}
    assert launcher["mpi-distributed"] == {}  # Trainer sets Open MPI 4's itself
    assert launcher["mpich-distributed"] == {"HYDRA_HOST_FILE": names.HOSTFILE_PATH,
                                             "HYDRA_LAUNCH_EXTRA_ARGS": names.RSH_ARGS,  # MPI Operator's name
                                             "HYDRA_LAUNCHER_EXTRA_ARGS": names.RSH_ARGS}  # what Hydra reads
    assert launcher["intel-mpi-distributed"] == {"I_MPI_HYDRA_HOST_FILE": names.HOSTFILE_PATH,
                                                 "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": names.RSH_ARGS}
    assert launcher["openmpi5-distributed"][names.PRTE_HOSTFILE] == names.HOSTFILE_PATH
    for variable, value in (mpi_impl.PRRTE_NO_FORK_THREADS, mpi_impl.PRRTE_NO_TREE_SPAWN):  # PRRTE's bugs, anywhere
        assert launcher["openmpi5-distributed"][variable] == value and variable not in launcher["mpi-distributed"]
    node = _env(_pod(_named(objs, "mpich-distributed"), names.NODE)["spec"]["containers"][0])
    assert "HYDRA_HOST_FILE" not in node  # the hostfile is the launcher's


def test_gpu_rdma_and_nccl_safe_variants() -> None:
    objs = platform.render(build(gpus_per_node=8, images=["gpu=registry.example.com/cuda-mpi:1"]))
    gpu = _named(objs, "mpi-distributed-gpu")
    assert gpu["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] == 8
    for rjob in (names.NODE, names.LAUNCHER):
        (c,) = _pod(gpu, rjob)["spec"]["containers"]
        assert c["resources"] == {"limits": {GPU: "8"}} and c["image"] == "registry.example.com/cuda-mpi:1"
    rdma = _named(objs, runtimes.RDMA)
    pod = _pod(rdma, names.NODE)
    assert pod["metadata"]["annotations"][names.ANNOTATION_MULTUS_NETWORKS] == "rdma-net"
    (c,) = pod["spec"]["containers"]
    assert c["resources"]["limits"] == {GPU: "8", "rdma/hca": "1"}
    env = _env(c)
    assert env["OMPI_MCA_pml"] == "ucx" and env["UCX_NET_DEVICES"] == "mlx5_0:1"
    assert env["UCX_IB_GPU_DIRECT_RDMA"] == "yes" and env["NCCL_IB_HCA"] == "mlx5_0"
    assert env["NCCL_IB_DISABLE"] == "0" and env["NCCL_NET_GDR_LEVEL"] == "SYS"
    forwarded = env[runtimes.FORWARD_ENV].split(";")  # remote ranks get UCX_/NCCL_ only through mpirun
    assert set(forwarded) == {k for k in env if not k.startswith("OMPI_MCA_")} - {runtimes.FORWARD_ENV}
    safe = _named(objs, runtimes.NCCL_SAFE)
    for rjob in (names.NODE, names.LAUNCHER):
        (c,) = _pod(safe, rjob)["spec"]["containers"]
        env = _env(c)
        assert env["NCCL_IB_DISABLE"] == "1" and env["NCCL_P2P_DISABLE"] == "1"
        assert env[runtimes.FORWARD_ENV] == "NCCL_IB_DISABLE;NCCL_P2P_DISABLE"
        assert "resources" not in c  # GPUs come from the TrainJob's resourcesPerNode: it runs anywhere


def test_ssh_port_run_as_user_and_images_options() -> None:
    objs = platform.render(build(ssh_port=2022, run_as_user=1000, images=["MPICH=registry.example.com/mpich:4.2"]))
    (sshd,) = _pod(_named(objs, "mpi-distributed"), names.NODE)["spec"]["containers"]
    assert sshd["args"][-2:] == ["-p", "2022"] and sshd["readinessProbe"]["tcpSocket"]["port"] == 2022
    assert sshd["ports"][0]["containerPort"] == 2022
    assert _pod(_named(objs, "mpi-distributed"), names.NODE)["spec"]["securityContext"]["runAsUser"] == 1000
    (c,) = _pod(_named(objs, "mpich-distributed"), names.LAUNCHER)["spec"]["containers"]
    assert c["image"] == "registry.example.com/mpich:4.2"


# -- Kueue ----------------------------------------------------------------------------------------------


def test_teams_become_queues_in_one_cohort_and_gpu_types_become_flavors() -> None:
    objs = platform.render(FULL)
    flavors = {f["metadata"]["name"]: f["spec"] for f in _by_kind(objs, "ResourceFlavor")}
    assert flavors == {queues.DEFAULT_FLAVOR: {},
                       "gpu-a100": {"nodeLabels": {names.LABEL_GPU_PRODUCT: "NVIDIA-A100"}},
                       "gpu-h100": {"nodeLabels": {names.LABEL_GPU_PRODUCT: "NVIDIA-H100"}}}
    cqs = {q["metadata"]["name"]: q["spec"] for q in _by_kind(objs, "ClusterQueue")}
    assert set(cqs) == {"ml", "vision"}
    assert {q["cohortName"] for q in cqs.values()} == {"mpi"}
    assert cqs["vision"]["namespaceSelector"] == {"matchLabels": {names.LABEL_NAMESPACE_NAME: "cv"}}
    plain, gpus = cqs["vision"]["resourceGroups"]
    assert plain == {"coveredResources": ["cpu", "memory"], "flavors": [{"name": queues.DEFAULT_FLAVOR, "resources": [
        {"name": "cpu", "nominalQuota": "8"}, {"name": "memory", "nominalQuota": "256Gi"}]}]}
    assert gpus == {"coveredResources": [GPU], "flavors": [
        {"name": f"gpu-{t}", "resources": [{"name": GPU, "nominalQuota": "4"}]} for t in ("a100", "h100")]}
    assert cqs["ml"]["resourceGroups"][1]["flavors"][0]["resources"][0]["nominalQuota"] == "8"  # the default
    assert (cqs["ml"]["fairSharing"], cqs["vision"]["fairSharing"]) == ({"weight": "2"}, {"weight": "1"})
    assert cqs["ml"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    lqs = {(q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"] for q in _by_kind(objs, "LocalQueue")}
    assert lqs == {("ml", "default"): {"clusterQueue": "ml"}, ("cv", "default"): {"clusterQueue": "vision"}}
    assert [p["value"] for p in _by_kind(objs, "WorkloadPriorityClass")] == [100, 1000, 10000]


def test_cpu_only_bundle_has_no_gpu_quota_and_classic_preemption_borrows() -> None:
    (cq,) = _by_kind(platform.render(build(preemption="classic", cohort="research")), "ClusterQueue")
    assert [g["coveredResources"] for g in cq["spec"]["resourceGroups"]] == [["cpu", "memory"]]
    assert "fairSharing" not in cq["spec"] and cq["spec"]["cohortName"] == "research"
    assert cq["spec"]["preemption"]["borrowWithinCohort"] == {"policy": "LowerPriority",
                                                              "maxPriorityThreshold": queues.LOW_PRIORITY}


# -- RBAC, network, SCC -------------------------------------------------------------------------------


def test_personas_are_bound_per_team_namespace_and_cluster_wide() -> None:
    objs = platform.render(FULL)
    roles = {r["metadata"]["name"]: r["rules"] for r in _by_kind(objs, "ClusterRole")}
    assert {rbac.DATA_SCIENTIST, rbac.MLOPS, rbac.PLATFORM_ADMIN, rbac.VIEWER, rbac.RUNTIME_READER} <= set(roles)

    def verbs(role: str, resource: str) -> set[str]:
        return {v for r in roles[role] if resource in r["resources"] for v in r["verbs"]}

    assert {"create", "delete", "watch"} <= verbs(rbac.DATA_SCIENTIST, "trainjobs")
    assert "deletecollection" not in verbs(rbac.DATA_SCIENTIST, "trainjobs")
    assert "create" not in verbs(rbac.DATA_SCIENTIST, "trainingruntimes")
    assert "create" in verbs(rbac.MLOPS, "trainingruntimes") and "deletecollection" in verbs(rbac.MLOPS, "trainjobs")
    assert verbs(rbac.VIEWER, "trainjobs") == {"get", "list", "watch"}
    assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in roles[rbac.VIEWER])
    assert not any("secrets" in r["resources"] for role in roles.values() for r in role)  # SSH keys stay private
    bindings = {(b["metadata"]["namespace"], b["metadata"]["name"]): b for b in _by_kind(objs, "RoleBinding")}
    mlops = bindings[("cv", rbac.MLOPS)]
    assert mlops["subjects"] == [{"apiGroup": names.RBAC_GROUP, "kind": "Group", "name": "vision-mlops"},
                                 {"kind": "ServiceAccount", "name": rbac.CI_SERVICE_ACCOUNT, "namespace": "cv"}]
    admins = _named(objs, rbac.PLATFORM_ADMIN, "ClusterRoleBinding")
    assert admins["subjects"][0]["name"] == "mpi-platform-admins"


def test_network_policy_selects_job_pods_and_allows_job_traffic_and_dns() -> None:
    (pol,) = [p for p in _by_kind(platform.render(FULL), "NetworkPolicy") if p["metadata"]["namespace"] == "cv"]
    jobs = {"matchExpressions": [{"key": names.LABEL_JOBSET_NAME, "operator": "Exists"}]}
    spec = pol["spec"]
    assert spec["podSelector"] == jobs and spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [{"podSelector": jobs}]}]
    assert spec["egress"][0] == {"to": [{"podSelector": jobs}]}
    assert {p["port"] for p in spec["egress"][1]["ports"]} == {53, 5353}


def test_scc_drops_everything_and_allows_net_bind_service_only_when_asked() -> None:
    plain = scc.constraints(popts.Options())
    asked = scc.constraints(FULL)
    assert plain["allowedCapabilities"] is None and asked["allowedCapabilities"] == ["NET_BIND_SERVICE"]
    for s in (plain, asked):
        assert s["requiredDropCapabilities"] == ["ALL"] and s["allowPrivilegedContainer"] is False
        assert s["runAsUser"] == {"type": "MustRunAsRange"} and s["seLinuxContext"] == {"type": "MustRunAs"}
        assert "hostPath" not in s["volumes"]
    objs = scc.render(FULL)
    role = _named(objs, f"{names.SCC_ROLE_PREFIX}{scc.SCC_NAME}", "ClusterRole")
    assert role["rules"] == [{"apiGroups": [names.SECURITY_GROUP], "resources": [names.SCC_RESOURCE],
                              "resourceNames": [scc.SCC_NAME], "verbs": ["use"]}]
    subjects = [b["subjects"][0]["name"] for b in _by_kind(objs, "RoleBinding")]
    assert subjects == ["system:serviceaccounts:ml", "system:serviceaccounts:cv"]


def test_the_served_scc_schema_refuses_what_openshift_refuses() -> None:
    good = scc.constraints(popts.Options())
    assert scc_causes(good) == []
    bad = {**good, "runAsUser": {"type": "Sometimes"}, "allowHostPID": "no", "volumes": ["hostpath"], "spec": {}}
    fields = {c.field for c in scc_causes(bad)}
    assert {"runAsUser.type", "allowHostPID", "volumes[0]"} <= fields
    assert any("spec" in c.message for c in scc_causes(bad))  # an unknown field, refused
    missing = {k: v for k, v in good.items() if k != "allowHostNetwork"}
    assert [c.field for c in scc_causes(missing)] == ["allowHostNetwork"]
    no_uid = {**good, "runAsUser": {"type": "MustRunAs"}}
    assert [c.field for c in scc_causes(no_uid)] == ["runAsUser.uid"]


# -- bad options ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "option", "value"), [
    ({"teams": ["Team_A"]}, "--team", "Team_A"),
    ({"teams": ["a", "b:a"]}, "--team", "a"),
    ({"quotas": ["nobody=cpu:1"]}, "--quota", "nobody=cpu:1"),
    ({"quotas": ["team-a=cpu"]}, "--quota", "team-a=cpu"),
    ({"quotas": ["team-a=cpu:lots"]}, "--quota", "team-a=cpu:lots"),
    ({"weights": ["team-a=-1"]}, "--weight", "team-a=-1"),
    ({"gpu_types": ["A100"]}, "--gpu-type", "A100"),
    ({"images": ["LAM=lam:7"]}, "--image", "LAM=lam:7"),
    ({"ssh_port": 22}, "--ssh-port", 22),
    ({"preemption": "always"}, "--preemption", "always"),
    ({"gpus_per_node": 0}, "--gpus-per-node", 0),
    ({"cohort": "My Cohort"}, "--cohort", "My Cohort"),
    ({"run_as_user": 0}, "--run-as-user", 0),
    ({"admin_group": ""}, "--admin-group", ""),
])
def test_bad_options_name_the_option_the_value_and_the_fix(kwargs: dict, option: str, value: object) -> None:
    with pytest.raises(OptionError) as caught:
        build(**kwargs)
    err = caught.value
    assert (err.option, err.value) == (option, value)
    assert err.problem and err.fix and str(value) in str(err) and option in str(err)
