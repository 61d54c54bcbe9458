"""Silero VAD as the long-form front end: speech found in real audio, nothing in non-speech."""

import numpy as np
import paths
import pytest
from compositions import compose

from scriba.media.load import load_audio
from scriba.transcription.vad import PAUSE_MS, VadOptions, speech_and_pauses, speech_chunks

JFK = paths.JFK


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


def test_speech_is_silero_s_and_pauses_fall_where_it_hears_silence():
    """The chunks are the silero-vad package's own; each pause lies between two of the chunks
    it finds when a pause of PAUSE_MS ends one, inside one of ours, in quiet audio."""
    from silero_vad import load_silero_vad
    from silero_vad.sequence_vad import get_speech_timestamps_sequence

    jfk = load_audio(JFK)
    audio, _ = compose([("silence", 1), jfk, ("brown", 3), jfk])
    chunks, pauses = speech_and_pauses(audio)
    o = VadOptions()
    settings = dict(
        threshold=o.threshold,
        min_speech_duration_ms=o.min_speech_duration_ms,
        max_speech_duration_s=o.max_speech_duration_s,
        speech_pad_ms=0,
    )
    model = load_silero_vad(sequence=True)
    ours = get_speech_timestamps_sequence(
        audio,
        model,
        min_silence_duration_ms=o.min_silence_duration_ms,
        **{**settings, "speech_pad_ms": o.speech_pad_ms},
    )
    assert chunks == [(c["start"], min(c["end"], audio.size)) for c in ours]
    finer = get_speech_timestamps_sequence(audio, model, min_silence_duration_ms=PAUSE_MS, **settings)
    gaps = [(a["end"], b["start"]) for a, b in zip(finer, finer[1:])]
    assert len(pauses) >= 2  # a pause inside a chunk of each copy ("... for you, | ask what ...")
    for p in pauses:
        assert any(s < p < e for s, e in chunks)
        assert any(a <= p <= b for a, b in gaps)
        speech_level = np.abs(jfk).max()
        assert np.abs(audio[p - 800 : p + 800]).max() < 0.5 * speech_level  # 0.1 s around it


def test_batched_probabilities_are_silero_s_own():
    """silero_batched.py's per-frame probabilities against the silero-vad package's sequence
    model (its ONNX form, frame after frame through the LSTM) on speech, noise and a tail that
    is not a whole frame."""
    from silero_vad import load_silero_vad

    from scriba.transcription.vad import _silero

    jfk = load_audio(JFK)
    audio, _ = compose([("silence", 1), jfk, ("white", 2), jfk[: 16000 * 4 + 123]])
    ours = _silero()[0].audio_forward(audio)
    theirs = load_silero_vad(sequence=True).audio_forward(audio, sampling_rate=16000)
    assert ours.shape == theirs.shape == (-(-audio.size // 512),)
    assert np.abs(ours - theirs).max() < 1e-4
    assert (theirs > 0.9).sum() > 300 and (theirs < 0.1).sum() > 50  # speech and non-speech both seen


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
        "from scriba.transcription.vad import speech_chunks; speech_chunks(np.zeros(16000, np.float32));"
        "print(torch.get_num_threads())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "2", out.stderr
