"""The bad-media vocabulary on the library's own calls: each category from load_audio() and
probe_duration(), one line, naming the file as the caller named it."""

import io
import struct

import numpy as np
import pytest
import soundfile as sf

from scriba.media.errors import (
    AudioError,
    AudioTooLong,
    DamagedAudio,
    EmptyAudio,
    ImpossibleHeader,
    NotAudio,
    UnsupportedCodec,
    too_long,
)
from scriba.media.headers import container_of, wav_format
from scriba.media.load import load_audio, probe_duration


def encoded(fmt: str, seconds: float = 4.0) -> bytes:
    t = np.arange(int(16000 * seconds)) / 16000
    out = io.BytesIO()
    sf.write(out, (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000, format=fmt, subtype="PCM_16")
    return out.getvalue()


def written(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_each_category_names_the_file(tmp_path):
    wav, flac = encoded("WAV"), encoded("FLAC")
    cases = [  # (name, bytes, error, message, found from the header alone)
        ("empty.wav", b"", EmptyAudio, "empty.wav is an empty file", True),
        ("notes.mp3", b"just some text\n" * 40, NotAudio, "notes.mp3 is not an audio file", True),
        (
            "cut.flac",
            flac[:5000],
            DamagedAudio,
            r"cut.flac is truncated or corrupt: 0\.\d s of 4\.0 s decoded",
            False,
        ),
        ("stub.flac", flac[:60], DamagedAudio, "stub.flac is truncated or corrupt: it starts as flac", True),
        (
            "head.m4a",
            b"\0\0\0\x18ftypM4A " + b"\0" * 100,
            DamagedAudio,
            "starts as mp4 but cannot be read",
            True,
        ),
        (
            "fast.wav",
            _patched(wav, 24, "<I", 2**31),
            ImpossibleHeader,
            "a sample rate of 2.14748e\\+09 Hz",
            True,
        ),
        (
            "wide.wav",
            _patched(wav, 22, "<H", 0),
            ImpossibleHeader,
            "wide.wav has an impossible header: 0 chan",
            True,
        ),
        ("odd.wav", _patched(wav, 20, "<H", 99), UnsupportedCodec, "odd.wav uses a codec", True),
    ]
    for name, data, error, message, in_header in cases:
        path = written(tmp_path, name, data)
        if in_header:  # the upload checks (server, web app) refuse it before decoding
            with pytest.raises(error, match=message):
                probe_duration(path, name)
        with pytest.raises(error, match=message) as decoding:
            load_audio(path, name=name)
        assert "\n" not in str(decoding.value) and str(tmp_path) not in str(decoding.value)


def aac_in_mp4(seconds: float = 4.0) -> bytes:
    import av

    t = np.arange(int(16000 * seconds)) / 16000
    out = io.BytesIO()
    with av.open(out, "w", format="ipod") as container:
        stream = container.add_stream("aac", rate=16000)
        stream.layout = "mono"
        wave = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32).reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(wave, format="fltp", layout="mono")
        frame.sample_rate = 16000
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    return out.getvalue()


def test_an_mp4_cut_before_its_sample_table_is_damaged_not_an_unknown_codec(tmp_path):
    """FFmpeg's encoder writes the moov box last; a cut before its sample description leaves a
    stream with no codec and no samples: the file is truncated (the fuzz test found it called an
    unsupported codec)."""
    whole = aac_in_mp4()
    path = written(tmp_path, "cut.m4a", whole[: whole.index(b"stsd") - 4])
    for read in (lambda: probe_duration(path, "cut.m4a"), lambda: load_audio(path, name="cut.m4a")):
        with pytest.raises(DamagedAudio, match="^cut.m4a is truncated or corrupt: it starts as mp4"):
            read()
    assert len(load_audio(written(tmp_path, "whole.m4a", whole))) == 4 * 16000 + 1536  # AAC's padding


def test_a_header_claiming_more_than_its_file_holds(tmp_path):
    flac = bytearray(encoded("FLAC"))
    bits = int.from_bytes(flac[18:26], "big") | ((1 << 36) - 1)  # 2^36 - 1 samples: 1,193 hours
    flac[18:26] = bits.to_bytes(8, "big")
    path = written(tmp_path, "long.flac", bytes(flac))
    with pytest.raises(
        ImpossibleHeader, match=r"long.flac has an impossible header: 1,193.0 hours of audio in"
    ):
        probe_duration(path, "long.flac")
    assert probe_duration(written(tmp_path, "fine.flac", encoded("FLAC")), "fine.flac") == pytest.approx(4.0)


def test_a_cut_wav_is_transcribed_as_far_as_it_goes(tmp_path):
    wav = encoded("WAV")
    samples = load_audio(written(tmp_path, "half.wav", wav[: 44 + 32000 * 2]), name="half.wav")
    assert len(samples) == 32000  # 2 of the 4 seconds: what is there is audio


def test_too_long_and_the_signatures():
    assert (
        str(too_long("talk.mp3", 3 * 3600 + 720, 7200))
        == "talk.mp3 is 3.2 hours long; the limit is 2.0 hours"
    )
    assert str(too_long("a.wav", 900, 600)) == "a.wav is 15 minutes long; the limit is 10 minutes"
    assert isinstance(too_long("a.wav", 900, 600), AudioTooLong)
    heads = {
        "wav": b"RIFF\0\0\0\0WAVE",
        "flac": b"fLaC",
        "ogg": b"OggS",
        "mp3": b"ID3\x04",
        "webm": b"\x1a\x45\xdf\xa3",
    }
    for name, head in heads.items():
        assert container_of(head) == name
    assert container_of(b"\0\0\0\x20ftypisom") == "mp4" and container_of(b"\xff\xfb\x90") == "mp3"
    assert container_of(b"hello") is None
    assert wav_format(encoded("WAV")[:64]) == (16000, 1) and wav_format(b"RIFF....AVI ") is None


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def test_files_left_alone(tmp_path):
    """A good file in each soundfile format decodes to its length (no false alarms)."""
    for fmt in ("WAV", "FLAC"):
        path = written(tmp_path, f"ok.{fmt.lower()}", encoded(fmt))
        assert len(load_audio(path)) == 64000 and probe_duration(path) == pytest.approx(4.0)


def test_a_damaged_file_leaves_no_reference_cycle(tmp_path):
    """A decoder error kept in a local would hold, through its traceback, the frame holding it:
    such a cycle (with what was decoded) waits for a full garbage collection, and a server
    reading bad uploads grows until one comes. Every error here is freed when it is dropped."""
    import gc

    flac = bytearray(encoded("flac"))
    flipped = bytearray(flac)
    for i in range(4096, len(flipped), 1500):
        flipped[i] ^= 0xFF
    files = [
        written(tmp_path, "cut.flac", bytes(flac[:5000])),
        written(tmp_path, "bits.flac", bytes(flipped)),
    ]
    gc.collect()
    gc.disable()
    try:
        for path in files * 2:
            try:
                load_audio(path)
            except AudioError:
                pass
        assert gc.collect() == 0
    finally:
        gc.enable()
