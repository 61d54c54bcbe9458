"""summarize() with a tiny random BART: lists, long texts split on sentences, lengths, errors."""

import pytest

import scriba
from scriba.app.engines import get_engine, get_loop
from scriba.app.summarize import split_to_fit


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
    one = scriba.summarize("The cat sat on the mat. It was happy.", model=cnn_like)
    assert isinstance(one, str) and one
    both = scriba.summarize(["The cat sat on the mat. It was happy.", "Rain fell all day."], model=cnn_like)
    assert isinstance(both, list) and len(both) == 2 and both[0] == one


def test_long_text_is_split_on_sentences_not_truncated(cnn_like):
    engine = get_engine(cnn_like)
    sentences = [f"Sentence number {i} says something about topic {i % 7}." for i in range(60)]
    text = " ".join(sentences)  # about 3000 byte tokens, the model takes 256
    pieces = split_to_fit(text, engine.tokenizer, engine.model.max_encoder_len)
    assert len(pieces) > 5 and " ".join(pieces) == text
    assert all(len(engine.tokenizer(p)["input_ids"]) <= engine.model.max_encoder_len for p in pieces)
    assert all(p.endswith(".") for p in pieces)  # whole sentences
    summary = scriba.summarize(text, model=cnn_like)
    assert len(summary.split(" ")) >= len(pieces)  # one summary per piece, joined


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
