"""A WebSocket as the streaming protocols see it: binary messages in, binary messages out."""

from __future__ import annotations

from typing import Protocol

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected


class Messages(Protocol):
    """A WebSocket's binary messages; `send` is never called concurrently."""

    async def receive(self) -> bytes | None:
        """The next message; None once the WebSocket is closed."""

    async def send(self, data: bytes) -> None:
        """Send one message; raises ConnectionError when the client is gone."""


class WebSocketMessages:
    """An accepted starlette WebSocket as `Messages`."""

    def __init__(self, websocket: WebSocket) -> None:
        self._ws = websocket

    async def receive(self) -> bytes | None:
        try:
            message = await self._ws.receive()
        except WebSocketDisconnected:  # a disconnect was already read
            return None
        if message["type"] == "websocket.disconnect":
            return None
        data = message.get("bytes")
        return data if data is not None else str(message.get("text", "")).encode()

    async def send(self, data: bytes) -> None:
        try:
            await self._ws.send_bytes(data)
        except (WebSocketDisconnect, WebSocketDisconnected) as e:
            raise ConnectionError("the client closed the WebSocket") from e
