"""Whisper on real speech on this CPU: Scriba against faster-whisper, the same weights.

    python benchmarks/bench_whisper.py [--models tiny.en,base] [--skip float32] [--repeats 3]
        [--data ../shared/data] [--out benchmarks/results/whisper_modes_cpu.txt]

Two workloads, in one run, for each model (tiny.en, the bundled English-only model, and the
multilingual base of the `multilingual` extra):
  long-form  the 7.8-minute dev long-form recording (dev_longform) and the 158 s sonnets
             (dev_speech/longform), each file transcribed alone
  short      the 24 short English utterances of dev_speech and jfk.flac (166 s)
Systems, each warmed up on one file first, then timed in interleaved rounds (the fastest
round counts; the range is printed: this shared machine's neighbours move single runs by up to
50%), greedy, timestamps on unless the system decodes
without them, language "en" (so every system skips detection):
  Scriba default / float32   scriba.transcribe(): its default on this CPU (int8 Linear layers)
                             and the exact mode; the short clips go in one call (one batch)
  Scriba torch-decoder       the default with a lone request's decode steps in the torch modules
                             (decoder_runtime="torch"), not the numba step
  Scriba bfloat16-KV         the default with a bfloat16 KV cache (kv_cache_dtype="bfloat16"),
  Scriba float16-KV          or a float16 one (kv_cache_dtype="float16")
  Scriba fp8-KV / int8-KV    the default with an 8-bit KV cache (kv_cache_dtype="fp8": e4m3
                             codes, "int8"), a scale per cached vector
  faster-whisper int8        WhisperModel.transcribe, one file at a time (its sequential
                             long-form), and BatchedInferencePipeline (its faster mode: VAD
                             chunks of up to 30 s, batch 8, no timestamp tokens)
Each model runs in a process of its own, as a user runs one: measured in one process after
tiny.en, the base model's figures moved (Scriba 25% slower, faster-whisper batched 45% faster,
in two runs), which says more about leftovers than about either system.
Prints the real-time factor (audio seconds per second), WER against the references (lower case,
punctuation dropped, digits spelled) and each Scriba mode's ratio to the faster of
faster-whisper's two ways. Keep the machine otherwise idle: the ratios compare seconds.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time

import soundfile as sf
import torch
from results_file import save_lines
from wer import load_manifest, wer
from whisper_systems import faster_whisper_systems, scriba_systems

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
JFK = os.path.join(HERE, "..", "assets", "jfk.flac")
JFK_TEXT = (
    "And so my fellow Americans, ask not what your country can do for you,"
    " ask what you can do for your country."
)
LINES: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def ljspeech_clips(data: str) -> tuple[list[str], list[str]]:
    """The dev long-form recording's 70 LJ Speech clips (1-10 s, 1,170 reference words), cut at
    its .segments.tsv times into a scratch folder (once): a second set of short English clips,
    so that a few words' difference between systems is not left to dev_speech's 433 words."""
    import tempfile

    folder = os.path.join(data, "dev_longform")
    recording = os.path.join(folder, "ljspeech_LJ001-0041_to_LJ001-0110_concat.flac")
    with open(recording.replace(".flac", ".segments.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    out = os.path.join(tempfile.gettempdir(), "scriba_ljspeech_clips")
    files = [os.path.join(out, f"{r['utt_id']}.flac") for r in rows]
    if not all(os.path.exists(f) for f in files):
        os.makedirs(out, exist_ok=True)
        wave, rate = sf.read(recording)
        for r, path in zip(rows, files):
            start, end = (round(float(r[k]) * rate) for k in ("start_s", "end_s"))
            sf.write(f"{path}.part.flac", wave[start:end], rate)
            os.replace(f"{path}.part.flac", path)  # an interrupted cut is not taken for a clip
    return files, [r["normalized_text"] for r in rows]


def workloads(data: str) -> dict[str, tuple[list[str], list[str]]]:
    short, short_refs = load_manifest(os.path.join(data, "dev_speech"), "short")
    sonnets, sonnet_refs = load_manifest(os.path.join(data, "dev_speech"), "longform")
    with open(os.path.join(data, "dev_longform", "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    chapter = [os.path.join(data, "dev_longform", r["file"]) for r in rows]
    return {
        "long-form": (chapter + sonnets, [r["reference_text"] for r in rows] + sonnet_refs),
        "short": (short + [JFK], short_refs + [JFK_TEXT]),
    }


def measure(run, files: list[str], one_by_one: bool) -> tuple[float, list[str]]:
    start = time.perf_counter()
    texts = [t for f in files for t in run([f])] if one_by_one else run(files)
    return time.perf_counter() - start, [t.strip() for t in texts]


def bench(name: str, files: list[str], refs: list[str], systems: dict, repeats: int) -> dict[str, float]:
    """Each system warmed up on one file, then timed `repeats` times in interleaved rounds (a
    busy neighbour slows one round of every system, not all of one system's): its fastest
    round counts, and the range is printed."""
    seconds = sum(sf.info(f).duration for f in files)
    words = sum(len(r.split()) for r in refs)
    say(f"\n{name}: {len(files)} files, {seconds:.0f} s, {words} reference words, best of {repeats}")
    say(f"{'system':<36} {'RTFx':>7} {'WER':>7}  {'range':>13}")
    for run in systems.values():
        run(files[:1])  # warm-up: model load, first allocations
    times: dict[str, list[float]] = {system: [] for system in systems}
    texts = {}
    for _ in range(repeats):
        for system, run in systems.items():
            # Long-form files are transcribed one at a time by every system, as a user runs them.
            elapsed, texts[system] = measure(run, files, one_by_one=name == "long-form")
            times[system].append(elapsed)
    rtfx = {system: seconds / min(t) for system, t in times.items()}
    for system, t in times.items():
        spread = f"{seconds / max(t):.1f}-{seconds / min(t):.1f}x"
        say(f"{system:<36} {rtfx[system]:6.1f}x {wer(refs, texts[system]):7.4f}  {spread:>13}")
    bar = max(((v, k) for k, v in rtfx.items() if k.startswith("faster-whisper")), default=None)
    if bar is not None:
        say(f"ratios to {bar[1]} ({bar[0]:.1f}x):")
        for system, value in rtfx.items():
            if system.startswith("Scriba"):
                say(f"  {system:<34} {value / bar[0]:.2f}x")
    return rtfx


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--skip", default="", help="comma-separated Scriba modes to leave out")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--out", default=None, help="also write the printed lines here")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds; the fastest counts")
    args = parser.parse_args(argv)
    from bench_bart import cpu_name

    say(f"# python benchmarks/bench_whisper.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    say(f"# machine: {cpu_name()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}")
    models = args.models.split(",")
    if len(models) > 1:  # each model in a process of its own, as a user runs one
        for model in models:
            flags = ["--models", model, "--skip", args.skip, "--data", args.data]
            command = [sys.executable, __file__, *flags, "--repeats", str(args.repeats)]
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode:
                raise SystemExit(run.stderr)
            for line in run.stdout.splitlines()[2:]:  # its own header left out
                say(line)
        models = []
    all_modes = (
        "default",
        "int8-torch-encoder",
        "torch-decoder",
        "bfloat16-KV",
        "float16-KV",
        "fp8-KV",
        "int8-KV",
        "float32",
    )
    modes = [m for m in all_modes if m not in args.skip.split(",")]
    for model in models:
        say(f"\n## {model}")
        for name, (files, refs) in workloads(args.data).items():
            systems = scriba_systems(modes, model=model, language="en")
            systems.update(faster_whisper_systems(torch.get_num_threads(), model, compute_types=("int8",)))
            bench(name, files, refs, systems, args.repeats)
    save_lines(LINES, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
