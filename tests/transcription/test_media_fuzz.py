"""Damaged media against the server (hypothesis, bounded): jfk's first seconds in six formats,
cut at random points, with bits flipped, and with headers rewritten to extreme values. Every
upload gets a transcript or a one-line error of the right category naming the file as it was
uploaded, within a time bound; no temporary file is left behind, and the next good request is
answered exactly as offline transcribe() answers it."""

import os
import re
import struct
import tempfile
import time

import numpy as np
import paths
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import scriba
from scriba.media.load import SAMPLE_RATE, load_audio

JFK = paths.JFK
FORMATS = ("wav", "flac", "ogg", "mp3", "m4a", "webm")
SECONDS_PER_REQUEST = 20.0  # the bound for any one upload, damaged or not
CATEGORIES = {  # the error vocabulary (scriba.media.errors), by its words
    "empty": r"is an empty file$|has no audio samples$|has no audio in it$",
    "not audio": r"is not an audio file \(or its format is not supported\)$",
    "truncated or corrupt": r"is truncated or corrupt: ",
    "impossible header": r"has an impossible header: ",
    "unsupported codec": r"uses a codec this build of FFmpeg cannot decode$",
}


def encode(samples: np.ndarray, fmt: str) -> bytes:
    import av
    import soundfile as sf

    path = os.path.join(tempfile.mkdtemp(), f"clip.{fmt}")
    if fmt in ("wav", "flac", "ogg", "mp3"):
        subtype = {"wav": "PCM_16", "flac": "PCM_16", "ogg": "VORBIS", "mp3": "MPEG_LAYER_III"}[fmt]
        sf.write(path, samples, SAMPLE_RATE, subtype=subtype)
    else:
        container, codec = {"m4a": ("ipod", "aac"), "webm": ("webm", "libopus")}[fmt]
        with av.open(path, "w", format=container) as out:
            stream = out.add_stream(codec, rate=SAMPLE_RATE)
            stream.layout = "mono"
            frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="fltp", layout="mono")
            frame.sample_rate = SAMPLE_RATE
            for packet in [*stream.encode(frame), *stream.encode(None)]:
                out.mux(packet)
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def clips() -> dict[str, bytes]:
    samples = load_audio(JFK)[: 4 * SAMPLE_RATE]
    return {fmt: encode(samples, fmt) for fmt in FORMATS}


@pytest.fixture(scope="module")
def api(clips):
    """(post, the good clip's offline text): the server in-process with the bundled tiny.en (a
    random model would fall back to sampling, and its answers would differ run to run)."""
    from fastapi.testclient import TestClient

    from scriba.app.server.app import ServerSettings, asgi_app
    from scriba.app.server.models import ServedModels

    served = ServedModels([None], None)
    settings = ServerSettings(max_upload_bytes=2**20, max_audio_seconds=600)
    with TestClient(asgi_app(served, settings)) as client:

        def post(name: str, data: bytes):
            files = {"file": (name, data)}
            return client.post("/v1/audio/transcriptions", files=files, data={"model": "whisper-1"})

        # What offline transcribe() makes of the intact clip, with the server's defaults.
        yield post, scriba.transcribe(load_audio(clips["flac"])).text


@pytest.fixture
def temp_folder(monkeypatch, tmp_path):
    """Uploads land in a folder of their own, to see that none stays."""
    folder = tmp_path / "uploads"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def answer(api, temp_folder, name: str, data: bytes) -> str | None:
    """The error's category, or None for a transcript; checks the bounds every answer keeps."""
    post, good_text = api
    started = time.perf_counter()
    response = post(name, data)
    assert time.perf_counter() - started < SECONDS_PER_REQUEST, name
    assert os.listdir(temp_folder) == [], "an upload was left behind"
    again = post("good.flac", CLIPS["flac"])  # the engine still serves the next request
    assert again.status_code == 200 and again.json()["text"] == good_text
    if response.status_code == 200:
        assert isinstance(response.json()["text"], str)
        return None
    error = response.json()["error"]
    message = error["message"]
    assert error["param"] == "file" and response.status_code in (400, 413, 415), error
    assert "\n" not in message and message.startswith(name + " "), message
    assert "scriba-upload-" not in message and tempfile.gettempdir() not in message
    found = [c for c, pattern in CATEGORIES.items() if re.search(pattern, message)]
    assert len(found) == 1, message
    return found[0]


