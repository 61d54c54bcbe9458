"""The real multilingual Whisper base (the offline `base`, from the `multilingual` extra) on real
German, Spanish, Japanese and Chinese speech (tests/data/multilingual): every language detected,
error rates held to faster-whisper's on the same weights, translation to English, tokens
identical to transformers on the same weights, word timestamps on a non-English clip."""

import re

import numpy as np
import pytest
import torch
from multilingual import (
    CLIPS,
    clip,
    error_rate,
    faster_whisper_figures,
    multilingual_units,
    translation_errors,
)
from oracle import hf_token_times, scriba_token_times, transformers_whisper

import scriba
from scriba import SamplingParams
from scriba.media.load import load_audio
from scriba.runtime.loops import get_engine
from scriba.whisper.log_mel import log_mel

# faster-whisper and Scriba pad a short window differently (zeros in log-mel space, as
# openai-whisper's transcribe does, vs the audio padded to 30 s, as transformers' feature
# extractor does: 0.015 lower English WER, measured): on these few clips that moves up to two
# words or characters per language either way, so in float32 each language is held to
# faster-whisper float32's figure plus two of its units.
ALLOWANCE_UNITS = 2
# The int8 default's text moves with the CPU's float arithmetic (one activation rounded the other
# way changes a few words of a 70 s clip): Spanish 24 errors on one host, 27 on another; the
# four languages' total 89 (AVX2 host; 91 with the "torch" decode path), faster-whisper int8 81
# (benchmarks/results/multilingual_base.tsv). The total is held to faster-whisper int8's plus 5%
# of the units: a guard against a broken int8 path (garbled text), not a ranking.
INT8_ALLOWANCE = 0.05
# Translation's target is faster-whisper float32's WER plus 0.01. Base's translations fall back to
# sampling on most windows, and which draw wins turns on the last bits of the arithmetic: the exact
# mode's figure stays put (174 errors alone or beside the other reading; faster-whisper float32
# 176), the int8 default's moves 180-183 with what shares the encoder's batches, 185-193 with a
# bfloat16 encoder (another host's choice): it is held to faster-whisper's plus 0.03.
INT8_TRANSLATION_ALLOWANCE = 0.03
ENGLISH = {"the", "of", "and", "to", "a", "in", "that", "is", "my", "you", "it", "his", "with", "for", "we"}
SOURCE = {  # frequent short words of the source languages, which a translation should not keep
    "de": {"der", "die", "und", "das", "ist", "ein", "eines", "er", "sich", "zu", "auch", "wie"},
    "es": {"de", "la", "que", "el", "y", "en", "los", "las", "mi", "tu", "por", "con", "del"},
}


@pytest.fixture(scope="module")
def results():
    """Every clip transcribed in one call (their windows share engine steps), language detected."""
    return scriba.transcribe([c["path"] for c in CLIPS], model="base")


@pytest.fixture(scope="module")
def exact_results():
    """The same in the exact mode (float32, as transformers and faster-whisper float32 run)."""
    return scriba.transcribe([c["path"] for c in CLIPS], model="base", dtype="float32")


def errors_per_language(results) -> dict[str, tuple[int, int]]:
    """language -> (errors, words or characters of the references) of these results."""
    counts = {}
    for language in dict.fromkeys(c["language"] for c in CLIPS):
        mine = [(c["ref"], r.text) for c, r in zip(CLIPS, results) if c["language"] == language]
        units = sum(len(multilingual_units(language, ref)) for ref, _ in mine)
        errors = error_rate(language, [ref for ref, _ in mine], [hyp for _, hyp in mine])
        counts[language] = (round(errors * units), units)
    return counts


def test_every_clip_s_language_is_detected(results):
    for c, r in zip(CLIPS, results):
        assert r.language == c["language"], c["path"]
        assert 0.5 < r.language_probability <= 1.0


def test_error_rate_per_language_is_held_to_faster_whisper_s(exact_results):
    bars = faster_whisper_figures("faster-whisper float32")
    for language, (errors, units) in errors_per_language(exact_results).items():
        theirs, their_units = bars[language]
        print(f"{language}: {errors}/{units} errors (faster-whisper float32 {theirs}/{their_units})")
        assert units == their_units and errors <= theirs + ALLOWANCE_UNITS, language


