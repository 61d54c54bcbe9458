"""The benchmark entry point: `python -m benchmarks --help` names every suite, and every suite's
smoke run (tiny inputs, seconds) runs from a clean clone and prints the header its results carry
(the command, the commit, the versions, the host's vector extensions) and the figures it is for.
The data layout the suites read is built from a LibriSpeech-shaped tree as `fetch-data` lays it."""

import csv
import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, ROOT)

from benchmarks.__main__ import SUITES  # noqa: E402
from benchmarks.data import layout_librispeech, speech_set, wer  # noqa: E402

# suite -> a line its smoke run prints, which only a run that measured something can print
EXPECTED = {
    "field": "Scriba default / faster-whisper int8",
    "longform": "transformers sequential",
    "server": "2 clients:",
    "realtime": "real time 1/1; lost 0",
    "cold-start": "faster-whisper int8, cold: best",
    "summarize": "greedy outputs identical to transformers: 4/4",
    "multilingual": "languages detected right 1/1",
    "diarization": "speaker counts right 2/2",
    "gpu": "greedy tokens identical to transformers: 4/4",
    "gpu-tune": "err ",
}
SMOKED = [suite for suite in SUITES if suite not in ("export-hf", "fetch-data")]


def benchmarks(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "benchmarks", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_help_lists_every_suite_and_an_unknown_one_is_refused():
    listed = benchmarks("--help")
    assert listed.returncode == 0
    assert all(f"  {suite} " in listed.stdout for suite in SUITES)
    assert set(EXPECTED) == set(SMOKED)  # a new suite gets a smoke run
    unknown = benchmarks("fastest")
    assert unknown.returncode == 2 and "unknown suite 'fastest'" in unknown.stderr


@pytest.mark.parametrize("suite", SMOKED)
def test_smoke(suite, tmp_path):
    out = tmp_path / "result.txt"
    done = benchmarks(suite, "--smoke", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert EXPECTED[suite] in done.stdout, done.stdout[-3000:]
    header = out.read_text().splitlines()[:3]
    assert header[0] == f"# python -m benchmarks {suite} --smoke --out {out}"
    assert header[1].startswith("# commit ") and " torch " in header[1] and "scriba " in header[1]
    assert header[2].startswith("# host: ") and ("avx2" in header[2] or "no AVX2" in header[2])


def test_librispeech_is_laid_out_as_the_suites_read_it(tmp_path):
    """Two chapters of a LibriSpeech-shaped tree: two clips of each in short/, the first chapter
    whole (its utterances in order, half a second apart) in longform/, with their references."""
    corpus = tmp_path / "test-clean"
    rng = np.random.default_rng(0)
    texts = {}
    for speaker, chapter in (("61", "70968"), ("121", "123852")):
        folder = corpus / speaker / chapter
        folder.mkdir(parents=True)
        lines = []
        for i in range(3):
            utt = f"{speaker}-{chapter}-{i:04d}"
            noise = rng.standard_normal(1600 * (i + 1)).astype("float32") * 0.1
            sf.write(folder / f"{utt}.flac", noise, 16000)
            texts[utt] = f"WORDS OF {utt.replace('-', ' ')}"
            lines.append(f"{utt} {texts[utt]}")
        (folder / f"{speaker}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "data"
    layout_librispeech(str(corpus), str(out), chapters=1)
    short, short_refs = speech_set(str(out), "short")
    assert [os.path.basename(p) for p in short] == [
        "121-123852-0000.flac", "121-123852-0001.flac", "61-70968-0000.flac", "61-70968-0001.flac"
    ]  # fmt: skip
    assert short_refs[0] == texts["121-123852-0000"]
    long, long_refs = speech_set(str(out), "longform")
    assert [os.path.basename(p) for p in long] == ["121-123852.flac"]  # the first chapter only
    assert long_refs == [" ".join(texts[f"121-123852-{i:04d}"] for i in range(3))]
    assert sf.info(long[0]).frames == 1600 * 6 + 2 * 8000
    with open(out / "MANIFEST.tsv", newline="") as f:
        assert next(csv.reader(f, delimiter="\t")) == ["file", "reference_text"]


def test_word_error_rate_and_a_folder_that_is_not_a_data_set(tmp_path):
    assert wer(["Ask not what your country can do"], ["ask not what the country can do for"]) == 2 / 7
    assert wer(["one 2 three"], ["one two three"]) == 0.0  # lone digits spelled, as references differ
    with pytest.raises(SystemExit, match="has no MANIFEST.tsv"):
        speech_set(str(tmp_path), "short")
