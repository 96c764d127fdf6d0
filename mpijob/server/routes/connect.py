"""`pods/exec`, `pods/attach` and `pods/portforward`: kube's connect subresources, over a WebSocket.

kubectl ≥ 1.30 runs `exec`, `attach` and `cp` (which is `exec tar`) over the WebSocket channel protocol
(`streams/channels.py`), and ≥ 1.31 `port-forward` over SPDY carried in a WebSocket
(`streams/portforward.py`); the `kubernetes` Python client's `stream()` uses the same channels at v4. The
older clients' SPDY upgrade (HTTP/1.1 `Upgrade: SPDY/3.1`) is refused with a Status that says which
kubectl works. Each is authorized as kube authorizes it, `create` on the subresource (the middleware), then
the pod must be running; what runs, and where, is the pod's (`controllers/kubelet/entry.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.datastructures import QueryParams
from starlette.websockets import WebSocket, WebSocketDisconnect

from mpijob.api import Obj, names
from mpijob.api.core import errors
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import PODS
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.server import audit
from mpijob.server.http import parse_bool, status_response
from mpijob.server.routes.logs import pick_container, terminated
from mpijob.server.state import Cluster
from mpijob.server.streams import channels, portforward
from mpijob.server.streams.messages import Messages, WebSocketMessages

if TYPE_CHECKING:
    from mpijob.controllers.kubelet.entry import PodEntry

log = logging.getLogger(__name__)


def spdy_refusal(subresource: str) -> ApiError:
    """What an HTTP request to a connect subresource gets: a SPDY upgrade (kubectl before the WebSocket
    protocols, or with them turned off) is told which client works; anything else, as kube-apiserver says."""
    if subresource == "portforward":
        fix = "kubectl 1.31 or later, without KUBECTL_PORT_FORWARD_WEBSOCKETS=false"
    else:
        fix = "kubectl 1.30 or later, without KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"
    return errors.bad_request(f"pods/{subresource} on the local cluster speaks the WebSocket protocols only "
                              f"({', '.join(_protocols(subresource))}), not SPDY: use {fix}, or the kubernetes "
                              f"Python client's stream()")


def _protocols(subresource: str) -> tuple[str, ...]:
    return portforward.SUBPROTOCOLS if subresource == "portforward" else channels.SUBPROTOCOLS


@dataclass(frozen=True)
class Request:
    """A session asked for, checked: the pod runs, and what the client asked of it makes sense."""

    pod: Obj
    entry: PodEntry
    command: list[str]  # exec's
    options: channels.Options  # exec's and attach's


def check(cluster: Cluster, namespace: str, name: str, subresource: str, query: QueryParams) -> Request:
    """The session asked for, or the ApiError kube-apiserver would answer. Both the WebSocket and an old
    client's SPDY request are checked: kubectl falls back to SPDY when the WebSocket is refused, and shows
    the second answer only."""
    pod = cluster.store.get(PODS, namespace, name)
    picked = pick_container(pod, query.get("container"))
    phase = (pod.get("status") or {}).get("phase", "Pending")
    if phase in ("Succeeded", "Failed"):
        raise errors.bad_request(f"cannot {_VERBS[subresource]} a container in a completed pod; "
                                 f"current phase is {phase}")
    entry = cluster.manager.pod_entry(pod) if cluster.manager is not None else None
    if entry is None or terminated(pod, picked):
        raise errors.bad_request(f"pod {name} is not running yet (phase {phase}): wait for it, e.g. "
                                 f"kubectl wait --for=condition=Ready pod/{name} -n {namespace}")
    options = channels.Options(*(parse_bool(query.get(k), k) for k in ("stdin", "stdout", "stderr", "tty")))
    command = query.getlist("command")
    if subresource == "exec" and not command:
        raise errors.bad_request("you must specify at least 1 command (the request's `command` parameter)")
    if subresource == "attach":
        if options.stdin and entry.stdin is None:
            raise errors.bad_request(f"pod {name}'s container does not read stdin: set `stdin: true` on it "
                                     "to attach with -i")
        if options.tty:
            raise errors.bad_request(f"pod {name}'s container has no terminal (tty): attach without -t")
    return Request(pod, entry, command, options)


async def serve(ws: WebSocket, cluster: Cluster, namespace: str, name: str, subresource: str) -> None:
    """One session: the pod found running and the protocol agreed, or a Status saying why not (no upgrade)."""
    try:
        asked = check(cluster, namespace, name, subresource, ws.query_params)
        offered = list(ws.scope.get("subprotocols") or [])
        protocol = (portforward if subresource == "portforward" else channels).negotiate(offered)
        if protocol is None:
            raise errors.bad_request(f"pods/{subresource} needs one of the WebSocket subprotocols "
                                     f"{', '.join(_protocols(subresource))}; the client offered "
                                     f"{', '.join(offered) or 'none'}")
        ports = portforward.parse_ports(ws.query_params.getlist("ports")) \
            if subresource == "portforward" and protocol == portforward.CHANNEL_SUBPROTOCOL else []
    except ValueError as e:
        await status_response(errors.bad_request(str(e)))(ws.scope, ws.receive, ws.send)
        return
    except ApiError as err:
        await status_response(err)(ws.scope, ws.receive, ws.send)
        return
    command, options, entry = asked.command, asked.options, asked.entry
    uid = asked.pod["metadata"].get("uid", "")
    await ws.accept(subprotocol=protocol)
    messages = WebSocketMessages(ws)
    try:
        if subresource == "exec":
            audit.annotate(ws.scope, names.AUDIT_ANNOTATION_COMMAND, shlex.join(command))
            code = await channels.serve(messages, protocol, entry.argv(command, options.tty), command, options,
                                        end_with_client_only=entry.mode == SandboxMode.PROCESS)
            audit.annotate(ws.scope, names.AUDIT_ANNOTATION_EXIT_CODE, "client gone" if code is None else str(code))
        elif subresource == "attach":
            await _attach(messages, cluster, asked.pod, entry.stdin, options)
        elif protocol == portforward.SPDY_SUBPROTOCOL:
            await portforward.serve_spdy(messages, entry.connect, name, uid)
        else:
            await portforward.serve_channels(messages, entry.connect, ports, name, uid)
    except OSError as e:  # the command could not start: the error channel says why
        log.warning("pods/%s %s/%s could not start: %s", subresource, namespace, name, e)
        if subresource != "portforward":
            with contextlib.suppress(Exception):
                await messages.send(bytes([channels.ERROR]) + channels.json_status(channels.failure(str(e))))
    finally:
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the client may have closed it already
            await ws.close(1000)


_VERBS = {"exec": "exec into", "attach": "attach to", "portforward": "port-forward to"}


async def _attach(messages: Messages, cluster: Cluster, pod: Obj, stdin: Any,
                  options: channels.Options) -> None:
    """The container's output from now on, and the client's stdin into its pipe, until either ends."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    container = pick_container(pod, None)
    await messages.send(bytes([options.first]))
    pipe = os.open(stdin, os.O_WRONLY | os.O_NONBLOCK) if options.stdin and stdin else -1

    async def output() -> None:
        def done() -> bool:
            return cluster.stopping.is_set() or terminated(cluster.store.try_get(PODS, namespace, name), container)

        async for chunk in cluster.logs.follow(namespace, name, container, done=done, tail_lines=0):
            if options.stdout:
                await messages.send(bytes([channels.STDOUT]) + chunk)

    async def inbound() -> None:
        while (message := await messages.receive()) is not None:
            if message[:1] == bytes([channels.STDIN]) and pipe >= 0:
                with contextlib.suppress(BlockingIOError):
                    os.write(pipe, message[1:])

    tasks = [asyncio.ensure_future(output()), asyncio.ensure_future(inbound())]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if tasks[0] in done:
            await messages.send(bytes([channels.ERROR]) + channels.json_status(channels.status(0, [])))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if pipe >= 0:
            os.close(pipe)

