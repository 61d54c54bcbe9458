"""Beam search vs transformers' generate(num_beams=k) on the same tiny random BART."""

import pytest
import torch
from oracle import pad_batch, random_prompts
from tiny_models import EOS, PAD

from scriba import Engine, SamplingParams

# beam width, length penalty, early stopping, no-repeat n-gram, return sequences, min / max new tokens
SETTINGS = [
    dict(
        beam_width=4,
        length_penalty=2.0,
        early_stopping=True,
        no_repeat_ngram_size=3,
        num_return_sequences=1,
        min_tokens=5,
        max_tokens=30,
    ),
    dict(
        beam_width=2,
        length_penalty=0.5,
        early_stopping=False,
        no_repeat_ngram_size=0,
        num_return_sequences=2,
        min_tokens=0,
        max_tokens=24,
    ),
    dict(
        beam_width=5,
        length_penalty=1.0,
        early_stopping="never",
        no_repeat_ngram_size=3,
        num_return_sequences=3,
        min_tokens=0,
        max_tokens=20,
    ),
    dict(
        beam_width=4,
        length_penalty=1.0,
        early_stopping=False,
        no_repeat_ngram_size=0,
        num_return_sequences=4,
        min_tokens=2,
        max_tokens=40,
    ),
]


def hf_beam(model, prompts, s):
    ids, mask = pad_batch(prompts)
    # transformers starts from <DEC> and forces <BOS>, which it counts as generated; Scriba's
    # default prompt is <DEC><BOS> and counts from there: hence the + 1.
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        forced_bos_token_id=0,
        num_beams=s["beam_width"],
        length_penalty=s["length_penalty"],
        early_stopping=s["early_stopping"],
        no_repeat_ngram_size=s["no_repeat_ngram_size"],
        num_return_sequences=s["num_return_sequences"],
        min_new_tokens=s["min_tokens"] + 1,
        max_new_tokens=s["max_tokens"] + 1,
        do_sample=False,
        min_length=0,
        return_dict_in_generate=True,
        output_scores=True,
    )
    k = s["num_return_sequences"]
    rows = []
    for i in range(len(prompts)):
        hyps = []
        for j in range(k):
            seq = out.sequences[i * k + j, 2:].tolist()
            seq = seq[: seq.index(EOS) + 1] if EOS in seq else seq
            hyps.append((seq, out.sequences_scores[i * k + j].item()))
        rows.append(hyps)
    return rows


def assert_beam_parity(outputs, expected, setting):
    for out, hyps in zip(outputs, expected):
        assert len(out.outputs) == setting["num_return_sequences"]
        for completion, (tokens, score) in zip(out.outputs, hyps):
            assert completion.token_ids == tokens, out.request_id
            assert completion.score == pytest.approx(score, abs=1e-4)
            assert completion.finish_reason == ("stop" if tokens[-1] == EOS else "length")


@pytest.mark.parametrize("model", ["tiny_bart", "tiny_bart_eos"])
@pytest.mark.parametrize(
    "setting", SETTINGS, ids=lambda s: f"k{s['beam_width']}-lp{s['length_penalty']}-es{s['early_stopping']}"
)
def test_beam_search_matches_transformers(request, model, setting):
    path, hf = request.getfixturevalue(model)
    prompts = random_prompts(7, seed=setting["beam_width"], max_len=120)
    expected = hf_beam(hf, prompts, setting)
    engine = Engine(path, dtype="float32", num_kv_blocks=2000)
    outputs = engine.generate([{"prompt_token_ids": p} for p in prompts], SamplingParams(**setting))
    assert_beam_parity(outputs, expected, setting)
    if model == "tiny_bart_eos":  # hypotheses end on EOS, at more than one length where several return
        stops = {len(c.token_ids) for o in outputs for c in o.outputs if c.finish_reason == "stop"}
        assert len(stops) >= (2 if setting["num_return_sequences"] > 1 else 1)


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_preempted_beams_keep_parity_and_batch_with_plain_requests(tiny_bart_eos, mode):
    path, hf = tiny_bart_eos
    setting = SETTINGS[3]
    prompts = random_prompts(6, seed=11, max_len=120)
    expected = hf_beam(hf, prompts, setting)
    engine = Engine(path, num_kv_blocks=60, num_cpu_blocks=600, preemption_mode=mode)
    greedy = SamplingParams(max_tokens=30)
    mixed = [x for p in prompts for x in ({"prompt_token_ids": p}, {"prompt_token_ids": p[:20]})]
    params = [x for _ in prompts for x in (SamplingParams(**setting), greedy)]
    outputs = engine.generate(mixed, params)
    sched = engine.scheduler
    assert (sched.num_swapped_out if mode == "swap" else sched.num_recomputed) > 0
    assert_beam_parity(outputs[0::2], expected, setting)
    alone = Engine(path, num_kv_blocks=2000).generate([m for m in mixed[1::2]], greedy)
    assert [o.outputs[0].token_ids for o in outputs[1::2]] == [o.outputs[0].token_ids for o in alone]


