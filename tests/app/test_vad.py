"""Silero VAD as the long-form front end: speech found in real audio, nothing in non-speech."""

import os

import numpy as np
import pytest
from compositions import compose

from scriba.app.vad import VadOptions, speech_chunks
from scriba.media.load import load_audio

JFK = os.path.join(os.path.dirname(__file__), "..", "..", "assets", "jfk.flac")


def test_speech_is_found_between_silence_noise_and_tones():
    jfk = load_audio(JFK)
    audio, spans = compose([("silence", 3), jfk, ("white", 20), jfk, ("brown", 8), ("tone", 6), jfk])
    chunks = [(s / 16000, e / 16000) for s, e in speech_chunks(audio)]
    assert chunks and all(e > s for s, e in chunks)
    o = VadOptions()
    slack = (o.speech_pad_ms + o.min_silence_duration_ms) / 1000 + 0.1  # padding, the wait for a pause
    # Every chunk lies in a copy of the speech (give or take that slack), every copy is found.
    assert all(any(a - slack <= s and e <= b + slack for a, b in spans) for s, e in chunks)
    assert all(any(s < b and e > a for s, e in chunks) for a, b in spans)
    found = sum(e - s for s, e in chunks)
    assert 0.8 * 3 * 9 < found < 3 * 11.5  # jfk holds about 9-10 s of speech


@pytest.mark.parametrize("kind", ["silence", "white", "brown", "tone"])
def test_non_speech_has_no_chunks(kind):
    audio, _ = compose([(kind, 20)])
    assert speech_chunks(audio) == []


def test_bad_vad_parameters_are_named():
    with pytest.raises(ValueError, match=r"unknown vad_parameters \['treshold'\]"):
        VadOptions.from_user({"treshold": 0.3})
    with pytest.raises(ValueError, match="threshold must be in"):
        VadOptions.from_user({"threshold": 1.5})
    assert VadOptions.from_user({"max_speech_duration_s": 90}).max_speech_duration_s == 30
    assert speech_chunks(np.zeros(0, np.float32)) == []


def test_vad_leaves_the_engines_threads_alone():
    """silero_vad's import sets torch to one thread process-wide; the engines must keep theirs
    (a fresh process: the import happens once)."""
    import subprocess
    import sys

    code = (
        "import numpy as np, torch; torch.set_num_threads(2);"
        "from scriba.app.vad import speech_chunks; speech_chunks(np.zeros(16000, np.float32));"
        "print(torch.get_num_threads())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "2", out.stderr
