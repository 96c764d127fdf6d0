"""How the controllers sandbox a pod, chosen once per server (`controllers/kubelet/sandbox.py` says what
each mode gives a pod and how it is detected).

The values are what `$MPIJOB_SANDBOX` takes and what the server's state file records (`mpijob server
status`). A StrEnum member equals its string, so a mode read back from either compares as the member.
"""

from __future__ import annotations

from enum import StrEnum

ENV = "MPIJOB_SANDBOX"  # forces the mode; unset, the controllers detect it
NONE = "none"  # what the state file says of a server that runs no controllers, so no sandbox


class SandboxMode(StrEnum):
    NAMESPACE = "namespace"  # root and `unshare` works: each pod in its own namespaces, each job its own network
    PROCESS = "process"  # the unprivileged fallback: plain process groups on the host's network

    @classmethod
    def parse(cls, value: str | None) -> SandboxMode | None:
        """The mode `value` names, or None for anything else (unset, empty, a typo)."""
        try:
            return cls(value) if value else None
        except ValueError:
            return None
