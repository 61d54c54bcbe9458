"""Whisper on the engine vs transformers' generate() on the same tiny random weights."""

import numpy as np
import pytest
import torch
from tiny_whisper import EOT, synthetic_clip

from scriba import Engine, SamplingParams
from scriba.whisper.log_mel import log_mel, mel_filters

MAX_NEW = 40
CASES = [  # (model, language, task, timestamps)
    ("multilingual", "en", "transcribe", False),
    ("multilingual", None, "transcribe", False),
    ("multilingual", "de", "translate", True),
    ("multilingual", None, "transcribe", True),
    ("multilingual", None, "translate", False),
    ("english", None, "transcribe", False),
    ("english", None, "transcribe", True),
    ("mel128", "fr", "transcribe", True),
    ("mel128", None, "transcribe", False),
]


def clips():
    return [synthetic_clip(seconds, seed) for seed, seconds in enumerate([0.5, 3.0, 7.5, 12.0, 20.0, 29.9])]


def hf_generate(model, features, language, task, timestamps, multilingual):
    kwargs = dict(language=language, task=task) if multilingual else {}
    out = model.generate(
        input_features=torch.tensor(features),
        max_new_tokens=MAX_NEW,
        return_timestamps=timestamps,
        force_unique_generate_call=True,  # one pass over the window, no seeking
        return_dict_in_generate=True,
        **kwargs,
    )
    rows = []
    for row in out.sequences.tolist():
        start = 1 + (2 if multilingual else 0) + (0 if timestamps else 1)  # first generated token
        gen = row[start:]
        rows.append(row[:start] + (gen[: gen.index(EOT) + 1] if EOT in gen else gen))
    return rows


@pytest.mark.parametrize("name,language,task,timestamps", CASES)
def test_greedy_tokens_match_transformers(tiny_whispers, name, language, task, timestamps):
    path, hf = tiny_whispers[name]
    multilingual = name != "english"
    audio = clips()
    expected = hf_generate(
        hf, log_mel(audio, hf.config.num_mel_bins), language, task, timestamps, multilingual
    )
    engine = Engine(path, dtype="float32", num_kv_blocks=2000)
    prompts = [
        {"audio": (clip, 16000), "language": language, "task": task, "timestamps": timestamps}
        for clip in audio
    ]
    # <|lang|> <|task|> [<|notimestamps|>]
    detected = 2 + (0 if timestamps else 1) if language is None and multilingual else 0
    outputs = engine.generate(prompts, SamplingParams(max_tokens=MAX_NEW + detected))
    for out, want in zip(outputs, expected):
        assert out.prompt_token_ids + out.outputs[0].token_ids == want
    assert len({tuple(w) for w in expected}) > 1, "the clips should not all decode alike"
    if timestamps:  # the rules were exercised: pairs of timestamps appear
        assert any(t > 1000 for w in expected for t in w[4:])


def test_language_detection_reports_language_and_probability(tiny_whispers):
    path, hf = tiny_whispers["multilingual"]
    engine = Engine(path, dtype="float32", num_kv_blocks=2000)
    audio = clips()
    feats = torch.tensor(log_mel(audio, 80))
    lang_ids = hf.detect_language(input_features=feats).tolist()
    outputs = engine.generate([{"audio": (c, 16000)} for c in audio], SamplingParams(max_tokens=4))
    id_to_code = {v: k.strip("<|>") for k, v in hf.generation_config.lang_to_id.items()}
    with torch.no_grad():
        logits = hf(
            input_features=feats,
            decoder_input_ids=torch.full((len(audio), 1), hf.generation_config.decoder_start_token_id),
        ).logits[:, -1]
    lang_logits = logits[:, sorted(id_to_code)]
    for i, out in enumerate(outputs):
        assert out.annotations.language == id_to_code[lang_ids[i]]
        best = lang_logits[i].softmax(-1).max().item()
        assert out.annotations.language_probability == pytest.approx(best, abs=1e-4)
        no_speech = logits[i].softmax(-1)[hf.generation_config.no_timestamps_token_id - 1].item()
        assert out.annotations.no_speech_prob == pytest.approx(no_speech, abs=1e-5)


def test_features_match_whisper_feature_extractor():
    from transformers import WhisperFeatureExtractor

    audio = clips()
    for mels in (80, 128):
        extractor = WhisperFeatureExtractor(feature_size=mels)
        padded = [np.pad(a, (0, 16000 * 30 - len(a))).astype(np.float32) for a in audio]
        # The extractor's float64 numpy path: the reference its float32 torch path approximates.
        ref = np.stack([extractor._np_extract_fbank_features(p[None], "cpu")[0] for p in padded])
        ours = log_mel(audio, mels)
        np.testing.assert_allclose(mel_filters(mels), extractor.mel_filters, rtol=1e-12, atol=1e-15)
        assert ours.shape == (len(audio), mels, 3000)
        np.testing.assert_allclose(ours, ref, atol=1e-5)


