"""summarize() with a tiny random BART: lists, long texts split on sentences, lengths, errors."""

import pytest

import scriba
from scriba.runtime.loops import get_engine, get_loop
from scriba.summarization.summarize import split_to_fit


@pytest.fixture(scope="module")
def cnn_like(tmp_path_factory):
    """A tiny BART with bart-large-cnn's generation settings (shorter lengths), 256 positions."""
    import torch
    from tiny_models import EOS, PAD, make_tiny_model
    from transformers import GenerationConfig

    path = str(tmp_path_factory.mktemp("tiny-summarizer"))
    model = make_tiny_model(path, "bart", seed=7)
    with torch.no_grad():
        model.final_logits_bias[0, EOS] = 2.0
    model.generation_config = GenerationConfig(
        decoder_start_token_id=EOS,
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=PAD,
        num_beams=4,
        length_penalty=2.0,
        max_length=30,
        min_length=8,
        no_repeat_ngram_size=3,
        early_stopping=True,
        forced_bos_token_id=0,
        forced_eos_token_id=EOS,
    )
    model.save_pretrained(path)
    return path


def test_text_and_list(cnn_like):
    """A short text is one piece summarized once; a list gives each text's own summary, the
    same as alone (the batch changes nothing) and in order."""
    one = scriba.summarize("The cat sat on the mat. It was happy.", model=cnn_like)
    assert isinstance(one, str) and one.pieces == (1,) and one.levels == 1 and one.sections == ()
    rain = scriba.summarize("Rain fell all day.", model=cnn_like)
    both = scriba.summarize(["The cat sat on the mat. It was happy.", "Rain fell all day."], model=cnn_like)
    assert isinstance(both, list) and both == [one, rain]
    assert one != rain  # two inputs, two summaries: not one answer for everything


def test_long_text_is_split_on_sentences_not_truncated(cnn_like):
    engine = get_engine(cnn_like)
    sentences = [f"Sentence number {i} says something about topic {i % 7}." for i in range(60)]
    text = " ".join(sentences)  # about 3000 byte tokens, the model takes 256
    pieces = split_to_fit(text, engine.tokenizer, engine.model.max_encoder_len)
    assert len(pieces) > 5 and " ".join(pieces) == text
    assert all(len(engine.tokenizer(p)["input_ids"]) <= engine.model.max_encoder_len for p in pieces)
    assert all(p.endswith(".") for p in pieces)  # whole sentences


def fixed_length_summaries(loop, monkeypatch) -> list[list]:
    """loop.generate answers every prompt with one sentence of exactly max_tokens - 1 bytes (the
    tiny tokenizer has a token per byte); returns the (prompts, max_tokens) of each call."""
    from types import SimpleNamespace as NS

    calls = []

    def generate(prompts, params, **kw):
        calls.append((list(prompts), [p.max_tokens for p in params]))
        text = lambda n: "A" * (n - 2) + "."  # noqa: E731
        return [NS(outputs=[NS(text=text(p.max_tokens))]) for p in params]

    monkeypatch.setattr(loop, "generate", generate)
    return calls


@pytest.mark.parametrize(
    "sentences, max_length, pieces, per_level",
    [
        # "Sentence 000 says hi." is 21 bytes: 11 sentences fit the 254 tokens of an input.
        (5, None, (1,), [[28]]),  # fits: one level, the checkpoint's 30 - 2 start tokens
        (44, None, (4, 1), [[28] * 4, [28]]),  # 4 x 27 bytes joined: one more level
        # Several pieces get at most 256 / 4 = 64 tokens: 4 x 63 bytes need 2 inputs, then 1.
        (44, 100, (4, 2, 1), [[64] * 4, [64] * 2, [98]]),
        (15, 200, (2,), [[64] * 2]),  # 2 x 63 bytes joined fit the 198 asked for: done
    ],
)
def test_map_then_reduce_levels(cnn_like, monkeypatch, sentences, max_length, pieces, per_level):
    calls = fixed_length_summaries(get_loop(cnn_like), monkeypatch)
    text = " ".join(f"Sentence {i:03d} says hi." for i in range(sentences))
    summary = scriba.summarize(text, model=cnn_like, max_length=max_length)
    assert summary.pieces == pieces and summary.levels == len(pieces) and summary.sections == ()
    assert [tokens for _, tokens in calls] == per_level  # one engine batch per level
    assert " ".join(calls[0][0]) == text  # the first level is the whole text, in order
    last = ["A" * (n - 2) + "." for n in per_level[-1]]
    assert summary == " ".join(last)  # the last level's output is the summary
    assert len(summary) <= (max_length or 30) - 2


