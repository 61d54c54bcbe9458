"""Whisper on real speech on this CPU: Scriba's modes vs faster-whisper vs transformers.

    python benchmarks/bench_whisper.py [--data ../shared/data/dev_speech] [--skip bfloat16]

Same weights everywhere (the bundled tiny.en). Two workloads, in one run:
  short      the dev set's short English utterances (MANIFEST.tsv) and jfk.flac
  long-form  the dev set's long-form recording (158 s)
Systems, each warmed up on one file first, greedy, English, timestamps on:
  Scriba float32 / bfloat16 / int8   scriba.transcribe(all files): its batch (mode="batched";
                                     for long-form also mode="sequential"; Silero VAD on for
                                     audio over 30 s, as by default)
  faster-whisper int8 / float32      WhisperModel.transcribe, one file at a time, and its
                                     BatchedInferencePipeline (batch_size 8, its defaults: VAD
                                     chunks, no timestamp tokens); the `bench` extra
  transformers float32               short: generate() on the batched features; long-form:
                                     generate() on the whole recording (sequential long-form)
Prints real-time factor (audio seconds per second), WER against the references (lower case,
punctuation dropped, digits spelled), texts equal to Scriba float32's, and each Scriba mode's
ratio to faster-whisper int8 (the faster of its two ways). Keep the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import os
import time

import soundfile as sf
import torch
from whisper_systems import faster_whisper_systems, scriba_systems, transformers_system
from wer import load_manifest, wer

HERE = os.path.dirname(os.path.abspath(__file__))
JFK = os.path.join(HERE, "..", "assets", "jfk.flac")
JFK_TEXT = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."


def workloads(data: str) -> dict[str, tuple[list[str], list[str]]]:
    files, refs = load_manifest(data, "short")
    return {"short": (files + [JFK], refs + [JFK_TEXT]), "long-form": load_manifest(data, "longform")}


def measure(run, files: list[str]) -> tuple[float, list[str]]:
    run(files[:1])  # warm-up: model load, first-pass allocations
    start = time.perf_counter()
    texts = [t.strip() for t in run(files)]
    return time.perf_counter() - start, texts


def bench(name: str, files: list[str], refs: list[str], systems: dict) -> dict[str, float]:
    seconds = sum(sf.info(f).duration for f in files)
    words = sum(len(r.split()) for r in refs)
    print(f"\n{name}: {len(files)} files, {seconds:.0f} s, {words} reference words")
    print(f"{'system':<40} {'RTFx':>7} {'WER':>7}  same text as Scriba float32")
    rtfx, texts = {}, {}
    for system, run in systems.items():
        elapsed, texts[system] = measure(run, files)
        rtfx[system] = seconds / elapsed
        base = texts.get("Scriba float32") or texts[system]
        same = sum(a == b for a, b in zip(texts[system], base))
        print(
            f"{system:<40} {rtfx[system]:6.1f}x {wer(refs, texts[system]):7.4f}  {same}/{len(files)}",
            flush=True,
        )
    return rtfx, texts


def ratios(rtfx: dict[str, float]) -> None:
    bar = max((v, k) for k, v in rtfx.items() if k.startswith("faster-whisper int8"))
    print(f"vs {bar[1]} ({bar[0]:.1f}x):")
    for system, value in rtfx.items():
        if system.startswith("Scriba"):
            print(f"  {system:<38} {value / bar[0]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(HERE, "..", "..", "shared", "data", "dev_speech"))
    parser.add_argument("--skip", default="", help="comma-separated Scriba modes to leave out")
    args = parser.parse_args()
    from bench_bart import cpu_name

    print(f"machine: {cpu_name()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}")
    modes = [m for m in ("float32", "bfloat16", "int8") if m not in args.skip.split(",")]
    all_refs, all_texts = [], {}  # Scriba's default (batched) texts over both workloads
    for name, (files, refs) in workloads(args.data).items():
        systems = scriba_systems(modes, sequential=name == "long-form")
        systems.update(faster_whisper_systems(torch.get_num_threads()))
        systems.update(transformers_system(long_form=name == "long-form"))
        rtfx, texts = bench(name, files, refs, systems)
        if any(k.startswith("faster-whisper int8") for k in rtfx):
            ratios(rtfx)
        all_refs += refs
        for system, t in texts.items():
            all_texts.setdefault(system, []).extend(t)
    print(
        f"\nWER over both workloads ({sum(len(r.split()) for r in all_refs)} words), Scriba's default mode:"
    )
    for mode in modes:
        texts = all_texts[f"Scriba {mode}"]
        delta = wer(all_refs, texts) - wer(all_refs, all_texts["Scriba float32"])
        print(f"  Scriba {mode:<10} {wer(all_refs, texts):.4f} ({delta:+.4f} vs float32)")


if __name__ == "__main__":
    main()
