"""transcribe() with the bundled tiny.en on real speech, long-form, lists, and bad input."""

import json
import re

import numpy as np
import paths
import pytest

import scriba
from scriba.media.load import AudioError, load_audio
from scriba.transcription.writers import format_transcript, write_transcript

JFK = paths.JFK
PHRASES = ("my fellow americans", "your country", "do for you")


@pytest.fixture(scope="module")
def jfk():
    return load_audio(JFK)


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_jfk_words_and_timestamps(mode):
    result = scriba.transcribe(JFK, mode=mode)
    text = result.text.lower()
    assert all(p in text for p in PHRASES), text
    assert result.language == "en" and result.duration == pytest.approx(11.0, abs=0.01)
    assert result.segments and all(0.0 <= s.start <= s.end <= result.duration for s in result.segments)
    assert all(s.avg_logprob < 0 and 0 <= s.no_speech_prob < 0.5 for s in result.segments)


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_three_minutes_of_speech_in_order_and_complete(jfk, mode):
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(15):  # 15 copies with pauses of 0.3-1.5 s: 179 s in all
        parts += [jfk, np.zeros(int(16000 * rng.uniform(0.3, 1.5)), np.float32)]
    audio = np.concatenate(parts)
    # Greedy and unconditioned: the same sentence 15 times would otherwise (rightly) trip the
    # compression-ratio fallback, whose sampled output is not a stable thing to test.
    result = scriba.transcribe((audio, 16000), mode=mode, temperature=0.0, condition_on_previous_text=False)
    assert result.duration == pytest.approx(len(audio) / 16000)
    starts = [s.start for s in result.segments]
    assert starts == sorted(starts) and all(s.start <= s.end <= result.duration for s in result.segments)
    assert result.segments[-1].end > result.duration - 15  # it reached the end
    assert result.text.lower().count("fellow americans") == 15


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_speech_between_noise_is_found_once_and_nothing_else(jfk, mode):
    from compositions import compose

    gaps = [("silence", 4), ("white", 30), ("brown", 10), ("tone", 6), ("silence", 15), ("white", 8)]
    audio, spans = compose([part for gap in gaps for part in (gap, jfk)] + [("brown", 5)])
    # Greedy and unconditioned, as above: one sentence repeated would trip the fallback.
    result = scriba.transcribe((audio, 16000), mode=mode, temperature=0.0, condition_on_previous_text=False)
    assert result.text.lower().count("can do for your country") == len(spans), result.text
    for s in result.segments:  # no segment over non-speech
        assert any(a - 1 <= s.start and s.end <= b + 1 for a, b in spans), (s.start, s.end, s.text)
    for a, _ in spans:  # each copy's first segment starts at its speech (jfk speaks from 0.3 s)
        first = min((s.start for s in result.segments if s.start >= a - 1), default=None)
        assert first is not None and abs(first - (a + 0.3)) <= 1.0
    assert result.speech_duration == pytest.approx(len(spans) * 10.5, rel=0.15)
    assert result.coverage > 0.85 and result.warnings == []


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_five_minutes_of_noise_and_eleven_copies_with_default_settings(jfk, mode):
    """The file that lost a copy (batched) and invented two (sequential) before VAD."""
    from compositions import compose

    gaps = [("silence", 5), ("white", 40), ("brown", 10), ("tone", 5), ("silence", 20), ("white", 8)]
    gaps += [("brown", 25), ("silence", 3), ("tone", 12), ("white", 15), ("brown", 6)]
    audio, spans = compose([part for gap in gaps for part in (gap, jfk)] + [("silence", 10)])
    result = scriba.transcribe((audio, 16000), mode=mode)
    assert result.text.lower().count("for your country") == 11, result.text
    assert all(any(a - 1 <= s.start and s.end <= b + 1 for a, b in spans) for s in result.segments)
    assert result.warnings == []


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_words_lie_in_the_speech_with_the_hallucination_guard(jfk, mode):
    from compositions import compose

    audio, spans = compose([("white", 12), jfk, ("silence", 9), jfk, ("brown", 6)])
    result = scriba.transcribe(
        (audio, 16000), mode=mode, word_timestamps=True, hallucination_silence_threshold=2.0
    )
    assert result.text.lower().count("can do for your country") == 2, result.text
    words = [w for s in result.segments for w in s.words]
    assert all(any(a - 0.5 <= w.start <= w.end <= b + 0.5 for a, b in spans) for w in words)
    for (a, _), first in zip(spans, [w for w in words if w.word.strip() == "And"]):
        assert abs(first.start - (a + 0.3)) < 1.0  # the copy's first word at its onset
    assert [s.start for s in result.segments] == [s.words[0].start for s in result.segments]


