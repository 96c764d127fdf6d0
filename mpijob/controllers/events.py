"""Kubernetes Events: every transition the controllers make is recorded where `describe` finds it.

An Event that repeats one already recorded (same object, type, reason, message and component) bumps that
one's `count` and `lastTimestamp`, as client-go's recorder does: a job re-adopted by five restarts shows
one Event of count 5 rather than five."""

from __future__ import annotations

import hashlib

from mpijob.api import Obj
from mpijob.api.core.resources import EVENTS
from mpijob.store.objects import Store, now

COMPONENT = "mpijob-controller"


def record(store: Store, obj: Obj, reason: str, message: str, warning: bool = False,
           component: str = COMPONENT) -> None:
    """An Event on `obj`, from `component` (the controllers; kube-scheduler's name for its own words)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace", "default")
    event_type = "Warning" if warning else "Normal"
    # named by what makes it the same Event, so a repeat finds it (kube names it by time; the shape is alike)
    key = "\0".join((obj.get("kind", ""), meta.get("uid", ""), event_type, reason, message, component))
    name = f"{meta['name']}.{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    ts = now()
    if (seen := store.try_get(EVENTS, namespace, name)) is not None:
        seen["count"] = seen.get("count", 1) + 1
        seen["lastTimestamp"] = ts
        store.update(EVENTS, seen)
        return
    store.create(
        EVENTS,
        {
            "metadata": {"name": name, "namespace": namespace},
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
            "type": event_type,
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "eventTime": None,
            "count": 1,
            "source": {"component": component},
            "reportingComponent": component,
        },
    )
