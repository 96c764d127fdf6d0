"""NetworkPolicy (networking.k8s.io/v1): kube-apiserver's defaults and validation, and where the local
cluster's network does something else than a policy asks.

The local cluster runs no policy engine. In the namespace sandbox every TrainJob has a network of its own
(`controllers/kubelet/network.py`): its pods reach each other on any port and the API server at the
`kubernetes` Service, and nothing else reaches them or is reached by them, whatever policies exist. A
policy is compared with that model when it is written, rule by rule, and every rule that means something
else here is named in a `Warning`, as `support.py` names the fields it does not honour:

* a rule allowing traffic across jobs (no peers, an ipBlock, a namespaceSelector, or a podSelector that is
  not the policy's own job) is not honoured: cross-job traffic stays denied;
* a rule narrowing traffic inside a job (ports, or pod labels besides the job's name) is not enforced:
  inside a job everything is allowed;
* egress rules none of which reach the API server: it stays reachable.

A policy without rules (a default deny) and one that allows a job's pods from its own pods
(`jobset.sigs.k8s.io/jobset-name` on both sides) say what the local network does, and get no warning.
In the process sandbox (a server that is not root) pods share the host's network and no policy is
enforced: one warning says so. docs/security.md "Network isolation". Pure.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.errors import Cause
from mpijob.api.core.selectors import format_label_selector, is_list_of, parse_labels, selector_causes
from mpijob.api.core.structural import show

INGRESS, EGRESS = "Ingress", "Egress"
PROTOCOLS = ("TCP", "UDP", "SCTP")
_PEERS = {"ingress": "from", "egress": "to"}  # a rule's peers: where traffic comes from, where it goes to
_TYPES = {"ingress": INGRESS, "egress": EGRESS}
_ANY = {"ingress": "any source", "egress": "any destination"}
_PORT_NAME = re.compile(r"^[-a-z0-9]+$")

NOT_HONOURED = ("is not honoured: the local cluster gives every TrainJob its own network; pods reach only their "
                "own job's pods and the API server")
INSIDE_A_JOB = "not enforced inside a job's network: a job's pods reach each other on any port"
NOT_ENFORCED = ("NetworkPolicy is not enforced: the server is not root, so pods run in the process sandbox and "
                "share the host's network (run the server as root to give every TrainJob its own network)")


# -- kube-apiserver's defaults and validation (pkg/apis/networking: defaults.go, validation.go) --------


def causes(policy: Obj) -> list[Cause]:
    """Why kube-apiserver would refuse this NetworkPolicy (one cause per field, with the fix); when there is
    nothing, `policy` gets kube's defaults, as it is stored: `podSelector: {}`, `policyTypes` from its
    rules (Ingress, plus Egress when it has egress rules), `protocol: TCP` on every port."""
    spec = policy.get("spec")
    if spec is None:
        spec = policy["spec"] = {}
    if not isinstance(spec, dict):
        return [Cause("spec", f"Invalid value: {show(spec)}: must be an object with podSelector, policyTypes, "
                              "ingress and egress")]
    out = selector_causes(spec.get("podSelector"), "spec.podSelector")
    for key, peers_key in _PEERS.items():
        rules, where = spec.get(key), f"spec.{key}"
        if not is_list_of(rules, dict, where, out, f"rules (objects with ports and {peers_key})"):
            continue
        for i, rule in enumerate(rules or []):
            ports, peers = rule.get("ports"), rule.get(peers_key)
            if is_list_of(ports, dict, f"{where}[{i}].ports", out, "ports (objects with protocol, port, endPort)"):
                for j, port in enumerate(ports or []):
                    out += _port_causes(port, f"{where}[{i}].ports[{j}]")
            if is_list_of(peers, dict, f"{where}[{i}].{peers_key}", out,
                          "peers (objects with podSelector, namespaceSelector or ipBlock)"):
                for j, peer in enumerate(peers or []):
                    out += _peer_causes(peer, f"{where}[{i}].{peers_key}[{j}]")
    out += _policy_types_causes(spec.get("policyTypes"))
    if not out:
        _default(spec)
    return out


def _default(spec: Obj) -> None:
    spec["podSelector"] = spec.get("podSelector") or {}
    if not spec.get("policyTypes"):
        spec["policyTypes"] = [INGRESS, EGRESS] if spec.get("egress") else [INGRESS]
    for key in _PEERS:
        for rule in spec.get(key) or []:
            for port in rule.get("ports") or []:
                port["protocol"] = port.get("protocol") or "TCP"


def _port_causes(port: Obj, where: str) -> list[Cause]:
    out: list[Cause] = []
    protocol, number, end = port.get("protocol"), port.get("port"), port.get("endPort")
    if protocol is not None and protocol not in PROTOCOLS:
        out.append(Cause(f"{where}.protocol", f'Unsupported value: {show(protocol)}: supported values: "TCP", '
                                              '"UDP", "SCTP"', "FieldValueNotSupported"))
    if end is not None and (not isinstance(end, int) or isinstance(end, bool)):
        return [*out, Cause(f"{where}.endPort", f"Invalid value: {show(end)}: must be an integer port number")]
    if isinstance(number, bool) or not isinstance(number, (int, str, type(None))):
        return [*out, Cause(f"{where}.port", f"Invalid value: {show(number)}: must be a port number (1-65535) or "
                                             "a port name such as 'http'")]
    if number is None:
        if end is not None:
            out.append(Cause(f"{where}.endPort", f"Invalid value: {end}: may not be specified when `port` is not "
                                                 "specified; set port to the first port of the range"))
    elif isinstance(number, str):
        if end is not None:
            out.append(Cause(f"{where}.endPort", f"Invalid value: {end}: may not be specified when `port` is "
                                                 "non-numeric; give port as a number"))
        out += [Cause(f"{where}.port", f"Invalid value: {show(number)}: {why}") for why in _port_name_problems(number)]
    else:
        out += _port_number_causes(number, f"{where}.port")
        if end is not None:
            if end < number:
                out.append(Cause(f"{where}.endPort", f"Invalid value: {end}: must be greater than or equal to "
                                                     f"`port` ({number})"))
            out += _port_number_causes(end, f"{where}.endPort")
    return out


def _port_number_causes(number: int, where: str) -> list[Cause]:
    if 1 <= number <= 65535:
        return []
    return [Cause(where, f"Invalid value: {number}: must be between 1 and 65535, inclusive")]


def _port_name_problems(name: str) -> list[str]:
    """apimachinery's `IsValidPortName` (an IANA service name)."""
    out = []
    if len(name) > 15:
        out.append("must be no more than 15 characters")
    if not _PORT_NAME.match(name):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        out.append("must contain at least one letter (a-z); give a port number as a number, not a string")
    if name.startswith("-") or name.endswith("-"):
        out.append("must not begin or end with a hyphen")
    if "--" in name:
        out.append("must not contain consecutive hyphens")
    return out


