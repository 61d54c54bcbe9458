"""A long run of `scriba serve` under mixed traffic: does anything grow?

    python benchmarks/soak_server.py [--minutes 30] [--every 30] [--clients 3]
        [--out benchmarks/results/soak_server_cpu.txt]

Starts `scriba serve --model tiny.en` in its own process (with its own temporary folder) and
sends it, from --clients threads at once until the time is up: good clips (the dev set's short
utterances and jfk.flac; each answer must equal offline transcribe() of the same file), a long
file (the 158 s sonnets), hang-ups (the long file with a client that gives up after a second),
and bad uploads (empty, text, a cut FLAC, a FLAC with flipped bits, a WAV claiming 2^31 Hz).
Every --every seconds it samples the server's resident memory, threads, open file
descriptors, upload files left in its temporary folder, and from /metrics the KV-cache blocks
in use and the C heap (in use, and freed but kept by the allocator). At the end it stops the
traffic, waits for the server to go idle, samples once more and prints every sample, each
measure's first and last values, its slope per hour (with its standard error: the samples swing
with the requests in flight) from minute 2 and from minute 10 (the traffic's worst moments take
a while to come), its mean and maximum in each third of the run after minute 2, and the
requests by kind and answer.
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import numpy as np
import soundfile as sf
from results_file import save_lines

import scriba

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
JFK = os.path.join(HERE, "..", "assets", "jfk.flac")
WARM_UP = 120.0  # seconds left out of the slopes


def good_clips() -> list[str]:
    folder = os.path.join(DATA, "dev_speech", "short")
    return [JFK] + sorted(
        os.path.join(folder, f) for f in os.listdir(folder) if f.endswith((".flac", ".wav"))
    )


def long_file() -> str:
    folder = os.path.join(DATA, "dev_speech", "longform")
    return os.path.join(folder, sorted(f for f in os.listdir(folder) if f.endswith(".flac"))[0])


def bad_uploads() -> dict[str, bytes]:
    with open(JFK, "rb") as f:
        flac = f.read()
    flipped = bytearray(flac)
    for i in range(4096, len(flipped), 1500):
        flipped[i] ^= 0xFF
    wav = io.BytesIO()
    sf.write(wav, np.zeros(16000, np.float32), 16000, format="WAV", subtype="PCM_16")
    fast = bytearray(wav.getvalue())
    fast[24:28] = (2**31).to_bytes(4, "little")
    return {
        "empty.wav": b"",
        "notes.mp3": b"not audio at all\n" * 50,
        "cut.flac": flac[:5000],
        "flipped.flac": bytes(flipped),
        "fast.wav": bytes(fast),
    }


class Server:
    """`scriba serve` in a child process, with its own temporary folder."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = tempfile.mkdtemp(prefix="scriba-soak-")
        # SOAK_SERVER_PREFIX runs the server under a tool, e.g. "heaptrack -o /tmp/soak"
        command = os.environ.get("SOAK_SERVER_PREFIX", "").split()
        command += [sys.executable, "-c", "from scriba.app.cli.main import main; main()", "serve"]
        command += ["--port", str(self.port), "--model", "tiny.en"]
        log = open(os.path.join(tempfile.gettempdir(), "scriba-soak-server.log"), "w")  # noqa: SIM115
        self.process = subprocess.Popen(  # its own group: a tool's children stop with it
            command, env={**os.environ, "TMPDIR": self.tmp}, stdout=log, stderr=log, start_new_session=True
        )
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.5)
        raise RuntimeError("the server did not start")

    def sample(self) -> dict[str, float]:
        pid = self.process.pid
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        metrics = httpx.get(self.url + "/metrics", timeout=30).text
        blocks = sum(
            float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("scriba_kv_blocks_used{")
        )
        heap = {  # the C heap (glibc's count): in use, and freed but kept by the allocator
            kind: float(line.rsplit(" ", 1)[1]) / 2**20
            for line in metrics.splitlines()
            for kind in ("in_use", "free")
            if line.startswith(f'scriba_host_heap_bytes{{kind="{kind}"}}')
        }
        return {
            "rss_mb": int(status["VmRSS"].split()[0]) / 1024,
            "threads": int(status["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            # uploads being read or left behind (libraries keep their own dotfiles there)
            "temp_files": sum(1 for e in os.scandir(self.tmp) if e.name.startswith("scriba-")),
            "kv_blocks": blocks,
            "heap_used_mb": heap.get("in_use", float("nan")),
            "heap_free_mb": heap.get("free", float("nan")),
        }

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=120)


class Traffic:
    """Client threads sending mixed requests until `stop` is set; counts (kind, answer)."""

    def __init__(self, url: str, expected: dict[str, str], long_path: str, bad: dict[str, bytes]):
        self.url, self.expected, self.long_path, self.bad = url, expected, long_path, bad
        self.counts: collections.Counter = collections.Counter()
        self.problems: list[str] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def post(self, name: str, data: bytes, timeout: float = 300.0) -> httpx.Response:
        return httpx.post(
            self.url + "/v1/audio/transcriptions",
            files={"file": (name, data)},
            data={"model": "whisper-1"},
            timeout=timeout,
        )

    def one(self, rng: random.Random) -> tuple[str, str]:
        kind = rng.choices(["good", "long", "hang-up", "bad"], weights=[50, 10, 15, 25])[0]
        if kind == "good":
            path = rng.choice(sorted(self.expected))
            with open(path, "rb") as f:
                r = self.post(os.path.basename(path), f.read())
            if r.status_code != 200 or r.json()["text"] != self.expected[path]:
                self.problems.append(f"{path}: {r.status_code} {r.text[:200]}")
            return kind, str(r.status_code)
        if kind in ("long", "hang-up"):
            with open(self.long_path, "rb") as f:
                data = f.read()
            try:
                return kind, str(
                    self.post("long.flac", data, timeout=1.0 if kind == "hang-up" else 300).status_code
                )
            except httpx.TimeoutException:
                return kind, "client gave up"
        name = rng.choice(sorted(self.bad))
        r = self.post(name, self.bad[name])
        if r.status_code >= 500 or name not in r.json()["error"]["message"]:
            self.problems.append(f"{name}: {r.status_code} {r.text[:200]}")
        return f"bad {name}", str(r.status_code)

    def run(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            kind, answer = self.one(rng)
            with self.lock:
                self.counts[(kind, answer)] += 1


def slope_per_hour(points: list[tuple[float, float]], after: float) -> tuple[float, float]:
    """Least-squares slope per hour of the samples from `after` seconds on, and its standard
    error (the samples swing with the requests in flight)."""
    late = [(t, v) for t, v in points if t >= after]
    if len(late) < 4:
        return float("nan"), float("nan")
    t, v = np.array(late).T
    fit, cov = np.polyfit(t / 3600, v, 1, cov=True)
    return float(fit[0]), float(np.sqrt(cov[0, 0]))


def thirds(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(mean, max) of the samples in each third of the run after the first two minutes."""
    late = [(t, v) for t, v in points if t >= WARM_UP]
    cuts = np.array_split(np.array([v for _, v in late]), 3)
    return [(float(c.mean()), float(c.max())) for c in cuts if len(c)]


def report(samples: list[tuple[float, dict]], traffic: Traffic, lines: list[str]) -> None:
    keys = list(samples[0][1])
    lines.append(f"{'t (s)':>7} " + " ".join(f"{k:>11}" for k in keys))
    lines += [f"{t:7.0f} " + " ".join(f"{s[k]:11.1f}" for k in keys) for t, s in samples]
    lines.append("")
    busy = samples[:-1]  # the last sample is taken idle, after the traffic
    lines.append(
        f"{'measure':<12} {'first':>8} {'last':>8} {'slope/h from 2 min':>20} {'from 10 min':>16}"
        "   mean (max) by third of the run after 2 min"
    )
    for k in keys:
        points = [(t, s[k]) for t, s in busy]
        slopes = [slope_per_hour(points, after) for after in (WARM_UP, 600.0)]
        by_third = "  ".join(f"{mean:.0f} ({most:.0f})" for mean, most in thirds(points))
        lines.append(
            f"{k:<12} {samples[0][1][k]:8.1f} {samples[-1][1][k]:8.1f} "
            + " ".join(f"{slope:+9.0f} ± {error:<6.0f}" for slope, error in slopes)
            + f"   {by_third}"
        )
    lines.append("")
    lines.append("requests (kind, answer): count")
    lines += [f"  {kind:<22} {answer:<16} {n}" for (kind, answer), n in sorted(traffic.counts.items())]
    lines.append(f"good answers that differ from offline transcribe(), or bad ones without the file's name: "
                 f"{len(traffic.problems)}")  # fmt: skip
    lines += [f"  {p}" for p in traffic.problems[:10]]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--every", type=float, default=30)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    expected = {path: scriba.transcribe(path).text for path in good_clips()}  # offline, the same defaults
    server = Server()
    traffic = Traffic(server.url, expected, long_file(), bad_uploads())
    threads = [threading.Thread(target=traffic.run, args=(i,), daemon=True) for i in range(args.clients)]
    start = time.time()
    samples = [(0.0, server.sample())]
    for t in threads:
        t.start()
    while time.time() - start < args.minutes * 60:
        time.sleep(args.every)
        samples.append((time.time() - start, server.sample()))
        print(f"{samples[-1][0]:7.0f} s  {samples[-1][1]}", flush=True)
    traffic.stop.set()
    for t in threads:
        t.join()
    time.sleep(10)  # the last hang-ups' windows are dropped
    samples.append((time.time() - start, server.sample()))
    command = f"python benchmarks/soak_server.py {' '.join(sys.argv[1:] if argv is None else argv)}"
    lines = [f"# {command}", f"# {args.minutes:g} minutes, {args.clients} clients, tiny.en, this CPU", ""]
    report(samples, traffic, lines)
    server.stop()
    print("\n".join(lines))
    save_lines(lines, args.out)
    return 1 if traffic.problems else 0


if __name__ == "__main__":
    sys.exit(main())
