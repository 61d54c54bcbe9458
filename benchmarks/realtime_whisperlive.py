"""WhisperLive (`whisper-live` on PyPI, its faster-whisper backend) as the realtime suite's peer: its
server in its own venv on the same CTranslate2 weights, one model shared by every client (or its
batch inference, `--whisperlive-batch`), each client streaming the same stream as a Scriba session
(16 kHz float32, 100 ms pieces, real-time pace) in WhisperLive's own protocol (a JSON options
message, then raw audio; it answers with its last segments, each `completed` or not, VAD on).

Its measures, from its own protocol: a clip's end (plus the 0.5 s of silence a Scriba turn waits
for) -> the first completed segment that reaches within a second of the clip's end; the gap
between its messages while a clip is spoken; its completed segments' word error rate.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

from benchmarks.pacing import send_at_pace

SILENCE_MS = 500  # a Scriba turn ends after this much silence: its clock starts there too
SERVER = """
import sys
from whisper_live.server import TranscriptionServer
port, model, batch = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
TranscriptionServer().run("127.0.0.1", port, backend="faster_whisper",
    faster_whisper_custom_model_path=model, single_model=True, max_clients=64,
    max_connection_time=3600, batch_enabled=batch)
"""


def start_whisperlive(python: str, model_path: str, batch: bool) -> tuple[subprocess.Popen, str]:
    """WhisperLive's server in `python`'s venv; (the process, its WebSocket address)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 2)}
    command = [python, "-c", SERVER, str(port), model_path, "1" if batch else "0"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    for _ in range(240):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if server.poll() is not None:
            raise RuntimeError(f"WhisperLive's server exited ({server.returncode})")
        time.sleep(0.5)
    return server, f"ws://127.0.0.1:{port}"


async def whisperlive_session(url: str, stream16: np.ndarray, model_path: str, uid: str) -> dict:
    """Stream at real-time pace; (message, wall seconds since the stream began) for each."""
    import websockets

    step = 1600  # 100 ms
    async with websockets.connect(url, max_size=2**24) as ws:
        options = {"uid": uid, "language": "en", "task": "transcribe", "model": model_path, "use_vad": True}
        await ws.send(json.dumps(options))
        ready = False
        while not ready:  # it may say other things first
            ready = json.loads(await ws.recv()).get("message") == "SERVER_READY"
        pieces = [stream16[i : i + step].astype(np.float32).tobytes() for i in range(0, len(stream16), step)]
        messages = await send_at_pace(ws, pieces, 0.1)
    return {"messages": messages}


def completed_segments(result: dict) -> list[tuple[float, float, str, float]]:
    """(start, end, text, wall seconds when first seen completed), each segment once."""
    seen: dict[tuple[float, str], tuple[float, float, str, float]] = {}
    for message, at in result["messages"]:
        for segment in message.get("segments", []):
            if segment.get("completed"):
                start, end = float(segment["start"]), float(segment["end"])
                seen.setdefault((round(start, 2), segment["text"]), (start, end, segment["text"], at))
    return sorted(seen.values())


def whisperlive_measures(result: dict, spans: list[tuple[float, float]]) -> tuple[list, list, str]:
    """(clip end -> completed delays, gaps between messages during speech, completed text)."""
    done = completed_segments(result)
    delays, gaps = [], []
    for low, high in spans:
        reaching = [at for start, end, _, at in done if end >= high - 1.0 and start < high]
        if reaching:
            delays.append(min(reaching) - (high + SILENCE_MS / 1000))
        during = [at for message, at in result["messages"] if low <= at <= high and message.get("segments")]
        gaps += list(np.diff(during))
    return delays, gaps, " ".join(text.strip() for _, _, text, _ in done)


def whisperlive_python_ok(python: str) -> None:
    check = subprocess.run([python, "-c", "import whisper_live.server"], capture_output=True, text=True)
    if check.returncode:
        sys.exit(f"--whisperlive-python: {python} cannot import whisper_live: {check.stderr.strip()[-200:]}")
