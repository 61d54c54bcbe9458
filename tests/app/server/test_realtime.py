"""The Realtime transcription WebSocket (/v1/realtime?intent=transcription) with real clients:
the `websockets` library sending OpenAI's documented events, and the official `openai` client's
realtime connection (which parses every server event into its own types). Oracle: offline
scriba.transcribe() of each turn's audio, and jfk.flac's known words."""

import asyncio
import base64
import json
import socket
import threading
import time

import numpy as np
import openai
import paths
import pytest
import soxr
import websockets

import scriba
from scriba.app.server.app import ServerSettings, asgi_app
from scriba.app.server.models import ServedModels
from scriba.media.load import load_audio

KEY = "realtime-key"
PAUSE = np.zeros(2 * 16000, np.float32)


@pytest.fixture(scope="module")
def server():
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = ServedModels([None], None)
    settings = ServerSettings(api_key=KEY, max_audio_seconds=120)
    config = uvicorn.Config(asgi_app(served, settings), host="127.0.0.1", port=port, log_level="warning")
    runner = uvicorn.Server(config)
    threading.Thread(target=runner.run, daemon=True).start()
    while not runner.started:
        time.sleep(0.05)
    yield f"127.0.0.1:{port}", served
    runner.should_exit = True


@pytest.fixture(scope="module")
def jfk():
    return load_audio(paths.JFK)


def pcm16(samples: np.ndarray) -> str:
    return base64.b64encode((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()).decode()


def as_heard(samples: np.ndarray) -> np.ndarray:
    """What the server decodes from pcm16(samples) at 16 kHz."""
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").astype(np.float32) / 32768.0


def session_update(rate=16000, detection="server_vad", **transcription) -> str:
    turns = {"type": "server_vad", "silence_duration_ms": 600} if detection == "server_vad" else detection
    audio_in = {
        "format": {"type": "audio/pcm", "rate": rate},
        "turn_detection": turns,
        "transcription": {"model": "whisper-1", **transcription},
    }
    return json.dumps(
        {"type": "session.update", "session": {"type": "transcription", "audio": {"input": audio_in}}}
    )


async def stream(ws, samples: np.ndarray, rate: int = 16000, pace: float = 0.0, chunk_seconds: float = 0.1):
    step = int(rate * chunk_seconds)
    for i in range(0, len(samples), step):
        await ws.send(
            json.dumps({"type": "input_audio_buffer.append", "audio": pcm16(samples[i : i + step])})
        )
        if pace:
            await asyncio.sleep(chunk_seconds / pace)


async def events_until(ws, done, timeout: float = 60.0) -> list[dict]:
    """Server events until `done(events)` holds."""
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while not done(seen):
        seen.append(json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic())))
    return seen


def connect(server, key=KEY, intent="transcription"):
    url = f"ws://{server[0]}/v1/realtime?intent={intent}"
    return websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}, max_size=2**24)


