"""Word timestamps: DTW and median filter against transformers', token times against
transformers' return_token_timestamps on the same weights (real tiny.en on jfk.flac, tiny random
configs), words through transcribe()."""

import numpy as np
import paths
import pytest
import torch
from oracle import hf_token_times, scriba_token_times, transformers_tiny_en
from tiny_whisper import synthetic_clip
from transformers.models.whisper.generation_whisper import _dynamic_time_warping, _median_filter

import scriba
from scriba import Engine
from scriba.media.load import load_audio
from scriba.runtime.loops import get_engine
from scriba.transcription.words import dtw, median_filter, split_words

JFK = paths.JFK


@pytest.mark.parametrize("shape", [(1, 1), (3, 40), (17, 9), (30, 300)])
def test_dtw_and_median_filter_match_transformers(shape):
    rng = np.random.default_rng(shape[0])
    cost = rng.standard_normal(shape)
    cost[:, ::7] = cost[:, ::7].round(1)  # some ties
    for got, expected in zip(dtw(cost), _dynamic_time_warping(cost)):
        np.testing.assert_array_equal(got, expected)
    x = torch.from_numpy(rng.standard_normal((4, *shape)).astype(np.float32))
    torch.testing.assert_close(median_filter(x), _median_filter(x[None], 7)[0], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["english", "multilingual"])
def test_token_times_match_transformers_on_tiny_random_configs(tiny_whispers, name):
    path, hf = tiny_whispers[name]
    heads = [[1, 0], [1, 2], [0, 3]]
    engine = Engine(path, dtype="float32", num_kv_blocks=2000)
    kwargs = {"language": "en"} if name == "multilingual" else {}
    for seed, seconds in enumerate([4.0, 13.0, 29.0]):
        audio = synthetic_clip(seconds, seed)
        expected_seq, expected = hf_token_times(hf, audio, heads, **kwargs)
        seq, prompt_len, times = scriba_token_times(engine, audio, [tuple(h) for h in heads], **kwargs)
        assert seq == expected_seq
        np.testing.assert_allclose(times, expected[prompt_len:], atol=0.02 + 1e-6)


def test_words_on_jfk_match_transformers_token_timestamps():
    hf = transformers_tiny_en()
    audio = load_audio(JFK)
    seq, stamps = hf_token_times(hf, audio, hf.generation_config.alignment_heads, max_new=120)
    result = scriba.transcribe(JFK, timestamps=False, word_timestamps=True, dtype="float32")  # exact
    words = [w for s in result.segments for w in s.words]
    text = seq[2:-1]  # after <|startoftranscript|> <|notimestamps|>, before <|endoftext|>
    assert [t for s in result.segments for t in s.tokens] == text
    decode = lambda ids: get_engine().tokenizer.decode(ids)  # noqa: E731
    spans = split_words(text, decode, "en", 50256)
    assert [w.word for w in words] == [decode([text[k] for k in span]) for span in spans]
    for w, span in zip(words, spans):  # a word: from the token before it to its last token
        assert w.start == pytest.approx(stamps[1 + span[0]], abs=0.02)
        assert w.end == pytest.approx(stamps[2 + span[-1]], abs=0.02)
    assert 0 < np.mean([w.probability for w in words]) <= 1
    fellow = next(w for w in words if w.word.strip() == "fellow")
    assert 1.0 < fellow.start < fellow.end < 2.2  # "fellow" is spoken at about 1.4-1.8 s


def test_split_words_groups_tokens_and_punctuation():
    pieces = {1: " Hello", 2: ",", 3: " wor", 4: "ld", 5: " (", 6: "yes", 7: ")", 8: "."}
    decode = lambda ids: "".join(pieces[i] for i in ids)  # noqa: E731
    words = split_words([1, 2, 3, 4, 5, 6, 7, 8], decode, "en", 100)
    assert [decode([[1, 2, 3, 4, 5, 6, 7, 8][k] for k in w]) for w in words] == [
        " Hello,",
        " world",
        " (yes).",
    ]
