"""Whisper on this CPU against its peers, the same weights in each: Scriba's default, faster-whisper
(int8, sequential and batched) and OpenVINO GenAI (int8 weights).

    python -m benchmarks field [--data DIR] [--models tiny.en,base] [--rounds 3] [--passes 1]
        [--peers-python /tmp/peers/bin/python --openvino-models /tmp/ov] [--skip NAMES] [--out FILE]

Workloads (benchmarks/data.py's layout): the short clips one at a time (RTFx over the set, latency
p50 / p90 per clip, WER), the same clips in one call (systems that take a list), and each long
recording alone. Every system runs in a process of its own, one at a time (keep the machine
quiet), warmed up on one file, then timed over `--rounds` rounds; the fastest round counts.
`--passes N`: the systems take turns N times and each turn's ratio is printed too. Greedy,
English, timestamps on. Prints, per workload, Scriba's ratio to the fastest other system.
OpenVINO GenAI's venv and models: benchmarks/README.md (`python -m benchmarks export-hf`).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from benchmarks.data import speech_set, wer, words
from benchmarks.report import Report, suite_parser

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_NAMES = {
    "Scriba default": "scriba",
    "faster-whisper int8": "faster-whisper",
    "faster-whisper int8 batched": "faster-whisper-batched",
    "OpenVINO GenAI int8": "openvino-genai",
}
ONE_CALL = {"Scriba default"}  # the systems whose call takes a list of files


def workloads(data: str | None) -> dict[str, tuple[list[str], list[str], str]]:
    """name -> (files, references, the worker's workload)."""
    short = speech_set(data, "short")
    return {
        "short, one at a time": (*short, "one-by-one"),
        "short, one call": (*short, "one-call"),
        "long-form": (*speech_set(data, "longform"), "one-by-one"),
    }


def systems(args, model: str, report: Report) -> dict[str, tuple[str, str]]:
    """name -> (python, model argument) of each system installed here."""
    from scriba.models.offline import offline_model_path

    found = {"Scriba default": (sys.executable, model)}
    try:
        import faster_whisper  # noqa: F401
    except ImportError:
        report("# faster-whisper is not installed here (pip install '.[bench]'): left out")
    else:
        folder = offline_model_path(model)
        found["faster-whisper int8"] = (sys.executable, folder)
        found["faster-whisper int8 batched"] = (sys.executable, folder)
    exported = os.path.join(args.openvino_models or "", model)
    if args.peers_python and os.path.isdir(exported):
        found["OpenVINO GenAI int8"] = (args.peers_python, exported)
    else:
        report(f"# OpenVINO GenAI: no --peers-python or no export at {exported!r}: left out")
    return found


def run_worker(python: str, system: str, model: str, workload: str, files: list[str], rounds: int) -> dict:
    command = [python, os.path.join(HERE, "field_worker.py"), WORKER_NAMES[system], model, workload, *files]
    done = subprocess.run([*command, "--rounds", str(rounds)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{system} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench(report, name, files, refs, workload: str, found: dict, rounds: int, passes: int) -> None:
    """Each system `rounds` rounds in a process of its own, the systems taking turns `passes` times
    (every other pass in reverse order; a shared host's speed drifts over minutes, so a ratio within
    one pass compares like with like); the table holds each system's best round over all passes."""
    import soundfile as sf

    audio = sum(sf.info(f).duration for f in files)
    count = sum(len(words(r)) for r in refs)
    report(f"\n{name}: {len(files)} files, {audio:.0f} s, {count} words, best of {rounds} x {passes}")
    report(f"{'system':<30} {'RTFx':>7} {'WER':>7} {'p50 ms':>8} {'p90 ms':>8}")
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
        report(f"{system:<30} {rtfx[system]:6.1f}x {wer(refs, runs[0]['texts']):7.4f} {latency}")
    others = [s for s in rtfx if not s.startswith("Scriba")]
    if others:
        best = max(others, key=rtfx.get)
        report(f"Scriba default / {best} ({rtfx[best]:.1f}x): {rtfx['Scriba default'] / rtfx[best]:.2f}x")
        if passes > 1:
            per_pass = [
                fastest(results["Scriba default"][k]["seconds"])
                / max(fastest(results[s][k]["seconds"]) for s in others)
                for k in range(passes)
            ]
            report("  per pass: " + ", ".join(f"{r:.2f}x" for r in per_pass))


def main(argv: list[str]) -> int:
    parser = suite_parser("field", __doc__, data=True)
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--peers-python", default=None, help="a Python with openvino-genai installed")
    parser.add_argument("--openvino-models", default=None, help="the folder `export-hf` + optimum-cli made")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=1, help="times the systems take turns")
    parser.add_argument("--skip", default="", help="systems left out, separated by ;")
    parser.add_argument("--smoke", action="store_true", help="tiny.en, one round, the bundled clip")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.smoke:
        args.models, args.rounds, args.passes, args.data = "tiny.en", 1, 1, None
    report = Report("field", argv)
    for model in args.models.split(","):
        report(f"\n## {model}")
        skipped = set(args.skip.split(";")) - {"", "Scriba default"}
        found = {k: v for k, v in systems(args, model, report).items() if k not in skipped}
        for name, (files, refs, workload) in workloads(args.data).items():
            bench(report, name, files, refs, workload, found, args.rounds, args.passes)
    report.save(args.out)
    return 0
