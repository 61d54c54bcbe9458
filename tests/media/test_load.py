"""Audio in: every container we promise, channels, sample rates, and the input forms."""

import io
import os

import numpy as np
import pytest

from scriba.media.load import AudioError, load_audio


def tone(seconds=1.0, rate=44100, freq=440.0, channels=2):
    t = np.arange(int(seconds * rate)) / rate
    mono = 0.5 * np.sin(2 * np.pi * freq * t)
    return np.stack([mono] * channels, axis=1).astype(np.float32), rate


def dominant_hz(samples, rate=16000):
    spectrum = np.abs(np.fft.rfft(samples))
    return np.argmax(spectrum) * rate / len(samples)


def encode_with_av(samples, rate, container, codec):
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format=container) as out:
        stream = out.add_stream(codec, rate=48000 if codec == "libopus" else rate, layout="stereo")
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples.T), format="fltp", layout="stereo")
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["WAV", "FLAC", "OGG", "MP3"])
def test_soundfile_formats_become_16k_mono(tmp_path, fmt):
    import soundfile as sf

    samples, rate = tone()
    path = tmp_path / f"tone.{fmt.lower()}"
    sf.write(path, samples, rate, format=fmt)
    audio = load_audio(str(path))
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert abs(len(audio) - 16000) < 1200  # mp3 adds encoder padding
    assert dominant_hz(audio) == pytest.approx(440, abs=2)


@pytest.mark.parametrize("container,codec", [("mp4", "aac"), ("webm", "libopus"), ("ipod", "aac")])
def test_containers_soundfile_cannot_read_go_through_pyav(tmp_path, container, codec):
    samples, rate = tone(rate=48000)
    data = encode_with_av(samples, rate, container, codec)
    for source in (data, io.BytesIO(data)):
        audio = load_audio(source)
        assert abs(len(audio) - 16000) < 1600
        assert dominant_hz(audio) == pytest.approx(440, abs=2)


def test_real_recording_is_resampled_and_mixed():
    audio = load_audio("assets/jfk.flac")  # 44.1 kHz stereo
    assert len(audio) == 176000 and np.abs(audio).max() > 0.1


def test_array_forms():
    samples, rate = tone(rate=8000)
    assert len(load_audio((samples, rate))) == 16000  # (samples, channels), resampled
    assert len(load_audio((samples.T, rate))) == 16000  # (channels, samples)
    pcm = (samples[:, 0] * 32767).astype(np.int16)
    audio = load_audio((pcm, rate))
    assert np.abs(audio).max() == pytest.approx(0.5, abs=0.01)  # int16 scaled to [-1, 1)
    assert len(load_audio(np.zeros(1600, np.float32))) == 1600  # a bare array is 16 kHz already


def test_bad_inputs():
    with pytest.raises(AudioError, match="900 bytes of audio is not an audio file"):
        load_audio(b"\x00\x01garbage" * 100)
    with pytest.raises(AudioError, match="sample rate must be positive"):
        load_audio((np.zeros(10, np.float32), 0))
    with pytest.raises(AudioError, match="1-D .* or 2-D"):
        load_audio((np.zeros((2, 2, 2), np.float32), 16000))
    with pytest.raises(AudioError, match="must be numbers"):
        load_audio((np.array(["a", "b"]), 16000))
    with pytest.raises(AudioError, match="cannot read audio from a dict"):
        load_audio({"path": "x.wav"})


def test_log_mel_is_torch_batched_and_equals_the_reference():
    """Features are computed in one batched torch pass (float64) and equal
    WhisperFeatureExtractor's float64 numpy reference within 1e-5, window by window."""
    from transformers import WhisperFeatureExtractor

    from scriba.whisper.log_mel import log_mel

    audio = load_audio("assets/jfk.flac")
    noise = np.random.default_rng(0).standard_normal(16000 * 31).astype(np.float32) * 0.1
    # Speech, a short cut, near-silence, a whole 30 s window, and more than a window (cut to 30 s).
    windows = [audio, audio[: 16000 * 3], np.zeros(800, np.float32), noise[: 16000 * 30], noise]
    batched = log_mel(windows, 80)
    assert batched.shape == (5, 80, 3000) and batched.dtype == np.float32
    extractor = WhisperFeatureExtractor(feature_size=80)
    alone = [log_mel([w], 80)[0] for w in windows]  # short windows alone: the STFT skips the padding
    for window, features, features_alone in zip(windows, batched, alone):
        np.testing.assert_allclose(features_alone, features, atol=1e-6)
        padded = np.zeros(16000 * 30, np.float32)
        padded[: len(window)] = window[: len(padded)]
        reference = extractor._np_extract_fbank_features(padded[None], "cpu")[0]
        assert np.abs(features - reference).max() < 1e-5


def test_log_mel_filled_with_mel_zeros_after_the_audio():
    """padding="mel": the audio's frames (len // hop) as with silent audio after it, zeros from
    there on (openai-whisper's transcribe pads a window's log-mel so); a whole window is the same."""
    from scriba.whisper.log_mel import log_mel

    audio = load_audio("assets/jfk.flac")
    windows = [audio, audio[: 16000 * 3 + 77], np.resize(audio, 16000 * 30)]
    by_audio, by_mel = log_mel(windows, 80), log_mel(windows, 80, padding="mel")
    for window, audio_fill, mel_fill in zip(windows, by_audio, by_mel):
        frames = len(window) // 160
        np.testing.assert_array_equal(mel_fill[:, :frames], audio_fill[:, :frames])
        assert not mel_fill[:, frames:].any()
    assert by_audio[1][:, 1000:].max() < -0.5  # silent audio is the quietest level, not zero
    np.testing.assert_array_equal(by_mel[2], by_audio[2])


def test_files_are_decoded_in_pieces_with_the_same_result(tmp_path, monkeypatch):
    """Stereo 44.1 kHz decoded piece by piece (mono, resampled per piece) equals resampling the
    whole mono signal at once."""
    import numpy as np
    import soundfile as sf
    import soxr

    import scriba.media.decode as audio_decode
    import scriba.media.load as audio

    rng = np.random.default_rng(0)
    stereo = (0.1 * rng.standard_normal((44_100 * 3, 2))).astype(np.float32)
    path = tmp_path / "stereo.wav"
    sf.write(path, stereo, 44_100, subtype="FLOAT")
    whole = soxr.resample(stereo.mean(axis=1), 44_100, 16_000)
    monkeypatch.setattr(audio_decode, "PIECE_FRAMES", 10_000)  # 14 pieces
    pieces = audio.load_audio(str(path))
    assert pieces.shape == whole.shape
    np.testing.assert_allclose(pieces, whole, atol=1e-5)


def test_an_mp3_whose_header_overstates_its_length_decodes_no_stale_memory():
    """libsndfile's mp3 frame count is an estimate (this clip: 240 frames too many). Decoding
    must end where the data ends, not pad with whatever memory held before: the heap is
    filled with huge values first, so stale memory would show."""
    from scriba.media.decode import _decode_with_av

    path = os.path.join(
        os.path.dirname(__file__), "..", "data", "multilingual", "ja_mfa_common_voice_ja_24511055.mp3"
    )
    for _ in range(8):  # freed blocks of the sizes the decoder asks for, full of 1e30
        junk = np.full(1 << 18, 1e30, dtype=np.float32)
        del junk
    samples = load_audio(path)
    assert np.abs(samples).max() < 1.0
    assert len(samples) == len(_decode_with_av(path, 16000, "ja.mp3"))  # FFmpeg's count of decoded samples
