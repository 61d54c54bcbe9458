"""The real non-English clips in tests/data/multilingual and how their transcripts are scored:
the benchmarks' error_rate (WER; CER for Japanese and Chinese), and the per-language figures
the multilingual suite (`python -m benchmarks multilingual`) measured with faster-whisper on the
same weights."""

import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "multilingual")
FIGURES = os.path.join(HERE, "..", "..", "benchmarks", "results", "multilingual_base.tsv")
sys.path.insert(0, os.path.join(HERE, "..", ".."))

from benchmarks.multilingual import error_rate, multilingual_units, translation_errors  # noqa: E402

__all__ = [
    "CLIPS",
    "clip",
    "error_rate",
    "faster_whisper_figures",
    "multilingual_units",
    "translation_errors",
]


def _clips() -> list[dict]:
    with open(os.path.join(DATA, "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [
        {
            "path": os.path.join(DATA, r["file"]),
            "language": r["language"],
            "ref": r["reference_text"],
            "english": r["english_translation"],  # a reference translation, or empty
        }
        for r in rows
    ]


CLIPS = _clips()


def clip(prefix: str) -> dict:
    """The clip whose file name starts with `prefix` ("de_", "zh_aishell", ...)."""
    return next(c for c in CLIPS if os.path.basename(c["path"]).startswith(prefix))


def faster_whisper_figures(system: str = "faster-whisper float32") -> dict[str, tuple[int, int]]:
    """language -> (errors, words or characters of the references) of `system`, as committed
    by the benchmark."""
    with open(FIGURES, newline="") as f:
        lines = (line for line in f if not line.startswith("#"))  # the results' header
        rows = [r for r in csv.DictReader(lines, delimiter="\t") if r["system"] == system]
    return {r["language"]: (int(r["errors"]), int(r["units"])) for r in rows}