def _peer_causes(peer: Obj, where: str) -> list[Cause]:
    given = [k for k in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(k) is not None]
    out = selector_causes(peer.get("podSelector"), f"{where}.podSelector")
    out += selector_causes(peer.get("namespaceSelector"), f"{where}.namespaceSelector")
    if "ipBlock" in given:
        out += _ip_block_causes(peer["ipBlock"], f"{where}.ipBlock")
    if not given:
        out.append(Cause(where, "Required value: must specify a peer: podSelector, namespaceSelector or ipBlock",
                         "FieldValueRequired"))
    elif len(given) > 1 and "ipBlock" in given:
        out.append(Cause(where, "Forbidden: may not specify both ipBlock and another peer; put each in a peer of "
                                "its own", "FieldValueForbidden"))
    return out


def _network(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """A CIDR as kube parses it (`ParseCIDRSloppy`: a prefix length is required, host bits may be set)."""
    if not isinstance(cidr, str) or "/" not in cidr:
        return None
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


def _ip_block_causes(block: Any, where: str) -> list[Cause]:
    if not isinstance(block, dict):
        return [Cause(where, f"Invalid value: {show(block)}: must be an object with cidr and except")]
    cidr, excepts = block.get("cidr"), block.get("except")
    if not cidr:
        return [Cause(f"{where}.cidr", "Required value: give the block as a CIDR, e.g. 10.9.8.0/24",
                      "FieldValueRequired")]
    network = _network(cidr)
    if network is None:
        return [Cause(f"{where}.cidr", f"Invalid value: {show(cidr)}: must be a valid CIDR value, (e.g. "
                                       "10.9.8.0/24 or 2001:db8::/64)")]
    out: list[Cause] = []
    if not is_list_of(excepts, str, f"{where}.except", out, "CIDRs"):
        return out
    for i, text in enumerate(excepts or []):
        inner = _network(text)
        if inner is None:
            out.append(Cause(f"{where}.except[{i}]", f"Invalid value: {show(text)}: must be a valid CIDR value, "
                                                     "(e.g. 10.9.8.0/24 or 2001:db8::/64)"))
        elif (inner.version != network.version or inner.network_address not in network
              or inner.prefixlen <= network.prefixlen):
            out.append(Cause(f"{where}.except[{i}]", f"Invalid value: {show(text)}: must be a strict subset of "
                                                     f"`cidr` ({cidr}): inside it, with a longer prefix"))
    return out


def _policy_types_causes(types: Any) -> list[Cause]:
    out: list[Cause] = []
    if not is_list_of(types, str, "spec.policyTypes", out, '"Ingress" and/or "Egress"'):
        return out
    if len(types or []) > 2:
        return [Cause("spec.policyTypes", f"Invalid value: {show(types)}: may not specify more than two "
                                          "policyTypes")]
    return [Cause(f"spec.policyTypes[{i}]", f'Unsupported value: {show(t)}: supported values: "Ingress", "Egress"',
                  "FieldValueNotSupported") for i, t in enumerate(types or []) if t not in (INGRESS, EGRESS)]


# -- what the local network does with a (valid, defaulted) policy --------------------------------------


def warnings(policy: Obj, api_server: tuple[str, int], shared_network: bool) -> list[str]:
    """Where the local network differs from what `policy` asks, one `Warning` text each: `api_server` is
    the address and port pods reach the API server at; `shared_network` says pods share the host's
    network (the process sandbox), where no policy is enforced."""
    if shared_network:
        return [NOT_ENFORCED]
    spec = policy.get("spec") or {}
    job = _job(spec.get("podSelector") or {})
    out: list[str] = []
    for key, toward in _PEERS.items():
        if _TYPES[key] not in (spec.get("policyTypes") or ()):
            continue  # kube ignores the rules of a direction the policy does not name
        for i, rule in enumerate(spec.get(key) or []):
            where, peers = f"spec.{key}[{i}]", rule.get(toward) or []
            if not peers:
                out.append(f"{where}: traffic {toward} {_ANY[key]} {NOT_HONOURED}")
            for j, peer in enumerate(peers):
                out += _peer_warnings(peer, f"{where}.{toward}[{j}]", toward, job, api_server[0])
            if rule.get("ports") and any(not peer.get("ipBlock") for peer in peers or [{}]):
                out.append(f"{where}.ports: ports are {INSIDE_A_JOB}")
    egress = spec.get("egress") or []
    if EGRESS in (spec.get("policyTypes") or ()) and egress and not any(_reaches(r, *api_server) for r in egress):
        address, port = api_server
        out.append(f"spec.egress: the API server stays reachable at {address}:{port}: the local cluster lets "
                   "every pod reach it, whatever its policies say")
    return out


def _peer_warnings(peer: Obj, where: str, toward: str, job: str | None, api_server: str) -> list[str]:
    if peer.get("ipBlock"):
        cidr = peer["ipBlock"]["cidr"]
        if toward == "to" and _network(cidr) == ipaddress.ip_network(api_server):
            return []  # the API server alone: reachable here too
        return [f"{where}.ipBlock: traffic {toward} {cidr} {NOT_HONOURED}"]
    if peer.get("namespaceSelector") is not None:
        return [f"{where}.namespaceSelector: traffic {toward} other namespaces {NOT_HONOURED}"]
    selector = peer.get("podSelector") or {}
    if job is None or _job(selector) != job:
        return [f"{where}.podSelector: traffic {toward} other TrainJobs' pods {NOT_HONOURED}"]
    if len(selector.get("matchLabels") or {}) + len(selector.get("matchExpressions") or []) > 1:
        return [f"{where}.podSelector: labels besides {names.LABEL_JOBSET_NAME} are {INSIDE_A_JOB}"]
    return []


def _job(selector: Obj) -> str | None:
    """The one TrainJob a pod selector confines itself to (by JobSet's name label, which Trainer sets to
    the TrainJob's name on all its pods), or None."""
    job = (selector.get("matchLabels") or {}).get(names.LABEL_JOBSET_NAME)
    if job is not None:
        return str(job)
    for expr in selector.get("matchExpressions") or []:
        if expr["key"] == names.LABEL_JOBSET_NAME and expr["operator"] == "In" and len(expr["values"]) == 1:
            return str(expr["values"][0])
    return None


def _reaches(rule: Obj, address: str, port: int) -> bool:
    """Whether an egress rule allows TCP to `address`:`port` (no peers, or an ipBlock holding it)."""
    peers = rule.get("to") or []
    ip = ipaddress.ip_address(address)
    if peers and not any(_holds(peer.get("ipBlock"), ip) for peer in peers):
        return False
    ports = rule.get("ports") or []
    return not ports or any(_port_allows(p, port) for p in ports)


def _holds(block: Obj | None, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if not block:
        return False
    inside = _network(block["cidr"])
    outside = [_network(text) for text in block.get("except") or []]
    return inside is not None and ip in inside and not any(net is not None and ip in net for net in outside)


def _port_allows(port: Obj, number: int) -> bool:
    first = port.get("port")
    if port.get("protocol", "TCP") != "TCP" or isinstance(first, str):
        return False  # a named port is a pod's container port, which the API server is not
    return first is None or first <= number <= (port.get("endPort") or first)


# -- what a cluster's policy engine makes of a namespace's policies (`mpijob doctor`, docs/doctor.md) ----


def _selects(selector: Obj | None, labels: dict[str, str]) -> bool:
    """Whether a LabelSelector selects `labels` (`{}` selects everything)."""
    return all(r.matches(labels) for r in parse_labels(format_label_selector(selector or {})))


def _peer_allows(peer: Obj, labels: dict[str, str], namespace_labels: dict[str, str]) -> bool:
    """Whether a peer names a pod of the policy's own namespace labelled `labels`. An ipBlock never does:
    pod addresses are the cluster's to choose, and kube leaves ipBlock rules for pods undefined."""
    if peer.get("ipBlock"):
        return False
    if peer.get("namespaceSelector") is not None and not _selects(peer["namespaceSelector"], namespace_labels):
        return False
    return peer.get("podSelector") is None or _selects(peer["podSelector"], labels)


def _rule_port_allows(port: Obj, number: int | None, port_names: dict[str, int]) -> bool:
    """Whether one of a rule's ports lets TCP to `number` through (None: any port, which only a port entry
    without a port number lets through); a named port is the destination container's port of that name."""
    if port.get("protocol", "TCP") != "TCP":
        return False
    first = port.get("port")
    if first is None:
        return True
    if number is None:
        return False
    if isinstance(first, str):
        return port_names.get(first) == number
    return bool(first <= number <= (port.get("endPort") or first))


def _policy_types(spec: Obj) -> list[str]:
    """The directions a policy isolates: its policyTypes, or kube's default for it."""
    return list(spec.get("policyTypes") or ([INGRESS, EGRESS] if spec.get("egress") else [INGRESS]))


def blocking(policies: list[Obj], source: dict[str, str], target: dict[str, str], namespace_labels: dict[str, str],
             port: int | None, port_names: dict[str, int] | None = None) -> list[str]:
    """The names of the policies that stop TCP from a pod labelled `source` to a pod labelled `target` on
    `port` (None: an ephemeral port), both in the policies' namespace (labelled `namespace_labels`), as a
    cluster's policy engine decides it: a pod selected by a policy of a direction is isolated in that
    direction, and traffic needs a rule of one of those policies that allows it, on both ends. [] when it
    passes. `port_names` maps the target container's port names to numbers."""
    out: list[str] = []
    for key, toward, pod, peer in (("ingress", "from", target, source), ("egress", "to", source, target)):
        isolating = [p for p in policies if _TYPES[key] in _policy_types(p.get("spec") or {})
                     and _selects((p.get("spec") or {}).get("podSelector"), pod)]
        allowed = any(
            (not rule.get(toward) or any(_peer_allows(x, peer, namespace_labels) for x in rule[toward]))
            and (not rule.get("ports") or any(_rule_port_allows(x, port, port_names or {}) for x in rule["ports"]))
            for p in isolating for rule in (p.get("spec") or {}).get(key) or [])
        if isolating and not allowed:
            out += [p["metadata"]["name"] for p in isolating if p["metadata"]["name"] not in out]
    return out
