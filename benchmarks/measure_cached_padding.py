"""What `encoder_padding="cached"` (whisper/cached_padding.py) costs in words: the dev set's short
clips through `scriba.transcribe`, one at a time, with every position encoded and with the padding
from a silent window (one second or more past the audio, `--margins` in positions); word error
rate, and each clip whose text changed.

    python benchmarks/measure_cached_padding.py [--model base] [--margins 50,100]
"""

from __future__ import annotations

import argparse
import csv

from wer import wer

import scriba
import scriba.whisper.cached_padding as cached_padding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="an offline name or folder (default: tiny.en)")
    parser.add_argument("--margins", default="50", help="positions encoded past the audio")
    parser.add_argument("--data", default="../shared/data")
    args = parser.parse_args()
    with open(f"{args.data}/dev_speech/MANIFEST.tsv") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["file"].startswith("short")]
    files = [f"{args.data}/dev_speech/{r['file']}" for r in rows]
    references = [r["reference_text"] for r in rows]

    def texts(padding: str) -> list[str]:
        return [scriba.transcribe(f, model=args.model, encoder_padding=padding).text for f in files]

    computed = texts("computed")
    print(f"every position encoded: WER {wer(references, computed):.4f}", flush=True)
    for margin in (int(m) for m in args.margins.split(",")):
        cached_padding.MARGIN_POSITIONS = margin  # read at each call
        cached = texts("cached")
        same = sum(a == b for a, b in zip(computed, cached))
        print(
            f"cached padding, {margin} positions past the audio: WER {wer(references, cached):.4f}, "
            f"{same}/{len(files)} texts the same",
            flush=True,
        )
        for a, b in zip(computed, cached):
            if a != b:
                print(f"  - {a.strip()}\n  + {b.strip()}")


if __name__ == "__main__":
    main()
