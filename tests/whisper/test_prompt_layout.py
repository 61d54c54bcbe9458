"""Whisper's decoder prompt with faster-whisper's options (prompt_layout.py) and a request's
decoding rules (logits_rules.DecodingRules), on the bundled tiny.en's and base's real vocabularies.
Oracle: faster-whisper's get_prompt() and get_suppressed_tokens() on the same tokenizers."""

import numpy as np
import pytest
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import WhisperModel, get_suppressed_tokens

from scriba.models.offline import offline_model_path
from scriba.models.whisper.ctranslate2 import load_ctranslate2_whisper
from scriba.models.whisper.tokens import WhisperTokens
from scriba.whisper.logits_rules import DecodingRules, TimestampRules, build_whisper_processors
from scriba.whisper.prompt_layout import build_decoder_prompt

MAX_LEN = 448


@pytest.fixture(scope="module", params=["tiny.en", "base"])
def vocab(request):
    folder = offline_model_path(request.param)
    _, config, generation = load_ctranslate2_whisper(folder)
    model = WhisperModel(folder, device="cpu", compute_type="float32", cpu_threads=1)
    multilingual = request.param == "base"
    theirs = Tokenizer(
        model.hf_tokenizer, multilingual, task="transcribe", language="en" if multilingual else None
    )
    return WhisperTokens.from_configs(config, generation), model, theirs


@pytest.mark.parametrize("timestamps", [True, False])
@pytest.mark.parametrize(
    "hotwords, prev, prefix",
    [
        ("Kennedy, inaugural", [], None),
        ("Kennedy", [400, 500, 600], None),
        (None, [7] * 300, None),
        ("Kennedy", [400, 500], "And so"),
        (None, [], "And so, my"),
    ],
)
def test_prompt_as_faster_whisper_lays_it_out(vocab, timestamps, hotwords, prev, prefix):
    tokens, model, theirs = vocab
    language = "en" if tokens.is_multilingual else None
    # faster-whisper gives hotwords only to a window without a prefix (transcribe's drivers do so)
    hot_ids = theirs.encode(" " + hotwords) if hotwords and not prefix else []
    prefix_ids = theirs.encode(" " + prefix) if prefix else []
    ours, layout = build_decoder_prompt(
        tokens, language, "transcribe", timestamps, prev, prefix_ids, MAX_LEN, hot_ids
    )
    expected = model.get_prompt(
        theirs, prev, without_timestamps=not timestamps, prefix=prefix, hotwords=hotwords
    )
    assert ours == expected
    prefix_part = len(prefix_ids) + (timestamps and bool(prefix_ids))
    assert layout.sample_begin == len(ours) and layout.rules_begin == len(ours) - prefix_part


def test_a_detected_language_forces_the_prefix_after_it(vocab):
    tokens, _, theirs = vocab
    if not tokens.is_multilingual:
        return
    prefix = theirs.encode(" Hallo")
    prompt, layout = build_decoder_prompt(tokens, None, "transcribe", True, [], prefix, MAX_LEN)
    assert prompt == [tokens.sot] and layout.detect_language
    assert layout.forced == [tokens.transcribe, tokens.timestamp_begin, *prefix]
    assert layout.sample_begin == 2 + len(
        layout.forced
    ) and layout.rules_begin == layout.sample_begin - 1 - len(prefix)


@pytest.mark.parametrize("given", [None, [], [-1], [-1, 1499], [11, 13]])
def test_suppressed_tokens_as_faster_whisper_chooses_them(vocab, given):
    tokens, _, theirs = vocab
    rules = DecodingRules.of(tokens, {} if given is None else {"suppress_tokens": given})
    expected = get_suppressed_tokens(theirs, [-1] if given is None else list(given))
    assert rules.suppress == tuple(expected)


def test_blank_and_first_timestamp_options_reach_the_rules(vocab):
    tokens, _, _ = vocab
    default = DecodingRules.of(tokens, {})
    assert default.begin_suppress == tuple(tokens.begin_suppress_tokens) and default.max_initial_index == 50
    rules = DecodingRules.of(tokens, {"suppress_blank": False, "max_initial_timestamp": 0.5})
    assert rules.begin_suppress == () and rules.max_initial_index == 25
    assert DecodingRules.of(tokens, {"max_initial_timestamp": None}).max_initial_index is None
    _, layout = build_decoder_prompt(tokens, "en", "transcribe", True, [], [], MAX_LEN)
    processors = build_whisper_processors(tokens, layout, rules)
    (stamps,) = [p for p in processors if isinstance(p, TimestampRules)]
    assert stamps.layout[-1] == 25 and stamps.begin == layout.rules_begin


@pytest.mark.parametrize(
    "option, words",
    [
        ({"suppress_tokens": ["x"]}, "suppress_tokens must be a list of token ids"),
        ({"suppress_tokens": [99999999]}, "suppress_tokens must be a list of token ids"),
        ({"suppress_blank": "yes"}, "suppress_blank must be True or False"),
        ({"max_initial_timestamp": -1}, "max_initial_timestamp must be seconds >= 0"),
        ({"hotwords": 5}, "hotwords"),
        ({"padding": "zeros"}, "padding must be one of ('audio', 'mel')"),
    ],
)
def test_bad_decoding_options_are_one_line_errors(bundled, option, words):
    with pytest.raises((ValueError, TypeError)) as e:
        bundled.prepare({"input_features": np.zeros((80, 3000), np.float32), **option})
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.fixture(scope="module")
def bundled():
    from scriba import Engine

    return Engine()
