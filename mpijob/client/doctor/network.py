"""The network check: no NetworkPolicy of the namespace stops mpirun's ssh (or MPI's own connections)
between the job's pods, judged as a cluster's policy engine judges it (`mpijob.api.core.netpol.blocking`)."""

from __future__ import annotations

from typing import Any

from mpijob.api import names
from mpijob.api.core import netpol
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import NETWORK_POLICIES
from mpijob.api.trainer.plan import PodPlan
from mpijob.api.trainer.runtimes import SSH_PORT
from mpijob.client import core
from mpijob.client.core import Call, Op
from mpijob.client.doctor.model import Check, Facts, could_not, failed, passed, skipped, warned
from mpijob.client.errors import Unreachable


def sshd_port(pods: list[PodPlan]) -> tuple[int, dict[str, int]]:
    """The port the nodes' sshd listens on (its `-p` argument, else the container port named ssh, else the
    runtimes' 2222) and the node container's named ports."""
    for pod in pods:
        if not pod.runs_sshd:
            continue
        container: dict[str, Any] = next(
            (c for c in pod.pod_spec.get("containers") or [] if c.get("name") == names.CONTAINER), {})
        named = {str(p["name"]): int(p["containerPort"]) for p in container.get("ports") or []
                 if p.get("name") and isinstance(p.get("containerPort"), int)}
        words = [*pod.command, *pod.args]
        for i, word in enumerate(words[:-1]):
            if word == "-p" and words[i + 1].isdigit():
                return int(words[i + 1]), named
        return named.get("ssh", SSH_PORT), named
    return SSH_PORT, {}


def network_policy(facts: Facts) -> Op[Check]:
    """8. Every pair of the job's pods that talk (launcher → node, node → node) may open TCP to the sshd port;
    a policy that allows only listed ports also stops MPI's own connections, on ports chosen at run time."""
    if facts.plan is None:
        return skipped("network-policy", "needs the job's runtime (see the runtime check)")
    try:
        policies = core.items((yield from Call("GET", core.collection_path(NETWORK_POLICIES, facts.namespace))))
    except (ApiError, Unreachable) as exc:
        return could_not("network-policy", exc, f"the NetworkPolicies of namespace {facts.namespace}")
    if not policies:
        return passed("network-policy", f"namespace {facts.namespace} has no NetworkPolicy")
    try:
        ns_labels = yield from facts.namespace_labels()
    except (ApiError, Unreachable):
        ns_labels = {names.LABEL_NAMESPACE_NAME: facts.namespace}
    port, port_names = sshd_port(facts.plan.pods)
    roles = {p.rjob: p for p in facts.plan.pods}
    targets = [p for p in roles.values() if p.runs_sshd]
    local = " (the local cluster does not enforce NetworkPolicies; a real cluster does)" if facts.local else ""
    for source in roles.values():
        for target in targets:
            blockers = netpol.blocking(policies, source.labels, target.labels, ns_labels, port, port_names)
            if blockers:
                return failed("network-policy", f"NetworkPolicy {', '.join(blockers)} stops TCP from the {source.rjob} "
                              f"pod to the {target.rjob} pods' sshd on port {port}: mpirun cannot start the "
                              f"ranks{local}", f"allow ingress (and egress, if the policy limits it) between the "
                              f"job's pods, e.g. a policy whose podSelector and from/to podSelector both match "
                              f"{names.LABEL_JOBSET_NAME}: <job>, or exempt the job's pods from "
                              f"{', '.join(blockers)}")
    for source in roles.values():
        for target in targets:
            blockers = netpol.blocking(policies, source.labels, target.labels, ns_labels, None, port_names)
            if blockers:
                return warned("network-policy", f"NetworkPolicy {', '.join(blockers)} lets ssh through on port {port} "
                              f"but no other port between the {source.rjob} and {target.rjob} pods: Open MPI's own "
                              f"TCP connections use ports chosen at run time{local}",
                              "allow every port between the job's pods (a rule without ports), or pin MPI's ports "
                              "(btl_tcp_port_min_v4, oob_tcp_static_ipv4_ports) and allow those")
    return passed("network-policy", f"{len(policies)} NetworkPolicy(ies) in {facts.namespace} let the job's pods "
                  f"reach each other (sshd on port {port} and MPI's own ports)")
