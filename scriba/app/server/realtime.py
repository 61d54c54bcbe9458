"""The Realtime transcription WebSocket: `/v1/realtime?intent=transcription`, OpenAI's
transcription sessions (realtime_protocol.py) on the shared engines.

Each connection has a LiveSession whose own thread does the transcribing; this coroutine only
reads the client's events (queueing its audio) and writes the session's events as they come, so
a slow client leaves the engine and the other sessions alone, and a closed socket stops its
session at once (its transcriptions cancelled, their blocks freed).
"""

from __future__ import annotations

import asyncio
import json

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from scriba.app.server.realtime_protocol import RealtimeConnection, error_event

router = APIRouter()


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket):
    intent = websocket.query_params.get("intent", "transcription")
    await websocket.accept()
    if intent != "transcription":
        await websocket.send_text(
            json.dumps(
                error_event(
                    "this server runs transcription sessions only (intent=transcription), "
                    f"got intent={intent!r}",
                    "unsupported_intent",
                    "intent",
                )
            )
        )
        await websocket.close(code=1008)
        return
    loop, outbox = asyncio.get_running_loop(), asyncio.Queue()

    def send(event: dict) -> None:  # from any thread
        loop.call_soon_threadsafe(outbox.put_nowait, event)

    app = websocket.app
    connection = RealtimeConnection(app.state.served, app.state.settings, send)
    writer = asyncio.create_task(_write(websocket, outbox))
    try:
        await websocket.send_text(json.dumps(connection.created()))
        while True:
            connection.handle(await websocket.receive_text())
    except WebSocketDisconnect:  # the client hung up: a normal end; `finally` frees the session
        return
    finally:
        connection.close()
        writer.cancel()


async def _write(websocket: WebSocket, outbox: asyncio.Queue) -> None:
    while True:
        event = await outbox.get()
        try:
            await websocket.send_text(json.dumps(event))
        except (WebSocketDisconnect, RuntimeError):  # gone: the reader's finally closes the session
            return
