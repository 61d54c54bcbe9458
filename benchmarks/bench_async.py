"""Asynchronous scheduling on and off, side by side: one short request and one long recording.

    python benchmarks/bench_async.py [--model tiny.en] [--runs 3] [--long PATH]
        [--out benchmarks/results/async_cpu.txt]

Both engines load once (warmed on the short clip); each run then transcribes with one and
the other in turn, so drift hits both alike; the best of the runs is kept. Printed: seconds
and the async / sync ratio (above 1: async is slower). On the CPU nothing runs while the host
schedules and packs, so async can only hide host work where a GPU computes. Run it on a quiet
machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from machine import cpu_name
from results_file import save_lines

HERE = os.path.dirname(os.path.abspath(__file__))
JFK = os.path.join(HERE, "..", "assets", "jfk.flac")
LONG = os.path.join(HERE, "..", "..", "shared", "data", "dev_longform")


def long_recording(path: str | None) -> str:
    if path:
        return path
    names = sorted(n for n in os.listdir(LONG) if n.endswith(".flac"))
    return os.path.join(LONG, names[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--long", default=None, help="a long recording (default: dev_longform's first)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import torch

    import scriba
    from scriba.media.load import load_audio

    lines = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    clips = {"short (jfk, 11 s)": load_audio(JFK), "long": load_audio(long_recording(args.long))}
    say(f"# python benchmarks/bench_async.py {' '.join(sys.argv[1:])}")
    say(f"host: {cpu_name()}, {os.cpu_count()} CPUs; model {args.model}")
    say(f"long recording: {os.path.basename(long_recording(args.long))}, {len(clips['long']) / 16000:.0f} s")
    for flag in (False, True):  # load and warm both engines
        scriba.transcribe((clips["short (jfk, 11 s)"], 16000), model=args.model, async_scheduling=flag)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    best: dict[tuple[str, bool], float] = {}
    texts: dict[tuple[str, bool], str] = {}
    for _ in range(args.runs):
        for name, audio in clips.items():
            for flag in (False, True):
                start = time.perf_counter()
                text = scriba.transcribe((audio, 16000), model=args.model, async_scheduling=flag).text
                seconds = time.perf_counter() - start
                best[name, flag] = min(best.get((name, flag), seconds), seconds)
                texts[name, flag] = text
    say(f"device: {device}; best of {args.runs} runs, seconds")
    say(f"{'input':<20} {'sync':>8} {'async':>8} {'async/sync':>11} same text")
    for name in clips:
        sync, fed = best[name, False], best[name, True]
        same = texts[name, False] == texts[name, True]
        say(f"{name:<20} {sync:8.3f} {fed:8.3f} {fed / sync:11.3f} {same}")
    save_lines(lines, args.out)


if __name__ == "__main__":
    main()
