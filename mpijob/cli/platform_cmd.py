"""`mpijob platform render`: the objects an administrator applies to a real cluster so teams can run MPI
TrainJobs there — runtimes, Kueue queues, RBAC, NetworkPolicies, OpenShift's SCC (docs/platform.md).

Offline: it talks to no cluster. It prints one multi-document YAML (`| kubectl apply -f -`), or with
`-o DIR` writes one file per group of objects, numbered in the order to apply them.
"""

from pathlib import Path
from typing import Annotated

import typer

from mpijob.cli.session import handles_errors

platform_app = typer.Typer(help="Render what a cluster needs for MPI training: runtimes, queues, RBAC, policies.",
                           no_args_is_help=True, rich_markup_mode=None)


def _many(flag: str, text: str, metavar: str) -> object:
    return typer.Option(flag, help=f"{text} (repeatable).", metavar=metavar, show_default=False)


@platform_app.command("render")
@handles_errors
def render(
    team: Annotated[list[str] | None, _many(
        "--team", "A team: its ClusterQueue, groups and namespace (default: team-a)", "NAME[:NAMESPACE]")] = None,
    quota: Annotated[list[str] | None, _many(
        "--quota", "A team's nominal quota per resource, e.g. team-a=cpu:64,memory:256Gi,nvidia.com/gpu:8 (the GPU "
                   "quota is per GPU type)", "TEAM=RES:QTY,...")] = None,
    weight: Annotated[list[str] | None, _many(
        "--weight", "A team's fair-sharing weight (default 1)", "TEAM=WEIGHT")] = None,
    gpu_type: Annotated[list[str] | None, _many(
        "--gpu-type", "A GPU type: one ResourceFlavor on the nodes of that GPU product, e.g. a100", "TYPE")] = None,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="GPUs a GPU runtime's node asks for "
                                               "(its processes per node).")] = 1,
    cohort: Annotated[str, typer.Option("--cohort", help="The Kueue cohort the teams' queues share.")] = "mpi",
    preemption: Annotated[str, typer.Option("--preemption", help="fair: Kueue's fair sharing (enable it in Kueue's "
                                            "configuration); classic: borrowWithinCohort.")] = "fair",
    net_bind_service: Annotated[bool, typer.Option("--net-bind-service", help="Let the SCC allow NET_BIND_SERVICE "
                                                   "(an sshd on a port below 1024).")] = False,
    ssh_port: Annotated[int, typer.Option("--ssh-port", help="The port sshd listens on in node pods.")] = 2222,
    run_as_user: Annotated[int | None, typer.Option("--run-as-user", help="A fixed UID for the runtimes' pods "
                                                       "(clusters without OpenShift; default: none, the "
                                                       "namespace's range).", show_default=False)] = None,
    image: Annotated[list[str] | None, _many(
        "--image", "The image of an MPI's runtimes: OpenMPI, OpenMPI5, MPICH, Intel, or gpu (Open MPI's GPU, RDMA and "
                   "NCCL-safe runtimes)", "IMPL=IMAGE")] = None,
    rdma_network: Annotated[str, typer.Option("--rdma-network", help="The Multus network (NetworkAttachmentDefinition) "
                                              "of the RDMA runtime.")] = "rdma-net",
    rdma_resource: Annotated[str, typer.Option("--rdma-resource", help="The RDMA device plugin's resource.")] = (
        "rdma/hca"),
    rdma_device: Annotated[str, typer.Option("--rdma-device", help="The HCA and port UCX and NCCL use.")] = (
        "mlx5_0:1"),
    admin_group: Annotated[str, typer.Option("--admin-group", help="The platform administrators' group.")] = (
        "mpi-platform-admins"),
    auditor_group: Annotated[str, typer.Option("--auditor-group", help="The auditors' group (read-only, "
                                               "cluster-wide).")] = "mpi-auditors",
    output_dir: Annotated[str | None, typer.Option("--output-dir", "-o", help="Write one file per group of "
                                                      "objects into this directory instead of printing.",
                                                      show_default=False)] = None,
) -> None:
    """Print (or write) the platform bundle as YAML, ready for `kubectl apply -f -`."""
    import yaml

    from mpijob.api import platform
    from mpijob.client.errors import InvalidArgument

    try:
        opts = platform.build(
            teams=team or (), quotas=quota or (), weights=weight or (), gpu_types=gpu_type or (), images=image or (),
            gpus_per_node=gpus_per_node, cohort=cohort, preemption=preemption, net_bind_service=net_bind_service,
            ssh_port=ssh_port, run_as_user=run_as_user, rdma_network=rdma_network, rdma_resource=rdma_resource,
            rdma_device=rdma_device, admin_group=admin_group, auditor_group=auditor_group)
    except platform.OptionError as e:
        raise InvalidArgument(e.option, e.value, e.problem, e.fix) from None
    bundle = platform.groups(opts)
    if output_dir is None:
        print(yaml.safe_dump_all([o for part in bundle.values() for o in part], sort_keys=False), end="")
        return
    directory = Path(output_dir).expanduser()
    if directory.exists() and not directory.is_dir():
        raise InvalidArgument("--output-dir", output_dir, "is a file", "name a directory (it is created if missing)")
    directory.mkdir(parents=True, exist_ok=True)
    for file, objects in bundle.items():
        path = directory / file
        path.write_text(yaml.safe_dump_all(objects, sort_keys=False), encoding="utf-8")
        kinds = sorted({o["kind"] for o in objects})
        print(f"wrote {path} ({len(objects)} objects: {', '.join(kinds)})")
    print(f"apply in order: kubectl apply -f {directory}  (files are applied by name)")
