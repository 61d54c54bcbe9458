"""How soon transcribe_stream() yields, on the dev long-form recording (7.8 minutes).

    python benchmarks/bench_stream.py [FILE] [--out benchmarks/results/stream_cpu.txt]

For each mode (batched, the default, and sequential): the time to the stream's first segment,
how many windows were decoded by then (of those known then: tails and retries add more), the
total time, and whether the streamed segments equal transcribe()'s (run just before, with the
same settings). Keep the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
from results_file import save_lines

import scriba
from scriba.transcription import window_decoder

HERE = os.path.dirname(os.path.abspath(__file__))
LONG = os.path.join(
    HERE, "..", "..", "shared", "data", "dev_longform", "ljspeech_LJ001-0041_to_LJ001-0110_concat.flac"
)


def count_windows(seen: list) -> None:
    """After each finished window, (windows decoded, windows queued so far) goes to `seen`."""
    results = window_decoder.WindowDecoder.results

    def counted(self):
        for pair in results(self):
            seen.append((self.finished, self.submitted))
            yield pair

    window_decoder.WindowDecoder.results = counted


def measure(path: str, mode: str, seen: list) -> str:
    whole = scriba.transcribe(path, mode=mode)
    seen.clear()
    start = time.perf_counter()
    segments, info = scriba.transcribe_stream(path, mode=mode)
    first, at_first, streamed = None, (0, 0), []
    for segment in segments:
        if first is None:
            first, at_first = time.perf_counter() - start, seen[-1]
        streamed.append(segment)
    total = time.perf_counter() - start
    same = [(s.start, s.end, s.text) for s in streamed] == [(s.start, s.end, s.text) for s in whole.segments]
    return (
        f"{mode}: first segment after {first:.2f} s of {total:.2f} s ({100 * first / total:.0f}%), with "
        f"{at_first[0]} of {at_first[1]} windows decoded; {len(streamed)} segments, equal to transcribe(): "
        f"{same}; language {info.language}, {info.duration:.1f} s of audio"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=LONG)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    from machine import cpu_name

    scriba.transcribe(args.file)  # warm-up: model load, first allocations
    seen: list = []
    count_windows(seen)
    lines = [
        f"# python benchmarks/bench_stream.py {' '.join(sys.argv[1:] if argv is None else argv)}".rstrip(),
        f"# machine: {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"{os.path.basename(args.file)}",
    ]
    for mode in ("batched", "sequential"):
        lines.append(measure(args.file, mode, seen))
        print(lines[-1], flush=True)
    save_lines(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
