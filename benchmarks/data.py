"""The suites' speech and how their words are scored.

A `--data` folder holds `MANIFEST.tsv` (tab-separated, with the columns `file`, a path under the
folder, and `reference_text`) and the audio it names, in two subfolders:

    short/      utterances of a few seconds, each its own request
    longform/   recordings of minutes, each its own request

`python -m benchmarks fetch-data DIR` makes such a folder from LibriSpeech test-clean (CC BY 4.0,
from openslr.org): two utterances of every chapter in short/, and the first chapters' utterances
end to end (half a second apart) in longform/. Without `--data` a suite runs on the bundled
assets/jfk.flac alone: a smoke run that shows the suite works, not a figure to quote.
"""

from __future__ import annotations

import csv
import os
import re
import tarfile
import tempfile
import urllib.request

from benchmarks.report import ROOT

JFK = os.path.join(ROOT, "assets", "jfk.flac")
JFK_TEXT = (
    "And so my fellow Americans, ask not what your country can do for you, "
    "ask what you can do for your country."
)
LIBRISPEECH_TEST_CLEAN = "https://www.openslr.org/resources/12/test-clean.tar.gz"
DIGITS = "zero one two three four five six seven eight nine".split()


def speech_set(data: str | None, folder: str) -> tuple[list[str], list[str]]:
    """(paths, reference texts) of the manifest's files under `folder`/ ("short" or "longform");
    the bundled clip when `data` is None."""
    if data is None:
        return [JFK], [JFK_TEXT]
    manifest = os.path.join(data, "MANIFEST.tsv")
    if not os.path.exists(manifest):
        raise SystemExit(f"--data {data!r} has no MANIFEST.tsv (see benchmarks/README.md for the layout)")
    with open(manifest, newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["file"].startswith(folder + "/")]
    if not rows:
        raise SystemExit(f"--data {data!r}: its MANIFEST.tsv lists no file under {folder}/")
    return [os.path.join(data, r["file"]) for r in rows], [r["reference_text"] for r in rows]


def words(text: str) -> list[str]:
    """Lower case, punctuation dropped, hyphens split, lone digits spelled (references differ)."""
    text = re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", " "))
    return [DIGITS[int(w)] if w.isdigit() and len(w) == 1 else w for w in text.split()]


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def wer(refs: list[str], hyps: list[str]) -> float:
    """Word errors over reference words, pooled over the pairs."""
    errors = sum(edit_distance(words(r), words(h)) for r, h in zip(refs, hyps))
    return errors / max(1, sum(len(words(r)) for r in refs))


def fetch_librispeech(out: str, url: str = LIBRISPEECH_TEST_CLEAN, chapters: int = 4) -> None:
    """Download LibriSpeech test-clean (346 MB) and lay it out in `out` (layout_librispeech)."""
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        archive = os.path.join(scratch, "test-clean.tar.gz")
        print(f"downloading {url} ...", flush=True)
        urllib.request.urlretrieve(url, archive)
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        layout_librispeech(os.path.join(scratch, "LibriSpeech", "test-clean"), out, chapters)
    print(f"wrote {out}/MANIFEST.tsv", flush=True)


def layout_librispeech(corpus: str, out: str, chapters: int = 4, per_chapter: int = 2) -> None:
    """LibriSpeech's SPEAKER/CHAPTER/*.flac with their *.trans.txt -> `out` in the suites' layout:
    `per_chapter` utterances of every chapter in short/, the first `chapters` chapters whole (their
    utterances in order, 0.5 s of silence between them) in longform/."""
    import numpy as np
    import soundfile as sf

    rows = []
    for folder in ("short", "longform"):
        os.makedirs(os.path.join(out, folder), exist_ok=True)
    for index, (chapter, utterances) in enumerate(_chapters(corpus)):
        for utt, text, path in utterances[:per_chapter]:
            audio, rate = sf.read(path, dtype="float32")
            sf.write(os.path.join(out, "short", f"{utt}.flac"), audio, rate)
            rows.append((f"short/{utt}.flac", text))
        if index < chapters:
            pause = np.zeros(8000, np.float32)
            parts = [p for _, _, path in utterances for p in (sf.read(path, dtype="float32")[0], pause)]
            sf.write(os.path.join(out, "longform", f"{chapter}.flac"), np.concatenate(parts[:-1]), 16000)
            rows.append((f"longform/{chapter}.flac", " ".join(text for _, text, _ in utterances)))
    with open(os.path.join(out, "MANIFEST.tsv"), "w", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["file", "reference_text"])
        writer.writerows(rows)


def _chapters(corpus: str):
    """(speaker-chapter, [(utterance id, text, path)]) for every chapter, in sorted order."""
    for speaker in sorted(os.listdir(corpus)):
        for chapter in sorted(os.listdir(os.path.join(corpus, speaker))):
            folder = os.path.join(corpus, speaker, chapter)
            with open(os.path.join(folder, f"{speaker}-{chapter}.trans.txt")) as f:
                pairs = [line.rstrip("\n").split(" ", 1) for line in f if line.strip()]
            yield f"{speaker}-{chapter}", [(u, t, os.path.join(folder, f"{u}.flac")) for u, t in pairs]
