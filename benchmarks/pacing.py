"""Sending pieces over a WebSocket at real-time pace while hearing what comes back: the live
suites' clients (realtime.py's OpenAI Realtime sessions, realtime_whisperlive.py's peer)."""

from __future__ import annotations

import asyncio
import json
import time

LINGER_SECONDS = 10.0  # after the last piece: the last turn's text, however loaded the server is


async def send_at_pace(ws, messages: list, every: float) -> list[tuple[dict, float]]:
    """Send `messages` (text or bytes) one every `every` seconds; (each JSON message received,
    wall seconds since the first was sent), until LINGER_SECONDS after the last."""
    received: list[tuple[dict, float]] = []
    start = time.monotonic()

    async def read():
        async for message in ws:
            received.append((json.loads(message), time.monotonic() - start))

    reader = asyncio.create_task(read())
    for n, message in enumerate(messages):
        await asyncio.sleep(max(0.0, start + n * every - time.monotonic()))
        await ws.send(message)
    await asyncio.sleep(LINGER_SECONDS)
    reader.cancel()
    return received
