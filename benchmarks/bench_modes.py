"""Scriba's CPU modes on real speech: speed (real-time factor) and word error rate.

    python benchmarks/bench_modes.py [--data ../shared/data/dev_speech]

Transcribes the short English utterances of the dev set (MANIFEST.tsv: path, reference) with
the bundled tiny.en through `scriba.transcribe()`, once per mode (float32, int8), after one
warm-up call each, and prints RTFx, WER against the references (lower case, punctuation
dropped) and the share of utterances whose text equals float32's. With faster-whisper installed (the
`bench` extra), the same files through faster-whisper's WhisperModel, int8 and float32, one
file at a time, greedy with timestamps, on the same bundled weights.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import time

import soundfile as sf
import torch

import scriba

MODES = {"float32": {}, "int8": {"quantization": "int8"}}


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", " ")).split()


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def wer(refs: list[str], hyps: list[str]) -> float:
    errors = sum(edit_distance(words(r), words(h)) for r, h in zip(refs, hyps))
    return errors / sum(len(words(r)) for r in refs)


def load_manifest(data: str, folder: str) -> tuple[list[str], list[str]]:
    with open(os.path.join(data, "MANIFEST.tsv"), newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["file"].startswith(folder + "/")]
    return [os.path.join(data, r["file"]) for r in rows], [r["reference_text"] for r in rows]


def faster_whisper_runs(threads: int) -> dict:
    """{name: files -> texts} for faster-whisper int8 and float32, or {} if not installed."""
    try:
        from faster_whisper import WhisperModel
    except ImportError:
        return {}
    from scriba.models import default_model_path

    def runner(compute_type: str):
        model = WhisperModel(
            default_model_path(), device="cpu", compute_type=compute_type, cpu_threads=threads
        )

        def run(files: list[str]) -> list[str]:
            segments = [model.transcribe(f, beam_size=1, language="en")[0] for f in files]
            return ["".join(s.text for s in segs) for segs in segments]

        return run

    return {f"faster-whisper {t}": runner(t) for t in ("int8", "float32")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data", "dev_speech"))
    args = parser.parse_args()
    files, refs = load_manifest(args.data, "short")
    seconds = sum(sf.info(f).duration for f in files)
    print(f"{len(files)} utterances, {seconds:.0f} s; bundled tiny.en; greedy with timestamps")
    print(f"{'system':<22} {'RTFx':>7} {'WER':>7}  same text as Scriba float32")
    runs = {name: _scriba_run(options) for name, options in MODES.items()}
    runs.update(faster_whisper_runs(torch.get_num_threads()))
    texts, rtfx = {}, {}
    for name, run in runs.items():
        run(files[:2])  # warm-up: model load, first-pass allocations
        start = time.perf_counter()
        texts[name] = [t.strip() for t in run(files)]
        rtfx[name] = seconds / (time.perf_counter() - start)
        same = sum(a == b for a, b in zip(texts[name], texts["float32"]))
        print(f"{name:<22} {rtfx[name]:6.1f}x {wer(refs, texts[name]):7.4f}  {same}/{len(files)}")
    if "faster-whisper int8" in rtfx:
        for name in MODES:
            print(f"Scriba {name} / faster-whisper int8: {rtfx[name] / rtfx['faster-whisper int8']:.2f}x")


def _scriba_run(options: dict):
    return lambda files: [t.text for t in scriba.transcribe(files, **options)]


if __name__ == "__main__":
    main()
