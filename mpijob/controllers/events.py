"""Kubernetes Events: every transition the controllers make is recorded where `describe` finds it."""

from __future__ import annotations

import uuid

from mpijob.api import Obj
from mpijob.api.resources import EVENTS
from mpijob.store.objects import Store, now

COMPONENT = "mpijob-controller"


def record(store: Store, obj: Obj, reason: str, message: str, warning: bool = False,
           component: str = COMPONENT) -> None:
    """An Event on `obj`, from `component` (the controllers; kube-scheduler's name for its own words)."""
    meta = obj["metadata"]
    ts = now()
    store.create(
        EVENTS,
        {
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta.get("namespace", "default")},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": meta["name"],
                "namespace": meta.get("namespace", "default"),
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": "Warning" if warning else "Normal",
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "eventTime": None,
            "count": 1,
            "source": {"component": component},
            "reportingComponent": component,
        },
    )
