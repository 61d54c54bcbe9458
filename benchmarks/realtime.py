"""Realtime transcription sessions at real-time pace: N clients each stream real speech (the data's
short clips with 1.5 s pauses between them, 24 kHz PCM16 in 100 ms events, as OpenAI's clients send it)
over /v1/realtime?intent=transcription to `scriba serve` (its own process, server VAD on).

Printed per N: the delay from the end of a spoken word to the delta that confirms it, and from
the end of a turn (speech_stopped's audio_end_ms: the silence that ends it included) to its
completed event (p50, p90); the gap between a turn's deltas while it is spoken (p50), and how many
turns had one; how many sessions kept up with real time (every turn completed within 3 s of its
end, p90 within 1.5 s); sessions lost (a turn whose speech stopped never completed, or the socket
closed); and the completed texts' word error rate against the clips' references, and against the offline
transcribe() of each session's stream (the worst session's); and how many clips' live texts (the
turns nearest each clip) are within CLIP_WER of transcribe() of that clip alone, and how many
sessions' (their clips' texts joined). A word is confirmed once two transcriptions of its turn's
tail, 1 s of audio apart, agree on it: the word-to-delta delay is that algorithm's, and grows with
load.

    python -m benchmarks realtime [--data DIR] [--sessions 1,2,4,8] [--seconds 40] [--smoke] [--out FILE]
        [--whisperlive-python /tmp/wl/bin/python [--whisperlive-batch]]

The peer (once, not in CI; benchmarks/realtime_whisperlive.py): whisper-live's wheel asks for
PyAudio (a C build) and CUDA libraries it does not use here, so in a venv of its own:
    python3 -m venv /tmp/wl && /tmp/wl/bin/pip install --no-deps whisper-live
    /tmp/wl/bin/pip install faster-whisper==1.2.0 websockets websocket-client scipy soundfile \\
        fastapi uvicorn python-multipart requests torch==2.13.0
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

from benchmarks.data import speech_set
from benchmarks.data import wer as word_error_rate
from benchmarks.pacing import send_at_pace
from benchmarks.realtime_whisperlive import (
    start_whisperlive,
    whisperlive_measures,
    whisperlive_python_ok,
    whisperlive_session,
)
from benchmarks.report import Report, suite_parser

RATE, CHUNK = 24000, 0.1
CLIP_WER = 0.12  # a clip's live text against transcribe() of the clip alone: the most that counts as equal


def clips(data, seconds: float, offset: int) -> tuple[np.ndarray, list[tuple[float, float]], list[str]]:
    """One session's stream (16 kHz): the data's short clips from `offset` on with 1.5 s pauses,
    about `seconds` long; each clip's span in the stream and its reference text."""
    from scriba.media.load import load_audio

    files, references = speech_set(data, "short")
    references = dict(zip(files, references))
    pause = np.zeros(int(1.5 * 16000), np.float32)
    pieces, spans, texts, at = [pause], [], [], 1.5
    for i in range(len(files)):
        path = files[(offset + i) % len(files)]
        audio = load_audio(path)
        pieces += [audio, pause]
        spans.append((at, at + len(audio) / 16000))
        texts.append(references[path])
        at += len(audio) / 16000 + 1.5
        if at >= seconds:
            break
    return np.concatenate(pieces), spans, texts


async def session(url: str, stream16: np.ndarray, word_ends: list[float]) -> dict:
    """Stream at real-time pace; (event, wall seconds since the stream began) for each event."""
    import soxr
    import websockets

    pcm = (np.clip(soxr.resample(stream16, 16000, RATE), -1, 1) * 32767).astype("<i2").tobytes()
    step = int(RATE * CHUNK) * 2
    async with websockets.connect(url, max_size=2**24) as ws:
        await ws.recv()
        update = {
            "type": "session.update",
            "session": {
                "type": "transcription",
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": RATE},
                        "transcription": {"model": "whisper-1", "language": "en"},
                        "turn_detection": {"type": "server_vad", "silence_duration_ms": 500},
                    }
                },
            },
        }
        await ws.send(json.dumps(update))
        pieces = [base64.b64encode(pcm[i : i + step]).decode() for i in range(0, len(pcm), step)]
        appends = [json.dumps({"type": "input_audio_buffer.append", "audio": a}) for a in pieces]
        events = await send_at_pace(ws, appends, CHUNK)
    return {"events": events, "word_ends": word_ends}