def test_a_list_is_decoded_together_and_matches_single_calls(jfk):
    quiet = (jfk[: 16000 * 5] * 0.5, 16000)
    both = scriba.transcribe([JFK, quiet], timestamps=False)
    assert isinstance(both, list) and len(both) == 2
    assert both[0].text == scriba.transcribe(JFK, timestamps=False).text
    assert both[1].text == scriba.transcribe(quiet, timestamps=False).text
    assert both[1].duration == pytest.approx(5.0)


def test_a_sampled_retry_gives_the_same_text_whatever_shares_its_batch(jfk):
    """jfk twice in one window fails the compression-ratio guard at every temperature, so its
    text is the likeliest of its attempts, draws up to 1.0 among them: seeded from the window,
    they are the same alone, beside another file, and after other draws from the engine."""
    twice = (np.concatenate([jfk, jfk[: 16000 * 3], jfk]), 16000)
    alone = scriba.transcribe(twice)
    assert 1.0 in {s.temperature for s in alone.segments}  # a window through every temperature
    beside = scriba.transcribe([JFK, twice, (jfk[: 16000 * 5] * 0.5, 16000)])[1]
    scriba.transcribe(twice, temperature=0.7, vad_filter=False)  # other draws in between
    again = scriba.transcribe(twice)
    assert [s.text for s in beside.segments] == [s.text for s in alone.segments]
    assert [s.text for s in again.segments] == [s.text for s in alone.segments]


def test_writers_produce_valid_srt_vtt_json(tmp_path):
    result = scriba.transcribe(JFK)
    as_json = format_transcript(result, "json")
    tokens = result.segments[0].tokens
    assert json.loads(as_json)["segments"][0]["tokens"] == tokens
    assert f'"tokens": [{", ".join(map(str, tokens))}]' in as_json  # one line per token list
    srt = format_transcript(result, "srt")
    assert re.match(r"1\n\d\d:\d\d:\d\d,\d\d\d --> \d\d:\d\d:\d\d,\d\d\d\n\S", srt)
    assert srt.count(" --> ") == len(result.segments)
    vtt = format_transcript(result, "vtt")
    assert vtt.startswith("WEBVTT\n\n") and re.search(
        r"\n?\d\d:\d\d\.\d\d\d --> \d\d:\d\d\.\d\d\d\n", vtt
    )
    assert format_transcript(result, "txt").count("\n") == len(result.segments)
    path = write_transcript(result, "json", str(tmp_path), "jfk")
    data = json.load(open(path))
    assert (
        path.endswith("jfk.json")
        and data["text"] == result.text
        and len(data["segments"]) == len(result.segments)
    )
    with pytest.raises(ValueError, match="unknown format 'doc'"):
        format_transcript(result, "doc")


def test_bad_audio_gives_clear_errors(tmp_path):
    fake = tmp_path / "notes.wav"
    fake.write_text("this is not audio at all\n" * 20)
    with pytest.raises(AudioError, match="'.*notes.wav' is not an audio file"):
        scriba.transcribe(str(fake))
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(AudioError, match="empty.wav"):
        scriba.transcribe(str(empty))
    with pytest.raises(FileNotFoundError, match="no such audio file"):
        scriba.transcribe(str(tmp_path / "missing.flac"))
    with pytest.raises(AudioError, match="NaN"):
        scriba.transcribe((np.array([0.1, np.nan, 0.2], np.float32), 16000))
    with pytest.raises(AudioError, match="no audio samples"):
        scriba.transcribe((np.zeros(0, np.float32), 16000))