def test_a_long_summary_stays_within_max_length(cnn_like, monkeypatch):
    """The real tiny model on 60 sentences (about 13 inputs): one summary, generated within the
    bound. (Its length is counted in generated tokens: the random model's byte tokens decode
    to replacement characters that would count three bytes each if the text were re-tokenized.)"""
    loop = get_loop(cnn_like)
    calls, generate = [], loop.generate

    def recording(prompts, params, **kw):
        calls.append(generate(prompts, params, **kw))
        return calls[-1]

    monkeypatch.setattr(loop, "generate", recording)
    text = " ".join(f"Sentence number {i} says something about topic {i % 7}." for i in range(60))
    summary = scriba.summarize(text, model=cnn_like, max_length=20)
    assert summary.pieces[0] > 5 and summary.pieces[-1] == 1 and summary.levels >= 2
    assert list(summary.pieces) == sorted(summary.pieces, reverse=True)
    assert [len(c) for c in calls] == list(summary.pieces)  # one engine batch per level
    (last,) = calls[-1]
    assert summary == last.outputs[0].text.strip() and summary
    assert len(last.outputs[0].token_ids) <= 20 - 2  # max_length counts the 2 start tokens


def test_each_piece_summary_is_what_transformers_generates(cnn_like, monkeypatch):
    from transformers import AutoTokenizer, BartForConditionalGeneration

    loop = get_loop(cnn_like)
    levels, generate = [], loop.generate

    def recording(prompts, params, **kw):
        outputs = generate(prompts, params, **kw)
        levels.append([(p, o.outputs[0].text.strip()) for p, o in zip(prompts, outputs)])
        return outputs

    monkeypatch.setattr(loop, "generate", recording)
    text = " ".join(f"Sentence number {i} says something about topic {i % 7}." for i in range(30))
    scriba.summarize(text, model=cnn_like)
    hf, tokenizer = (
        BartForConditionalGeneration.from_pretrained(cnn_like),
        AutoTokenizer.from_pretrained(cnn_like),
    )
    assert len(levels[0]) > 3
    for prompt, ours in levels[0] + levels[-1]:
        ids = hf.generate(**tokenizer(prompt, return_tensors="pt"))[0]
        assert tokenizer.decode(ids, skip_special_tokens=True).strip() == ours


def test_lengths_follow_the_checkpoint_and_the_caller(cnn_like, monkeypatch):
    loop = get_loop(cnn_like)
    seen = []
    generate = loop.generate

    def recording(prompts, params, **kw):
        outputs = generate(prompts, params, **kw)
        seen.append((params[0], [len(o.outputs[0].token_ids) for o in outputs]))
        return outputs

    monkeypatch.setattr(loop, "generate", recording)
    text = "A short story about a dog that runs. The dog is fast."
    scriba.summarize(text, model=cnn_like)
    scriba.summarize(text, model=cnn_like, max_length=12, min_length=5)
    (default, n_default), (short, n_short) = seen
    # 30 / 8 count <DEC><BOS>
    assert (default.beam_width, default.max_tokens, default.min_tokens) == (
        4,
        28,
        6,
    )
    assert (short.max_tokens, short.min_tokens) == (10, 3)
    assert 6 <= n_default[0] <= 28 and 3 <= n_short[0] <= 10
    with pytest.raises(ValueError, match="min_length 20 is more than max_length 12"):
        scriba.summarize(text, model=cnn_like, max_length=12, min_length=20)


def test_errors_name_the_problem(cnn_like, tmp_path):
    with pytest.raises(ValueError, match="text 1 is empty"):
        scriba.summarize(["fine", "   "], model=cnn_like)
    with pytest.raises(OSError, match="could not find model .*: there is no such folder"):
        scriba.summarize("text", model=str(tmp_path / "no-such-model"))
    with pytest.raises(ValueError, match="speech model"):
        scriba.summarize("text", model=None)