def delays(result: dict) -> tuple[list[float], list[float]]:
    """(word end -> its delta, turn end -> its completed) in seconds. A turn's delta words are
    matched in order with the offline words that end inside the turn's audio."""
    events, ends = result["events"], result["word_ends"]
    spans, confirmed, word_delays = {}, {}, []
    for event, at in events:
        kind, item = event["type"], event.get("item_id")
        if kind == "input_audio_buffer.speech_started":
            spans[item] = [event["audio_start_ms"] / 1000, float("inf")]
        elif kind == "input_audio_buffer.speech_stopped" and item in spans:
            spans[item][1] = event["audio_end_ms"] / 1000
        elif kind.endswith("input_audio_transcription.delta") and item in spans:
            low, high = spans[item]
            inside = [end for end in ends if low <= end <= high]
            for _ in event["delta"].split():
                k = confirmed.get(item, 0)
                if k < len(inside):
                    word_delays.append(at - inside[k])
                confirmed[item] = k + 1
    stopped = {
        e["item_id"]: e["audio_end_ms"] / 1000
        for e, _ in events
        if e["type"] == "input_audio_buffer.speech_stopped"
    }
    turn_delays = [
        at - stopped[e["item_id"]]
        for e, at in events
        if e["type"].endswith("transcription.completed") and e["item_id"] in stopped
    ]
    return word_delays, turn_delays


def spoken_deltas(result: dict) -> tuple[dict, list[tuple[str, float]]]:
    """(each turn's speech_started wall time, the (turn, wall time) of each delta sent while its
    turn was spoken: after speech_started, before speech_stopped)."""
    started, deltas, open_turns = {}, [], set()
    for event, at in result["events"]:
        kind, item = event["type"], event.get("item_id")
        if kind == "input_audio_buffer.speech_started":
            started[item] = at
            open_turns.add(item)
        elif kind == "input_audio_buffer.speech_stopped":
            open_turns.discard(item)
        elif kind.endswith("input_audio_transcription.delta") and item in open_turns:
            deltas.append((item, at))
    return started, deltas


def delta_gaps(result: dict) -> list[float]:
    """Seconds between a turn's deltas while it is spoken (from its speech_started event to each
    delta, then delta to delta, until its speech_stopped event): how live the text feels."""
    last, deltas = spoken_deltas(result)
    gaps = []
    for item, at in deltas:
        gaps.append(at - last[item])
        last[item] = at
    return gaps


def turns_with_deltas(result: dict) -> tuple[int, int]:
    """(turns that had a delta while spoken, turns spoken): the gap's p50 covers only the first;
    under load a short turn may end before any pass confirmed a word (its text comes completed)."""
    started, deltas = spoken_deltas(result)
    return len({item for item, _ in deltas}), len(started)


def unfinished(result: dict) -> int:
    """Turns whose speech stopped but whose text never came."""
    events = [e for e, _ in result["events"]]
    stopped = {e["item_id"] for e in events if e["type"] == "input_audio_buffer.speech_stopped"}
    done = {e["item_id"] for e in events if e["type"].endswith("transcription.completed")}
    return len(stopped - done)


def clip_texts(result: dict, spans: list[tuple[float, float]]) -> list[str]:
    """Each clip's live text: the completed turns whose audio's middle lies nearest the clip's
    span (a clip with a pause may come as two turns), in order."""
    events = [e for e, _ in result["events"]]
    starts = {e["item_id"]: e["audio_start_ms"] / 1000 for e in events
              if e["type"] == "input_audio_buffer.speech_started"}
    ends = {e["item_id"]: e["audio_end_ms"] / 1000 for e in events
            if e["type"] == "input_audio_buffer.speech_stopped"}
    texts: list[list[str]] = [[] for _ in spans]
    for e in events:
        item = e.get("item_id")
        if e["type"].endswith("transcription.completed") and item in starts and spans:
            middle = (starts[item] + ends.get(item, starts[item])) / 2
            away = [max(low - middle, middle - high, 0.0) for low, high in spans]
            texts[int(np.argmin(away))].append(e["transcript"])
    return [" ".join(t) for t in texts]


