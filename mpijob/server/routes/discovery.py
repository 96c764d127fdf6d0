"""Discovery documents: /version, /api, /apis, /api/v1, /apis/<g>/<v>, in the legacy JSON forms.

kubectl falls back to these when the server does not answer with the aggregated discovery
content type, and caches them under its `--cache-dir`.
"""

from __future__ import annotations

import platform
from typing import Any

from mpijob._version import __version__
from mpijob.api import names
from mpijob.api.core.resources import ALL, CONNECT_SUBRESOURCES, Resource, groups

KUBE_MAJOR, KUBE_MINOR = "1", "32"
GIT_VERSION = f"v{KUBE_MAJOR}.{KUBE_MINOR}.0-mpijob"


def version() -> dict[str, Any]:
    """The Kubernetes API level emulated; kubectl's dispatcher picks its binary from `minor`."""
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": GIT_VERSION,
        "gitCommit": f"mpijob-{__version__}",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{_arch()}",
    }


def _arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": groups().get("", ["v1"]),
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list() -> dict[str, Any]:
    """The stored groups, and the resource metrics API (computed: `routes/metrics.py`), which kubectl top
    looks for here before it asks for any metrics."""
    named = [_group(g, v) for g, v in groups().items() if g] + [_group(names.METRICS_GROUP, [names.METRICS_VERSION])]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": named}


def api_group(name: str) -> dict[str, Any] | None:
    versions = groups().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _entries(r: Resource) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": list(r.verbs) + ([] if "deletecollection" in r.verbs else ["deletecollection"]),
    }
    if r.short_names:
        main["shortNames"] = list(r.short_names)
    if r.categories:
        main["categories"] = list(r.categories)
    out = [main]
    for sub in r.subresources:
        if sub == "log":
            out.append({"name": f"{r.plural}/log", "singularName": "", "namespaced": r.namespaced,
                        "kind": r.kind, "verbs": ["get"]})
        elif sub in CONNECT_SUBRESOURCES:  # kube's kinds for them: PodExecOptions, PodAttachOptions, …
            kind = {"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}[sub]
            out.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                        "kind": kind, "verbs": ["create", "get"]})
        else:
            out.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                        "kind": r.kind, "verbs": ["get", "patch", "update"]})
    return out


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    resources = [r for r in ALL if r.group == group and r.version == version]
    if not resources:
        return None
    entries = [e for r in resources for e in _entries(r)]
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": entries}
