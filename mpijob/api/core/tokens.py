"""ServiceAccount tokens: JWTs as kube-apiserver's token controller and TokenRequest issue them, pure.

Signed with HS256 and a key only the server and the kubelet read (`Home.service_account_key`), with
kube's claims (`iss`, `sub` = `system:serviceaccount:<ns>:<name>`, `aud`, `iat`,
`exp`, and the private `kubernetes.io` claim naming the namespace, the ServiceAccount and its uid, and
the pod when the token is bound to one). Nothing is stored: the server checks the signature, the expiry
and that the ServiceAccount (and the pod) still exist with those uids, so deleting either revokes it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

from mpijob.api import names

# The cluster CA (`$MPIJOB_HOME/tls/ca.crt`), and its name in a pod's ServiceAccount volume (the key of
# kube's `kube-root-ca.crt` ConfigMap).
CA_FILE = "ca.crt"
AUDIENCE = names.SERVICE_ACCOUNT_ISSUER
DEFAULT_SECONDS = 365 * 24 * 3600  # a pod's token outlives any job; deleting the pod or the account revokes it
_HEADER = {"alg": "HS256", "typ": "JWT"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Claims:
    namespace: str
    name: str
    uid: str
    pod: str = ""
    pod_uid: str = ""


def issue(key: bytes, claims: Claims, seconds: int = DEFAULT_SECONDS, now: float | None = None,
          audience: str = AUDIENCE) -> str:
    """A token for `audience`: the API server's, or another service's (a job's status endpoint), which the
    API server then refuses, as kube-apiserver refuses a token not meant for it."""
    issued = int(time.time() if now is None else now)
    k8s: dict[str, Any] = {"namespace": claims.namespace, "serviceaccount": {"name": claims.name, "uid": claims.uid}}
    if claims.pod:
        k8s["pod"] = {"name": claims.pod, "uid": claims.pod_uid}
    payload = {"aud": [audience], "exp": issued + seconds, "iat": issued, "iss": names.SERVICE_ACCOUNT_ISSUER,
               "kubernetes.io": k8s, "nbf": issued,
               "sub": f"{names.SERVICE_ACCOUNT_USER_PREFIX}{claims.namespace}:{claims.name}"}
    head = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
    body = _b64(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
    sig = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(sig)}"


def for_pod(key: bytes, account: dict[str, Any], pod: dict[str, Any], now: float | None = None,
            audience: str = AUDIENCE) -> str:
    """The token the kubelet puts in a pod's ServiceAccount volume (or, with another `audience`, in a
    projected volume for that audience): `account`'s, bound to the stored `pod` (its name and uid), so it
    stops working once that pod is gone."""
    sa, meta = account["metadata"], pod["metadata"]
    claims = Claims(sa["namespace"], sa["name"], sa.get("uid", ""), meta["name"], meta.get("uid", ""))
    return issue(key, claims, now=now, audience=audience)


def verify(key: bytes, token: str, now: float | None = None, audience: str = AUDIENCE) -> Claims | None:
    """The claims of a token this key signed for `audience` and that has not expired, else None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        sig = _unb64(parts[2])
        payload = json.loads(_unb64(parts[1]))
    except (ValueError, TypeError):
        return None
    want = hmac.new(key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(sig, want) or not isinstance(payload, dict):
        return None
    if float(payload.get("exp", 0)) < (time.time() if now is None else now):
        return None
    aud = payload.get("aud")
    if audience not in (aud if isinstance(aud, list) else [aud]):
        return None
    k8s = payload.get("kubernetes.io")
    if not isinstance(k8s, dict) or not isinstance(k8s.get("serviceaccount"), dict):
        return None
    sa, pod = k8s["serviceaccount"], k8s["pod"] if isinstance(k8s.get("pod"), dict) else {}
    return Claims(str(k8s.get("namespace", "")), str(sa.get("name", "")), str(sa.get("uid", "")),
                  str(pod.get("name", "")), str(pod.get("uid", "")))