def completed(events) -> list[dict]:
    return [e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed"]


def test_a_committed_turn_streams_deltas_then_transcribe_s_text(server, jfk):
    async def run():
        async with connect(server) as ws:
            created = json.loads(await ws.recv())
            assert created["type"] == "session.created" and created["session"]["type"] == "transcription"
            await ws.send(session_update(detection=None, language="en"))
            updated = json.loads(await ws.recv())
            assert updated["type"] == "session.updated"
            assert updated["session"]["audio"]["input"]["turn_detection"] is None
            await stream(ws, jfk, pace=4.0)  # four times real time: the tail is transcribed as it grows
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            return await events_until(ws, lambda seen: completed(seen))

    events = asyncio.run(run())
    kinds = [e["type"] for e in events]
    deltas = [e["delta"] for e in events if e["type"].endswith("transcription.delta")]
    assert len(deltas) >= 2 and kinds.index("input_audio_buffer.committed") < kinds.index(
        completed(events)[0]["type"]
    )
    assert kinds.index("conversation.item.input_audio_transcription.delta") < kinds.index(
        completed(events)[0]["type"]
    )
    transcript = completed(events)[0]["transcript"]
    assert transcript == scriba.transcribe(as_heard(jfk), language="en").text
    assert "".join(deltas).split()[:4] == transcript.split()[:4]  # the words confirmed while it streamed
    item = completed(events)[0]["item_id"]
    assert all(e["item_id"] == item for e in events if "item_id" in e)


def test_server_vad_cuts_two_turns_at_the_silence(server, jfk):
    first, second = (
        jfk[: 16000 * 3],
        jfk[int(16000 * 8.3) :],
    )  # "And so my fellow Americans", "ask what you..."
    audio = np.concatenate([PAUSE, first, PAUSE, second, PAUSE])

    async def run():
        async with connect(server) as ws:
            await ws.recv()
            await ws.send(session_update())
            await stream(ws, audio, pace=3.0)
            return await events_until(ws, lambda seen: len(completed(seen)) == 2)

    events = asyncio.run(run())
    starts = [e for e in events if e["type"] == "input_audio_buffer.speech_started"]
    stops = [e for e in events if e["type"] == "input_audio_buffer.speech_stopped"]
    assert len(starts) == len(stops) == 2 and starts[0]["item_id"] != starts[1]["item_id"]
    heard = as_heard(audio)
    for start, stop, done in zip(starts, stops, completed(events)):
        turn = heard[start["audio_start_ms"] * 16 : stop["audio_end_ms"] * 16]
        assert done["item_id"] == start["item_id"] == stop["item_id"]
        assert done["transcript"] == scriba.transcribe(turn).text
    assert "fellow" in completed(events)[0]["transcript"] and "country" in completed(events)[1]["transcript"]
    assert stops[0]["audio_end_ms"] < (2 + 3 + 2) * 1000  # cut in the first pause


def test_bad_events_get_error_events_and_the_session_goes_on(server, jfk):
    bad = [
        "not json",
        json.dumps(["a list"]),
        json.dumps({"type": "response.create"}),
        json.dumps({"type": "input_audio_buffer.append", "audio": "###"}),
        json.dumps(
            {"type": "input_audio_buffer.append", "audio": base64.b64encode(b"\x01\x02\x03").decode()}
        ),
        json.dumps({"type": "session.update", "session": {"type": "realtime"}}),
        json.dumps(
            {
                "type": "session.update",
                "session": {
                    "type": "transcription",
                    "audio": {"input": {"format": {"type": "audio/pcm", "rate": 44100}}},
                },
            }
        ),
        json.dumps(
            {
                "type": "session.update",
                "session": {
                    "type": "transcription",
                    "audio": {"input": {"transcription": {"model": "gpt-4o-transcribe"}}},
                },
            }
        ),
        json.dumps({"type": "input_audio_buffer.commit", "event_id": "mine"}),  # nothing to commit
    ]

    async def run():
        async with connect(server) as ws:
            await ws.recv()
            for text in bad:
                await ws.send(text)
            errors = await events_until(ws, lambda seen: len(seen) == len(bad))
            await ws.send(session_update(detection=None))
            await stream(ws, jfk[: 16000 * 3])
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            return errors, await events_until(ws, lambda seen: completed(seen))

    errors, after = asyncio.run(run())
    assert [e["type"] for e in errors] == ["error"] * len(bad)
    for e in errors:
        assert set(e["error"]) >= {"type", "code", "message", "param"} and "\n" not in e["error"]["message"]
    codes = [e["error"]["code"] for e in errors]
    assert codes[0] == "invalid_json" and codes[-1] == "input_audio_buffer_commit_empty"
    assert errors[-2]["error"]["code"] == "model_not_found"
    assert "fellow" in completed(after)[0]["transcript"].lower()


def test_the_older_transcription_session_form(server):
    async def run():
        async with connect(server) as ws:
            await ws.recv()
            legacy = {
                "input_audio_format": "pcm16",
                "input_audio_transcription": {"model": "whisper-1", "language": "en", "prompt": "Kennedy"},
                "turn_detection": None,
            }
            await ws.send(json.dumps({"type": "transcription_session.update", "session": legacy}))
            return json.loads(await ws.recv())

    updated = asyncio.run(run())
    assert updated["type"] == "transcription_session.updated"
    assert updated["session"]["input_audio_transcription"] == {
        "model": "whisper-1",
        "language": "en",
        "prompt": "Kennedy",
    }
    assert (
        updated["session"]["turn_detection"] is None and updated["session"]["input_audio_format"] == "pcm16"
    )


def test_the_api_key_is_wanted_and_other_intents_refused(server):
    async def run():
        with pytest.raises(websockets.exceptions.InvalidStatus):
            async with connect(server, key="wrong"):
                pass
        async with connect(server, intent="conversation") as ws:
            error = json.loads(await ws.recv())
            assert error["type"] == "error" and error["error"]["param"] == "intent"
            with pytest.raises(websockets.exceptions.ConnectionClosed):
                await ws.recv()

    asyncio.run(run())


def test_eight_sessions_at_once_share_the_engine(server, jfk):
    """24 kHz as OpenAI sends it: every session's turn transcribed, none lost."""
    clips = [jfk[int(16000 * s) : int(16000 * (s + 4))] for s in (0, 1, 2, 3, 4, 5, 6, 7)]

    async def one(clip):
        async with connect(server) as ws:
            await ws.recv()
            await ws.send(session_update(rate=24000, detection=None))
            await stream(ws, soxr.resample(clip, 16000, 24000), rate=24000, pace=2.0)
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            return completed(await events_until(ws, lambda seen: completed(seen)))[0]["transcript"]

    async def run():
        return await asyncio.gather(*(one(c) for c in clips))

    transcripts = asyncio.run(run())
    assert len(transcripts) == 8 and all(t.strip() for t in transcripts)
    assert "fellow" in transcripts[0].lower() and "country" in transcripts[4].lower()


def test_a_closed_socket_frees_its_blocks_at_once(server, jfk):
    served = server[1]
    manager = served.loop(None).engine.block_manager
    long = np.concatenate([jfk] * 3)

    async def run():
        async with connect(server) as ws:
            await ws.recv()
            await ws.send(session_update(detection=None))
            await stream(ws, long)
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            await events_until(
                ws, lambda seen: any(e["type"] == "input_audio_buffer.committed" for e in seen)
            )
        # closed while its 33 s turn is being transcribed
        closed = time.time()
        while manager.num_free() < manager.num_total() and time.time() < closed + 3:
            await asyncio.sleep(0.05)
        return time.time() - closed

    assert asyncio.run(run()) < 3 and manager.num_free() == manager.num_total()
    alive = [t for t in threading.enumerate() if t.name == "scriba-live-session"]
    deadline = time.time() + 3
    while alive and time.time() < deadline:
        time.sleep(0.05)
        alive = [t for t in alive if t.is_alive()]
    assert not alive


def test_the_official_openai_client(server, jfk):
    """openai's realtime connection parses each server event into its own types."""

    async def run():
        client = openai.AsyncOpenAI(base_url=f"http://{server[0]}/v1", api_key=KEY)
        async with client.realtime.connect(extra_query={"intent": "transcription"}) as conn:
            await conn.session.update(
                session={
                    "type": "transcription",
                    "audio": {
                        "input": {
                            "format": {"type": "audio/pcm", "rate": 24000},
                            "turn_detection": None,
                            "transcription": {"model": "whisper-1", "language": "en"},
                        }
                    },
                }
            )
            pcm = soxr.resample(jfk, 16000, 24000)
            for i in range(0, len(pcm), 4800):
                await conn.input_audio_buffer.append(audio=pcm16(pcm[i : i + 4800]))
            await conn.input_audio_buffer.commit()
            seen = []
            async for event in conn:
                seen.append(event)
                if event.type == "conversation.item.input_audio_transcription.completed":
                    return seen

    events = asyncio.run(run())
    types = [e.type for e in events]
    assert types[0] == "session.created" and "session.updated" in types
    assert "conversation.item.input_audio_transcription.delta" in types
    assert "ask not what your country can do for you" in events[-1].transcript.lower().replace(",", "")
