"""The kubelet's restart of a pod's container: whether its restartPolicy restarts it after an exit, and how long
it waits first (the crash-loop back-off), in the kubelet's words. Pure: the controller keeps the clock.

The back-off is the kubelet's (`pkg/kubelet/kuberuntime`, `doBackOff` over client-go's `flowcontrol.Backoff`):
the first exit restarts at once and arms a back-off of 10 s; each exit after that waits the back-off, which then
doubles, up to 5 minutes. A container that ran for twice the longest back-off before it exited starts over, as
the kubelet forgets a back-off entry left untouched that long.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpijob.api import names

INITIAL_BACK_OFF = 10.0  # seconds: the kubelet's initial crash-loop back-off
MAX_BACK_OFF = 300.0  # and its longest (kubelet's MaxContainerBackOff)
RESET_AFTER = 2 * MAX_BACK_OFF  # a run this long clears the back-off (flowcontrol's garbage collection)
POLICIES = (names.RESTART_ALWAYS, names.RESTART_ON_FAILURE, names.RESTART_NEVER)


def restarts(policy: str, exit_code: int) -> bool:
    """Whether a container that exited with `exit_code` is started again under `policy`."""
    return policy == names.RESTART_ALWAYS or (policy == names.RESTART_ON_FAILURE and exit_code != 0)


@dataclass(frozen=True)
class BackOff:
    """What the kubelet does after an exit that restarts: wait `wait` seconds (0: restart at once), then keep
    `armed` as the back-off for the next exit."""

    wait: float
    armed: float


def back_off(armed: float, ran: float) -> BackOff:
    """The back-off after an exit, given the one `armed` by earlier exits (0: none) and how long the container
    `ran` this time."""
    if ran >= RESET_AFTER:
        armed = 0.0
    if not armed:
        return BackOff(0.0, INITIAL_BACK_OFF)
    return BackOff(armed, min(2 * armed, MAX_BACK_OFF))


def seconds(value: float) -> str:
    """A back-off as Go prints a time.Duration of whole seconds: `10s`, `2m40s`, `5m0s`."""
    whole = int(value)
    return f"{whole // 60}m{whole % 60}s" if whole >= 60 else f"{whole}s"


def pod_ref(namespace: str, name: str, uid: str) -> str:
    """How the kubelet names a pod in its messages: `name_namespace(uid)`."""
    return f"{name}_{namespace}({uid})"


def waiting_message(wait: float, container: str, pod: str) -> str:
    """The waiting state's message (`pod`: `pod_ref`)."""
    return f"back-off {seconds(wait)} restarting failed container={container} pod={pod}"


def back_off_event(container: str, pod: str) -> str:
    """The BackOff Event's message."""
    return f"Back-off restarting failed container {container} in pod {pod}"
