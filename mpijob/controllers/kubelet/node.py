"""The machine as a Node: registered at start as a kubelet registers itself, so `kubectl get nodes`,
`kubectl describe node` and `kubectl top nodes` (which divides usage by the Node's allocatable) see it.

Its name is the machine's host name, lower-cased, as a kubelet without `--hostname-override` names its
Node; its capacity is what the local cluster offers jobs (`capacity.detect`, `$MPIJOB_CAPACITY`), all of
it allocatable: nothing is reserved for system daemons here.
"""

from __future__ import annotations

import platform
import re
import shutil
import socket
import subprocess

from mpijob._version import __version__
from mpijob.api import Obj, names
from mpijob.api.core.quantity import parse_quantity
from mpijob.api.core.resources import NODES
from mpijob.controllers.kubelet.capacity import GPU
from mpijob.store.objects import Store, now

MAX_PODS = "110"  # the kubelet's default --max-pods, which it reports as the `pods` capacity
KUBELET_VERSION = f"mpijob-{__version__}"


def node_name() -> str:
    """The machine's host name as a valid Node name (a DNS subdomain)."""
    name = re.sub(r"[^a-z0-9.-]+", "-", socket.gethostname().lower()).strip("-.")
    return name or "localhost"


def arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def _os_image() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", "Linux")
    except OSError:
        return "Linux"


def _gpu_models() -> list[tuple[str, int]]:
    """(model, MiB) of each NVIDIA GPU `nvidia-smi` lists; [] without a driver."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for line in out.splitlines():
        model, _, mib = line.rpartition(",")
        if model.strip() and mib.strip().isdigit():
            found.append((model.strip(), int(mib.strip())))
    return found


def gpu_labels(capacity: dict[str, str], models: list[tuple[str, int]] | None = None) -> dict[str, str]:
    """The labels NVIDIA's GPU feature discovery gives a node with GPUs: how many, the model (spaces as
    '-', e.g. NVIDIA-A100-SXM4-80GB) and each one's memory in MiB. The count is the capacity's (declared
    GPUs count too); model and memory only when the driver names them. None for a node without GPUs."""
    count = int(parse_quantity(capacity.get(GPU, "0")))
    if count <= 0:
        return {}
    out = {names.LABEL_GPU_COUNT: str(count)}
    models = _gpu_models() if models is None else models
    if models:
        model, mib = models[0]
        out[names.LABEL_GPU_PRODUCT] = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-._")[:63]
        out[names.LABEL_GPU_MEMORY] = str(mib)
    return out


def kubelet_labels(name: str, capacity: dict[str, str], models: list[tuple[str, int]] | None = None) -> dict[str, str]:
    """The labels the kubelet (and GPU feature discovery) own on the Node, set again at each start."""
    return {names.LABEL_HOSTNAME: name, names.LABEL_OS: "linux", names.LABEL_ARCH: arch(),
            names.LABEL_CONTROL_PLANE: "", **gpu_labels(capacity, models)}


def node_object(name: str, capacity: dict[str, str], at: str, models: list[tuple[str, int]] | None = None) -> Obj:
    """The Node a kubelet registers: capacity, Ready, its addresses and what it runs."""
    resources = {**capacity, "pods": MAX_PODS}
    return {
        "apiVersion": NODES.api_version, "kind": NODES.kind,
        "metadata": {"name": name, "labels": kubelet_labels(name, capacity, models)},
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status", "lastHeartbeatTime": at,
                            "lastTransitionTime": at}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": arch(), "kernelVersion": platform.release(), "osImage": _os_image(),
                         "containerRuntimeVersion": KUBELET_VERSION, "machineID": "", "systemUUID": "", "bootID": ""},
        },
    }


def register(store: Store, name: str, capacity: dict[str, str]) -> Obj:
    """Create the machine's Node, or bring an existing one's status up to date (capacity may have
    changed with `$MPIJOB_CAPACITY`, the version with an upgrade). What an administrator set
    (`kubectl label node`, `kubectl taint node`, `kubectl cordon`) is kept: only the kubelet's own
    labels are written again, as a kubelet does."""
    wanted = node_object(name, capacity, now())
    current = store.try_get(NODES, "", name)
    if current is None:
        return store.create(NODES, wanted)
    labels = current["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in wanted["metadata"]["labels"].items()):
        current["metadata"]["labels"] = {**labels, **wanted["metadata"]["labels"]}
        current = store.update(NODES, current)
    status = {**wanted["status"], "conditions": current.get("status", {}).get("conditions") or
              wanted["status"]["conditions"]}
    return store.update(NODES, {**current, "status": status}, status=True)
