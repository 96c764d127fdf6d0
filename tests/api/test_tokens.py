"""ServiceAccount tokens: what a pod's token says and how it is checked (pure; the server's use of it is
tested in tests/server/test_rbac_http.py, a pod's in tests/e2e/test_service_account_token.py)."""

from __future__ import annotations

import base64
import json

from mpijob.api.core import tokens

KEY = b"k" * 32
ACCOUNT = {"metadata": {"name": "default", "namespace": "team-a", "uid": "sa-uid"}}
POD = {"metadata": {"name": "pi-launcher-0-0-abcde", "namespace": "team-a", "uid": "pod-uid"}}


def _payload(token: str) -> dict:
    body = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def test_a_pod_token_is_the_account_bound_to_the_pod() -> None:
    token = tokens.for_pod(KEY, ACCOUNT, POD, now=1000)
    assert tokens.verify(KEY, token, now=2000) == tokens.Claims("team-a", "default", "sa-uid", "pi-launcher-0-0-abcde",
                                                                "pod-uid")
    payload = _payload(token)
    assert payload["sub"] == "system:serviceaccount:team-a:default"
    assert payload["kubernetes.io"] == {"namespace": "team-a", "serviceaccount": {"name": "default", "uid": "sa-uid"},
                                        "pod": {"name": "pi-launcher-0-0-abcde", "uid": "pod-uid"}}
    assert payload["iss"] == "https://kubernetes.default.svc.cluster.local" and payload["iat"] == 1000


def test_a_token_another_key_signed_or_that_expired_is_refused() -> None:
    token = tokens.for_pod(KEY, ACCOUNT, POD, now=1000)
    assert tokens.verify(b"x" * 32, token, now=2000) is None
    assert tokens.verify(KEY, token, now=1000 + tokens.DEFAULT_SECONDS + 1) is None
    head, body, sig = token.split(".")
    assert tokens.verify(KEY, f"{head}.{body}x.{sig}", now=2000) is None


def test_a_token_for_another_audience_is_not_the_api_servers() -> None:
    """A job's status token (Trainer's per-TrainJob audience) opens that endpoint only, as kube-apiserver
    refuses a projected token whose audience is not its own."""
    status = "trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/pi/status"
    token = tokens.for_pod(KEY, ACCOUNT, POD, now=1000, audience=status)
    assert _payload(token)["aud"] == [status]
    assert tokens.verify(KEY, token, now=2000) is None
    assert tokens.verify(KEY, token, now=2000, audience=status).pod == "pi-launcher-0-0-abcde"
    assert tokens.verify(KEY, tokens.for_pod(KEY, ACCOUNT, POD, now=1000), now=2000, audience=status) is None