CLIPS: dict[str, bytes] = {}  # the intact clips, for the test bodies (kept out of hypothesis' reports)


@pytest.fixture(autouse=True)
def _intact_clips(clips):
    CLIPS.update(clips)


# No shrinking: a failing case is reported as found, and CI's time stays bounded.
@settings(
    max_examples=30,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(
    fmt=st.sampled_from(FORMATS),
    cut=st.one_of(st.none(), st.floats(0.0, 1.0)),
    flips=st.lists(st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.integers(0, 7)), max_size=40),
)
def test_cut_and_flipped_files(api, temp_folder, fmt, cut, flips):
    data = bytearray(CLIPS[fmt])
    for where, bit in flips:
        data[int(where * len(data))] ^= 1 << bit
    if cut is not None:
        data = data[: int(cut * len(data))]
    category = answer(api, temp_folder, f"upload.{fmt}", bytes(data))
    print(f"fuzz case: {fmt} cut={cut is not None} flips={len(flips)} -> {category or 'transcript'}")
    if not flips:  # cut only: a transcript of what is there, or a damaged or empty file
        assert category in (None, "truncated or corrupt", "empty"), (fmt, cut, category)
    if cut is None and not flips:
        assert category is None


def wav_with(data: bytes, field: str, value: int) -> bytes:
    """A WAV with one header field rewritten (the 44-byte canonical header soundfile writes)."""
    offset, fmt = {"channels": (22, "<H"), "rate": (24, "<I"), "frames": (40, "<I")}[field]
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def flac_with(data: bytes, field: str, value: int) -> bytes:
    """A FLAC with its STREAMINFO's total samples (36 bits) or channels (3 bits) rewritten."""
    bits = int.from_bytes(data[18:26], "big")
    if field == "frames":
        bits = bits & ~((1 << 36) - 1) | value
    else:
        bits = bits & ~(0x7 << 41) | (value - 1) << 41
    return data[:18] + bits.to_bytes(8, "big") + data[26:]


@pytest.mark.parametrize(
    "fmt, field, value, category",
    [
        ("wav", "rate", 0, "impossible header"),
        ("wav", "rate", 1, "impossible header"),
        ("wav", "rate", 2**31, "impossible header"),
        ("wav", "rate", 2**32 - 1, "impossible header"),
        ("wav", "rate", 8000, None),  # slowed down, but audio
        ("wav", "channels", 0, "impossible header"),
        ("wav", "channels", 65535, "impossible header"),
        ("wav", "channels", 2, None),
        ("wav", "frames", 2**32 - 1, None),  # millions of frames claimed: the ones there are read
        ("flac", "frames", 2**36 - 1, "impossible header"),  # 1,193 hours in 71 kB
        ("flac", "frames", 0, None),  # 0: "unknown" in FLAC
        ("flac", "channels", 8, None),
    ],
)
def test_headers_with_extreme_values(api, temp_folder, clips, fmt, field, value, category):
    rewrite = wav_with if fmt == "wav" else flac_with
    assert answer(api, temp_folder, f"odd.{fmt}", rewrite(clips[fmt], field, value)) == category


def test_the_two_reported_messages_name_the_upload(api, temp_folder, clips):
    """The issue's cases: a WAV claiming 2^31 Hz, a FLAC with flipped bits, a FLAC cut at 5,000 bytes."""
    post, _ = api
    rate = post("loud.wav", wav_with(clips["wav"], "rate", 2**31)).json()["error"]["message"]
    assert rate == "loud.wav has an impossible header: a sample rate of 2.14748e+09 Hz"
    flipped = bytearray(clips["flac"])
    for i in range(2000, len(flipped), 997):
        flipped[i] ^= 0xFF
    message = post("bits.flac", bytes(flipped)).json()["error"]["message"]
    assert (
        message.startswith("bits.flac is truncated or corrupt: ") and "decoded before the damage" in message
    )
    cut = post("cut.flac", clips["flac"][:5000]).json()["error"]["message"]
    assert re.fullmatch(r"cut.flac is truncated or corrupt: 0\.\d s of 4\.0 s decoded before the damage", cut)
