"""Load on `scriba serve`: N concurrent clients x M requests of real short clips, plus clients
that hang up mid-request and bad uploads mixed in. Prints requests/s against offline batched
transcribe() of the same clips (measured in the same run), p50/p99 latency, errors, wrong answers
(an answer differing from offline transcribe() of that clip), lost requests, and the KV blocks
still in use afterwards.

    python benchmarks/load_server.py [--clients 64] [--requests 4] [--hangups 16] [--bad 16]
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import os
import socket
import statistics
import threading
import time

import httpx

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "dev_speech", "short")


def start_server():
    import uvicorn

    from scriba.app.server.app import ServerSettings, asgi_app
    from scriba.app.server.models import ServedModels

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = ServedModels([None], None)
    config = uvicorn.Config(
        asgi_app(served, ServerSettings()), host="127.0.0.1", port=port, log_level="error"
    )
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", served


async def one_request(http, url, path, expected, stats):
    with open(path, "rb") as f:
        data = f.read()
    start = time.perf_counter()
    try:
        r = await http.post(url, files={"file": (os.path.basename(path), data)}, timeout=600)
    except httpx.HTTPError as e:
        stats["errors"].append(f"{type(e).__name__}")
        return
    stats["latency"].append(time.perf_counter() - start)
    if r.status_code != 200:
        stats["errors"].append(f"{r.status_code} {r.text[:80]}")
    elif r.json()["text"] != expected[path]:
        stats["wrong"].append(path)
    else:
        stats["ok"] += 1


async def hang_up(http, url, path, stats):
    with open(path, "rb") as f:
        data = f.read()
    try:
        await http.post(url, files={"file": ("x.flac", data)}, timeout=httpx.Timeout(60, read=0.3))
        stats["hangups_answered"] += 1
    except httpx.ReadTimeout:
        stats["hangups"] += 1


async def bad_upload(http, url, i, stats):
    name, body = ("empty.wav", b"") if i % 2 else ("notes.mp3", b"meeting notes, not audio")
    r = await http.post(url, files={"file": (name, body)}, timeout=60)
    ok = r.status_code in (400, 415) and set(r.json()["error"]) == {"message", "type", "param", "code"}
    stats["bad_refused" if ok else "bad_mishandled"] += 1


async def load(base, clips, expected, args, long_clip):
    url = base + "/v1/audio/transcriptions"
    stats = dict(
        latency=[], errors=[], wrong=[], ok=0, hangups=0, hangups_answered=0, bad_refused=0, bad_mishandled=0
    )
    limits = httpx.Limits(max_connections=args.clients + args.hangups + args.bad + 8)
    async with httpx.AsyncClient(limits=limits) as http:

        async def client(c):
            for r in range(args.requests):
                await one_request(http, url, clips[(c * args.requests + r) % len(clips)], expected, stats)

        tasks = [client(c) for c in range(args.clients)]
        tasks += [hang_up(http, url, long_clip, stats) for _ in range(args.hangups)]
        tasks += [bad_upload(http, url, i, stats) for i in range(args.bad)]
        start = time.perf_counter()
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - start
    return stats, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--hangups", type=int, default=16)
    parser.add_argument("--bad", type=int, default=16)
    parser.add_argument("--data", default=DATA)
    args = parser.parse_args()
    import numpy as np
    import soundfile as sf

    import scriba
    from scriba.media.load import load_audio

    clips = sorted(glob.glob(os.path.join(args.data, "*.wav")) + glob.glob(os.path.join(args.data, "*.flac")))
    base, served = start_server()
    total = args.clients * args.requests
    work = [clips[i % len(clips)] for i in range(total)]
    scriba.transcribe(clips[0])  # warm-up
    start = time.perf_counter()
    offline = scriba.transcribe(work)
    offline_rate = total / (time.perf_counter() - start)
    expected = {path: r.text for path, r in zip(work, offline)}
    long_clip = os.path.join("/tmp", "load_server_long.flac")  # hung-up clients send 2 minutes
    sf.write(long_clip, np.concatenate([load_audio(c) for c in clips[:12]]), 16000)
    stats, wall = asyncio.run(load(base, clips, expected, args, long_clip))
    time.sleep(2)  # the hung-up requests' windows are aborted at the next step
    loop = served.loop(None)
    manager = loop.engine.block_manager
    lat = sorted(stats["latency"])
    print(f"offline batched transcribe() of the same {total} clips: {offline_rate:.2f} clips/s")
    print(
        f"server: {args.clients} clients x {args.requests} "
        f"requests, {args.hangups} hang-ups, {args.bad} bad uploads"
    )
    print(
        f"  requests/s {stats['ok'] / wall:.2f} "
        f"({stats['ok'] / wall / offline_rate:.2f}x offline), wall {wall:.1f} s"
    )
    print(f"  latency p50 {statistics.median(lat):.2f} s, p99 {lat[int(0.99 * (len(lat) - 1))]:.2f} s")
    print(
        f"  ok {stats['ok']}/{total}, wrong {len(stats['wrong'])}, "
        f"errors {len(stats['errors'])} {stats['errors'][:3]}"
    )
    print(f"  lost {total - stats['ok'] - len(stats['wrong']) - len(stats['errors'])}")
    print(f"  hang-ups {stats['hangups']} (answered before hanging up: {stats['hangups_answered']})")
    print(
        "  bad uploads refused in OpenAI's shape "
        f"{stats['bad_refused']}, mishandled {stats['bad_mishandled']}"
    )
    used = manager.num_total() - manager.num_free()
    print(f"  KV blocks in use afterwards {used}, requests pending {loop.pending}")


if __name__ == "__main__":
    main()
