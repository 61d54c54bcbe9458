"""Whisper on this CPU against the field: Scriba's default, OpenVINO GenAI, faster-whisper.

    python benchmarks/bench_cpu_field.py --peers-python /tmp/peers/bin/python \\
        --openvino-models /tmp/ov [--models tiny.en,base] [--rounds 3] [--passes 1] [--skip NAMES]
        [--out FILE]

Setup (once; not in CI): `bash benchmarks/setup_field.sh` makes the peers' venv (openvino-genai,
optimum-intel) and exports the same weights Scriba reads (the bundled tiny.en, the multilingual
base) as Hugging Face folders, then as OpenVINO int8-weight models (`optimum-cli export openvino
--weight-format int8`). faster-whisper runs from Scriba's own venv (the `bench` extra) on the
CTranslate2 int8 folders. Every system runs in a process of its own, one at a time (keep the
machine quiet), warmed up on one file, then timed over `--rounds` rounds; the fastest round
counts. `--passes N`: the systems take turns N times and each turn's ratio is printed too.
Greedy, English, timestamps on. Workloads (../shared/data):
  short, one at a time   dev_speech's 24 short clips and jfk.flac, each its own call: RTFx over
                         the whole set, latency p50 / p90 per clip, WER
  short, one call        the same clips in one call (systems that take a list)
  LJ Speech clips, one at a time
                         the 70 clips (1-10 s) that make dev_longform's reading, cut at its
                         segment times: more words to tell the systems' WER apart
  long-form              dev_longform's 7.8-minute reading and dev_speech's 158 s sonnets, each
                         alone
Systems: Scriba's default and "Scriba cached padding" (encoder_padding="cached": a short clip's
padding from a silent window, whisper/cached_padding.py) beside the peers.
Prints the host's vector extensions and, per workload, Scriba's ratio to the fastest other system.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import soundfile as sf
from bench_whisper import DATA, ljspeech_clips
from bench_whisper import workloads as whisper_sets
from machine import cpu_name
from results_file import save_lines
from wer import wer
from wer import words as reference_words

HERE = os.path.dirname(os.path.abspath(__file__))
LINES: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def workloads(data: str) -> dict[str, tuple[list[str], list[str], str]]:
    """name -> (files, references, the worker's workload): bench_whisper.py's two sets."""
    sets = whisper_sets(data)
    return {
        "short, one at a time": (*sets["short"], "one-by-one"),
        "short, one call": (*sets["short"], "one-call"),
        "LJ Speech clips, one at a time": (*ljspeech_clips(data), "one-by-one"),
        "long-form": (*sets["long-form"], "one-by-one"),
    }


def systems(args, model: str) -> dict[str, tuple[str, str]]:
    """name -> (python, model argument) of each system that is installed here."""
    from scriba.models.offline import offline_model_path

    found = {"Scriba default": (sys.executable, model), "Scriba cached padding": (sys.executable, model)}
    try:
        import faster_whisper  # noqa: F401

        folder = offline_model_path(model)
        found["faster-whisper int8"] = (sys.executable, folder)
        found["faster-whisper int8 batched"] = (sys.executable, folder)
    except ImportError:
        say("# faster-whisper is not installed here (pip install -e '.[bench]'): left out")
    exported = os.path.join(args.openvino_models or "", model)
    if args.peers_python and os.path.isdir(exported):
        found["OpenVINO GenAI int8"] = (args.peers_python, exported)
    else:
        say(f"# OpenVINO GenAI: no --peers-python or no export at {exported!r}: left out")
    return found


WORKER_NAMES = {
    "Scriba default": "scriba",
    "Scriba cached padding": "scriba-cached-padding",
    "faster-whisper int8": "faster-whisper",
    "faster-whisper int8 batched": "faster-whisper-batched",
    "OpenVINO GenAI int8": "openvino-genai",
}
ONE_CALL = {"Scriba default", "Scriba cached padding"}  # the systems whose call takes a list of files


def run_worker(python: str, system: str, model: str, workload: str, files: list[str], rounds: int) -> dict:
    command = [python, os.path.join(HERE, "field_worker.py"), WORKER_NAMES[system], model, workload, *files]
    done = subprocess.run([*command, "--rounds", str(rounds)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{system} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench(name: str, files, refs, workload: str, found: dict, rounds: int, passes: int = 1) -> None:
    """Each system `rounds` rounds in a process of its own; with `passes` > 1 the systems take
    turns that many times (every other pass in reverse order), each pass's ratio is printed (a
    shared host's speed drifts over minutes: a ratio within one pass compares like with like),
    and the table holds each system's best round over all passes."""
    audio = sum(sf.info(f).duration for f in files)
    words = sum(len(reference_words(r)) for r in refs)
    say(f"\n{name}: {len(files)} files, {audio:.0f} s, {words} reference words, best of {rounds} x {passes}")
    say(f"{'system':<30} {'RTFx':>7} {'WER':>7} {'p50 ms':>8} {'p90 ms':>8}")
    chosen = [(s, v) for s, v in found.items() if workload != "one-call" or s in ONE_CALL]
    results: dict[str, list[dict]] = {system: [] for system, _ in chosen}
    for turn in range(passes):
        for system, (python, model) in chosen if turn % 2 == 0 else chosen[::-1]:
            results[system].append(run_worker(python, system, model, workload, files, rounds))
    fastest = lambda seconds: audio / sum(min(seconds, key=sum))  # noqa: E731 - RTFx of the best round
    rtfx = {}
    for system, runs in results.items():
        seconds = [r for run in runs for r in run["seconds"]]
        rtfx[system] = fastest(seconds)
        latency = ""
        if workload == "one-by-one" and len(files) > 4:
            per_file = sorted(statistics.median(r[i] for r in seconds) for i in range(len(files)))
            p50, p90 = per_file[len(files) // 2], per_file[int(0.9 * (len(files) - 1))]
            latency = f"{1000 * p50:8.0f} {1000 * p90:8.0f}"
        say(f"{system:<30} {rtfx[system]:6.1f}x {wer(refs, runs[0]['texts']):7.4f} {latency}")
    others = [s for s in rtfx if not s.startswith("Scriba")]
    if not others:
        return
    best_other = max(others, key=rtfx.get)
    for mine in [s for s in rtfx if s.startswith("Scriba")]:
        say(f"{mine} / {best_other} ({rtfx[best_other]:.1f}x): {rtfx[mine] / rtfx[best_other]:.2f}x")
        if passes > 1:
            per_pass = [
                fastest(results[mine][k]["seconds"]) / max(fastest(results[s][k]["seconds"]) for s in others)
                for k in range(passes)
            ]
            say(f"  per pass, {mine} / the fastest other: " + ", ".join(f"{r:.2f}x" for r in per_pass))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--peers-python", default=None, help="a Python with openvino-genai installed")
    parser.add_argument("--openvino-models", default=None, help="folder of the exported models")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=1, help="times the systems take turns (ratio per pass)")
    parser.add_argument("--workloads", default="", help="names to run, separated by ; (default: all)")
    parser.add_argument(
        "--skip", default="", help="systems left out, separated by ; (e.g. 'faster-whisper int8')"
    )
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    say(f"# python benchmarks/bench_cpu_field.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    say(f"# machine: {cpu_name()}, {len(os.sched_getaffinity(0))} CPUs")
    for model in args.models.split(","):
        say(f"\n## {model}")
        skipped = set(args.skip.split(";")) - {""}
        found = {k: v for k, v in systems(args, model).items() if k not in skipped or k == "Scriba default"}
        for name, (files, refs, workload) in workloads(args.data).items():
            if args.workloads and name not in args.workloads.split(";"):
                continue
            bench(name, files, refs, workload, found, args.rounds, args.passes)
    save_lines(LINES, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