def test_a_bad_file_in_a_list_gets_an_error_entry_and_the_others_their_text(tmp_path):
    fake = tmp_path / "notes.wav"
    fake.write_text("this is not audio at all\n" * 20)
    good, bad = scriba.transcribe([JFK, str(fake)])
    assert "fellow americans" in good.text.lower() and good.error is None
    assert bad.text == "" and bad.segments == [] and "notes.wav' is not an audio file" in bad.error
    with pytest.raises(AudioError, match="notes.wav"):
        scriba.transcribe([JFK, str(fake)], on_error="raise")
    with pytest.raises(TypeError, match=r"unknown option 'temprature' \(did you mean 'temperature'\?\)"):
        scriba.transcribe(JFK, temprature=0.0)
    with pytest.raises(TypeError, match=r"unknown option 'max_lenght' \(did you mean 'max_length'\?\)"):
        scriba.summarize("Some text.", max_lenght=20)
    with pytest.raises(TypeError, match=r"unknown option 'num_kv_block' \(did you mean 'num_kv_blocks'\?\)"):
        scriba.transcribe(JFK, num_kv_block=100)


def test_bad_options_give_clear_errors():
    with pytest.raises(ValueError, match=r"English-only: it cannot transcribe German \('de'\)"):
        scriba.transcribe(JFK, language="de")
    with pytest.raises(ValueError, match="unknown language 'xx': use a code like 'de'"):
        scriba.transcribe(JFK, language="xx")
    with pytest.raises(ValueError, match="task must be 'transcribe' or 'translate'"):
        scriba.transcribe(JFK, task="summarize")
    with pytest.raises(ValueError, match="English-only: it cannot translate"):
        scriba.transcribe(JFK, task="translate")
    with pytest.raises(ValueError, match="mode must be one of"):
        scriba.transcribe(JFK, mode="parallel")


def test_silence_and_a_single_sample_give_empty_transcripts():
    for audio in [(np.zeros(16000 * 5, np.float32), 16000), (np.array([0.3], np.float32), 16000)]:
        result = scriba.transcribe(audio)
        assert result.text == "" and result.segments == []


def test_multilingual_model_detects_and_validates_language(tiny_whispers):
    from tiny_whisper import LANGS, synthetic_clip

    path, _ = tiny_whispers["multilingual"]
    clip = (np.concatenate([synthetic_clip(20.0, 3), synthetic_clip(25.0, 4)]), 16000)
    for mode in ("batched", "sequential"):  # chirps are not speech to VAD: decoded whole
        result = scriba.transcribe(
            clip, model=path, mode=mode, temperature=0.0, vad_filter=False, num_kv_blocks=2000
        )
        assert result.language in LANGS and 0 < result.language_probability <= 1
        assert result.duration == pytest.approx(45.0)
    translated = scriba.transcribe(clip, model=path, language="German", task="translate", num_kv_blocks=2000)
    assert translated.language == "de"
    with pytest.raises(ValueError, match="unknown language 'xx'"):
        scriba.transcribe(clip, model=path, language="xx", num_kv_blocks=2000)
    with pytest.raises(ValueError, match="Japanese is not among this model's languages"):
        scriba.transcribe(clip, model=path, language="ja", num_kv_blocks=2000)


def test_bad_audio_request_leaves_other_requests_running(jfk):
    from concurrent.futures import ThreadPoolExecutor

    from scriba import SamplingParams
    from scriba.runtime.loops import get_loop

    loop = get_loop(None)
    with ThreadPoolExecutor(1) as pool:
        good = pool.submit(loop.generate, [{"audio": (jfk, 16000)}], [SamplingParams(max_tokens=60)])
        for bad in [
            {"audio": b"not audio"},
            {"audio": (np.full(100, np.inf, np.float32), 16000)},
            {"audio": (jfk, 16000), "task": "dance"},
            {"prompt": "text"},
        ]:
            with pytest.raises(ValueError, match="prompt 0: "):
                loop.generate([bad], [SamplingParams()])
        out = good.result(timeout=120)[0]
    assert "my fellow americans" in out.outputs[0].text.lower()
    assert not loop.engine.has_unfinished_requests()


@pytest.mark.parametrize("decoder_runtime", ["auto", "torch"])
def test_sixteen_threads_share_engine_steps(jfk, decoder_runtime):
    """Windows of 16 callers share steps. With the modules running every step ("torch"), a
    request's text is the same as alone, bit for bit (each row computed alike in any batch); by
    default a lone request's steps run in the numba step, a batch's in the modules, so a near-tie
    may turn (docs/limits.md): the words stay."""
    from concurrent.futures import ThreadPoolExecutor

    from oracle import words

    from scriba.runtime.loops import get_loop

    options = {} if decoder_runtime == "auto" else {"decoder_runtime": decoder_runtime}
    loop = get_loop(None, **options)  # the engine transcribe() uses with them
    loop.max_batch_size = 0
    clips = [(jfk[: 16000 * (6 + i % 5)], 16000) for i in range(16)]  # 6-10 s: different endings
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda c: scriba.transcribe(c, timestamps=False, **options), clips))
    assert loop.max_batch_size > 1  # windows of different callers ran in the same steps
    for result in results:
        assert "my fellow americans" in result.text.lower()
    alone = scriba.transcribe(clips[3], timestamps=False, **options)
    if decoder_runtime == "torch":
        assert results[3].text == alone.text
    else:
        assert words(results[3].text) == words(alone.text)


