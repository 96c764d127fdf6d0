"""`mpijob top [JOB] [-n NS]`: what a TrainJob's pods use now — CPU, memory and GPUs — from the resource
metrics API (`metrics.k8s.io`, what `kubectl top pods` reads), so it works against any cluster with a
metrics-server; the GPUs come from the local cluster's NVML readings (docs/metrics.md).
"""

from __future__ import annotations

import math
from typing import Annotated

import typer

from mpijob.api import Obj, names
from mpijob.api.core.quantity import parse_quantity
from mpijob.api.trainer.metrics import gpus_of
from mpijob.cli import output
from mpijob.cli.session import ContextOpt, KubeconfigOpt, NamespaceOpt, connect, handles_errors

MIB = 1 << 20


def cpu_cell(usage: Obj) -> str:
    """kubectl top's CPU(cores): millicores, rounded up."""
    return f"{math.ceil(parse_quantity(usage.get('cpu', '0')) * 1000)}m"


def memory_cell(usage: Obj) -> str:
    """kubectl top's MEMORY(bytes): MiB."""
    return f"{int(parse_quantity(usage.get('memory', '0'))) // MIB}Mi"


def gpu_cells(gpus: list[Obj]) -> list[str]:
    """The pod's GPUs (CUDA_VISIBLE_DEVICES indices), their mean utilization and the memory they hold."""
    if not gpus:
        return ["<none>", "", ""]
    used = sum(int(g.get("memoryUsed", 0)) for g in gpus) // MIB
    total = sum(int(g.get("memoryTotal", 0)) for g in gpus) // MIB
    util = sum(float(g.get("utilization", 0)) for g in gpus) / len(gpus)
    return [",".join(str(g.get("index", "")) for g in gpus), f"{util:.0f}%", f"{used}Mi/{total}Mi"]


def rows(metrics: list[Obj], with_job: bool) -> list[list[str]]:
    out = []
    for m in sorted(metrics, key=lambda m: m["metadata"]["name"]):
        labels = m["metadata"].get("labels") or {}
        container: Obj = next(iter(m.get("containers") or []), {})
        usage = container.get("usage") or {}
        job = [labels.get(names.LABEL_JOBSET_NAME, "")] if with_job else []
        out.append([*job, m["metadata"]["name"], labels.get(names.LABEL_RJOB_NAME, ""), cpu_cell(usage),
                    memory_cell(usage), *gpu_cells(gpus_of(m))])
    return out


@handles_errors
def top(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(help="The TrainJob; default: every TrainJob's pods in the namespace.",
                                                 show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Show what a TrainJob's pods use now: CPU, memory and GPUs.

    One row per pod: CPU in cores over the last sampling window and memory as working set, read as
    `kubectl top pods` reads them (metrics.k8s.io); its GPUs' indices, mean utilization and memory."""
    from mpijob.client.core import pod_metrics

    selector = f"{names.LABEL_JOBSET_NAME}={job}" if job else names.LABEL_JOBSET_NAME
    with connect(ctx, kubeconfig, context, namespace) as conn:
        if job:
            conn.get_trainjob(job)  # a job that does not exist is "not found", not "no metrics"
        metrics = conn.run(pod_metrics(conn.namespace, selector))
        where = f"trainjob {job}" if job else f"any TrainJob in namespace {conn.namespace}"
    if not metrics:
        output.info(f"No metrics yet for {where}: no pod of it is running, or it started less than two "
                    "samples ago (the local cluster samples every 2s by default)")
        return
    columns = ["POD", "ROLE", "CPU(cores)", "MEMORY(bytes)", "GPUS", "GPU-UTIL", "GPU-MEMORY"]
    output.table((["JOB"] if not job else []) + columns, rows(metrics, with_job=not job))
