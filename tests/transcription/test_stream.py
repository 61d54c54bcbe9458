"""transcribe_stream(): the language and duration up front, segments in order as windows finish,
the same segments as transcribe(), and an abandoned stream cancels its windows."""

import time

import numpy as np
import paths
import pytest

import scriba
from scriba.media.load import load_audio
from scriba.runtime.loops import get_loop

JFK = paths.JFK


def spans(segments):
    return [(round(s.start, 2), round(s.end, 2), s.text) for s in segments]


def assert_same_segments(streamed, whole, seconds: float = 0.1) -> None:
    """The same texts in the same order, each start and end within `seconds`: a window the
    stream decodes alone (the numba step; float32 products where the CPU has no VNNI) may be
    decoded in a batch by transcribe() (fbgemm's int8 layers, rows rounded to 7 bits), and a
    timestamp near-tie can turn differently (docs/limits.md; seen on an AVX2-only host: an
    end at 10.76 s streamed, 10.82 s whole)."""
    assert [s.text for s in streamed] == [s.text for s in whole]
    for a, b in zip(streamed, whole):
        assert abs(a.start - b.start) <= seconds and abs(a.end - b.end) <= seconds, (spans([a]), spans([b]))


@pytest.fixture(scope="module")
def long_audio():
    """jfk.flac five times with pauses between: about 80 s, several windows (VAD on)."""
    jfk = load_audio(JFK)
    pause = np.zeros(16000 * 5, np.float32)
    return np.concatenate([part for _ in range(5) for part in (jfk, pause)])


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_the_stream_yields_transcribes_segments_in_order(long_audio, mode):
    segments, info = scriba.transcribe_stream(long_audio, mode=mode)
    assert (info.language, info.language_probability) == ("en", None)
    assert info.duration == pytest.approx(len(long_audio) / 16000)
    streamed = list(segments)
    whole = scriba.transcribe(long_audio, mode=mode)
    assert_same_segments(streamed, whole.segments)
    assert [s.start for s in streamed] == sorted(s.start for s in streamed)
    assert (
        "".join(s.text for s in streamed).strip() == whole.text and whole.text.count("fellow Americans") == 5
    )


def test_a_multilingual_model_knows_the_language_before_any_segment(tiny_whispers):
    model = tiny_whispers["multilingual"][0]
    audio = load_audio(JFK)
    segments, info = scriba.transcribe_stream(audio, model=model, temperature=0.0)
    whole = scriba.transcribe(audio, model=model, temperature=0.0)
    assert info.language == whole.language and info.language_probability == whole.language_probability
    assert info.language is not None and spans(list(segments)) == spans(whole.segments)


def test_a_closed_stream_cancels_its_windows(long_audio):
    loop = get_loop(None)
    # sequential: when a window's segments come out, the next window is already submitted
    segments, _ = scriba.transcribe_stream(long_audio, mode="sequential")
    first = next(segments)
    assert first.text.strip() and loop.pending == 1
    segments.close()
    deadline = time.time() + 10
    while (loop.pending or loop.engine.has_unfinished_requests()) and time.time() < deadline:
        time.sleep(0.05)
    assert loop.pending == 0 and not loop.engine.has_unfinished_requests()
    assert loop.engine.block_manager.num_free() == loop.engine.block_manager.num_total()


def test_one_input_only():
    with pytest.raises(TypeError, match="takes one audio input"):
        scriba.transcribe_stream([JFK, JFK])
    with pytest.raises(TypeError, match=r"unknown option 'beam' \(did you mean 'beam_size'\?\)"):
        scriba.transcribe_stream(JFK, beam=2)
