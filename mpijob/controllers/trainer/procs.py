"""The processes a run supervises, by pod and role: what the runner, its readiness probes and its verdicts
share."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Role(enum.Enum):
    """Which process of a pod: its container, or the sshd a process-mode launcher host runs beside it."""

    CONTAINER = "container"
    SSHD = "sshd"


SUPERVISOR_DIR = {Role.CONTAINER: "supervisor", Role.SSHD: "supervisor-sshd"}  # in the pod's directory (shim.py)


@dataclass(frozen=True)
class Proc:
    """The key of one supervised process: its pod and its role there."""

    pod: str
    role: Role = Role.CONTAINER
