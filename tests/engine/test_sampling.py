"""Sampling: processors against transformers, seeds, n > 1 forks, stops and log-probs."""

import math

import pytest
import torch
from oracle import assert_parity, hf_generate, random_prompts
from tiny_models import EOS
from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

from scriba import Engine, SamplingParams
from scriba.engine.sampler import truncate


@pytest.fixture(scope="module")
def engine(tiny_bart):
    return Engine(tiny_bart[0], num_kv_blocks=1024)


def as_prompts(prompts):
    return [{"prompt_token_ids": p} for p in prompts]


@pytest.mark.parametrize(
    "ours,theirs",
    [
        (dict(repetition_penalty=1.8), dict(repetition_penalty=1.8)),
        (dict(no_repeat_ngram_size=2), dict(no_repeat_ngram_size=2)),
        (dict(min_tokens=30), dict(min_new_tokens=30)),
        (dict(suppress_tokens=[179, 214, 82]), dict(suppress_tokens=[179, 214, 82])),
        (dict(forced_eos_token_id=EOS), dict(forced_eos_token_id=EOS)),
        (
            dict(repetition_penalty=1.3, no_repeat_ngram_size=3, min_tokens=10, suppress_tokens=[5]),
            dict(repetition_penalty=1.3, no_repeat_ngram_size=3, min_new_tokens=10, suppress_tokens=[5]),
        ),
    ],
)
def test_processors_match_transformers(engine, tiny_bart, ours, theirs):
    prompts = random_prompts(7, seed=21)
    expected = hf_generate(tiny_bart[1], prompts, [EOS, 0], max_new_tokens=40, **theirs)
    outs = engine.generate(as_prompts(prompts), SamplingParams(max_tokens=40, logprobs=5, **ours))
    assert_parity(outs, expected)


def test_forced_bos_from_decoder_start_only(engine, tiny_bart):
    prompts = random_prompts(4, seed=8)
    expected = hf_generate(tiny_bart[1], prompts, [EOS], max_new_tokens=20, forced_bos_token_id=0)
    pairs = [
        {"encoder_prompt": p, "decoder_prompt": {"prompt_token_ids": [EOS]}} for p in as_prompts(prompts)
    ]
    outs = engine.generate(pairs, SamplingParams(max_tokens=20, forced_bos_token_id=0))
    assert [o.outputs[0].token_ids for o in outs] == [g for g, _ in expected]
    assert all(o.prompt_token_ids == [EOS] and o.outputs[0].token_ids[0] == 0 for o in outs)


@pytest.mark.parametrize("top_k,top_p", [(0, 0.9), (5, 1.0), (20, 0.5), (1, 1.0), (0, 0.01)])
def test_truncation_matches_transformers_warpers(top_k, top_p):
    torch.manual_seed(top_k)
    scores = torch.randn(4, 300) * 3
    ref = scores.clone()
    if top_k:
        ref = TopKLogitsWarper(top_k)(None, ref)
    if top_p < 1:
        ref = TopPLogitsWarper(top_p)(None, ref)
    mine = torch.stack([truncate(row, top_k, top_p) for row in scores])
    assert torch.equal(torch.isinf(mine), torch.isinf(ref))
    assert torch.equal(mine[~torch.isinf(mine)], ref[~torch.isinf(ref)])


def test_seed_reproducible_and_independent_of_batch(engine):
    prompts = as_prompts(random_prompts(6, seed=4))
    params = SamplingParams(temperature=1.0, top_p=0.95, seed=123, max_tokens=24)
    alone = engine.generate(prompts[0], params)[0].outputs[0].token_ids
    batched = engine.generate(prompts, [params] + [SamplingParams(temperature=0.8, max_tokens=30)] * 5)
    again = engine.generate(prompts[0], params)[0].outputs[0].token_ids
    assert alone == again == batched[0].outputs[0].token_ids
    other = engine.generate(prompts[0], SamplingParams(temperature=1.0, top_p=0.95, seed=124, max_tokens=24))
    assert other[0].outputs[0].token_ids != alone


def test_top_k_one_is_greedy(engine):
    prompts = as_prompts(random_prompts(3, seed=9))
    greedy = engine.generate(prompts, SamplingParams(max_tokens=20))
    sampled = engine.generate(prompts, SamplingParams(temperature=0.7, top_k=1, seed=1, max_tokens=20))
    assert [o.outputs[0].token_ids for o in greedy] == [o.outputs[0].token_ids for o in sampled]


def test_n_samples_share_cross_blocks_and_fork(engine):
    bm = engine.block_manager
    engine.add_request(
        "multi",
        {"prompt_token_ids": list(range(4, 100))},
        SamplingParams(n=4, temperature=1.0, seed=7, max_tokens=30, ignore_eos=True),
    )
    free_before = bm.num_free()
    engine.step()  # prefill: one decoder sequence runs, then forks into 4
    group = engine.groups["multi"]
    assert len(group.seqs) == 4 and len(bm.cross_tables) == 1
    tables = [bm.block_table(s.seq_id) for s in group.seqs]
    assert all(t == tables[0] for t in tables)  # the forks share the prompt's self block
    cross_blocks = len(bm.cross_block_table("multi"))
    assert free_before - bm.num_free() == cross_blocks + 1  # 6 cross blocks + 1 shared self block
    engine.step()  # each writes its own token: copy-on-write gives 3 copies, the last writes in place
    assert len({bm.block_table(s.seq_id)[0] for s in group.seqs}) == 4
    outs = None
    while engine.has_unfinished_requests():
        outs = engine.step() or outs
    completions = outs[0].outputs
    assert len(completions) == 4 and all(len(c.token_ids) == 30 for c in completions)
    assert len({tuple(c.token_ids) for c in completions}) > 1
    assert bm.num_free() == bm.num_total()


