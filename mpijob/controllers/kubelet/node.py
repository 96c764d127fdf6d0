"""The machine as a Node: registered at start as a kubelet registers itself, so `kubectl get nodes`,
`kubectl describe node` and `kubectl top nodes` (which divides usage by the Node's allocatable) see it.

Its name is the machine's host name, lower-cased, as a kubelet without `--hostname-override` names its
Node; its capacity is what the local cluster offers jobs (`capacity.detect`, `$MPIJOB_CAPACITY`), all of
it allocatable: nothing is reserved for system daemons here.
"""

from __future__ import annotations

import platform
import re
import socket

from mpijob._version import __version__
from mpijob.api import Obj, names
from mpijob.api.resources import NODES
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


def node_object(name: str, capacity: dict[str, str], at: str) -> Obj:
    """The Node a kubelet registers: capacity, Ready, its addresses and what it runs."""
    resources = {**capacity, "pods": MAX_PODS}
    return {
        "apiVersion": NODES.api_version, "kind": NODES.kind,
        "metadata": {"name": name, "labels": {names.LABEL_HOSTNAME: name, names.LABEL_OS: "linux",
                                              names.LABEL_ARCH: arch(), names.LABEL_CONTROL_PLANE: ""}},
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
    changed with `$MPIJOB_CAPACITY`, the version with an upgrade)."""
    wanted = node_object(name, capacity, now())
    current = store.try_get(NODES, "", name)
    if current is None:
        return store.create(NODES, wanted)
    status = {**wanted["status"], "conditions": current.get("status", {}).get("conditions") or
              wanted["status"]["conditions"]}
    return store.update(NODES, {**current, "status": status}, status=True)
