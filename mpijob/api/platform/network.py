"""The bundle's NetworkPolicy: in each team namespace, MPI pods talk to MPI pods and resolve names; the rest
is denied.

It selects the pods of TrainJobs (every pod JobSet makes carries `jobset.sigs.k8s.io/jobset-name`) and
leaves the namespace's other pods (notebooks, pipelines) to their own policies. A policy cannot say "the
same value as mine", so pods of one team's jobs may reach each other across jobs of that namespace; no
pod of another namespace reaches them. Ingress from job pods is open on every port, not only sshd's:
mpirun starts daemons over ssh that then connect back and between ranks on ports chosen at run time
(Open MPI's TCP transport, PRRTE/ORTE, Hydra), and NCCL does the same. Egress: the same pods, DNS (53,
and 5353 where OpenShift's DNS pods listen behind the Service), and the Trainer controller's namespace
(progress reporting). The local cluster gives every TrainJob its own network whatever the policy says
(`api/core/netpol.py`), so a job runs there too; the server warns which rules it does not evaluate.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.resources import NETWORK_POLICIES
from mpijob.api.platform.options import Options, Team
from mpijob.api.platform.runtimes import PART_OF

POLICY_NAME = "mpijob-allow-mpi"
DNS_PORTS = (53, 5353)


def job_pods() -> Obj:
    """Every pod of a TrainJob: the label JobSet gives all its pods."""
    return {"matchExpressions": [{"key": names.LABEL_JOBSET_NAME, "operator": "Exists"}]}


def policy(team: Team, opts: Options) -> Obj:
    peers = [{"podSelector": job_pods()}]
    dns = [{"protocol": proto, "port": port} for port in DNS_PORTS for proto in ("UDP", "TCP")]
    trainer = {"namespaceSelector": {"matchLabels": {names.LABEL_NAMESPACE_NAME: opts.trainer_namespace}}}
    return {
        "apiVersion": NETWORK_POLICIES.api_version, "kind": NETWORK_POLICIES.kind,
        "metadata": {"name": POLICY_NAME, "namespace": team.namespace, "labels": {names.LABEL_PART_OF: PART_OF}},
        "spec": {
            "podSelector": job_pods(),
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": peers}],  # sshd (opts.ssh_port) and MPI's run-time ports alike
            "egress": [{"to": peers}, {"ports": dns}, {"to": [trainer]}],
        },
    }


def render(opts: Options) -> list[Obj]:
    return [policy(t, opts) for t in opts.teams]
