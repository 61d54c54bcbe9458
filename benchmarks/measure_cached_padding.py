"""What `encoder_padding="cached"` (whisper/cached_padding.py) costs in words: the dev set's short
clips through `scriba.transcribe`, one at a time, with every position encoded and with the padding
from a silent window (one second or more past the audio, `--margins` in positions); word error
rate, and each clip whose text changed.

    python benchmarks/measure_cached_padding.py [--model base] [--margins 50,100] [--clips ljspeech]

--clips ljspeech: the 70 LJ Speech clips of the dev long-form reading instead (bench_whisper.py's
ljspeech_clips; 1,170 words against dev_speech's 433). --clips languages: the multilingual base
(`--model base`) on 15 s of German, 3 s of silence, 15 s of Spanish, 3 s, 15 s of German
(tests/data/multilingual, as tests/transcription/test_faster_whisper_options.py), a language per
segment, both modes: each segment's times, language and text, and the segments that end before
they start (text past the audio's end, mapped back).
"""

from __future__ import annotations

import argparse
import csv

import numpy as np
from bench_whisper import ljspeech_clips
from wer import wer

import scriba
import scriba.whisper.cached_padding as cached_padding
from scriba.media.load import load_audio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="an offline name or folder (default: tiny.en)")
    parser.add_argument("--margins", default="50", help="positions encoded past the audio")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--clips", choices=("dev_speech", "ljspeech", "languages"), default="dev_speech")
    args = parser.parse_args()
    if args.clips == "languages":
        return languages(args.model or "base", [int(m) for m in args.margins.split(",")])
    if args.clips == "ljspeech":
        files, references = ljspeech_clips(args.data)
    else:
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


def languages(model: str, margins: list[int]) -> None:
    de = load_audio("tests/data/multilingual/de_librivox_aeneas_example7.mp3")
    es = load_audio("tests/data/multilingual/es_librivox_aeneas_example7.mp3")
    pause = np.zeros(3 * 16000, np.float32)
    second = 16000
    mixed = np.concatenate(
        [
            de[2 * second : 17 * second],
            pause,
            es[2 * second : 17 * second],
            pause,
            de[30 * second : 45 * second],
        ]
    )
    for padding, margin in [("computed", None), *(("cached", m) for m in margins)]:
        if margin is not None:
            cached_padding.MARGIN_POSITIONS = margin  # read at each call
        for mode in ("batched", "sequential"):
            result = scriba.transcribe(
                mixed, model=model, multilingual=True, mode=mode, encoder_padding=padding
            )
            backwards = sum(s.end < s.start for s in result.segments)
            past = "" if margin is None else f" ({margin} positions past the audio)"
            print(f"{padding} padding{past}, {mode}: {backwards} segments end before they start")
            for s in result.segments:
                print(f"  {s.start:5.1f} {s.end:5.1f} {s.language} {s.text.strip()[:70]}")


if __name__ == "__main__":
    main()
