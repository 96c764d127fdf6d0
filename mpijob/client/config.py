"""Which cluster a command talks to, chosen the way kubectl chooses plus one local default.

Order: an explicit kubeconfig file, else `$KUBECONFIG` when set, else the embedded local cluster of
`$MPIJOB_HOME` — started on demand, so a first `mpijob run` just works. A context picks one in
whichever kubeconfig won. Everything after this point speaks only the Kubernetes API.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mpijob.client import kubeconfig as kc
from mpijob.client.errors import InvalidArgument, Unreachable
from mpijob.store.home import Home


@dataclass(frozen=True)
class ClusterChoice:
    """The chosen cluster: its kubeconfig (a path, or a `:`-joined list), context and namespace."""

    kubeconfig: str
    context: str | None
    namespace: str
    local: bool  # True for the embedded local cluster of `$MPIJOB_HOME`
    config: kc.Kubeconfig | None = field(default=None, compare=False, repr=False)

    def credentials(self) -> kc.Credentials:
        config = self.config or kc.load(self.kubeconfig)
        return config.credentials(self.context)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def local_kubeconfig(start: bool = True, notify: Callable[[str], None] = _stderr) -> Path:
    """The kubeconfig of the local cluster in `$MPIJOB_HOME`, starting the server when it is down.

    Raises `Unreachable` when it is down and `start` is false."""
    from mpijob.store import server_process

    home = Home.default()
    info = server_process.running(home)
    if info is None:
        if not start:
            raise Unreachable(str(home.root), "the local cluster is not running (`mpijob server start`)")
        notify(f"starting local cluster in {home.root}…")
        try:
            info = server_process.start(home.ensure())
        except Exception as exc:  # server_process.start says why (with the server log's tail)
            raise Unreachable(str(home.root), f"the local cluster failed to start: {exc}") from exc
    return Path(info.kubeconfig)


def choose_cluster(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    namespace: str | None = None,
    *,
    start: bool = True,
    notify: Callable[[str], None] = _stderr,
) -> ClusterChoice:
    """Pick the cluster (see module doc); `namespace` overrides the context's namespace."""
    local = False
    if kubeconfig is not None:
        path = str(Path(kubeconfig).expanduser())
        if not Path(path).is_file():
            raise InvalidArgument("kubeconfig", path, "is no such file", "pass the path of an existing kubeconfig")
        config = kc.load(path, require_all=True)
    elif os.environ.get("KUBECONFIG"):
        path = os.environ["KUBECONFIG"]
        config = kc.load(path)
    else:
        path = str(local_kubeconfig(start=start, notify=notify))
        config = kc.load(path, require_all=True)
        local = True
    name, _ = config.context(context)
    return ClusterChoice(path, name or context, namespace or config.namespace(name or None), local, config)