def test_the_int8_default_s_errors_stay_near_faster_whisper_int8_s(results):
    bars = faster_whisper_figures("faster-whisper int8")
    mine = errors_per_language(results)
    errors, units = (sum(counts) for counts in zip(*mine.values()))
    theirs = sum(bars[language][0] for language in mine)
    print(f"int8: {errors}/{units} errors (faster-whisper int8 {theirs}), per language {mine}")
    assert errors <= theirs + INT8_ALLOWANCE * units


@pytest.mark.parametrize("prefix", ["de_", "es_"])
def test_translate_gives_english(prefix):
    source = clip(prefix)
    result = scriba.transcribe(source["path"], model="base", task="translate")
    words = multilingual_units("en", result.text)
    assert result.language == source["language"] and len(words) > 60
    english = sum(w in ENGLISH for w in words) / len(words)
    kept = sum(w in SOURCE[source["language"]] for w in words) / len(words)
    assert english > 0.15 and kept < 0.04, (english, kept, result.text)


@pytest.fixture(scope="module")
def hf_base():
    return transformers_whisper("base")


@pytest.mark.parametrize(
    "prefix, language, task",
    [
        ("ja_fleurs", None, "transcribe"),  # (the language given: the same decode after the detection)
        ("zh_aishell", None, "translate"),
        ("es_", "es", "translate"),
    ],
)
def test_same_tokens_as_transformers(hf_base, prefix, language, task):
    """One 30 s window with timestamps, the language given or detected."""
    audio = load_audio(clip(prefix)["path"])[: 30 * 16000]
    features = torch.tensor(log_mel([audio], 80))
    expected = (
        hf_base.generate(
            input_features=features,
            language=language,
            task=task,
            return_timestamps=True,
            force_unique_generate_call=True,
            return_dict_in_generate=True,
            max_new_tokens=120,
        )
        .sequences[0]
        .tolist()
    )
    detected = 2 if language is None else 0  # <|lang|> <|task|> are generated, not prompted
    prompt = {"audio": (audio, 16000), "language": language, "task": task, "timestamps": True}
    out = get_engine("base", dtype="float32").generate(prompt, SamplingParams(max_tokens=120 + detected))[0]
    assert out.prompt_token_ids + out.outputs[0].token_ids == expected
    assert out.annotations.language == clip(prefix)["language"]
    begin = get_engine("base", dtype="float32").model.tokens.timestamp_begin
    assert any(t >= begin for t in out.outputs[0].token_ids)


def test_word_timestamps_on_german():
    """Words cover the text in order, inside their segments and the audio; the reading's first
    words are spoken in its first seconds."""
    result = scriba.transcribe(clip("de_")["path"], model="base", word_timestamps=True)
    assert result.language == "de"
    words = [w for s in result.segments for w in s.words]
    assert "".join(w.word for w in words).strip() == result.text
    starts = np.array([w.start for w in words])
    assert np.all(np.diff(starts) >= 0) and all(w.start <= w.end for w in words)
    assert words[-1].end <= result.duration + 0.01
    for s in result.segments:
        assert s.start == s.words[0].start and s.end == s.words[-1].end
    first = [w.word.strip(" ,.") for w in words[:3]]
    assert first == ["Hans", "Jakob", "Christoffel"] and words[0].start < 1.5 and words[2].end < 4.0
    assert 0.5 < np.mean([w.probability for w in words]) <= 1.0


def test_token_times_match_transformers_on_german():
    """The first window of the German reading: the same tokens, and each token's time from the
    alignment heads within one timestamp step of transformers' return_token_timestamps."""
    hf = transformers_whisper("base")
    audio = load_audio(clip("de_")["path"])[: 30 * 16000]
    heads = [tuple(h) for h in get_engine("base", dtype="float32").model.alignment_heads]
    expected_seq, expected = hf_token_times(hf, audio, [list(h) for h in heads], max_new=100, language="de")
    exact = get_engine("base", dtype="float32")
    seq, prompt_len, times = scriba_token_times(exact, audio, heads, max_new=100, language="de")
    assert seq == expected_seq
    np.testing.assert_allclose(times, expected[prompt_len:], atol=0.02 + 1e-6)


