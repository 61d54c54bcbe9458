"""Long-form without timestamp tokens (faster-whisper's batched mode): faster, and are the
subtitles as good?

    python benchmarks/bench_no_timestamps.py [--data ../shared/data]
        [--out benchmarks/results/no_timestamps_cpu.txt]

The dev long-form recordings (the 7.8-minute chapter and the 158 s sonnets), each file alone,
tiny.en, Scriba's CPU default, VAD on, word timestamps on, two ways:
  timestamps     today's default: Whisper's timestamp tokens cut the segments (and unfinished
                 tails are decoded again)
  no timestamps  timestamps=False: one text per VAD window, its words timed by the
                 cross-attention alignment pass alone
Prints, per way: real-time factor, WER, segment durations (mean, longest), and how far each
word's start lies from the same word's start with timestamps (words matched by a diff of the
two word lists): median, 90th percentile and the share within 0.1 s. The issue's bar for making
it the default: segments no longer than today's, word times within 0.1 s of today's.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import os
import sys
import time

import numpy as np
import soundfile as sf
from results_file import save_lines
from wer import load_manifest, wer, words

import scriba

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")


def long_files(data: str) -> tuple[list[str], list[str]]:
    sonnets, sonnet_refs = load_manifest(os.path.join(data, "dev_speech"), "longform")
    with open(os.path.join(data, "dev_longform", "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    chapter = [os.path.join(data, "dev_longform", r["file"]) for r in rows]
    return chapter + sonnets, [r["reference_text"] for r in rows] + sonnet_refs


def run(files: list[str], timestamps: bool) -> tuple[float, list]:
    options = scriba.TranscribeOptions(timestamps=timestamps, word_timestamps=True, vad_filter=True)
    scriba.transcribe(files[-1], options)  # warm-up
    start = time.perf_counter()
    results = [scriba.transcribe(f, options) for f in files]
    return time.perf_counter() - start, results


def word_starts(result) -> list[tuple[str, float]]:
    return [(w, word.start) for s in result.segments for word in s.words for w in words(word.word)[:1]]


def start_gaps(today: list[tuple[str, float]], other: list[tuple[str, float]]) -> np.ndarray:
    """|start difference| of the words both outputs share, matched in order."""
    match = difflib.SequenceMatcher(a=[w for w, _ in today], b=[w for w, _ in other], autojunk=False)
    gaps = [
        abs(today[block.a + k][1] - other[block.b + k][1])
        for block in match.get_matching_blocks()
        for k in range(block.size)
    ]
    return np.asarray(gaps)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    files, refs = long_files(args.data)
    seconds = sum(sf.info(f).duration for f in files)
    lines = [
        f"# python benchmarks/bench_no_timestamps.py  ({len(files)} files, {seconds:.0f} s, tiny.en)",
        "",
    ]
    lines.append(f"{'way':<15} {'RTFx':>6} {'WER':>7} {'segments':>9} {'mean s':>7} {'longest s':>10}")
    outputs = {}
    for name, timestamps in (("timestamps", True), ("no timestamps", False)):
        elapsed, results = run(files, timestamps)
        outputs[name] = results
        lengths = [s.end - s.start for r in results for s in r.segments]
        error = wer(refs, [r.text for r in results])
        lines.append(
            f"{name:<15} {seconds / elapsed:5.1f}x {error:7.4f} {len(lengths):9d} "
            f"{np.mean(lengths):7.1f} {np.max(lengths):10.1f}"
        )
    gaps = np.concatenate(
        [
            start_gaps(word_starts(a), word_starts(b))
            for a, b in zip(outputs["timestamps"], outputs["no timestamps"])
        ]
    )
    lines.append("")
    lines.append(
        f"word starts without timestamps vs with: {len(gaps)} shared words, median {np.median(gaps):.3f} s, "
        f"90th percentile {np.percentile(gaps, 90):.3f} s, within 0.1 s: {np.mean(gaps <= 0.1):.1%}"
    )
    print("\n".join(lines))
    save_lines(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
