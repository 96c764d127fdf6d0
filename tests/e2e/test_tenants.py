"""Two tenants with real kubeconfigs (`mpijob user add`) and the real kubectl: each may work in its own
namespace, every verb is allowed there and refused in the other's with kube-apiserver's words, and
`kubectl auth can-i` (with `--list`) tells each the truth."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from support import add_user, kubectl_runner, two_tenants

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def tenants(server: Any, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return two_tenants(server.home, kubectl, tmp_path_factory.mktemp, "tenant", "team")


PATCH = '{"metadata":{"labels":{"tenant":"yes"}}}'
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"
TRAINJOB = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: {name}\nspec:\n"
            "  suspend: true\n  runtimeRef:\n    name: mpi-distributed\n  trainer:\n    numNodes: 1\n"
            "    command: [\"true\"]\n")
SECRET = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\nstringData:\n  password: hunter2\n"
SERVICEACCOUNT = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\n"
NETWORKPOLICY = ("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: {name}\nspec:\n"
                 "  podSelector: {{}}\n  policyTypes: [Ingress]\n")


def _denied(proc: subprocess.CompletedProcess[str], user: str, verb: str, resource: str, group: str, ns: str) -> None:
    assert proc.returncode != 0, proc.stdout
    assert (f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}" in the namespace "{ns}"'
            in proc.stderr), proc.stderr
    assert "Error from server (Forbidden)" in proc.stderr


@pytest.mark.parametrize(("resource", "manifest", "group", "kind"), [
    ("configmaps", CONFIGMAP, "", "configmap"),
    ("secrets", SECRET, "", "secret"),
    ("serviceaccounts", SERVICEACCOUNT, "", "serviceaccount"),
    ("trainjobs", TRAINJOB, "trainer.kubeflow.org", "trainjob.trainer.kubeflow.org"),
    ("networkpolicies", NETWORKPOLICY, "networking.k8s.io", "networkpolicy.networking.k8s.io"),
])
def test_every_verb_is_allowed_at_home_and_refused_next_door(tenants: dict[str, Any], resource: str, manifest: str,
                                                              group: str, kind: str) -> None:
    for me, other in (("a", "b"), ("b", "a")):
        k: Kubectl = tenants[me]["kubectl"]
        user, home, away = tenants[me]["user"], tenants[me]["ns"], tenants[other]["ns"]
        name = f"{resource[:2]}-{uuid.uuid4().hex[:5]}"
        body = manifest.format(name=name)
        # at home: create, get, list, watch, patch, replace, delete
        assert f"{kind}/{name} created" in k("create", "-n", home, "-f", "-", input=body).stdout
        assert name in k("get", resource, name, "-n", home, "-o", "name").stdout
        assert name in k("get", resource, "-n", home).stdout
        watched = k("get", resource, "-n", home, "--watch", "--request-timeout=2s", check=False)
        assert name in watched.stdout
        assert "patched" in k("patch", resource, name, "-n", home, "--type=merge", "-p", PATCH).stdout
        current = k("get", resource, name, "-n", home, "-o", "yaml").stdout
        assert "replaced" in k("replace", "-n", home, "-f", "-", input=current).stdout
        # next door: every verb refused, with kube-apiserver's message
        _denied(k("create", "-n", away, "-f", "-", input=body, check=False), user, "create", resource, group, away)
        _denied(k("get", resource, name, "-n", away, check=False), user, "get", resource, group, away)
        _denied(k("get", resource, "-n", away, check=False), user, "list", resource, group, away)
        _denied(k("get", resource, "-n", away, "--watch", "--request-timeout=2s", check=False), user, "list",
                resource, group, away)
        # kubectl patch reads the object first; replace writes straight away
        _denied(k("patch", resource, name, "-n", away, "--type=merge", "-p", PATCH, check=False), user, "get",
                resource, group, away)
        _denied(k("replace", "-n", away, "-f", "-", input=body, check=False), user, "update", resource, group, away)
        _denied(k("delete", resource, name, "-n", away, check=False), user, "delete", resource, group, away)
        _denied(k("delete", resource, "--all", "-n", away, check=False), user, "list", resource, group, away)
        assert "deleted" in k("delete", resource, name, "-n", home).stdout


def test_a_viewer_reads_network_policies_and_may_not_write_them(server: Any, kubectl: Kubectl,
                                                                tenants: dict[str, Any],
                                                                tmp_path_factory: pytest.TempPathFactory) -> None:
    a, viewer = tenants["a"], f"viewer-{uuid.uuid4().hex[:5]}"
    kubectl("create", "rolebinding", f"{viewer}-view", "--clusterrole=view", f"--user={viewer}", "-n", a["ns"])
    k = kubectl_runner(add_user(server.home, viewer), tmp_path_factory.mktemp(viewer))
    name = f"np-{uuid.uuid4().hex[:5]}"
    a["kubectl"]("create", "-n", a["ns"], "-f", "-", input=NETWORKPOLICY.format(name=name))
    assert name in k("get", "netpol", "-n", a["ns"]).stdout
    assert name in k("describe", "netpol", name, "-n", a["ns"]).stdout
    other = NETWORKPOLICY.format(name=name + "-v")
    _denied(k("create", "-n", a["ns"], "-f", "-", input=other, check=False), viewer, "create", "networkpolicies",
            "networking.k8s.io", a["ns"])
    _denied(k("delete", "netpol", name, "-n", a["ns"], check=False), viewer, "delete", "networkpolicies",
            "networking.k8s.io", a["ns"])
    assert k("auth", "can-i", "create", "networkpolicies", "-n", a["ns"], check=False).stdout.strip() == "no"
    assert a["kubectl"]("auth", "can-i", "create", "networkpolicies", "-n", a["ns"]).stdout.strip() == "yes"
    a["kubectl"]("delete", "netpol", name, "-n", a["ns"])


def test_logs_and_cluster_scope_are_refused(tenants: dict[str, Any]) -> None:
    a = tenants["a"]
    # kubectl logs reads the pod first (pods/log itself: tests/server/test_rbac.py)
    _denied(a["kubectl"]("logs", "some-pod", "-n", tenants["b"]["ns"], check=False), a["user"], "get", "pods",
            "", tenants["b"]["ns"])
    proc = a["kubectl"]("get", "clusterqueues", check=False)
    assert (f'User "{a["user"]}" cannot list resource "clusterqueues" in API group "kueue.x-k8s.io" at the '
            "cluster scope") in proc.stderr
    proc = a["kubectl"]("create", "namespace", "not-mine", check=False)
    assert proc.returncode != 0 and 'cannot create resource "namespaces"' in proc.stderr


def test_kubectl_auth_can_i_tells_each_tenant_the_truth(tenants: dict[str, Any]) -> None:
    for me, other in (("a", "b"), ("b", "a")):
        k: Kubectl = tenants[me]["kubectl"]
        home, away = tenants[me]["ns"], tenants[other]["ns"]
        for verb in ("create", "get", "list", "watch", "patch", "update", "delete"):
            yes = k("auth", "can-i", verb, "trainjobs.trainer.kubeflow.org", "-n", home, check=False)
            assert (yes.returncode, yes.stdout.strip()) == (0, "yes"), (verb, yes.stderr)
            no = k("auth", "can-i", verb, "trainjobs.trainer.kubeflow.org", "-n", away, check=False)
            assert (no.returncode, no.stdout.strip()) == (1, "no"), (verb, no.stderr)
        assert k("auth", "can-i", "get", "pods", "--subresource=log", "-n", home).stdout.strip() == "yes"
        assert k("auth", "can-i", "update", "trainjobs.trainer.kubeflow.org", "--subresource=status", "-n", home,
                 check=False).stdout.strip() == "no"
        assert k("auth", "can-i", "create", "clustertrainingruntimes.trainer.kubeflow.org",
                 check=False).stdout.strip() == "no"
        assert k("auth", "can-i", "get", "/version").stdout.strip() == "yes"
        assert k("auth", "can-i", "get", "/metrics", check=False).stdout.strip() == "no"
        listed = k("auth", "can-i", "--list", "-n", home).stdout
        assert "trainjobs.trainer.kubeflow.org" in listed and "[create delete" in listed
        away_list = k("auth", "can-i", "--list", "-n", away).stdout
        assert "trainjobs.trainer.kubeflow.org" not in away_list
        assert tenants[me]["user"] in k("auth", "whoami").stdout