def test_beams_share_the_cross_blocks_and_copy_only_on_write(tiny_bart):
    path, _ = tiny_bart
    engine = Engine(path, num_kv_blocks=400)
    bm = engine.block_manager
    engine.add_request(
        "beams", {"prompt_token_ids": list(range(5, 105))}, SamplingParams(beam_width=4, max_tokens=30)
    )
    engine.step()  # prefill: one sequence, then four beams forked from it
    group = engine.groups["beams"]
    assert len(group.seqs) == 4
    cross = bm.cross_block_table("beams")
    assert len(cross) == 7  # 100 encoder positions, once for the request
    tables = [bm.block_table(s.seq_id) for s in group.seqs]
    assert len({t[0] for t in tables}) == 1  # the prompt's block is shared, not copied
    sched = engine.scheduler.schedule()  # each beam now writes its next token into the shared block
    copies = sched.blocks_to_copy
    assert len(copies) == 3  # the first writer keeps the block; three copy it before writing
    assert len({bm.block_table(s.seq_id)[0] for s in group.seqs}) == 4
    assert bm.cross_block_table("beams") == cross


CNN = dict(
    num_beams=4,
    length_penalty=2.0,
    max_length=142,
    min_length=56,
    no_repeat_ngram_size=3,
    early_stopping=True,
    forced_bos_token_id=0,
    forced_eos_token_id=2,
)


@pytest.fixture(scope="module")
def tiny_cnn(tmp_path_factory):
    """A tiny BART carrying facebook/bart-large-cnn's generation_config.json."""
    from tiny_models import make_tiny_model
    from transformers import GenerationConfig

    path = str(tmp_path_factory.mktemp("tiny-cnn"))
    model = make_tiny_model(path, "bart", seed=5)
    with torch.no_grad():
        model.final_logits_bias[0, EOS] = 2.5
    model.generation_config = GenerationConfig(
        decoder_start_token_id=EOS, bos_token_id=0, eos_token_id=EOS, pad_token_id=PAD, **CNN
    )
    model.save_pretrained(path)
    return path, model


def test_checkpoint_generation_config_gives_transformers_summaries(tiny_cnn):
    path, hf = tiny_cnn
    engine = Engine(path, num_kv_blocks=3000)
    params = engine.generation_defaults()
    assert (params.beam_width, params.length_penalty, params.no_repeat_ngram_size, params.early_stopping) == (
        4,
        2.0,
        3,
        True,
    )
    # after <DEC><BOS>
    assert (params.max_tokens, params.min_tokens, params.forced_eos_token_id) == (
        140,
        54,
        2,
    )
    prompts = random_prompts(6, seed=3, max_len=150)
    ids, mask = pad_batch(prompts)
    # its own defaults
    out = hf.generate(input_ids=ids, attention_mask=mask, return_dict_in_generate=True, output_scores=True)
    ours = engine.generate([{"prompt_token_ids": p} for p in prompts], params)
    for i, o in enumerate(ours):
        ref = out.sequences[i].tolist()
        ref = ref[: ref.index(EOS, 1) + 1] if EOS in ref[1:] else ref
        assert o.prompt_token_ids + o.outputs[0].token_ids == ref
        assert o.outputs[0].score == pytest.approx(out.sequences_scores[i].item(), abs=1e-4)
        assert 54 <= len(o.outputs[0].token_ids) <= 140


def test_task_specific_params_are_the_fallback(tiny_bart):
    path, _ = tiny_bart
    engine = Engine(path, num_kv_blocks=200)
    engine.model.config.task_specific_params = {
        "summarization": {"num_beams": 3, "max_length": 50, "min_length": 10, "length_penalty": 1.5}
    }
    params = engine.generation_defaults("summarization", max_tokens=20)
    assert (params.beam_width, params.length_penalty, params.max_tokens, params.min_tokens) == (3, 1.5, 20, 8)
    assert engine.generation_defaults().beam_width == 1  # no task: only generation_config.json


def test_patience_keeps_searching_until_more_hypotheses_finish():
    """patience p (openai-whisper's, CTranslate2's): round(k * p) finished hypotheses are kept,
    so the search may stop later and finds at least as good a best; p = 1 is transformers'."""
    from scriba.engine.beam_candidates import read_candidates, top_continuations
    from scriba.engine.beam_search import BeamSearch

    def search(patience: float, seed: int):
        gen = torch.Generator().manual_seed(seed)
        params = SamplingParams(beam_width=3, patience=patience, max_tokens=40, length_penalty=1.0)
        beams, tokens, steps = BeamSearch(params, 1, 41, [0]), [[5]], 0
        while not beams.done:
            logprobs = torch.randn(len(tokens), 12, generator=gen).log_softmax(-1)
            plan, values = top_continuations(logprobs, list(range(len(tokens))), beams.rows("r"))
            picked = beams.step(tokens, read_candidates(plan, values.tolist(), 12)["r"])
            tokens, steps = [tokens[p.parent] + [p.token_id] for p in picked], steps + 1
        return steps, beams.results(beams.pool)

    searched_on = improved = 0
    for seed in range(20):
        steps, found = search(1.0, seed)
        longer, more = search(2.0, seed)
        assert len(found) == 3 and len(more) == 6 and longer >= steps
        assert more[0].score >= found[0].score
        searched_on, improved = searched_on + (longer > steps), improved + (more[0].score > found[0].score)
    assert searched_on >= 10 and improved >= 1  # (18 and 3 of these 20 when written)
    with pytest.raises(ValueError, match="patience must be > 0"):
        SamplingParams(beam_width=2, patience=0)
