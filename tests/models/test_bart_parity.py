"""Scriba vs transformers generate() on the same tiny random weights (float32, CPU, greedy)."""

import pytest
from oracle import MAX_NEW, assert_parity, hf_generate, random_prompts
from tiny_models import EOS

from scriba import Engine, SamplingParams


@pytest.fixture(scope="module", params=["bart", "mbart"])
def model_pair(request, tiny_bart, tiny_mbart):
    path, hf = tiny_bart if request.param == "bart" else tiny_mbart
    return path, hf, Engine(path, num_kv_blocks=2048)


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_greedy_matches_transformers(model_pair, batch):
    path, hf, engine = model_pair
    prompts = random_prompts(batch, seed=batch)
    decoder_prompt = engine.model.default_decoder_prompt()
    expected = hf_generate(hf, prompts, decoder_prompt)
    outs = engine.generate(
        [{"prompt_token_ids": p} for p in prompts], SamplingParams(max_tokens=MAX_NEW, logprobs=5)
    )
    assert [o.prompt_token_ids for o in outs] == [decoder_prompt] * batch
    assert [o.encoder_prompt_token_ids for o in outs] == prompts
    assert_parity(outs, expected)
    # Not a trivially short test: most requests run long.
    assert sum(len(o.outputs[0].token_ids) for o in outs) >= 4 * batch


def test_default_prompt_equals_forced_bos(tiny_bart):
    """<DEC><BOS> as the default prompt gives what transformers' forced BOS gives from <DEC>."""
    path, hf = tiny_bart
    engine = Engine(path, num_kv_blocks=512)
    prompts = random_prompts(5, seed=11)
    ref = hf_generate(hf, prompts, [EOS], max_new_tokens=MAX_NEW + 1, forced_bos_token_id=0)
    outs = engine.generate([{"prompt_token_ids": p} for p in prompts], SamplingParams(max_tokens=MAX_NEW))
    for out, (gen, _) in zip(outs, ref):
        assert gen[0] == 0 and out.outputs[0].token_ids == gen[1:]


@pytest.mark.parametrize("kind", ["bart", "mbart"])
@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_parity_under_preemption(tiny_bart, tiny_mbart, kind, mode):
    path, hf = tiny_bart if kind == "bart" else tiny_mbart
    prompts = random_prompts(32, seed=5)
    engine = Engine(path, num_kv_blocks=40, num_cpu_blocks=400, preemption_mode=mode)
    expected = hf_generate(hf, prompts, engine.model.default_decoder_prompt())
    outs = engine.generate(
        [{"prompt_token_ids": p} for p in prompts], SamplingParams(max_tokens=MAX_NEW, logprobs=5)
    )
    assert_parity(outs, expected)
    sched = engine.scheduler
    assert (sched.num_swapped_out if mode == "swap" else sched.num_recomputed) > 0
    bm = engine.block_manager
    assert bm.num_free("device") == bm.num_total("device") and bm.num_free("cpu") == bm.num_total("cpu")


def test_text_and_explicit_prompts(tiny_bart):
    path, hf = tiny_bart
    engine = Engine(path, num_kv_blocks=256)
    tok = engine.tokenizer
    text = "Scriba packs encoder tokens without padding."
    enc = tok(text)["input_ids"]
    dec_text = "Scriba"
    dec = [EOS] + tok(dec_text, add_special_tokens=False)["input_ids"]
    outs = engine.generate(
        [
            text,
            {"prompt": text},
            {"encoder_prompt": {"prompt": text}, "decoder_prompt": dec_text},
            {"encoder_prompt": {"prompt_token_ids": enc}, "decoder_prompt": {"prompt_token_ids": dec}},
        ],
        SamplingParams(max_tokens=20),
    )
    default = hf_generate(hf, [enc], [EOS, 0], max_new_tokens=20)[0][0]
    given = hf_generate(hf, [enc], dec, max_new_tokens=20)[0][0]
    assert outs[0].outputs[0].token_ids == outs[1].outputs[0].token_ids == default
    assert outs[2].outputs[0].token_ids == outs[3].outputs[0].token_ids == given
    assert outs[0].encoder_prompt == text and outs[0].encoder_prompt_token_ids == enc
    assert outs[2].prompt == dec_text and outs[2].prompt_token_ids == dec
    assert outs[0].outputs[0].text == tok.decode(default, skip_special_tokens=True)


def test_tied_embeddings_match_transformers(tiny_bart_tied):
    path, hf = tiny_bart_tied
    engine = Engine(path, num_kv_blocks=512)
    assert not hasattr(engine.model, "lm_head")  # the output projection is model.shared
    prompts = random_prompts(7, seed=3)
    assert_parity(
        engine.generate(
            [{"prompt_token_ids": p} for p in prompts], SamplingParams(max_tokens=32, logprobs=5)
        ),
        hf_generate(hf, prompts, [EOS, 0], max_new_tokens=32),
    )