@pytest.mark.parametrize("timestamps", [False, True])
def test_previous_text_prompt_matches_transformers_prompt_ids(tiny_whispers, timestamps):
    from tiny_whisper import START_OF_PREV

    path, hf = tiny_whispers["multilingual"]
    engine = Engine(path, dtype="float32", num_kv_blocks=2000)
    audio = clips()[:3]
    prev = engine.tokenizer(" hello there", add_special_tokens=False)["input_ids"]
    out = hf.generate(
        input_features=torch.tensor(log_mel(audio, 80)),
        max_new_tokens=MAX_NEW,
        language="en",
        task="transcribe",
        return_timestamps=timestamps,
        prompt_ids=torch.tensor([START_OF_PREV, *prev]),
        force_unique_generate_call=True,
        return_dict_in_generate=True,
    )
    ours = engine.generate(
        [
            {"audio": (c, 16000), "language": "en", "timestamps": timestamps, "prompt": "hello there"}
            for c in audio
        ],
        SamplingParams(max_tokens=MAX_NEW),
    )
    begin = len(prev) + 4 + (not timestamps)
    for row, mine in zip(out.sequences.tolist(), ours):
        gen = row[begin:]
        want = row[:begin] + (gen[: gen.index(EOT) + 1] if EOT in gen else gen)
        assert mine.prompt_token_ids[:2] == [START_OF_PREV, prev[0]]
        assert mine.prompt_token_ids + mine.outputs[0].token_ids == want


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_preemption_keeps_whisper_tokens(tiny_whispers, mode):
    path, _ = tiny_whispers["multilingual"]
    prompts = [{"audio": (c, 16000), "timestamps": True} for c in clips()]
    params = SamplingParams(max_tokens=100, ignore_eos=True)
    roomy = Engine(path, dtype="float32", num_kv_blocks=2000).generate(prompts, params)
    # 94 cross blocks per request and up to 7 self blocks: two fit at first, not at the end.
    tight = Engine(path, dtype="float32", num_kv_blocks=196, num_cpu_blocks=1000, preemption_mode=mode)
    outputs = tight.generate(prompts, params)
    sched = tight.scheduler
    assert (sched.num_swapped_out if mode == "swap" else sched.num_recomputed) > 0
    for a, b in zip(roomy, outputs):
        assert a.outputs[0].token_ids == b.outputs[0].token_ids
        assert a.annotations.language == b.annotations.language
        assert a.annotations.no_speech_prob == pytest.approx(b.annotations.no_speech_prob, abs=1e-6)


# transformers' Whisper generate() runs num_return_sequences copies of each clip, each returning
# its own best beam (so the copies are identical); Scriba returns the k best hypotheses of one
# search. The beams are compared with one returned sequence.
BEAMS = [  # (model, language, task, timestamps, beam width, length penalty, early stopping, no-repeat n-gram)
    ("multilingual", "en", "transcribe", False, 4, 1.0, False, 0),
    ("multilingual", None, "translate", True, 5, 2.0, True, 0),
    ("multilingual", "de", "transcribe", False, 4, 2.0, True, 3),  # bart-large-cnn's settings
    ("english", None, "transcribe", True, 2, 0.5, "never", 3),
    ("mel128", None, "transcribe", False, 3, 1.0, True, 0),
]


@pytest.mark.parametrize("name,language,task,timestamps,width,penalty,early,ngram", BEAMS)
def test_beam_search_matches_transformers(
    tiny_whispers, name, language, task, timestamps, width, penalty, early, ngram
):
    returns = 1
    path, hf = tiny_whispers[name]
    multilingual = name != "english"
    audio = clips()[:4]
    kwargs = dict(language=language, task=task) if multilingual else {}
    out = hf.generate(
        input_features=torch.tensor(log_mel(audio, hf.config.num_mel_bins)),
        max_new_tokens=MAX_NEW,
        return_timestamps=timestamps,
        num_beams=width,
        length_penalty=penalty,
        early_stopping=early,
        num_return_sequences=returns,
        no_repeat_ngram_size=ngram,
        force_unique_generate_call=True,
        return_dict_in_generate=True,
        output_scores=True,
        **kwargs,
    )
    detected = 2 + (0 if timestamps else 1) if language is None and multilingual else 0
    params = SamplingParams(
        max_tokens=MAX_NEW + detected,
        beam_width=width,
        length_penalty=penalty,
        early_stopping=early,
        num_return_sequences=returns,
        no_repeat_ngram_size=ngram,
    )
    engine = Engine(path, dtype="float32", num_kv_blocks=3000)
    outputs = engine.generate(
        [{"audio": (c, 16000), "language": language, "task": task, "timestamps": timestamps} for c in audio],
        params,
    )
    start = 1 + (2 if multilingual else 0) + (0 if timestamps else 1)
    for i, o in enumerate(outputs):
        assert len(o.outputs) == returns
        for j, completion in enumerate(o.outputs):
            row = out.sequences[i * returns + j].tolist()
            gen = row[start:]
            want = row[:start] + (gen[: gen.index(EOT) + 1] if EOT in gen else gen)
            assert o.prompt_token_ids + completion.token_ids == want
            assert completion.score == pytest.approx(out.sequences_scores[i * returns + j].item(), abs=1e-4)
    # the beams of a request share one cross-attention table: 94 blocks for 1500 positions
    assert engine.block_manager.num_free() == engine.block_manager.num_total()