def offline_clips(stream16: np.ndarray, spans: list[tuple[float, float]], known: dict) -> list[str]:
    """transcribe() of each clip alone (`known`: the clips already transcribed, by their audio)."""
    import scriba

    texts = []
    for low, high in spans:
        clip = stream16[int(round(low * 16000)) : int(round(high * 16000))]
        key = clip.tobytes()
        if key not in known:
            known[key] = scriba.transcribe(clip, language="en").text
        texts.append(known[key])
    return texts


def offline(stream16: np.ndarray) -> tuple[list[float], str]:
    """Where each word of the stream ends (offline word timestamps: the deltas' clock), and the
    stream's offline transcript (the WER the live one is compared with)."""
    import scriba

    result = scriba.transcribe(stream16, word_timestamps=True, language="en")
    return [w.end for s in result.segments for w in s.words or []], result.text


def start_server() -> tuple[subprocess.Popen, str]:
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scriba = os.path.join(os.path.dirname(sys.executable), "scriba")
    server = subprocess.Popen(
        [scriba, "serve", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    time.sleep(3)  # the default model preloads as the server starts
    return server, f"ws://127.0.0.1:{port}/v1/realtime?intent=transcription"


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def clip_agreement(results: list[dict], streams: list, alone: list[list[str]]) -> str:
    """How many sessions' live texts, and how many clips', are within CLIP_WER of transcribe() of
    their clips alone (a session's: its clips' texts joined)."""
    sessions, clips = [], []
    for result, (_, spans, _), clips_alone in zip(results, streams, alone):
        live = clip_texts(result, spans)
        sessions.append(word_error_rate([" ".join(clips_alone)], [" ".join(live)]))
        clips += [word_error_rate([offline], [text]) for text, offline in zip(live, clips_alone)]

    def within(rates: list[float]) -> str:
        worst = max(rates, default=float("nan"))
        return f"{sum(r <= CLIP_WER for r in rates)}/{len(rates)} (worst {worst:.4f})"

    return (f"within {CLIP_WER} of transcribe() of each clip alone: sessions {within(sessions)}, "
            f"clips {within(clips)}")


def report(say: Report, n: int, results: list[dict], offline_texts: list[str], streams: list,
           alone: list[list[str]]) -> None:
    words, turns, gaps, kept, lost, hyp, ref = [], [], [], 0, 0, [], []
    live = spoken = 0
    texts = [texts for _, _, texts in streams]
    for result, refs in zip(results, texts):
        w, t = delays(result)
        words, turns, gaps = words + w, turns + t, gaps + delta_gaps(result)
        live, spoken = (a + b for a, b in zip((live, spoken), turns_with_deltas(result)))
        done = [e["transcript"] for e, _ in result["events"] if e["type"].endswith("transcription.completed")]
        if isinstance(result.get("error"), str) or unfinished(result) or not t:
            lost += 1
        elif t and max(t) <= 3.0 and p(t, 90) <= 1.5:
            kept += 1
        hyp.append(" ".join(done))
        ref.append(" ".join(refs))
    wer, wer_offline = word_error_rate(ref, hyp), word_error_rate(ref, offline_texts)
    from_offline = max(word_error_rate([o], [h]) for o, h in zip(offline_texts, hyp))
    say(
        f"{n:2d} sessions: word end -> delta p50 {p(words, 50):.2f} s, p90 {p(words, 90):.2f} s; "
        f"turn end -> completed p50 {p(turns, 50):.2f} s, p90 {p(turns, 90):.2f} s; "
        f"gap between deltas during speech p50 {p(gaps, 50):.2f} s (turns with a delta while "
        f"spoken {live}/{spoken}); "
        f"real time {kept}/{n}; lost {lost}; WER {wer:.4f} (offline "
        f"transcribe() of the same audio {wer_offline:.4f}; the live text against it, worst session "
        f"{from_offline:.4f}); {clip_agreement(results, streams, alone)}"
    )


def level_streams(data, seconds: float, n: int) -> list:
    """Each session's stream: it starts at a different clip of the 24 (3 apart, then the ones
    between), so no two sessions stream the same audio in step."""
    return [clips(data, seconds, offset=3 * i + i // 8) for i in range(n)]


async def run_level(say: Report, url: str, data, n: int, seconds: float):
    streams = level_streams(data, seconds, n)
    heard = [offline(stream) for stream, _, _ in streams]
    tasks = [session(url, stream, ends) for (stream, _, _), (ends, _) in zip(streams, heard)]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    results = [
        r if isinstance(r, dict) else {"events": [], "word_ends": [], "error": repr(r)} for r in results
    ]
    known: dict = {}
    alone = [offline_clips(stream, spans, known) for stream, spans, _ in streams]
    report(say, n, results, [text for _, text in heard], streams, alone)


async def run_peer_level(say: Report, url: str, data, n: int, seconds: float, model_path: str):
    """WhisperLive's clients on the same streams (benchmarks/realtime_whisperlive.py)."""
    streams = level_streams(data, seconds, n)
    tasks = [whisperlive_session(url, s, model_path, f"client-{i}") for i, (s, _, _) in enumerate(streams)]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    turns, gaps, hyp, ref, lost = [], [], [], [], 0
    for result, (_, spans, texts) in zip(results, streams):
        if not isinstance(result, dict):
            lost += 1
            continue
        t, g, text = whisperlive_measures(result, spans)
        lost += len(t) < len(spans)
        turns, gaps, hyp, ref = turns + t, gaps + g, hyp + [text], ref + [" ".join(texts)]
    say(
        f"{n:2d} WhisperLive clients: clip end (+0.5 s) -> completed segment p50 {p(turns, 50):.2f} s, "
        f"p90 {p(turns, 90):.2f} s; gap between its messages during speech p50 {p(gaps, 50):.2f} s; "
        f"clients with a clip never completed {lost}; WER {word_error_rate(ref, hyp):.4f}"
    )


def run_peer(say: Report, args) -> None:
    """WhisperLive alone on the machine, after Scriba's server stopped."""
    from scriba.models.offline import offline_model_path

    model_path = offline_model_path("tiny.en")
    say(f"# WhisperLive {_version(args.whisperlive_python)} (faster-whisper backend, one shared model, "
        f"batch inference {'on' if args.whisperlive_batch else 'off'}), the same weights, 16 kHz float32")
    server, url = start_whisperlive(args.whisperlive_python, model_path, args.whisperlive_batch)
    try:
        for n in [int(x) for x in args.sessions.split(",")]:
            asyncio.run(run_peer_level(say, url, args.data, n, args.seconds, model_path))
    finally:
        server.terminate()
        server.wait()


def _version(python: str) -> str:
    command = [python, "-c", "import importlib.metadata as m; print(m.version('whisper-live'))"]
    return subprocess.run(command, capture_output=True, text=True).stdout.strip()


def main(argv: list[str]) -> int:
    parser = suite_parser("realtime", __doc__, data=True)
    parser.add_argument("--sessions", default="1,2,4,8")
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--smoke", action="store_true", help="one session, the bundled clip once")
    parser.add_argument("--out", default=None)
    parser.add_argument("--whisperlive-python", help="the python of a venv with whisper-live: its server too")
    parser.add_argument("--whisperlive-batch", action="store_true", help="WhisperLive's batch inference on")
    args = parser.parse_args(argv)
    if args.whisperlive_python:
        whisperlive_python_ok(args.whisperlive_python)
    if args.smoke:
        args.sessions, args.seconds, args.data = "1", 5.0, None
    say = Report("realtime", argv)
    say("# scriba serve (tiny.en, the CPU default), server VAD")
    say(f"# each session: {args.seconds:.0f} s of speech (clips, 1.5 s pauses), real-time pace, 24 kHz PCM16")
    server, url = start_server()
    try:
        for n in [int(x) for x in args.sessions.split(",")]:
            asyncio.run(run_level(say, url, args.data, n, args.seconds))
    finally:
        server.terminate()
        server.wait()
    if args.whisperlive_python:
        run_peer(say, args)
    say.save(args.out)
    return 0
