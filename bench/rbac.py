"""What authorization costs per request: p50 latency of one GET with 1,000 RoleBindings, RBAC on vs off.

    .venv/bin/python bench/rbac.py              # 1,000 bindings, 400 requests a side
    .venv/bin/python bench/rbac.py --requests 1000 --bindings 1000

Two servers without controllers in temporary homes, the same objects in each: 1,000 namespaces'
worth of RoleBindings (`edit` to a user of their own, spread over 50 namespaces) plus one for the
measured user, `bench-user`, bound to `view` in `team-0`. One server authorizes with RBAC, the other
runs with `MPIJOB_AUTHORIZATION_MODE=AlwaysAllow`. The measured request is the same on both: `GET
/api/v1/namespaces/team-0/configmaps/probe` with bench-user's token (a normal user: the admin's
`system:masters` short-circuit would skip the rules). Requests alternate between the two servers
over one keep-alive connection each, after a warm-up, so both share the machine's noise. Prints one
JSON object: p50 and p90 of each side in milliseconds and `overhead_p50` (on/off − 1; the target is
within 0.10). Exits 0 whenever both sides ran; it never judges the figures.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import ssl
import statistics
import sys
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_clusters
from surfaces import timed_gets

from mpijob.store import server_process

RBAC_V1 = "/apis/rbac.authorization.k8s.io/v1"


def _client(info: server_process.ServerInfo, token: str | None = None) -> httpx.Client:
    config = json.loads(info.kubeconfig.read_text())
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    bearer = token or config["users"][0]["user"]["token"]
    return httpx.Client(base_url=info.url, verify=ssl.create_default_context(cadata=ca),
                        headers={"Authorization": f"Bearer {bearer}"}, timeout=60)


def _populate(info: server_process.ServerInfo, bindings: int) -> str:
    """The objects; returns bench-user's token."""
    with _client(info) as admin:
        for i in range(50):
            admin.post("/api/v1/namespaces", json={"metadata": {"name": f"team-{i}"}}).raise_for_status()
        admin.post("/api/v1/namespaces/team-0/configmaps",
                   json={"metadata": {"name": "probe"}, "data": {"k": "v"}}).raise_for_status()
        for i in range(bindings - 1):
            admin.post(f"{RBAC_V1}/namespaces/team-{i % 50}/rolebindings", json={
                "metadata": {"name": f"rb-{i}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"kind": "User", "name": f"user-{i}", "apiGroup": "rbac.authorization.k8s.io"}],
            }).raise_for_status()
        admin.post(f"{RBAC_V1}/namespaces/team-0/rolebindings", json={
            "metadata": {"name": "bench-user-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "bench-user", "apiGroup": "rbac.authorization.k8s.io"}],
        }).raise_for_status()
        made = admin.post("/apis/mpijob.io/v1alpha1/users", json={"metadata": {"name": "bench-user"}})
        made.raise_for_status()
        return str(made.json()["status"]["token"])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--bindings", type=int, default=1000)
    args = parser.parse_args()
    path = "/api/v1/namespaces/team-0/configmaps/probe"
    env = {"on": {}, "off": {"MPIJOB_AUTHORIZATION_MODE": "AlwaysAllow"}}
    try:
        with temp_clusters("mpijob-bench-rbac-", env, controllers=False) as infos, ExitStack() as stack:
            tokens = {side: _populate(infos[side], args.bindings) for side in infos}
            clients = {side: stack.enter_context(_client(infos[side], tokens[side])) for side in infos}
            times: dict[str, list[float]] = {"on": [], "off": []}
            for side in ("on", "off"):  # warm-up: connections, the authorizer's index
                for _ in range(20):
                    clients[side].get(path).raise_for_status()
            for i in range(args.requests):
                timed_gets(clients, path, i, times)
    except Exception as exc:  # noqa: BLE001 — the bench reports and fails, never hides it
        print(f"bench/rbac.py: {exc}", file=sys.stderr)
        return 1
    p50 = {side: statistics.median(v) for side, v in times.items()}
    out = {"bindings": args.bindings, "requests_per_side": args.requests,
           "rbac_on_p50_ms": round(p50["on"], 3), "rbac_off_p50_ms": round(p50["off"], 3),
           "rbac_on_p90_ms": round(_percentile(times["on"], 0.9), 3),
           "rbac_off_p90_ms": round(_percentile(times["off"], 0.9), 3),
           "overhead_p50": round(p50["on"] / p50["off"] - 1, 4), "target": 0.10, "cpus": os.cpu_count()}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
