"""The RBAC authorizer over one store's Roles, ClusterRoles and bindings (`mpijob.api.core.rbac`), shared by the
API server, which asks it on every request, and the Trainer controller, which asks it who may use which
SCC when it starts a job's pods (`mpijob.controllers.scc`).

It is built from the store when first needed and again only after `invalidate`, which the server calls
around every write that may change RBAC (`mpijob.server.authz`): a few dictionary look-ups a question,
however many bindings there are. `MPIJOB_AUTHORIZATION_MODE=AlwaysAllow` turns authorization off for the
whole process (kube's `--authorization-mode`).
"""

from __future__ import annotations

import os
import weakref

from mpijob.api.core import rbac
from mpijob.api.core.resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES
from mpijob.store.objects import Store

MODE_ENV = "MPIJOB_AUTHORIZATION_MODE"


def enabled() -> bool:
    return os.environ.get(MODE_ENV, "RBAC") != "AlwaysAllow"


class Index:
    """The authorizer of one store, rebuilt lazily after a change to the RBAC objects."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._authorizer: rbac.Authorizer | None = None
        self.builds = 0

    def invalidate(self) -> None:
        self._authorizer = None

    def authorizer(self) -> rbac.Authorizer:
        current = self._authorizer
        if current is None:
            s = self.store
            current = rbac.Authorizer(s.list(ROLES, None)[0], s.list(CLUSTER_ROLES, None)[0],
                                      s.list(ROLE_BINDINGS, None)[0], s.list(CLUSTER_ROLE_BINDINGS, None)[0])
            self._authorizer = current
            self.builds += 1
        return current


_INDEXES: weakref.WeakKeyDictionary[Store, Index] = weakref.WeakKeyDictionary()


def index(store: Store) -> Index:
    found = _INDEXES.get(store)
    if found is None:
        found = _INDEXES[store] = Index(store)
    return found
