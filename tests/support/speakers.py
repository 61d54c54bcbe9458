"""The two-speaker conversation the diarization tests share: real utterances of two readers
(tests/data/speakers) laid end to end in turns with short gaps, its reference turns (the
utterances' spans), and the utterances left out as reference clips of each voice."""

import csv
import os

import numpy as np
import paths

from scriba.media.load import SAMPLE_RATE, load_audio

FOLDER = os.path.join(paths.TEST_DATA, "speakers")
TURNS = (  # (file, gap after it in seconds)
    ("ljspeech_LJ050-0075", 0.4),
    ("librispeech_61-70968-0000", 0.5),
    ("ljspeech_LJ050-0115", 0.3),
    ("librispeech_61-70968-0001", 0.6),
    ("ljspeech_LJ050-0131", 0.4),
    ("librispeech_61-70968-0002", 0.0),
)
# Each voice's reference clip, not one of the conversation's turns
REFERENCES = {"ljspeech": "ljspeech_LJ001-0042", "librispeech_61": "librispeech_61-70968-0003"}


def manifest() -> dict[str, dict]:
    with open(os.path.join(FOLDER, "MANIFEST.tsv"), newline="") as f:
        return {os.path.splitext(r["file"])[0]: r for r in csv.DictReader(f, delimiter="\t")}


def clip(name: str) -> str:
    return os.path.join(FOLDER, name + ".ogg")


def conversation(turns=TURNS) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """(16 kHz wave, [(start, end, speaker)] reference turns)."""
    rows = manifest()
    parts, reference, at = [], [], 0
    for name, gap in turns:
        wave = load_audio(clip(name))
        reference.append((at / SAMPLE_RATE, (at + len(wave)) / SAMPLE_RATE, rows[name]["speaker"]))
        parts += [wave, np.zeros(int(gap * SAMPLE_RATE), np.float32)]
        at += len(wave) + int(gap * SAMPLE_RATE)
    return np.concatenate(parts), reference


def speaker_at(reference, t: float) -> str | None:
    """The reference speaker at time `t` (None in a gap)."""
    return next((s for a, b, s in reference if a <= t < b), None)
