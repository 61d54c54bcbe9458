"""The voice encoder: Resemblyzer's weights in Scriba's module, read without importing the
package, its features as librosa computes them, and voices that tell two real readers apart."""

import subprocess
import sys

import librosa
import numpy as np
import pytest
from speakers import clip

from scriba.media.load import load_audio
from scriba.speakers.diarize import voice_of
from scriba.speakers.voice_encoder import embed, level_gain, mel_frames


def test_mel_frames_are_librosa_s():
    """The encoder's input as its package computes it (librosa.feature.melspectrogram, 25 ms
    windows every 10 ms, 40 Slaney channels, power)."""
    wave = load_audio(clip("ljspeech_LJ050-0075"))
    expected = librosa.feature.melspectrogram(y=wave, sr=16000, n_fft=400, hop_length=160, n_mels=40).T
    found = mel_frames(wave)
    assert found.shape == expected.shape
    np.testing.assert_allclose(found, expected, rtol=1e-4, atol=1e-6 * expected.max())


def test_one_reader_s_utterances_are_nearer_each_other_than_the_other_reader_s():
    names = ("ljspeech_LJ050-0075", "ljspeech_LJ050-0115")
    names += ("librispeech_61-70968-0000", "librispeech_61-70968-0001")
    voices = {name: voice_of(load_audio(clip(name))) for name in names}
    lj = voices["ljspeech_LJ050-0075"] @ voices["ljspeech_LJ050-0115"]
    libri = voices["librispeech_61-70968-0000"] @ voices["librispeech_61-70968-0001"]
    across = max(voices[a] @ voices[b] for a in voices for b in voices if a[:5] != b[:5])
    assert min(lj, libri) > across + 0.15, (lj, libri, across)
    for v in voices.values():
        assert abs(np.linalg.norm(v) - 1) < 1e-5


def test_embeddings_are_unit_vectors_in_batches_of_any_size():
    wave = load_audio(clip("librispeech_61-70968-0000"))
    wave = wave * level_gain(wave)
    mel = mel_frames(wave)
    pieces = np.stack([mel[i : i + 160] for i in range(0, len(mel) - 160, 40)])
    whole, parts = embed(pieces), np.concatenate([embed(pieces[:3], batch=2), embed(pieces[3:], batch=5)])
    assert whole.shape == (len(pieces), 256)
    np.testing.assert_allclose(np.linalg.norm(whole, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(whole, parts, atol=2e-2)  # bfloat16 where the CPU has it


def test_the_package_is_never_imported():
    code = (
        "import sys, numpy as np\n"
        "from scriba.speakers.voice_encoder import embed\n"
        "embed(np.ones((1, 160, 40), np.float32))\n"
        "assert 'resemblyzer' not in sys.modules and 'webrtcvad' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_quiet_speech_is_raised_to_the_encoder_s_level_and_loud_speech_kept():
    quiet = load_audio(clip("librispeech_61-70968-0000")) * 0.001
    raised = quiet * level_gain(quiet)
    assert 20 * np.log10(np.sqrt(np.mean(raised.astype(np.float64) ** 2))) == pytest.approx(-30.0, abs=1e-3)
    assert level_gain(np.ones(1600, np.float32)) == 1.0
    assert level_gain(np.zeros(0, np.float32)) == 1.0
