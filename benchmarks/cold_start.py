"""A first transcript, cold: `scriba transcribe assets/jfk.flac` in a fresh process, and where
its time goes.

    python -m benchmarks cold-start [--runs 3] [--empty-caches] [--smoke] [--out FILE]

Each run is a new process, as a user's command is (the files are in the OS cache after the
first, as they are on a user's second try). Printed: the command's wall time (best and all
runs), then one fresh process's split: interpreter start, the imports the command makes,
the engine (weights read, int8, the encoder compiled), the first transcription (kernels
compiled on first use included) and a second one (what the first would cost warm).
faster-whisper's cold `WhisperModel(...).transcribe()` on the same weights is printed beside
it when installed. Run it on a quiet machine.

`--empty-caches`: numba's and Scriba's caches in new empty folders, as on a fresh machine: one run
without preparing, then the README's install step `scriba prepare` (timed) fills the runs' caches.
Whether torch's modules are byte-compiled is printed: an install made without byte code (`pip
--no-compile`, or an editable one where PYTHONDONTWRITEBYTECODE is set) compiles them in every
process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.data import JFK
from benchmarks.report import Report, suite_parser

SPLIT = r"""
import json, sys, time
t0 = time.perf_counter()
import scriba.app.cli.main
from scriba.transcription.transcribe import transcribe
t1 = time.perf_counter()
from scriba.runtime.loops import get_loop
get_loop(None)
t2 = time.perf_counter()
text = transcribe(sys.argv[1]).text
t3 = time.perf_counter()
transcribe(sys.argv[1])
t4 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "engine": t2 - t1, "first": t3 - t2, "second": t4 - t3, "text": text}))
"""

FASTER_WHISPER = r"""
import sys, time
t0 = time.perf_counter()
from faster_whisper import WhisperModel
from scriba.models.offline import offline_model_path
model = WhisperModel(offline_model_path("tiny.en"), device="cpu", compute_type="int8")
segments, _ = model.transcribe(sys.argv[1])
print("".join(s.text for s in segments))
"""


def wall(command: list[str], env: dict | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - start, done.stdout


def byte_compiled() -> bool:
    """Whether torch's modules have their byte code on disk (else each process compiles them)."""
    spec = importlib.util.find_spec("torch")
    return os.path.exists(importlib.util.cache_from_source(spec.origin))


def prepared(say, scriba: str, folder: str) -> dict:
    """An environment whose caches are empty folders under `folder`, filled by `scriba prepare`."""
    env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(folder, "numba"),
               SCRIBA_CACHE=os.path.join(folder, "scriba"))
    unprepared = dict(env, NUMBA_CACHE_DIR=os.path.join(folder, "numba-unprepared"),
                      SCRIBA_CACHE=os.path.join(folder, "scriba-unprepared"))
    took = wall([scriba, "transcribe", JFK], unprepared)[0]
    say(f"scriba transcribe jfk.flac, caches empty, not prepared: {took:.2f} s")
    took = wall([scriba, "prepare", "--model", "tiny.en"], env)[0]
    say(f"scriba prepare --model tiny.en, caches empty (the README's install step): {took:.1f} s")
    return env


def main(argv: list[str]) -> int:
    parser = suite_parser("cold-start", __doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--empty-caches", action="store_true",
                        help="caches in empty folders, filled by `scriba prepare` first")
    parser.add_argument("--smoke", action="store_true", help="one run")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    runs_asked = 1 if args.smoke else args.runs
    say = Report("cold-start", argv)
    scriba = os.path.join(os.path.dirname(sys.executable), "scriba")
    say(f"torch's modules byte-compiled: {'yes' if byte_compiled() else 'no (each process compiles them)'}")
    folder = tempfile.TemporaryDirectory(prefix="scriba-cold-") if args.empty_caches else None
    env = prepared(say, scriba, folder.name) if folder else None
    runs = [wall([scriba, "transcribe", JFK], env) for _ in range(runs_asked)]
    seconds = [s for s, _ in runs]
    every = ", ".join(f"{s:.2f}" for s in seconds)
    say(f"scriba transcribe jfk.flac: best {min(seconds):.2f} s (runs: {every})")
    say(f"  text: {' '.join(runs[-1][1].split())[:100]}")
    python = wall([sys.executable, "-c", "pass"])[0]
    split = json.loads(wall([sys.executable, "-c", SPLIT, JFK], env)[1])
    say(
        f"split (one fresh process): interpreter {python:.2f} s, imports {split['imports']:.2f} s, "
        f"engine {split['engine']:.2f} s, first transcription {split['first']:.2f} s "
        f"(a second one: {split['second']:.2f} s)"
    )
    try:
        import faster_whisper  # noqa: F401
    except ImportError:
        say("faster-whisper: not installed (pip install '.[bench]')")
    else:
        fw = [wall([sys.executable, "-c", FASTER_WHISPER, JFK])[0] for _ in range(runs_asked)]
        say(f"faster-whisper int8, cold: best {min(fw):.2f} s (runs: {', '.join(f'{s:.2f}' for s in fw)})")
    say.save(args.out)
    return 0