def test_beam_size_five_uses_beam_search():
    result = scriba.transcribe(JFK, beam_size=5)
    text = result.text.lower()
    assert all(p in text for p in PHRASES), text
    assert all(-1.0 < s.avg_logprob < 0 for s in result.segments)
    with pytest.raises(ValueError, match="beam_size must be a positive integer"):
        scriba.transcribe(JFK, beam_size=0)


def test_async_scheduling_gives_the_same_transcript(jfk):
    """Steps launched on tokens the host has not read yet (EngineConfig.async_scheduling, the
    GPU's default) change nothing: segments, words and their times, a sampled retry (best_of
    samples, each drawing from a generator of its own once forked). Here with
    the modules running every step (each row computed alike in any step): by default a step's
    rows pick the numba step or the modules (docs/limits.md), and a step one late can change
    that, so a near-tie may turn (the next test: where the rows stay the same)."""
    rng = np.random.default_rng(1)
    parts = []
    for _ in range(2):
        parts += [jfk, np.zeros(int(16000 * rng.uniform(0.3, 1.5)), np.float32)]
    audio = (np.concatenate(parts + [jfk, jfk[: 16000 * 3], jfk]), 16000)
    options = dict(word_timestamps=True, decoder_runtime="torch")
    runs = [scriba.transcribe(audio, async_scheduling=a, **options) for a in (False, True)]
    sync, fed = ([(s.text, s.start, s.end, s.temperature) for s in r.segments] for r in runs)
    assert fed == sync and {t for *_, t in sync} != {0.0}  # a window fell back to sampling
    words = [[(w.word, w.start, w.end) for s in r.segments for w in s.words] for r in runs]
    assert words[1] == words[0] and len(words[0]) > 60


def test_the_encoder_apart_gives_the_same_transcript(jfk, monkeypatch):
    """EngineConfig.encoder_stream on real weights: one window, whose prompt runs in the numba
    step either way (after its encoder in the same step, or a step later): the same segments,
    word times and no-speech probability."""
    from scriba.engine.encoder_stream import EncoderStream

    launches, launch = [], EncoderStream.launch
    monkeypatch.setattr(
        EncoderStream, "launch", lambda self, encodes: launches.append(1) or launch(self, encodes)
    )
    runs = [scriba.transcribe((jfk, 16000), word_timestamps=True, encoder_stream=a) for a in (False, True)]
    assert launches  # the second run encoded apart
    apart, inline = ([(s.text, s.start, s.end, s.no_speech_prob) for s in r.segments] for r in runs)
    assert apart == inline and "my fellow americans" in runs[0].text.lower()
    words = [[(w.word, w.start, w.end) for s in r.segments for w in s.words] for r in runs]
    assert words[1] == words[0] and len(words[0]) > 20


def test_async_scheduling_gives_the_same_transcript_in_the_numba_step(jfk, monkeypatch):
    """The default CPU decode step (the numba one) under asynchronous scheduling: one window,
    so one row in every decode step either way, and the same segments and word times."""
    from scriba.models.decoder_step import NumbaDecoderStep

    calls = []
    step = NumbaDecoderStep.__call__
    monkeypatch.setattr(NumbaDecoderStep, "__call__", lambda *a: calls.append(1) or step(*a))
    runs = [scriba.transcribe((jfk, 16000), word_timestamps=True, async_scheduling=a) for a in (False, True)]
    assert len(calls) > 40  # both runs decoded in it
    sync, fed = ([(s.text, s.start, s.end) for s in r.segments] for r in runs)
    assert fed == sync and "my fellow americans" in runs[0].text.lower()
    words = [[(w.word, w.start, w.end) for s in r.segments for w in s.words] for r in runs]
    assert words[1] == words[0] and len(words[0]) > 20