def test_a_window_filled_with_mel_zeros_decodes_as_faster_whisper_s():
    """The Japanese and Chinese clips (4-15 s) filled with log-mel zeros after their audio, as
    faster-whisper fills a short window: the same text as faster-whisper float32, greedy; filled
    with silent audio (transformers' fill), another text on some."""
    from faster_whisper import WhisperModel

    from scriba.models.offline import offline_model_path

    theirs = WhisperModel(offline_model_path("base"), device="cpu", compute_type="float32", cpu_threads=2)
    exact = get_engine("base", dtype="float32")

    def text(source: dict, padding: str) -> str:
        prompt = {"audio": source["path"], "language": source["language"], "timestamps": True}
        out = exact.generate({**prompt, "padding": padding}, SamplingParams(max_tokens=200))[0].outputs[0]
        return re.sub(r"<\|[\d.]+\|>", "", out.text).strip()  # the text between its timestamps

    differ = 0
    for source in [c for c in CLIPS if c["language"] in ("ja", "zh")]:
        options = dict(beam_size=1, temperature=0.0, condition_on_previous_text=False)
        segments, _ = theirs.transcribe(source["path"], language=source["language"], **options)
        expected = "".join(s.text for s in segments).strip()
        assert text(source, "mel") == expected, source["path"]
        differ += text(source, "audio") != expected
    assert differ >= 1


def test_windows_are_filled_for_their_language(monkeypatch):
    """The default: a short Japanese clip is detected with silent audio after it, stopped at its
    language token and decoded again in Japanese with log-mel zeros; English takes one pass with
    silent audio, and the exact mode fills every window with audio, as transformers does."""
    from scriba.runtime.engine_loop import EngineLoop

    sent = []
    submit = EngineLoop.submit
    monkeypatch.setattr(EngineLoop, "submit", lambda loop, p, s: sent.extend(zip(p, s)) or submit(loop, p, s))
    japanese = scriba.transcribe(clip("ja_mfa")["path"], model="base")
    ja = get_engine("base").model.tokens.lang_to_id["ja"]
    (detect, detect_params), (decode, decode_params) = sent
    assert (detect["language"], detect["padding"]) == (None, "audio") and ja in detect_params.stop_token_ids
    assert (decode["language"], decode["padding"]) == ("ja", "mel") and not decode_params.stop_token_ids
    assert japanese.language == "ja" and 0.5 < japanese.language_probability <= 1.0
    assert len(japanese.text) > 10
    sent.clear()
    english = scriba.transcribe("assets/jfk.flac", model="base")
    assert [(p["language"], p["padding"]) for p, _ in sent] == [(None, "audio")]
    assert english.language == "en" and "ask not what your country" in english.text
    sent.clear()
    scriba.transcribe(clip("ja_mfa")["path"], model="base", dtype="float32")
    assert [(p["language"], p["padding"]) for p, _ in sent] == [(None, "audio")]


def test_translation_is_held_to_faster_whisper_s():
    """The German and Spanish readings translated, WER against the references in
    tests/data/multilingual, held to faster-whisper float32's (benchmarks/results/
    multilingual_base.tsv): in the exact mode within the target, 0.01; the int8 default within
    INT8_TRANSLATION_ALLOWANCE. And where openai-whisper's rule keeps the draw at temperature 1.0
    after every temperature failed (the German reading, sequential, no VAD, float32: "Like where
    one, also who Mounted the toothpick of these worlds, ..."), the likeliest attempt is kept, as
    faster-whisper does: faster-whisper's figure."""
    readings = [c for c in CLIPS if c["english"]]
    theirs, their_units = faster_whisper_figures("faster-whisper float32")["all->en"]
    for options, allowance in (({"dtype": "float32"}, 0.01), ({}, INT8_TRANSLATION_ALLOWANCE)):
        found = scriba.transcribe([c["path"] for c in readings], model="base", task="translate", **options)
        errors, units = translation_errors(readings, [r.text for r in found])
        print(f"translation {options}: {errors}/{units} word errors (faster-whisper float32 {theirs})")
        assert units == their_units and errors <= theirs + allowance * units, options
    german = clip("de_")
    options = dict(task="translate", mode="sequential", vad_filter=False, dtype="float32")
    text = scriba.transcribe(german["path"], model="base", **options).text
    errors, units = translation_errors([german], [text])
    theirs, _ = faster_whisper_figures("faster-whisper float32")["de->en"]
    assert errors <= theirs + 0.02 * units, text

