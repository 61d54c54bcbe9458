"""An engine setting off and on, side by side: one short request and one long recording.

    python benchmarks/bench_async.py [--model tiny.en] [--runs 3] [--long PATH]
        [--setting async_scheduling|encoder_stream|cross_cache] [--wer]
        [--out benchmarks/results/async_cpu.txt]

Both engines load once (warmed on the short clip); each run then transcribes with one and
the other in turn, so drift hits both alike; the best of the runs is kept. Printed: seconds
and the on / off ratio (above 1: on is slower). On the CPU nothing runs while the host
schedules and packs, or beside the encoder, so neither setting can hide work there as on a GPU.
cross_cache: "projected" off, "states" on, both in float32 (states take no int8 products).
`--wer`: also the word error rate of dev_speech's short clips and of the long recording, each way.
Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

from machine import cpu_name
from results_file import save_lines
from wer import load_manifest, wer

HERE = os.path.dirname(os.path.abspath(__file__))
JFK = os.path.join(HERE, "..", "assets", "jfk.flac")
LONG = os.path.join(HERE, "..", "..", "shared", "data", "dev_longform")
SPEECH = os.path.join(HERE, "..", "..", "shared", "data", "dev_speech")


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
    parser.add_argument(
        "--setting", default="async_scheduling", choices=["async_scheduling", "encoder_stream", "cross_cache"]
    )
    parser.add_argument(
        "--wer", action="store_true", help="also WER on dev_speech's short clips and the long one"
    )
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
    setting = args.setting

    def transcribe(audio, flag: bool) -> str:
        return scriba.transcribe((audio, 16000), model=args.model, **setting_options(setting, flag)).text

    for flag in (False, True):  # load and warm both engines
        transcribe(clips["short (jfk, 11 s)"], flag)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    best: dict[tuple[str, bool], float] = {}
    texts: dict[tuple[str, bool], str] = {}
    for _ in range(args.runs):
        for name, audio in clips.items():
            for flag in (False, True):
                start = time.perf_counter()
                text = transcribe(audio, flag)
                seconds = time.perf_counter() - start
                best[name, flag] = min(best.get((name, flag), seconds), seconds)
                texts[name, flag] = text
    say(f"device: {device}; best of {args.runs} runs, seconds")
    say(f"{setting}: {'input':<20} {'off':>8} {'on':>8} {'on/off':>7} same text")
    for name in clips:
        off, on = best[name, False], best[name, True]
        same = texts[name, False] == texts[name, True]
        say(f"{' ' * (len(setting) + 2)}{name:<20} {off:8.3f} {on:8.3f} {on / off:7.3f} {same}")
    if args.wer:
        paths, refs = load_manifest(SPEECH, "short")
        audios = [load_audio(p) for p in paths]
        long_ref = long_reference(long_recording(args.long))
        for flag in (False, True):
            short = wer(refs, [transcribe(a, flag) for a in audios])
            long = wer([long_ref], [texts["long", flag]]) if long_ref else float("nan")
            say(f"WER, {setting}={flag}: {len(paths)} short clips {short:.4f}, the long recording {long:.4f}")
    save_lines(lines, args.out)


def setting_options(setting: str, on: bool) -> dict:
    """The engine options of `setting` off or on (cross_cache: both in float32)."""
    if setting == "cross_cache":
        return {"cross_cache": "states" if on else "projected", "dtype": "float32"}
    return {setting: on}


def long_reference(path: str) -> str | None:
    """The long recording's reference text where dev_longform's manifest has it."""
    manifest = os.path.join(os.path.dirname(path), "MANIFEST.tsv")
    if not os.path.exists(manifest):
        return None
    with open(manifest, newline="") as f:
        rows = {r["file"]: r["reference_text"] for r in csv.DictReader(f, delimiter="\t")}
    return rows.get(os.path.basename(path))


if __name__ == "__main__":
    main()
