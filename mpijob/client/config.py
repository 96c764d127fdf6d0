"""Which cluster a command talks to, resolved the way kubectl does plus one local default.

Order: an explicit `--kubeconfig`, else `$KUBECONFIG` when set, else the embedded local cluster of
`$MPIJOB_HOME` — started on demand, so a first `mpijob run` just works. `--context` picks a context in
whichever kubeconfig won. Everything after this point speaks only the Kubernetes API.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes.config import list_kube_config_contexts
from kubernetes.config.config_exception import ConfigException

from mpijob.api.errors import ApiError
from mpijob.store.home import Home

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Target:
    """A resolved cluster: the kubeconfig (path, or `:`-joined list), the context and its namespace."""

    kubeconfig: str
    context: str | None
    namespace: str
    local: bool  # True for the embedded local cluster of `$MPIJOB_HOME`


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def local_kubeconfig(start: bool = True, notify: Callable[[str], None] = _stderr) -> Path:
    """The kubeconfig of the local cluster in `$MPIJOB_HOME`, starting the server when it is down.

    Raises `ServerUnavailable` when it is down and `start` is false.
    """
    from mpijob.client.errors import ServerUnavailable
    from mpijob.store import supervisor

    home = Home.default()
    info = supervisor.status(home)
    if info is None:
        if not start:
            raise ServerUnavailable(str(home.root), "the local cluster is not running (`mpijob server start`)")
        notify(f"starting local cluster in {home.root}…")
        try:
            info = supervisor.start(home.ensure())
        except Exception as exc:  # the supervisor reports why (it includes the server log tail)
            raise ServerUnavailable(str(home.root), f"the local cluster failed to start: {exc}") from exc
    return Path(info.kubeconfig)


def context_namespace(kubeconfig: str, context: str | None) -> tuple[str | None, str]:
    """The context that applies (named or current) and its namespace (`default` when unset)."""
    try:
        contexts, current = list_kube_config_contexts(config_file=kubeconfig)
    except (ConfigException, OSError) as exc:
        raise ApiError(
            400, "BadRequest", f"kubeconfig {kubeconfig!r} is unusable: {exc}; pass a valid --kubeconfig"
        ) from exc
    chosen = current
    if context is not None:
        chosen = next((c for c in contexts or [] if c.get("name") == context), None)
        if chosen is None:
            names = ", ".join(sorted(str(c.get("name")) for c in contexts or [])) or "none"
            raise ApiError(
                400,
                "BadRequest",
                f"context {context!r} not found in kubeconfig {kubeconfig!r}; available contexts: {names}",
            )
    if not chosen:
        return context, DEFAULT_NAMESPACE
    namespace = (chosen.get("context") or {}).get("namespace") or DEFAULT_NAMESPACE
    return chosen.get("name"), namespace


def resolve(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    namespace: str | None = None,
    *,
    start: bool = True,
    notify: Callable[[str], None] = _stderr,
) -> Target:
    """Pick the cluster (see module doc); `namespace` overrides the context's namespace."""
    local = False
    if kubeconfig is not None:
        path = str(Path(kubeconfig).expanduser())
        if not Path(path).is_file():
            raise ApiError(400, "BadRequest", f"--kubeconfig {path!r}: no such file; pass an existing kubeconfig")
    elif os.environ.get("KUBECONFIG"):
        path = os.environ["KUBECONFIG"]
    else:
        path = str(local_kubeconfig(start=start, notify=notify))
        local = True
    name, ctx_ns = context_namespace(path, context)
    return Target(path, name, namespace or ctx_ns, local)
