"""Word error rate against the dev set's references, and the dev set's manifest."""

from __future__ import annotations

import csv
import os
import re

DIGITS = "zero one two three four five six seven eight nine".split()


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
    errors = sum(edit_distance(words(r), words(h)) for r, h in zip(refs, hyps))
    return errors / sum(len(words(r)) for r in refs)


CHARACTER_LANGUAGES = {"ja", "zh", "yue", "th", "lo", "my", "km", "bo"}  # written without spaces


def multilingual_units(language: str, text: str) -> list[str]:
    """Whisper's basic normalizer (lower case, punctuation and symbols dropped); words, or the
    characters of languages written without spaces between words."""
    from transformers.models.whisper.english_normalizer import BasicTextNormalizer

    # The normalizer drops text in parentheses; references put spoken words there.
    text = BasicTextNormalizer()(text.replace("(", " ").replace(")", " "))
    return list(text.replace(" ", "")) if language in CHARACTER_LANGUAGES else text.split()


def error_rate(language: str, refs: list[str], hyps: list[str]) -> float:
    """WER, or CER for languages written without spaces, pooled over the pairs."""
    pairs = [(multilingual_units(language, r), multilingual_units(language, h)) for r, h in zip(refs, hyps)]
    return sum(edit_distance(r, h) for r, h in pairs) / sum(len(r) for r, _ in pairs)


def load_manifest(data: str, folder: str) -> tuple[list[str], list[str]]:
    """(paths, reference texts) of the manifest's files under `folder`/."""
    with open(os.path.join(data, "MANIFEST.tsv"), newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["file"].startswith(folder + "/")]
    return [os.path.join(data, r["file"]) for r in rows], [r["reference_text"] for r in rows]