def test_stop_tokens_ignore_eos_and_logprobs(engine):
    prompt = as_prompts(random_prompts(1, seed=2, max_len=50))[0]
    free = engine.generate(prompt, SamplingParams(max_tokens=40, logprobs=3))[0].outputs[0]
    stop_at = free.token_ids[5]
    stopped = engine.generate(prompt, SamplingParams(max_tokens=40, stop_token_ids=[stop_at]))[0].outputs[0]
    first = free.token_ids.index(stop_at)
    assert stopped.token_ids == free.token_ids[: first + 1]
    assert stopped.finish_reason == "stop" and stopped.stop_reason == stop_at
    long = engine.generate(prompt, SamplingParams(max_tokens=40, ignore_eos=True))[0].outputs[0]
    assert len(long.token_ids) == 40 and long.finish_reason == "length"
    # Log-probs: the chosen token is always present; the cumulative is their sum.
    assert all(t in lp and 1 <= len(lp) <= 4 for t, lp in zip(free.token_ids, free.logprobs))
    assert math.isclose(
        free.cumulative_logprob,
        sum(lp[t].logprob for t, lp in zip(free.token_ids, free.logprobs)),
        rel_tol=1e-6,
    )
    assert all(lp[t].decoded_token is not None for t, lp in zip(free.token_ids, free.logprobs))


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_n_samples_survive_preemption(tiny_bart, mode):
    """Forked samples that are preempted (all of a request's sequences at once) and resumed
    give exactly what they give with room to spare: same seed, same draws."""
    prompts = as_prompts(random_prompts(6, seed=31, max_len=120))
    params = [
        SamplingParams(n=3, temperature=1.0, seed=50 + i, max_tokens=30, ignore_eos=True) for i in range(6)
    ]
    roomy = Engine(tiny_bart[0], num_kv_blocks=1024).generate(prompts, params)
    tight = Engine(tiny_bart[0], num_kv_blocks=40, num_cpu_blocks=400, preemption_mode=mode)
    outs = tight.generate(prompts, params)
    assert [[c.token_ids for c in o.outputs] for o in outs] == [
        [c.token_ids for c in o.outputs] for o in roomy
    ]
    assert (tight.scheduler.num_swapped_out if mode == "swap" else tight.scheduler.num_recomputed) > 0
    assert tight.block_manager.num_free() == tight.block_manager.num_total()


def test_greedy_picks_equal_the_log_softmax_path():
    """Greedy rows without top log-probs take the short path (no row of log-probs made): the
    same tokens (the first of tied maxima), log-probs and ranks as the log_softmax path, which
    rows asking for a top log-prob take."""
    from scriba.engine.sampler import SampleRow, sample

    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 1000, generator=g) * 5
    logits[1, :900] = -math.inf  # banned, as Whisper's rules ban most of the vocabulary
    logits[2, [10, 20]] = logits[2].max() + 1.0  # a tie: the first wins
    rows = lambda wanted: [  # noqa: E731
        SampleRow([1], 0, SamplingParams(temperature=0.0, logprobs=wanted), []) for _ in range(4)
    ]
    history = lambda: torch.ones(4, 1, dtype=torch.long)  # noqa: E731
    short, _ = sample(logits.clone(), rows(0), history)
    full, _ = sample(logits.clone(), rows(1), history)
    expected = torch.log_softmax(logits, dim=-1)
    for i, (a, b) in enumerate(zip(short, full)):
        (a,), (b,) = a, b
        assert a.token_id == b.token_id == int(logits[i].argmax()) and (i != 2 or a.token_id == 10)
        assert math.isclose(a.logprob, float(expected[i, a.token_id]), rel_tol=1e-5, abs_tol=1e-6)
        assert math.isclose(a.logprob, b.logprob, rel_tol=1e-5, abs_tol=1e-6)
        assert a.top_logprobs[a.token_id].rank == b.top_logprobs[b.token_id].rank == 1
    from scriba.engine.sampler import _greedy_cpu, _greedy_torch  # the CPU's and a GPU's

    (tokens, (packed,)), n = _greedy_cpu(logits, ranked=True), len(logits)
    assert torch.equal(packed[:n].long(), tokens) and torch.equal(packed[2 * n :], torch.ones(n).double())
    for tokens, chosen in ((tokens, packed[n : 2 * n]), _greedy_torch(logits.clone())):
        assert torch.equal(tokens, torch.tensor([s[0].token_id for s in short]))
        assert torch.allclose(chosen, expected.gather(1, tokens[:, None])[:, 0].double(), atol=1e-5)
